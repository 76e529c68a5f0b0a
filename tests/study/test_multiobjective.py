"""Several objectives and black-box constraints in studies, minimize and the optimizers."""

import numpy as np
import pytest

import graphbo as gb
from graphbo.optimizers import METHODS
from graphbo.outcomes import hypervolume, pareto_mask
from graphbo.storage.info import read_study_info

SPACE = gb.Space({f"x{i}": gb.Ordinal(list(range(6))) for i in range(3)})


def two_objectives(cfg):
    x = np.array([cfg[f"x{i}"] for i in range(3)]) / 5
    return [float(((x - 0.2) ** 2).sum()), float(((x - 0.8) ** 2).sum())]


def error_and_accuracy(cfg):
    """The same two objectives, the second as a quantity to maximise."""
    a, b = two_objectives(cfg)
    return [a, 1.0 - b]


def constrained(cfg):
    x = np.array([cfg[f"x{i}"] for i in range(3)]) / 5
    return {"value": float(((x - 0.2) ** 2).sum()), "constraints": [0.5 - x[0], x[1] - 0.9]}


def all_configs(space):
    return [space.from_index(r) for r in np.ndindex(*[int(k) for k in space.n_values])]


def test_a_study_with_two_objectives_stores_both_and_its_front_is_the_non_dominated_trials(tmp_path):
    path = tmp_path / "mo.db"
    result = gb.minimize(error_and_accuracy, SPACE, method="combo", budget=14, seed=0, n_initial=5, storage=path,
                         directions=["minimize", "maximize"])
    Y = np.array([t.attrs["values"] for t in result.trials])
    assert [t.value for t in result.trials] == Y[:, 0].tolist()  # trial.value is the first objective
    minimised = Y * [1, -1]
    expected = sorted(t.number for t, keep in zip(result.trials, pareto_mask(minimised)) if keep)
    assert sorted(t.number for t in result.pareto_front) == expected
    ref = [3.0, -2.0]  # in the objectives' own signs
    assert result.hypervolume(ref) == pytest.approx(hypervolume(minimised, [3.0, 2.0]))
    info = read_study_info(path)
    assert info["directions"] == ["minimize", "maximize"] and info["format"] == 3
    with gb.Study(SPACE, "combo", storage=path, n_initial=5) as study:  # directions come from the file
        assert study.directions == ["minimize", "maximize"]
        assert study.hypervolume(ref) == pytest.approx(result.hypervolume(ref))
        assert study.best_trial is None
        with pytest.raises(ValueError, match="pareto_front"):
            study.best_value
    with pytest.raises(gb.StorageError, match="directions"):
        gb.Study(SPACE, "combo", storage=path, n_initial=5, directions=["minimize", "minimize"])


def test_a_resumed_multi_objective_study_continues_as_an_uninterrupted_one(tmp_path):
    whole = gb.minimize(two_objectives, SPACE, method="combo", budget=13, seed=3, n_initial=4,
                        directions=["minimize", "minimize"], storage=tmp_path / "a.db")
    gb.minimize(two_objectives, SPACE, method="combo", budget=8, seed=3, n_initial=4,
                directions=["minimize", "minimize"], storage=tmp_path / "b.db")
    resumed = gb.minimize(two_objectives, SPACE, method="combo", budget=13, seed=3, n_initial=4,
                          storage=tmp_path / "b.db")
    assert [t.config for t in resumed.trials] == [t.config for t in whole.trials]


@pytest.mark.parametrize("method", ["combo", "rs", "sa", "re"])
def test_every_method_of_graphbo_takes_two_objectives_and_finds_front_points(method):
    result = gb.minimize(two_objectives, SPACE, method=method, budget=16, seed=1, n_initial=5,
                         directions=["minimize", "minimize"])
    assert len(result.trials) == 16 and all(t.status == "complete" for t in result.trials)
    true_front = pareto_mask(np.array([two_objectives(c) for c in all_configs(SPACE)]))
    front_values = {tuple(two_objectives(c)) for c, keep in zip(all_configs(SPACE), true_front) if keep}
    found = {tuple(t.attrs["values"]) for t in result.pareto_front}
    assert found  # a non-empty front of evaluated, non-dominated trials
    assert method == "rs" or found & front_values  # the model-based and local methods reach the true front


def test_methods_that_cannot_take_several_objectives_say_so():
    with pytest.raises(ValueError, match="one objective"):
        gb.minimize(two_objectives, SPACE, method="tpe", budget=3, directions=["minimize", "minimize"])
    with pytest.raises(ValueError, match="trust region"):
        gb.minimize(two_objectives, SPACE, method="combo-tr", budget=3, directions=["minimize", "minimize"])
    big = gb.Space({f"b{i}": gb.Binary() for i in range(30)})
    with gb.Study(big, "auto", auto_budget=200, directions=["minimize", "minimize"]) as study:
        assert study.method == "combo"  # auto: no trust region for several objectives
    with pytest.raises(ValueError, match="not both"):
        gb.Study(SPACE, "rs", direction="minimize", directions=["minimize", "maximize"])


