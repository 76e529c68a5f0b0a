"""The broad suite's benchmarks: grid functions (ordinal and nominal), COCO's bbob-mixint, scikit-learn tasks,
and the committed development/test split."""

import json
import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from graphbo.benchmarks import load_benchmark
from graphbo.benchmarks.grid_functions import FUNCTIONS, GridCategorical, GridOrdinal

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name, point, value", [
    ("ackley", 0.0, 0.0), ("rastrigin", 0.0, 0.0), ("levy", 1.0, 0.0), ("griewank", 0.0, 0.0),
    ("rosenbrock", 1.0, 0.0), ("zakharov", 0.0, 0.0), ("styblinski", -2.903534, -39.16617 * 3),
    ("schwefel", 420.9687, 0.0)])
def test_grid_functions_have_their_known_minima(name, point, value):
    f, _ = FUNCTIONS[name]
    assert f(np.full(3, point)) == pytest.approx(value, abs=1e-3)
    assert f(np.full(3, point) + 0.3) > value + 1e-4


def test_michalewicz_in_two_dimensions():
    f, _ = FUNCTIONS["michalewicz"]
    assert f(np.array([2.20, 1.57])) == pytest.approx(-1.8013, abs=1e-3)


def test_an_ordinal_grid_maps_levels_evenly_onto_the_domain():
    b = GridOrdinal("rosenbrock", dims=3, levels=5)  # points -2.048, -1.024, 0, 1.024, 2.048
    f, _ = FUNCTIONS["rosenbrock"]
    assert b({"x0": 2, "x1": 3, "x2": 4}) == pytest.approx(f(np.array([0.0, 1.024, 2.048])))
    assert b.optimum is None


def test_a_categorical_grid_is_the_ordinal_one_up_to_a_fixed_permutation_of_each_variables_levels():
    ordinal = GridOrdinal("ackley", dims=4, levels=6)
    cat = GridCategorical("ackley", dims=4, levels=6, permutation_seed=3)
    rows = np.random.default_rng(0).integers(0, 6, size=(30, 4))
    values = {cat.evaluate_index(r) for r in rows}
    # every categorical value is an ordinal grid value, and the permutation is not the identity
    grid = {ordinal.evaluate_index(r) for r in np.ndindex(*(6,) * 4)}
    assert values <= grid
    assert any(cat.evaluate_index(r) != ordinal.evaluate_index(r) for r in rows)
    same = GridCategorical("ackley", dims=4, levels=6, permutation_seed=3)
    assert [same.evaluate_index(r) for r in rows] == [cat.evaluate_index(r) for r in rows]
    other = GridCategorical("ackley", dims=4, levels=6, permutation_seed=4)
    assert [other.evaluate_index(r) for r in rows] != [cat.evaluate_index(r) for r in rows]
    with pytest.raises(ValueError, match="function must be one of"):
        GridCategorical("sphere")


def test_bbob_mixint_space_and_values_match_coco():
    cocoex = pytest.importorskip("cocoex")
    b = load_benchmark("bbob-mixint", function=3, dimension=10)
    problem = next(iter(cocoex.Suite("bbob-mixint", "", "dimensions:10 function_indices:3 instance_indices:1")))
    names = list(b.space)
    assert len(names) == 10 and [b.space[n].__class__.__name__ for n in names].count("Continuous") == 2
    for config in b.space.sample(5, seed=0):
        x = np.array([float(config[n]) for n in names])
        assert b(config) == pytest.approx(problem(x))
    assert pickle.loads(pickle.dumps(b))(config) == pytest.approx(b(config))
    with pytest.raises(ValueError, match="dimension must be one of"):
        load_benchmark("bbob-mixint", dimension=7)


def test_sklearn_tasks_are_deterministic_cross_validation_errors():
    pytest.importorskip("sklearn")
    from sklearn.datasets import load_digits
    from sklearn.model_selection import KFold, cross_val_score
    from sklearn.svm import SVC

    b = load_benchmark("sklearn-tuning", task="svc-digits")
    config = {"kernel": "rbf", "C": 10.0, "gamma": 1e-3, "degree": 3, "shrinking": True}
    X, y = load_digits(return_X_y=True)
    expected = 1 - cross_val_score(SVC(C=10.0, gamma=1e-3), X, y, cv=KFold(3, shuffle=True, random_state=0)).mean()
    assert b(config) == pytest.approx(expected)
    assert pickle.loads(pickle.dumps(b))(config) == b(config)


