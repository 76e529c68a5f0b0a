"""graphbo.integrations.optuna: COMBO and BO-FM as Optuna samplers.

Small budgets and quick optimizer settings (fewer burn-in sweeps, fewer random
acquisition candidates) keep each test to a few seconds of CPU time.
"""

from __future__ import annotations

import collections
import itertools
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

optuna = pytest.importorskip("optuna")

from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution  # noqa: E402
from optuna.trial import TrialState, create_trial  # noqa: E402

from graphbo.integrations.optuna import PROPOSAL_ATTR, BOFMSampler, COMBOSampler  # noqa: E402

optuna.logging.set_verbosity(optuna.logging.WARNING)

COMBO_FAST = {"n_burn": 50, "n_random": 2000}
BOFM_FAST = {"n_random": 2000, "n_spray": 10, "n_starts": 5, "n_restarts": 3}


def quadratic(d, seed):
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(d, d))
    Q = (Q + Q.T) / 2
    return lambda x: float(np.asarray(x, dtype=float) @ Q @ np.asarray(x, dtype=float))


def all_values(f, d):
    return sorted(f(b) for b in itertools.product([0, 1], repeat=d))


def binary_objective(f, d):
    def objective(trial):
        return f([trial.suggest_categorical(f"x{i}", [0, 1]) for i in range(d)])

    return objective


def param_sets(study):
    return [tuple(sorted(t.params.items())) for t in study.trials]


