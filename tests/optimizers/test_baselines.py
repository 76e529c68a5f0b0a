"""Baselines of the COMBO paper: simulated annealing, regularized evolution, BOCS-SA, random search."""

import numpy as np
import pytest

import graphbo as gb
from graphbo.optimizers.bocs import BOCS, HorseshoeGibbs, anneal_binary_quadratic, quadratic_features
from graphbo.optimizers.random_search import RandomSearch
from graphbo.optimizers.regularized_evolution import RegularizedEvolution
from graphbo.optimizers.simulated_annealing import SimulatedAnnealing
from support import binary_space

# small Gibbs chains keep the BOCS tests fast; the defaults are exercised once below
BOCS_FAST = dict(n_burn=200, n_gibbs=20)

MAKERS = {
    "sa": lambda space, **kw: SimulatedAnnealing(space, **kw),
    "re": lambda space, **kw: RegularizedEvolution(space, **kw),
    "bocs": lambda space, **kw: BOCS(space, **BOCS_FAST, **kw),
    "rs": lambda space, **kw: RandomSearch(space, **kw),
}
GRAPH_METHODS = ["sa", "re", "rs"]  # methods that take any discrete space

TARGET = [1, 0, 1, 1, 0, 0, 1, 0]
WEIGHTS = [1.0, 1.3, 0.7, 2.0, 1.1, 0.9, 1.6, 0.8]


def quadratic(cfg):
    """Quadratic function of binary variables with its unique minimum 0 at ``TARGET``."""
    x = [int(cfg[f"x{i}"]) for i in range(len(cfg))]
    value = sum(WEIGHTS[i] * (x[i] != TARGET[i]) for i in range(len(x)))
    return value + 0.5 * x[1] * x[4] - 0.3 * x[0] * x[2] + 0.3


def ordinal4_categorical_binary_space():
    return gb.Space({
        "a": gb.Ordinal([0, 1, 2, 3]),
        "b": gb.Categorical(["x", "y", "z"]),
        "c": gb.Binary(),
    })


def mixed_objective(cfg):
    return (cfg["a"] - 2) ** 2 + (0.0 if cfg["b"] == "z" else 1.5) + 0.5 * cfg["c"]


def run(opt, objective, budget, stop_at=None):
    for _ in range(budget):
        cfg = opt.ask()
        value = objective(cfg)
        opt.tell(cfg, value)
        if stop_at is not None and value <= stop_at:
            break
    return opt


# -- finding the optimum ------------------------------------------------------------