def test_the_committed_split_is_the_split_its_seed_draws_half_of_each_family():
    stored = json.loads((ROOT / "benchmarks" / "broad_suite_split.json").read_text())
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import broad_suite
    finally:
        sys.path.pop(0)
    assert broad_suite.draw_split(stored["seed"]) == stored["halves"]
    dev, test = set(stored["halves"]["dev"]), set(stored["halves"]["test"])
    assert not dev & test and dev | test == set(broad_suite.PROBLEMS)
    for family in broad_suite.FAMILIES:
        members = {p for p, (f, _, _) in broad_suite.PROBLEMS.items() if f == family}
        assert len(members) >= 5 and len(members & dev) == len(members) // 2
    for _, bench, options in broad_suite.PROBLEMS.values():  # every problem builds (extras of the test set)
        load_benchmark(bench, **options)
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "broad_suite.py"), "list"], capture_output=True,
                         text=True, check=True).stdout
    assert len(out.splitlines()) == len(broad_suite.PROBLEMS)


def _run(seed, curve, finished=True):
    return {"seed": seed, "best_so_far": list(np.minimum.accumulate(curve)), "finished": finished}


def test_paired_comparison_pairs_by_seed_and_states_its_statistics():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import paired
    finally:
        sys.path.pop(0)
    from scipy.stats import binomtest, wilcoxon
    candidate = {"p1": {"new": [_run(0, [5, 3, 1]), _run(1, [4, 4, 4]), _run(2, [9, 9, 9], finished=False)]},
                 "p2": {"new": [_run(0, [10, 8]), _run(1, [10, 10])]},
                 "p3": {"new": [_run(0, [1, 1])]}}
    baseline = {"p1": {"auto": [_run(1, [4, 3, 3]), _run(0, [5, 3, 2]), _run(2, [0, 0, 0])], "plain": [_run(0, [0, 0])]},
                "p2": {"auto": [_run(0, [9, 9]), _run(1, [10, 7])]}}
    rows = paired.paired_table(candidate, baseline, "new", ["plain", "auto"], None)
    by = {r["problem"]: r for r in rows}
    assert set(by) == {"p1", "p2"}  # p3 has no baseline
    # per seed the first baseline method with a finished run of it; seeds paired, unfinished runs left out
    assert by["p1"]["baseline"] == "plain/auto" and by["p1"]["seeds"] == [0, 1]
    assert list(by["p1"]["diff"]) == [1.0, 1.0]  # seed 0 against plain's 0, seed 1 against auto's 3
    assert by["p2"]["baseline"] == "auto" and list(by["p2"]["diff"]) == [-1.0, 3.0]
    assert (by["p2"]["better"], by["p2"]["worse"], by["p2"]["tied"]) == (1, 1, 0)
    assert by["p2"]["se"] == pytest.approx(np.std([-1.0, 3.0], ddof=1) / np.sqrt(2))
    # after fewer evaluations
    early = paired.paired_table(candidate, baseline, "new", ["auto"], at=1)
    assert list({r["problem"]: r for r in early}["p1"]["diff"]) == [0.0, 0.0]
    s = paired.summary(rows)
    assert (s["better"], s["worse"], s["tied"]) == (1, 3, 0)
    assert s["sign_p"] == pytest.approx(binomtest(1, 4).pvalue)
    effects = [r["effect"] for r in rows if r["effect"] != 0]
    assert s["wilcoxon_p"] == pytest.approx(wilcoxon(effects).pvalue)


def test_proposal_distance_counts_changed_variables_from_the_incumbent_of_the_time():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import proposal_distance
    finally:
        sys.path.pop(0)
    rows = [({"a": 0, "b": 0, "c": "x"}, 5.0), ({"a": 1, "b": 1, "c": "x"}, 3.0),  # initial design
            ({"a": 1, "b": 0, "c": "y"}, 4.0),   # 2 from the incumbent (the second)
            ({"a": 0, "b": 1, "c": "x"}, 1.0),   # 1 from it, improves
            ({"a": 1, "b": 0, "c": "y"}, 2.0)]   # 3 from the new incumbent
    evals = [{"config": c, "value": v} for c, v in rows]
    assert proposal_distance.distances(evals, n_initial=2) == ([2, 1, 3], [1])
