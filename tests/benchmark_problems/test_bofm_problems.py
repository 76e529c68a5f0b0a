"""BO-FM's hyper-parameter benchmarks (SVM: Table 2, XGBoost: Table 3) and RE's Gaussian mutation (supp. D.2)."""

import sys

import numpy as np
import pytest

import graphbo as gb
from graphbo.benchmarks import REGISTRY, load_benchmark
from graphbo.benchmarks.svm import SVM
from graphbo.benchmarks.xgboost_hpo import XGBoostHPO, stratified_split
from graphbo.optimizers.regularized_evolution import RegularizedEvolution
from graphbo.spaces.variables import Categorical, Continuous, IntegerRange, Ordinal

pytest.importorskip("sklearn")

SVM_DEFAULT = {"kernel": "rbf", "gamma": "scale", "shrinking": True, "C": 1.0, "tol": 1e-3, "nu": 0.5}
XGB_GOOD = {"max_depth": 6, "booster": "gbtree", "grow_policy": "depthwise", "objective": "multi:softprob",
            "eta": 0.3, "gamma": 1e-4, "subsample": 1.0, "lambda": 1.0}


def _check_continuous(var, low, high, log):
    assert type(var) is Continuous
    assert (var.low, var.high, var.log) == (pytest.approx(low), pytest.approx(high), log)


# -- SVM ------------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def svm():
    return SVM()


def test_svm_space_is_bofm_table_2(svm):
    space = svm.space
    assert space.names == ("kernel", "gamma", "shrinking", "C", "tol", "nu")
    assert isinstance(space["kernel"], Categorical)
    assert list(space["kernel"].values) == ["linear", "poly", "rbf", "sigmoid"]
    assert isinstance(space["gamma"], Categorical) and list(space["gamma"].values) == ["scale", "auto"]
    assert isinstance(space["shrinking"], Categorical) and set(space["shrinking"].values) == {True, False}
    _check_continuous(space["C"], 1e-4, 10.0, True)
    _check_continuous(space["tol"], 1e-6, 1.0, True)
    _check_continuous(space["nu"], 1e-6, 1.0, True)


def test_svm_registry_and_defaults():
    assert REGISTRY["svm"].target == "graphbo.benchmarks.svm:SVM"
    bench = load_benchmark("svm")
    assert bench.name == "svm" and bench.default_budget == 200 and bench.default_n_initial == 10


def test_svm_splits_are_seven_to_three_and_follow_the_reference_seeds(svm):
    n = 442
    for i, (tr, te) in enumerate(svm.splits):
        assert len(tr) == int(0.7 * n) and len(te) == n - int(0.7 * n)
        assert np.intersect1d(tr, te).size == 0 and np.union1d(tr, te).size == n
        perm = np.arange(n)
        np.random.RandomState(i * i).shuffle(perm)  # the reference code's split seeds for seed 0
        assert np.array_equal(tr, perm[: int(0.7 * n)])
    # the five splits differ from each other, and another seed gives other splits
    assert len({tuple(np.sort(tr)) for tr, _ in svm.splits}) == 5
    other = SVM(seed=1)
    assert not any(np.array_equal(a[0], b[0]) for a, b in zip(svm.splits, other.splits))


def test_svm_objective_is_deterministic_and_sensible(svm):
    v = svm(SVM_DEFAULT)
    assert v == svm(SVM_DEFAULT) == SVM()(SVM_DEFAULT)
    assert v == pytest.approx(np.mean(svm.rmse_per_split(SVM_DEFAULT)))
    # standardised target: a good model explains part of the variance, so RMSE well below 1
    assert 0.5 < v < 0.9
    # a degenerate model (tiny C and nu: almost no support vectors) is close to predicting a constant
    degenerate = svm({**SVM_DEFAULT, "C": 1e-4, "nu": 1e-6})
    assert 0.95 < degenerate < 1.5 and degenerate > v + 0.2
    # another seed: other splits, another (still sensible) value
    v1 = SVM(seed=1)(SVM_DEFAULT)
    assert v1 != v and 0.5 < v1 < 0.9


def test_svm_raw_target_is_on_the_target_scale():
    raw = SVM(standardize_target=False)(SVM_DEFAULT)
    std = SVM()(SVM_DEFAULT)
    assert 50 < raw < 100  # the diabetes target's standard deviation is about 77
    # with C <= 10 the raw-scale model is relatively worse (the reason the target is standardised)
    assert raw / 77.0 > std + 0.1


def test_svm_gamma_scale_equals_auto_on_standardised_features(svm):
    # 'scale' is 1 / (n_features * X.var()) and X.var() == 1 after standardisation: the choice is inert
    for kernel in ("rbf", "poly"):
        cfg = {**SVM_DEFAULT, "kernel": kernel}
        assert svm({**cfg, "gamma": "scale"}) == pytest.approx(svm({**cfg, "gamma": "auto"}), rel=1e-9)