def test_import_graphbo_does_not_import_optuna():
    code = (
        "import sys, graphbo, graphbo.integrations; graphbo.COMBO; graphbo.BOFM; "
        "assert 'optuna' not in sys.modules, 'optuna imported'; "
        "import graphbo.integrations.optuna; assert 'optuna' in sys.modules"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_combo_sampler_finds_the_optimum_and_reproduces():
    """10 binary variables (1024 configurations): random search would find the optimum
    within 60 trials with probability 0.06. (With the sampler of 2026-11-25, quadratics 0 and 1
    with seeds 0 and 1 found it within 60 trials 3 times out of 4, the fourth ending at the
    6th best; this quadratic and seed need 15.)"""
    d, budget = 10, 60
    f = quadratic(d, 1)
    best = all_values(f, d)[0]

    def study_of(n_trials):
        study = optuna.create_study(sampler=COMBOSampler(seed=0, optimizer_kwargs=COMBO_FAST))
        study.optimize(binary_objective(f, d), n_trials=n_trials)
        return study

    study = study_of(budget)
    assert study.best_value == pytest.approx(best, abs=1e-12)
    values = [t.value for t in study.trials]
    first = next(i for i, v in enumerate(values) if v == study.best_value)
    assert first >= 10  # found by the model, not by the 10 random startup trials
    assert len(set(param_sets(study))) == budget  # never repeats itself
    # the same seed gives the same trials (a shorter study is a prefix)
    again = study_of(14)
    assert param_sets(again) == param_sets(study)[:14]
    assert [t.value for t in again.trials] == values[:14]


def test_maximize_direction():
    """8 binaries: the model phase must seek high values (a sampler that forgot to negate
    would seek low ones: its model-phase mean would fall below the random startup's)."""
    d = 8
    f = quadratic(d, 3)
    top = all_values(f, d)[-1]
    study = optuna.create_study(direction="maximize",
                                sampler=COMBOSampler(seed=1, n_startup_trials=8, optimizer_kwargs=COMBO_FAST))
    study.optimize(binary_objective(f, d), n_trials=28)
    values = np.array([t.value for t in study.trials])
    assert study.best_value == pytest.approx(top, abs=1e-12)
    assert values[8:].mean() > values[:8].mean() + 1.0, (values[8:].mean(), values[:8].mean())


def mixed_objective(trial):
    lr = trial.suggest_float("lr", 1e-5, 1.0, log=True)
    x = trial.suggest_float("x", -3.0, 3.0)
    opt = trial.suggest_categorical("opt", ["sgd", "adam", "rmsprop"])
    return (math.log10(lr) + 2.5) ** 2 + (x - 0.5) ** 2 + {"sgd": 1.0, "adam": 0.0, "rmsprop": 0.5}[opt]


@pytest.mark.slow  # a quality check (an optimisation run to a budget): run with -m slow
def test_bofm_sampler_improves_on_its_startup_trials():
    n_startup, budget = 8, 20
    study = optuna.create_study(
        sampler=BOFMSampler(seed=0, n_startup_trials=n_startup, optimizer_kwargs=BOFM_FAST)
    )
    study.optimize(mixed_objective, n_trials=budget)
    values = [t.value for t in study.trials]
    startup_best, model_best = min(values[:n_startup]), min(values[n_startup:])
    # a uniformly random trial gets below 0.05 with probability about 1e-3
    assert model_best < min(startup_best, 0.05), (startup_best, model_best)
    for t in study.trials:
        assert 1e-5 <= t.params["lr"] <= 1.0 and -3.0 <= t.params["x"] <= 3.0
    # reproducible under the seed
    again = optuna.create_study(
        sampler=BOFMSampler(seed=0, n_startup_trials=n_startup, optimizer_kwargs=BOFM_FAST)
    )
    again.optimize(mixed_objective, n_trials=n_startup + 2)
    assert param_sets(again) == param_sets(study)[: n_startup + 2]


def all_kinds_objective(trial):
    return (
        trial.suggest_float("lr", 1e-4, 1e-1, log=True) * 0
        + trial.suggest_float("x", -1.0, 1.0) ** 2
        + abs(trial.suggest_float("q", 0.0, 1.0, step=0.25) - 0.5)
        + abs(trial.suggest_int("n", 1, 1024, log=True) - 8) / 1024
        + abs(trial.suggest_int("k", 2, 20, step=3) - 11)
        + abs(trial.suggest_int("wide", 0, 1000) - 300) / 1000
        + {None: 0.0, "a": 1.0, 3: 2.0}[trial.suggest_categorical("c", [None, "a", 3])]
        + trial.suggest_int("const", 5, 5)
    )


def test_bofm_sampler_mapping_and_contained_values():
    sampler = BOFMSampler(seed=0, n_startup_trials=4, optimizer_kwargs=BOFM_FAST)
    study = optuna.create_study(sampler=sampler)
    study.optimize(all_kinds_objective, n_trials=8)
    trial = study.trials[-1]
    search_space = sampler.infer_relative_search_space(study, trial)
    assert "const" not in search_space  # single-valued: nothing to model
    space, params = sampler._space_of(search_space)
    kinds = {n: (type(space[n]).__name__, getattr(space[n], "log", None)) for n in space.names}
    assert kinds == {
        "c": ("Categorical", None),
        "k": ("Ordinal", None),  # 2, 5, ..., 20
        "lr": ("Continuous", True),
        "n": ("IntegerRange", True),
        "q": ("Ordinal", None),  # 0, 0.25, ..., 1
        "wide": ("IntegerRange", False),  # 1001 values > max_ordinal: rounded continuous over the grid
        "x": ("Continuous", False),
    }
    assert space["k"].n_values == 7 and space["q"].n_values == 5 and space["c"].n_values == 3
    for p in params:  # every observed value survives the round trip Optuna -> graphbo -> Optuna
        for t in study.trials:
            assert p.to_optuna(p.to_graphbo(t.params[p.name])) == t.params[p.name]
    for t in study.trials:  # the model-based suggestions are contained in the distributions
        for name, value in t.params.items():
            dist = t.distributions[name]
            assert dist._contains(dist.to_internal_repr(value)), (name, value)
        assert type(t.params["n"]) is int and type(t.params["k"]) is int and (t.params["k"] - 2) % 3 == 0
        assert t.params["q"] in (0.0, 0.25, 0.5, 0.75, 1.0)
    assert trial.system_attrs[PROPOSAL_ATTR].keys() == search_space.keys()


def test_combo_sampler_maps_discrete_and_refuses_continuous_floats():
    sampler = COMBOSampler(seed=0)
    space, _ = sampler._space_of({
        "n": IntDistribution(1, 64, log=True),
        "q": FloatDistribution(0.0, 1.0, step=0.1),
        "c": CategoricalDistribution(["a", "b"]),
    })
    assert [type(v).__name__ for v in space.variables] == ["Ordinal", "Ordinal", "Categorical"]
    assert space["n"].n_values == 64 and space["q"].n_values == 11
    with pytest.raises(ValueError, match="BOFMSampler"):
        sampler._space_of({"x": FloatDistribution(0.0, 1.0)})
    with pytest.raises(ValueError, match="max_values"):
        COMBOSampler(max_values=100)._space_of({"i": IntDistribution(0, 1000)})
    # in a study: the first suggestion of a continuous float already fails, with the pointer
    study = optuna.create_study(sampler=COMBOSampler(seed=0))
    with pytest.raises(ValueError, match="BOFMSampler"):
        study.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=1)
    assert study.trials[0].state == TrialState.FAIL


