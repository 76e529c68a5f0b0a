"""BOCS-SDP: the SDP relaxation with random-hyperplane rounding, and the optimizer built on it (real cvxpy)."""

import sys

import numpy as np
import pytest

import graphbo as gb
from graphbo.optim.sdp_relaxation import (
    binary_quadratic_values,
    ising_form,
    minimize_binary_quadratic_sdp,
    round_relaxation,
    solve_sdp_relaxation,
)
from graphbo.optimizers import METHODS, BOCSSDP
from support import binary_space

FAST = dict(n_burn=200, n_gibbs=20)


def grid(d):
    """All of {0, 1}^d, shape (2^d, d)."""
    return ((np.arange(2**d)[:, None] >> np.arange(d)) & 1).astype(np.int64)


def random_problem(rng, d, coupling=1.0):
    b = rng.standard_normal(d)
    U = np.triu(rng.standard_normal((d, d)), 1) * coupling
    return float(rng.standard_normal()), b, U + U.T


# -- the relaxation ------------------------------------------------------------------------


def test_ising_form_reproduces_the_binary_quadratic_everywhere():
    c, b, Q = random_problem(np.random.default_rng(0), 8)
    X = grid(8)
    C, c0 = ising_form(c, b, Q)
    z = np.hstack([2 * X - 1, np.ones((len(X), 1))])
    assert np.allclose(c0 + np.einsum("ni,ij,nj->n", z, C, z), binary_quadratic_values(c, b, Q, X=X))
    z[:, :] *= -1  # z and -z are the same x
    assert np.allclose(c0 + np.einsum("ni,ij,nj->n", z, C, z), binary_quadratic_values(c, b, Q, X=X))


@pytest.mark.parametrize("seed", range(8))
def test_relaxation_bounds_the_true_minimum_and_rounding_is_feasible(seed):
    rng = np.random.default_rng(seed)
    d = 10
    c, b, Q = random_problem(rng, d)
    exact = binary_quadratic_values(c, b, Q, X=grid(d))
    states, energies, rel = minimize_binary_quadratic_sdp(c, b, Q, rng=rng, n_roundings=100)
    assert rel.lower_bound <= exact.min() + 1e-9  # certified: no solver tolerance needed
    assert rel.lower_bound == pytest.approx(rel.value, abs=1e-5 * (1 + abs(rel.value)))  # strong duality
    assert np.allclose(np.diag(rel.Z), 1.0, atol=1e-6)
    assert np.allclose(rel.factor @ rel.factor.T, rel.Z, atol=1e-6)
    assert set(np.unique(states)) <= {0, 1} and states.shape == (100, d)
    assert np.allclose(energies, binary_quadratic_values(c, b, Q, X=states))
    # the rounded solution is a point of the cube: never below the minimum, and close to it here
    assert energies.min() >= exact.min() - 1e-9
    assert energies.min() - exact.min() <= 0.05 * (exact.max() - exact.min())


def test_the_relaxation_is_tight_and_rounding_exact_without_couplings():
    # separable: min is sum of min(b_i, 0); the SDP is tight and every rounding is the argmin
    rng = np.random.default_rng(3)
    b = rng.standard_normal(9)
    states, energies, rel = minimize_binary_quadratic_sdp(0.5, b, np.zeros((9, 9)), rng=rng, n_roundings=20)
    best = 0.5 + np.minimum(b, 0).sum()
    assert rel.lower_bound == pytest.approx(best, abs=1e-5)
    assert (states == (b < 0)).all()
    assert energies == pytest.approx(np.full(20, best))


def test_weakly_coupled_instances_are_solved_exactly():
    rng = np.random.default_rng(4)
    for _ in range(5):
        c, b, Q = random_problem(rng, 10, coupling=0.1)
        exact = binary_quadratic_values(c, b, Q, X=grid(10))
        states, energies, rel = minimize_binary_quadratic_sdp(c, b, Q, rng=rng, n_roundings=100)
        assert energies.min() == pytest.approx(exact.min())
        assert (states[np.argmin(energies)] == grid(10)[np.argmin(exact)]).all()


def test_max_cut_rounding_is_within_the_goemans_williamson_factor():
    # max cut of a random weighted graph as a binary quadratic: cut(x) = sum_ij w_ij (x_i + x_j - 2 x_i x_j);
    # minimise -cut. GW: a rounding cuts >= 0.878 times the SDP's bound on the max cut in expectation.
    rng = np.random.default_rng(5)
    d = 10
    W = np.triu(rng.random((d, d)) * (rng.random((d, d)) < 0.6), 1)
    W = W + W.T
    b = -W.sum(axis=1)
    Q = 2 * W  # x'Qx/2 = sum_{i<j} 2 w_ij x_i x_j
    exact_cut = -binary_quadratic_values(0.0, b, Q, X=grid(d)).min()
    states, energies, rel = minimize_binary_quadratic_sdp(0.0, b, Q, rng=rng, n_roundings=100)
    sdp_cut = -rel.lower_bound
    assert sdp_cut >= exact_cut - 1e-9
    assert -energies.mean() >= 0.878 * sdp_cut - 0.05 * sdp_cut  # mean of 100 draws, a few s.e. of slack
    assert -energies.min() >= 0.878 * sdp_cut