def test_svm_rejects_configs_outside_the_space(svm):
    with pytest.raises(ValueError, match="C"):
        svm({**SVM_DEFAULT, "C": 100.0})
    with pytest.raises(ValueError, match="kernel"):
        svm({**SVM_DEFAULT, "kernel": "precomputed"})


def test_svm_evaluate_index_matches_call(svm):
    row = svm.space.to_index(SVM_DEFAULT)
    assert svm.evaluate_index(row) == pytest.approx(svm(svm.space.from_index(row)))


# -- XGBoost ----------------------------------------------------------------------------------------------------------
def test_xgboost_space_is_bofm_table_3():
    space = XGBoostHPO().space  # building the space needs no xgboost
    assert space.names == ("max_depth", "booster", "grow_policy", "objective", "eta", "gamma", "subsample", "lambda")
    assert isinstance(space["max_depth"], Ordinal) and list(space["max_depth"].values) == list(range(1, 11))
    assert isinstance(space["booster"], Categorical) and list(space["booster"].values) == ["gbtree", "dart"]
    assert list(space["grow_policy"].values) == ["depthwise", "lossguide"]
    assert list(space["objective"].values) == ["multi:softmax", "multi:softprob"]
    _check_continuous(space["eta"], 1e-6, 1.0, True)
    _check_continuous(space["gamma"], 1e-4, 10.0, True)
    _check_continuous(space["subsample"], 1e-3, 1.0, True)
    _check_continuous(space["lambda"], 0.0, 5.0, False)
    bench = load_benchmark("xgboost")
    assert bench.name == "xgboost" and bench.default_budget == 100 and bench.default_n_initial == 10


def test_stratified_split_keeps_class_proportions():
    labels = np.repeat(np.arange(4), [10, 20, 7, 13])
    for seed in (None, 3):
        tr, te = stratified_split(labels, 0.7, seed=seed)
        assert np.intersect1d(tr, te).size == 0 and np.union1d(tr, te).size == labels.size
        for c, n in enumerate([10, 20, 7, 13]):
            assert np.sum(labels[tr] == c) == int(0.7 * n)
    tr, _ = stratified_split(labels, 0.7, seed=None)  # data order: each class's first 70 %
    assert np.array_equal(tr[labels[tr] == 1], np.arange(10, 24))
    tr3, _ = stratified_split(labels, 0.7, seed=3)
    assert not np.array_equal(tr3, tr) and np.array_equal(tr3, stratified_split(labels, 0.7, seed=3)[0])


def test_xgboost_split_on_digits():
    bench = XGBoostHPO()
    assert bench.train_index.size + bench.test_index.size == 1797
    assert abs(bench.test_index.size - 0.3 * 1797) < 10


def test_xgboost_objective_is_deterministic_and_sensible():
    pytest.importorskip("xgboost")
    bench = XGBoostHPO()
    errors = bench.test_errors(XGB_GOOD)
    assert errors.shape == (50,)
    value = bench(XGB_GOOD)
    assert value == errors.min() == XGBoostHPO()(XGB_GOOD)
    assert 0.0 < value < 0.1  # a reasonable model classifies digits well
    # a learning rate of 1e-6 leaves the model where it started: chance-level error
    degenerate = bench({**XGB_GOOD, "eta": 1e-6})
    assert degenerate > 0.5
    # the error is a multiple of 1 / n_test
    n_test = bench.test_index.size
    assert value * n_test == pytest.approx(round(value * n_test))


def test_xgboost_missing_names_the_install(monkeypatch):
    bench = XGBoostHPO()
    monkeypatch.setitem(sys.modules, "xgboost", None)  # makes `import xgboost` fail
    with pytest.raises(ImportError, match="pip install xgboost-cpu"):
        bench(XGB_GOOD)


# -- regularized evolution: Gaussian mutation on mixed spaces (BO-FM supp. D.2) -------------------------------------------
def ordinal_categorical_log_scaled_space():
    return gb.Space({
        "a": gb.Ordinal([0, 1, 2, 3]),
        "b": gb.Categorical(["x", "y", "z"]),
        "u": gb.Continuous(-2.0, 3.0),
        "lr": gb.Continuous(1e-5, 1e-1, log=True),
        "n": gb.Integer(1, 1000, log=True),
    })


def test_re_gaussian_mutation_changes_exactly_one_variable_and_stays_in_bounds():
    space = ordinal_categorical_log_scaled_space()
    assert isinstance(space["n"], IntegerRange)
    opt = RegularizedEvolution(space, seed=0)
    rng = np.random.default_rng(1)
    changed_count = np.zeros(len(space), dtype=int)
    steps = []
    for parent in space.sample_index(400, rng):
        child = opt._mutate(parent, set())
        diff = np.flatnonzero(child != parent)
        assert diff.size == 1
        j = int(diff[0])
        changed_count[j] += 1
        config = space.from_index(child)
        space.validate(config)  # in bounds, right types
        assert np.all((child[space.continuous_indices] >= 0) & (child[space.continuous_indices] <= 1))
        if j in (2, 3):
            steps.append(child[j] - parent[j])
        if j == 4:  # integer: moves to another integer
            assert isinstance(config["n"], int) and config["n"] != space.from_index(parent)["n"]
    # every variable is mutated, each about 1/5 of the time
    assert np.all(changed_count > 40), changed_count
    # Gaussian steps of standard deviation 0.01 in unit coordinates (clipping only shrinks them)
    steps = np.abs(np.array(steps))
    assert 0.004 < steps.mean() < 0.01 and steps.max() < 0.06