@pytest.mark.parametrize(
    "method, d, n_initial, budget",
    [("sa", 6, 4, 30), ("re", 8, 8, 50), ("bocs", 8, 5, 40), ("rs", 6, 4, 64)],
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_finds_the_optimum_of_a_small_binary_quadratic(method, d, n_initial, budget, seed):
    opt = run(MAKERS[method](binary_space(d), seed=seed, n_initial=n_initial), quadratic, budget, stop_at=0.0)
    assert opt.best.value == pytest.approx(0.0, abs=1e-12)
    assert [int(opt.best.config[f"x{i}"]) for i in range(d)] == TARGET[:d]


@pytest.mark.parametrize("method", ["sa", "re"])
def test_graph_baselines_find_the_optimum_of_a_mixed_space(method):
    # 24 configurations; the optimum is a=2, b="z", c=False
    opt = run(MAKERS[method](ordinal4_categorical_binary_space(), seed=3, n_initial=3), mixed_objective, 18,
              stop_at=0.0)
    assert opt.best.value == 0.0
    assert opt.best.config == {"a": 2, "b": "z", "c": False}


def test_bocs_with_default_settings_finds_the_optimum():
    opt = run(BOCS(binary_space(8), seed=0, n_initial=5), quadratic, 40, stop_at=0.0)
    assert opt.best.value == pytest.approx(0.0, abs=1e-12)


# -- respecting the space ---------------------------------------------------------------


@pytest.mark.parametrize("method", GRAPH_METHODS + ["bocs"])
def test_asks_valid_distinct_configs_until_the_space_is_exhausted(method):
    space = binary_space(5) if method == "bocs" else ordinal4_categorical_binary_space()
    objective = quadratic if method == "bocs" else mixed_objective
    opt = MAKERS[method](space, seed=5, n_initial=3)
    seen = set()
    for _ in range(space.size):
        cfg = opt.ask()
        space.validate(cfg)
        key = tuple(space.to_index(cfg).tolist())
        assert key not in seen
        seen.add(key)
        opt.tell(cfg, objective(cfg))
    assert len(seen) == space.size
    with pytest.raises(gb.SpaceExhaustedError):
        opt.ask()


@pytest.mark.parametrize("method", GRAPH_METHODS + ["bocs"])
def test_pending_asks_are_not_repeated(method):
    space = binary_space(5) if method == "bocs" else ordinal4_categorical_binary_space()
    objective = quadratic if method == "bocs" else mixed_objective
    opt = MAKERS[method](space, seed=6, n_initial=2)
    for _ in range(3):  # some history, then a batch of asks before any tell
        cfg = opt.ask()
        opt.tell(cfg, objective(cfg))
    batch = [opt.ask() for _ in range(6)]
    rows = {tuple(space.to_index(c).tolist()) for c in batch} | {tuple(r) for r in opt.X.tolist()}
    assert len(rows) == 9


# -- reproducibility and the shared initial design -----------------------------------


def _sequence(method, seed, space_fn, objective, budget):
    opt = run(MAKERS[method](space_fn(), seed=seed, n_initial=3), objective, budget)
    return [tuple(space_fn().to_index(h.config).tolist()) for h in opt.history]


@pytest.mark.parametrize("method", GRAPH_METHODS + ["bocs"])
def test_same_seed_same_run_different_seed_different_run(method):
    if method == "bocs":
        space_fn, objective, budget = (lambda: binary_space(8)), quadratic, 12
    else:
        space_fn, objective, budget = ordinal4_categorical_binary_space, mixed_objective, 12
    a = _sequence(method, 11, space_fn, objective, budget)
    b = _sequence(method, 11, space_fn, objective, budget)
    c = _sequence(method, 12, space_fn, objective, budget)
    assert a == b
    assert a != c


@pytest.mark.parametrize("method", GRAPH_METHODS + ["bocs"])
@pytest.mark.parametrize("seed, k", [(0, 5), (7, 3)])
def test_initial_design_is_the_same_as_combos(method, seed, k):
    space = binary_space(8)
    combo = gb.COMBO(binary_space(8), seed=seed, n_initial=k)
    opt = MAKERS[method](space, seed=seed, n_initial=k)
    assert [opt.ask() for _ in range(k)] == [combo.ask() for _ in range(k)]


# -- method-specific behaviour ---------------------------------------------------------


def test_bocs_rejects_a_space_with_a_non_binary_variable():
    space = gb.Space({"x0": gb.Binary(), "lr": gb.Ordinal([1, 2, 3]), "opt": gb.Categorical(["a", "b"])})
    with pytest.raises(ValueError, match="'lr'"):
        BOCS(space, seed=0)


def test_bocs_quadratic_features_order():
    F = quadratic_features(np.array([[1, 0, 1]]))
    # x0, x1, x2, x0x1, x0x2, x1x2
    assert F.tolist() == [[1.0, 0.0, 1.0, 0.0, 1.0, 0.0]]


def test_horseshoe_gibbs_recovers_a_sparse_linear_model():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(60, 10)).astype(float)
    beta = np.zeros(10)
    beta[[1, 6]] = [3.0, -2.0]
    y = X @ beta + 0.05 * rng.standard_normal(60)
    sampler = HorseshoeGibbs(10, np.random.default_rng(1))
    draws = [sampler.run(X, y - y.mean(), n_sweeps=1 if i else 300).copy() for i in range(200)]
    mean = np.mean(draws, axis=0)
    assert mean[1] == pytest.approx(3.0, abs=0.2)
    assert mean[6] == pytest.approx(-2.0, abs=0.2)
    assert np.abs(np.delete(mean, [1, 6])).max() < 0.3


def test_bocs_annealing_minimises_a_quadratic():
    rng = np.random.default_rng(0)
    d = 10
    Q = rng.standard_normal((d, d))
    Q = np.triu(Q, 1) + np.triu(Q, 1).T
    b = rng.standard_normal(d)
    grid = ((np.arange(2**d)[:, None] >> np.arange(d)) & 1).astype(float)
    exact = grid @ b + 0.5 * np.einsum("ri,ij,rj->r", grid, Q, grid)
    states, energies = anneal_binary_quadratic(0.0, b, Q, rng, 5, 300, 1.0, 0.8)
    x = states.astype(float)
    assert np.allclose(energies, x @ b + 0.5 * np.einsum("ri,ij,rj->r", x, Q, x))
    assert energies.min() == pytest.approx(exact.min())