def test_combo_sampler_grids_keep_their_values_so_log_scale_integers_can_be_warped():
    """An Ordinal over positions 0..n-1 is never a log-scale candidate; over the grid's own values it is
    (COMBO(warp_ordinals=True)): a log IntDistribution and a wide positive integer grid both are, a
    grid starting at 0 or with few points is not."""
    sampler = COMBOSampler(seed=0, optimizer_kwargs=COMBO_FAST)
    space, params = sampler._space_of({
        "batch": IntDistribution(16, 512, step=16),  # 32 values, a ratio of 32
        "width": IntDistribution(1, 1000, log=True),
        "k": IntDistribution(0, 50),  # starts at 0: no log scale
        "few": IntDistribution(1, 10),  # 10 values: too few
        "q": FloatDistribution(0.1, 0.5, step=0.1),
    })
    assert list(space["batch"].values[:3]) == [16, 32, 48] and space["batch"].values[-1] == 512
    assert space["width"].values[0] == 1 and space["width"].n_values == 1000
    assert list(space["q"].values) == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])
    for p in params:  # Optuna -> graphbo -> Optuna is the identity on the grid, and the value is in the Ordinal
        d = p.distribution
        for i in range(p.n):
            x = d.low + i * d.step
            g = p.to_graphbo(x)
            assert g in space[p.name].values and p.to_optuna(g) == pytest.approx(x)
    opt = sampler._make_optimizer(space, 0)
    assert sorted(opt.ordinal_scales) == ["batch", "width"]


def test_combo_sampler_draws_log_integers_log_uniformly_before_its_model():
    """Optuna draws a log IntDistribution log-uniformly; so do COMBOSampler's startup draws (its Ordinal
    holds every integer, and a uniform draw over them would put 90 % of 1..1000 above 100)."""
    study = optuna.create_study(sampler=COMBOSampler(seed=3, n_startup_trials=1000))
    study.optimize(lambda t: (math.log10(t.suggest_int("width", 1, 1000, log=True)) - 1.5) ** 2
                   + 0.01 * t.suggest_int("k", 0, 5), n_trials=90)
    widths = [t.params["width"] for t in study.trials]
    assert all(type(w) is int and 1 <= w <= 1000 for w in widths)
    assert len(set(zip(widths, [t.params["k"] for t in study.trials]))) == len(widths)  # no repeats
    share_above_100 = np.mean(np.array(widths) >= 100)  # log-uniform: 1/3; uniform: 0.9
    assert 0.15 < share_above_100 < 0.55


@pytest.mark.parametrize("n_startup", [100, 3])  # random startup draws / COMBO's suggestions
def test_running_trials_are_pending(n_startup):
    """Trials asked and not yet told are never suggested again (3 binaries x 3 choices = 24)."""
    sampler = COMBOSampler(seed=2, n_startup_trials=n_startup, optimizer_kwargs=COMBO_FAST)
    study = optuna.create_study(sampler=sampler)
    objective = lambda t: sum(t.suggest_int(f"b{i}", 0, 1) for i in range(3)) + t.suggest_categorical(
        "c", [0.5, 1.5, 2.5])
    study.optimize(objective, n_trials=4)
    running = []
    for _ in range(20):  # the remaining configurations, all asked at once
        trial = study.ask()
        objective_params = [trial.suggest_int(f"b{i}", 0, 1) for i in range(3)] + [
            trial.suggest_categorical("c", [0.5, 1.5, 2.5])]
        running.append((trial, objective_params))
    sets = param_sets(study)
    assert len(set(sets)) == 24
    for trial, p in running:
        study.tell(trial, sum(p))
    assert study.best_value == 0.5