def test_re_mutation_std_is_configurable():
    space = ordinal_categorical_log_scaled_space()
    opt = RegularizedEvolution(space, seed=0, mutation_std=0.1)
    parent = space.to_index({"a": 1, "b": "y", "u": 0.5, "lr": 1e-3, "n": 30})
    steps = []
    for _ in range(300):
        child = opt._mutate(parent, set())
        if child[2] != parent[2]:
            steps.append(child[2] - parent[2])
    assert 0.06 < np.std(steps) < 0.14
    with pytest.raises(ValueError, match="mutation_std"):
        RegularizedEvolution(space, mutation_std=0.0)
    with pytest.raises(ValueError, match="mutation"):
        RegularizedEvolution(space, mutation="two")


def test_re_pair_mutation_changes_one_continuous_and_one_discrete_variable():
    space = ordinal_categorical_log_scaled_space()
    opt = RegularizedEvolution(space, seed=0, mutation="pair")
    cont = set(space.continuous_indices.tolist())
    for parent in space.sample_index(200, np.random.default_rng(2)):
        child = opt._mutate(parent, set())
        diff = set(np.flatnonzero(child != parent).tolist())
        assert len(diff & cont) == 1 and len(diff - cont) == 1
        space.validate(space.from_index(child))


def test_re_runs_on_a_mixed_space_and_improves():
    space = gb.Space({"c": gb.Categorical(["p", "q", "r"]), "x": gb.Continuous(0.0, 1.0),
                      "y": gb.Continuous(0.0, 1.0)})

    def f(cfg):
        return (cfg["x"] - 0.3) ** 2 + (cfg["y"] - 0.6) ** 2 + (0.0 if cfg["c"] == "q" else 0.5)

    opt = RegularizedEvolution(space, seed=0, n_initial=10, population_size=10, sample_size=3)
    values = []
    for _ in range(150):
        cfg = opt.ask()
        space.validate(cfg)
        values.append(f(cfg))
        opt.tell(cfg, values[-1])
    assert min(values) < min(values[:10]) - 0.02
    assert opt.best.config["c"] == "q"


# the 40 suggestions of the purely discrete RE before Gaussian mutation existed (seed 7): unchanged
DISCRETE_TRACE = [
    [2, 2, 1, 1], [1, 2, 0, 4], [3, 1, 0, 1], [1, 1, 1, 2], [3, 2, 1, 4], [0, 2, 0, 4], [2, 1, 1, 1], [3, 1, 1, 4],
    [1, 0, 0, 4], [0, 0, 0, 4], [2, 2, 1, 4], [3, 2, 0, 4], [3, 1, 0, 4], [1, 0, 1, 4], [1, 1, 0, 4], [2, 2, 1, 3],
    [2, 2, 0, 4], [2, 0, 0, 4], [2, 2, 1, 2], [2, 2, 0, 3], [2, 0, 0, 2], [1, 2, 0, 3], [2, 0, 1, 3], [3, 2, 1, 3],
    [3, 2, 0, 3], [1, 2, 1, 3], [0, 2, 0, 3], [1, 2, 0, 2], [1, 1, 1, 3], [3, 2, 1, 0], [3, 2, 0, 1], [0, 2, 0, 2],
    [1, 2, 0, 1], [1, 2, 1, 2], [1, 2, 1, 1], [0, 2, 1, 2], [3, 2, 1, 1], [3, 0, 0, 1], [3, 0, 1, 1], [3, 1, 1, 1],
]


@pytest.mark.parametrize("mutation", ["one", "pair"])
def test_re_discrete_behaviour_is_unchanged(mutation):
    space = gb.Space({"a": gb.Ordinal([0, 1, 2, 3]), "b": gb.Categorical(["x", "y", "z"]), "c": gb.Binary(),
                      "d": gb.Categorical(list(range(5)))})

    def f(c):
        return (c["a"] - 2) ** 2 + (0 if c["b"] == "z" else 1.5) + 0.5 * c["c"] + abs(c["d"] - 3) * 0.7

    opt = RegularizedEvolution(space, seed=7, n_initial=5, population_size=8, sample_size=3, mutation=mutation)
    rows = []
    for _ in range(40):
        cfg = opt.ask()
        opt.tell(cfg, f(cfg))
        rows.append(space.to_index(cfg).tolist())
    assert rows == DISCRETE_TRACE