def test_wrong_outcomes_are_failed_trials_with_their_reason_and_tell_refuses_them(tmp_path):
    calls = iter(range(100))

    def flaky(cfg):
        i = next(calls)
        return [[1.0, 2.0], [1.0], [1.0, "x"], [1.0, float("nan")], {"values": [1.0, 2.0], "constraints": [1]},
                (3.0, 4.0)][i % 6]

    result = gb.minimize(flaky, SPACE, method="rs", budget=6, seed=0, directions=["minimize", "minimize"],
                         storage=tmp_path / "f.db", stop_after_failures=None)
    errors = [t.error for t in result.trials]
    assert errors[0] is None and errors[5] is None
    assert "1 values for 2 objective(s)" in errors[1]
    assert "value 1 must be a real number" in errors[2]
    assert "value 1 nan is not finite" in errors[3]
    assert "1 constraint values for n_constraints=0" in errors[4]
    with gb.Study(SPACE, "rs", storage=tmp_path / "f.db") as study:
        trial = study.ask()
        n = len(study.trials)
        for bad in ([1.0], 1.0, [1.0, 2.0, 3.0], {"value": 1.0}):
            with pytest.raises(ValueError):
                study.tell(trial, bad)
        assert study.running_trials[0].number == trial.number and len(study.trials) == n


def test_constrained_best_is_the_best_feasible_trial_and_a_nan_constraint_fails_the_trial(tmp_path):
    result = gb.minimize(constrained, SPACE, method="combo", budget=16, seed=0, n_initial=5, n_constraints=2)
    feasible = [t for t in result.trials if all(c <= 0 for c in t.attrs["constraints"])]
    assert result.best_value == min(t.value for t in feasible)
    allowed_best = min(constrained(c)["value"] for c in all_configs(SPACE)
                       if all(v <= 0 for v in constrained(c)["constraints"]))
    unconstrained_best = min(constrained(c)["value"] for c in all_configs(SPACE))
    assert allowed_best > unconstrained_best  # the constraint binds
    assert result.best_value <= allowed_best + 0.1

    def nan_constraint(cfg):
        return {"value": 1.0, "constraints": [float("nan"), 0.0]}

    r = gb.minimize(nan_constraint, SPACE, method="rs", budget=2, seed=0, n_constraints=2, stop_after_failures=None)
    assert all(t.status == "failed" and "constraint 0 nan is not finite" in t.error for t in r.trials)


def test_a_study_without_a_feasible_trial_says_so():
    def never(cfg):
        return {"value": 1.0, "constraints": [1.0]}

    result = gb.minimize(never, SPACE, method="combo", budget=7, seed=0, n_initial=3, n_constraints=1)
    assert result.best is None and result.pareto_front == []
    with gb.Study(SPACE, "rs", n_constraints=1) as study:
        study.tell(study.ask(), 1.0, constraints=[2.0])
        with pytest.raises(ValueError, match="no trial of study .* is feasible"):
            study.best_value


def test_a_reference_point_that_no_front_point_dominates_is_refused():
    result = gb.minimize(two_objectives, SPACE, method="rs", budget=5, seed=0, directions=["minimize", "minimize"])
    with pytest.raises(ValueError, match="not dominated by any point of the Pareto front"):
        result.hypervolume([-1.0, -1.0])
    with pytest.raises(ValueError, match="2 finite numbers"):
        result.hypervolume([1.0])


PROBLEM = """\
variables:
  a: {type: integer, low: 0, high: 7}
  b: {type: integer, low: 0, high: 7}
  k: {type: categorical, choices: [lin, rbf]}
constraints:
  - "a + b <= 10"
directions: [minimize, maximize]
n_constraints: 1
"""
OBJECTIVE = """\
def f(c):
    return {"values": [c["a"] + (c["k"] == "rbf"), c["b"] - 0.1 * c["a"]], "constraints": [c["b"] - 6]}
"""


def graphbo_cli(*args, cwd):
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-m", "graphbo", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=600)