def _attr_race(seed, n_startup, keep_proposal):
    """6 of 8 configurations complete; trial A's suggestion is made (written as its proposal)
    but its parameters are not yet stored, as with a worker between sampling and suggesting."""
    sampler = COMBOSampler(seed=seed, n_startup_trials=n_startup, optimizer_kwargs=COMBO_FAST)
    study = optuna.create_study(sampler=sampler)
    dists = {f"x{i}": CategoricalDistribution([0, 1]) for i in range(3)}
    for bits in list(itertools.product([0, 1], repeat=3))[:6]:
        params = {f"x{i}": b for i, b in enumerate(bits)}
        study.add_trial(create_trial(params=params, distributions=dists, value=float(sum(bits))))
    a = study.ask()
    frozen = study._storage.get_trial(a._trial_id)
    proposal_a = sampler.sample_relative(study, frozen, sampler.infer_relative_search_space(study, frozen))
    if not keep_proposal:
        study._storage.set_trial_system_attr(a._trial_id, PROPOSAL_ATTR, None)
    b = study.ask()
    proposal_b = {name: b.suggest_categorical(name, [0, 1]) for name in dists}
    return proposal_a, proposal_b


@pytest.mark.parametrize("n_startup", [100, 2])
def test_a_proposal_not_yet_stored_as_parameters_is_pending(n_startup):
    seed = 1
    # control: without the proposal attribute, B would suggest A's configuration
    a, b = _attr_race(seed, n_startup, keep_proposal=False)
    assert a == b
    a, b = _attr_race(seed, n_startup, keep_proposal=True)
    assert a != b and len(a) == 3


WORKER = textwrap.dedent(
    """
    import os, sys, time
    import numpy as np
    import optuna
    from graphbo.integrations.optuna import COMBOSampler

    storage, name, worker, k, sync = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    rng = np.random.default_rng(5)
    Q = rng.normal(size=(8, 8)); Q = (Q + Q.T) / 2
    sampler = COMBOSampler(seed=0, n_startup_trials=4, optimizer_kwargs={"n_burn": 30, "n_random": 1000})
    study = optuna.load_study(study_name=name, storage=storage, sampler=sampler)

    def objective(trial):
        trial.set_user_attr("worker", worker)
        x = np.array([trial.suggest_categorical(f"x{i}", [0, 1]) for i in range(8)], dtype=float)
        time.sleep(0.05)
        return float(x @ Q @ x)

    open(os.path.join(sync, worker), "w").close()  # start together: both import first
    deadline = time.time() + 120
    while len(os.listdir(sync)) < 2 and time.time() < deadline:
        time.sleep(0.01)
    study.optimize(objective, n_trials=k)
    """
)


def test_two_processes_share_one_sqlite_study(tmp_path):
    k = 10
    storage = "sqlite:///" + str(tmp_path / "study.db")
    optuna.create_study(study_name="shared", storage=storage)
    sync = tmp_path / "sync"
    sync.mkdir()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = [
        subprocess.Popen([sys.executable, "-c", WORKER, storage, "shared", w, str(k), str(sync)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for w in ("A", "B")
    ]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    study = optuna.load_study(study_name="shared", storage=storage)
    trials = study.get_trials(deepcopy=False)
    assert len(trials) == 2 * k and all(t.state == TrialState.COMPLETE for t in trials)
    workers = [t.user_attrs["worker"] for t in trials]
    assert workers.count("A") == k and workers.count("B") == k
    # the model ran: all but the first (independently sampled) trials carry a graphbo proposal
    assert sum(PROPOSAL_ATTR in t.system_attrs for t in trials) >= 2 * k - 2
    # no trial sampled by graphbo repeats another trial's parameters (the first trials of the
    # two workers are drawn independently by Optuna's RandomSampler and may coincide: 1 in 256)
    counts = collections.Counter(tuple(sorted(t.params.items())) for t in trials)
    repeated = [t.number for t in trials if PROPOSAL_ATTR in t.system_attrs
                and counts[tuple(sorted(t.params.items()))] > 1]
    assert repeated == [], "duplicated parameter sets"


@pytest.mark.parametrize("module,extra", [("optuna", "graphbo[optuna]"), ("gpytorch", "graphbo[botorch]")])
def test_a_missing_extra_names_the_install_command(module, extra):
    import subprocess
    import sys

    code = (f"import sys; sys.modules[{module!r}] = None\n"
            f"try:\n    import graphbo.integrations.{module}\nexcept ModuleNotFoundError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
    assert f'pip install "{extra}"' in out