def test_rounding_is_seeded():
    c, b, Q = random_problem(np.random.default_rng(6), 8)
    rel = solve_sdp_relaxation(c, b, Q)
    a = round_relaxation(rel, np.random.default_rng(1), n_roundings=30)
    assert (a == round_relaxation(rel, np.random.default_rng(1), n_roundings=30)).all()


@pytest.mark.parametrize("bad, match", [
    (dict(b=np.ones(3), Q=np.ones((3, 3)) - np.eye(3) + np.diag([0, 0, 1.0])), "zero diagonal"),
    (dict(b=np.ones(3), Q=np.triu(np.ones((3, 3)), 1)), "symmetric"),
    (dict(b=np.ones(3), Q=np.zeros((2, 2))), "shape"),
])
def test_invalid_problems_are_refused(bad, match):
    with pytest.raises(ValueError, match=match):
        solve_sdp_relaxation(0.0, **bad)


# -- the optimizer ----------------------------------------------------------------------------


TARGET = [1, 0, 1, 1, 0, 0, 1, 0]


def quadratic(cfg):
    """Unique minimum 0 at TARGET."""
    x = [int(cfg[f"x{i}"]) for i in range(len(cfg))]
    return sum((1.0 + 0.1 * i) * (x[i] != TARGET[i]) for i in range(len(x))) + 0.5 * x[1] * x[4] + 0.3 * x[1] * x[2]


def sequence(seed, d=8, budget=14, n_initial=4):
    space = binary_space(d)
    opt = BOCSSDP(space, seed=seed, n_initial=n_initial, **FAST)
    rows = []
    for _ in range(budget):
        cfg = opt.ask()
        rows.append(tuple(space.to_index(cfg).tolist()))
        opt.tell(cfg, quadratic(cfg))
    return rows, opt


def test_registered_as_bocs_sdp():
    assert METHODS["bocs-sdp"] is BOCSSDP
    from graphbo.loop import make_optimizer

    assert isinstance(make_optimizer("bocs-sdp", binary_space(3), seed=0), BOCSSDP)


def test_same_seed_same_suggestions_other_seed_others():
    a, opt = sequence(3)
    assert opt.relaxation is not None  # the model-based suggestions came from the SDP
    assert a == sequence(3)[0]
    assert a != sequence(4)[0]


def test_finds_the_optimum_of_a_small_quadratic():
    rows, opt = sequence(0, budget=30, n_initial=5)
    assert opt.best.value == 0.0
    assert [int(opt.best.config[f"x{i}"]) for i in range(8)] == TARGET


def test_never_repeats_a_configuration_until_the_space_is_exhausted():
    space = binary_space(5)
    opt = BOCSSDP(space, seed=2, n_initial=3, **FAST)
    seen = set()
    for _ in range(space.size):
        cfg = opt.ask()
        key = tuple(space.to_index(cfg).tolist())
        assert key not in seen
        seen.add(key)
        opt.tell(cfg, quadratic(cfg))
    with pytest.raises(gb.SpaceExhaustedError):
        opt.ask()


def test_refuses_non_binary_spaces_naming_the_variables():
    space = gb.Space({"x0": gb.Binary(), "lr": gb.Ordinal([1, 2, 3]), "opt": gb.Categorical(["a", "b"])})
    with pytest.raises(ValueError, match=r"BOCSSDP handles Binary variables only.*'lr'.*'opt'"):
        BOCSSDP(space, seed=0)


def test_state_round_trip_continues_the_same_run():
    space = binary_space(6)
    a = BOCSSDP(space, seed=1, n_initial=3, **FAST)
    for _ in range(6):
        cfg = a.ask()
        a.tell(cfg, quadratic(cfg))
    b = BOCSSDP(space, seed=99, n_initial=3, **FAST)
    for h in a.history:  # the told data replayed, then the state
        b.tell(h.config, h.value)
    b.set_state(a.get_state())
    assert [a.ask() for _ in range(3)] == [b.ask() for _ in range(3)]


def test_a_missing_cvxpy_gives_the_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cvxpy", None)  # makes `import cvxpy` raise ImportError
    with pytest.raises(ImportError) as info:
        BOCSSDP(binary_space(3), seed=0)
    assert str(info.value) == 'BOCS-SDP needs cvxpy: pip install "graphbo[bocs]"'


@pytest.mark.parametrize("value, error", [(0, ValueError), (2.5, TypeError)])
def test_a_wrong_number_of_roundings_names_itself(value, error):
    with pytest.raises(error, match="n_roundings"):
        BOCSSDP(binary_space(3), n_roundings=value)