def test_bocs_l1_penalty_changes_the_acquisition_only():
    space = binary_space(6)
    opt = BOCS(space, seed=0, n_initial=6, lam=100.0, **BOCS_FAST)
    run(opt, quadratic, 8)
    # a huge penalty on ||x||_1 drives the suggestions to the all-False corner
    assert sum(opt.history[6].config.values()) == 0
    assert opt.y.tolist() == [quadratic(h.config) for h in opt.history]


def test_re_children_respect_is_valid():
    # valid: at most two variables True
    def is_valid(cfg):
        return sum(cfg.values()) <= 2

    space = binary_space(6)
    opt = RegularizedEvolution(space, seed=0, n_initial=4, population_size=10, sample_size=3, is_valid=is_valid)
    initial = [opt.ask() for _ in range(4)]
    for cfg in initial:
        opt.tell(cfg, quadratic(cfg))
    n_valid = sum(1 for i in range(2**6) if bin(i).count("1") <= 2)  # 22
    remaining = n_valid - sum(is_valid(c) for c in initial)
    for _ in range(remaining):
        cfg = opt.ask()
        assert is_valid(cfg)
        opt.tell(cfg, quadratic(cfg))
    with pytest.raises(gb.SpaceExhaustedError):
        opt.ask()


def test_re_mutation_changes_exactly_one_variable_of_a_tournament_winner():
    space = ordinal4_categorical_binary_space()
    opt = RegularizedEvolution(space, seed=1, n_initial=4, population_size=4, sample_size=4)
    run(opt, mixed_objective, 4)
    best = space.to_index(opt.best.config)  # sample_size == population: the parent is the best
    child = space.to_index(opt.ask())
    assert int(np.sum(child != best)) == 1


def test_re_population_ages():
    opt = RegularizedEvolution(binary_space(6), seed=0, n_initial=5, population_size=5, sample_size=2)
    run(opt, quadratic, 12)
    assert [c for c, _ in opt.population] == [h.config for h in opt.history[-5:]]


def test_sa_proposes_graph_neighbours_of_the_current_state():
    space = ordinal4_categorical_binary_space()
    opt = SimulatedAnnealing(space, seed=4, n_initial=3)
    run(opt, mixed_objective, 3)
    for _ in range(6):
        current, _ = opt.current
        told = {tuple(r) for r in opt.X.tolist()}
        fresh = [n for n in space.neighbors(current) if tuple(space.to_index(n).tolist()) not in told]
        cfg = opt.ask()
        if fresh:
            assert cfg in fresh
        opt.tell(cfg, mixed_objective(cfg))


def test_sa_metropolis_rule_and_cooling():
    space = binary_space(6)
    opt = SimulatedAnnealing(space, seed=0, n_initial=1, initial_temperature=1.0, cooling=0.5)
    start = opt.ask()
    opt.tell(start, 0.0)
    assert opt.current == (start, 0.0)
    better = opt.ask()
    opt.tell(better, -1.0)  # downhill: always accepted
    assert opt.current == (better, -1.0)
    assert opt.temperature == 0.5
    worse = opt.ask()
    opt.tell(worse, 1e6)  # far uphill at T = 0.25: rejected
    assert opt.current == (better, -1.0)
    assert opt.temperature == 0.25


def test_constructor_arguments_are_checked():
    space = binary_space(4)
    with pytest.raises(ValueError):
        SimulatedAnnealing(space, cooling=0.0)
    with pytest.raises(ValueError):
        SimulatedAnnealing(space, initial_temperature=-1.0)
    with pytest.raises(ValueError):
        RegularizedEvolution(space, population_size=5, sample_size=6)
    with pytest.raises(ValueError):
        BOCS(space, sa_restarts=0)


def test_told_configs_leave_the_pending_set_in_a_mixed_space():
    # A continuous coordinate that does not survive value -> row bit for bit used to stay "pending".
    import graphbo as gb

    space = gb.Space({"a": gb.Continuous(1e-3, 10, log=True), "b": gb.Categorical(list("xyz")),
                      "n": gb.Integer(1, 5000, log=True)})
    opt = gb.RandomSearch(space, seed=0, n_initial=50)
    configs = opt.ask(50)
    assert opt.n_pending == 50
    for c in configs:
        opt.tell(c, 1.0)
    assert opt.n_pending == 0


def test_n_pending_counts_asked_and_untold_configurations():
    opt = RandomSearch(gb.Space({"a": gb.Binary(), "b": gb.Binary(), "c": gb.Binary()}), seed=0, n_initial=2)
    first, second = opt.ask(), opt.ask()
    assert opt.n_pending == 2
    opt.tell(first, 1.0)
    assert opt.n_pending == 1 and opt.n_told == 1
    opt.tell(second, 0.5)
    assert opt.n_pending == 0