def test_the_command_line_reads_objectives_and_constraints_from_the_space_file_and_reports_the_front(tmp_path):
    (tmp_path / "prob.yaml").write_text(PROBLEM)
    (tmp_path / "obj.py").write_text(OBJECTIVE)
    done = graphbo_cli("run", "--space", "prob.yaml", "--objective", "obj:f", "--budget", "8", "--method", "rs",
                       "--storage", "s.db", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Pareto front:" in done.stdout
    with gb.Study(gb.load_space(tmp_path / "prob.yaml"), "rs", storage=tmp_path / "s.db", n_initial=10) as study:
        assert study.directions == ["minimize", "maximize"] and study.n_constraints == 1
        assert all(a + b <= 10 for a, b in ((t.config["a"], t.config["b"]) for t in study.trials))
        front = {t.number for t in study.pareto_front}
    report = graphbo_cli("report", "s.db", cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    text = (tmp_path / "s.md").read_text()
    rows = [line for line in text.split("## Pareto front")[1].split("##")[0].splitlines() if line.startswith("| ")]
    assert {int(r.split("|")[1]) for r in rows[1:]} == front  # the table is the study's front
    assert (tmp_path / "img" / "s_pareto_front.png").stat().st_size > 0
    assert (tmp_path / "img" / "s_hypervolume.png").stat().st_size > 0
    bad = graphbo_cli("run", "--space", "prob.yaml", "--objective", "obj:f", "--budget", "8",
                      "--direction", "maximize", "--directions", "minimize", "minimize", cwd=tmp_path)
    assert bad.returncode == 2 and "not both" in bad.stderr


@pytest.mark.parametrize("text,match", [
    ("directions: minimize\n", "directions must be a list"),
    ("directions: [min, max]\n", "'minimize' or 'maximize'"),
    ("n_constraints: -1\n", "n_constraints must be an integer >= 0"),
    ("constraints: [\"a +\"]\n", "not an expression"),
    ("constraints: [\"z > 1\"]\n", "'z', which is not a variable"),
])
def test_space_files_with_bad_problem_settings_say_what_is_wrong(tmp_path, text, match):
    path = tmp_path / "p.yaml"
    path.write_text("variables:\n  a: {type: integer, low: 0, high: 3}\n" + text)
    with pytest.raises(gb.SpaceFileError, match=match):
        gb.spaces.io.load_problem(path)


def test_nasbot_models_a_black_box_constraint_of_the_networks():
    from graphbo.nas import ArchitectureSpace

    space = ArchitectureSpace("mlp-reg")

    def size_and_limit(cfg):
        n_layers = len(cfg["layers"]) if isinstance(cfg, dict) and "layers" in cfg else len(str(cfg)) % 9
        return {"value": float(-n_layers), "constraints": [n_layers - 6.0]}

    with gb.Study(space, "nasbot", seed=0, n_initial=4, n_constraints=1) as study:
        study.optimize(size_and_limit, 9)
        models = study.optimizer._constraint_models
        assert len(models) == 1 and models[0].n_data >= 4  # the constraint's own OTMANN GP was fitted
        told = study.optimizer.C[:, 0].tolist()
    assert told == [t.attrs["constraints"][0] for t in sorted(study.complete_trials, key=lambda t: t.tell_order)]


def test_ehvi_drives_combo_with_a_model_per_objective():
    with gb.Study(SPACE, "combo", seed=0, n_initial=4, directions=["minimize", "minimize"]) as study:
        study.optimizer.set_outcomes(2, 0, acquisition="ehvi")
        study.optimize(two_objectives, 10)
        assert study.optimizer._objective_models[0].train_targets.size >= 4  # the second objective's own GP
        assert len(study.pareto_front) >= 2
    with pytest.raises(ValueError, match="two objectives"):
        METHODS["rs"](SPACE).set_outcomes(2, 0, acquisition="ehvi")


@pytest.mark.parametrize("method", ["re", "sa"])
def test_evolution_and_annealing_judge_by_the_current_values_not_those_of_the_tell(method):
    opt = METHODS[method](SPACE, seed=0, n_initial=2)
    opt.set_outcomes(1, 1)
    told = [({"x0": 0, "x1": 0, "x2": 0}, 0.0, -1.0), ({"x0": 1, "x1": 0, "x2": 0}, 1.0, -1.0),
            ({"x0": 2, "x1": 0, "x2": 0}, 2.1, 1.0), ({"x0": 3, "x1": 0, "x2": 0}, 10.0, -1.0)]
    for cfg, value, con in told:
        opt.tell(cfg, value, constraints=[con])
    y = opt.y
    assert y[2] > y[3]  # the infeasible evaluation ranks behind every feasible one, whenever it was told
    if method == "re":
        assert [v for _, v in opt.population] == y.tolist()


@pytest.mark.parametrize("method", ["combo", "bofm"])
def test_a_resumed_constrained_study_continues_as_an_uninterrupted_one(tmp_path, method):
    space = SPACE if method == "combo" else gb.Space({"u": gb.Continuous(0.0, 1.0), "c": gb.Categorical(["a", "b"])})
    quick = {} if method == "combo" else {"n_random": 300, "n_starts": 4}

    def objective(cfg):
        if method == "combo":
            (a, b), c = two_objectives(cfg), constrained(cfg)["constraints"]
        else:
            a, b, c = cfg["u"], (1 - cfg["u"]) ** 2 + (cfg["c"] == "b"), [0.3 - cfg["u"]]
        return {"values": [a, b], "constraints": c}

    def run(path, budget):
        study = gb.Study(space, method, storage=path, seed=3, n_initial=4, directions=["minimize", "minimize"],
                         n_constraints=2 if method == "combo" else 1, **quick)
        with study:
            study.optimize(objective, budget)
            return [t.config for t in study.trials]

    whole = run(tmp_path / "a.db", 9)
    run(tmp_path / "b.db", 6)
    assert run(tmp_path / "b.db", 9) == whole
