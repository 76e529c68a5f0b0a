"""Ising sparsification, contamination control and pest control benchmarks.

Values are checked against hand-derived facts and against independent,
straightforward loop implementations of the definitions (COMBO supplement
Secs. 4.1.1, 4.1.2, 4.2.2).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from graphbo.benchmarks import REGISTRY, load_benchmark
from graphbo.benchmarks.contamination import Contamination
from graphbo.benchmarks.ising import Ising
from graphbo.benchmarks.pest_control import PestControl


@pytest.fixture(scope="module")
def ising():
    return Ising(seed=3)


# -- Ising ------------------------------------------------------------------


def _kl_by_enumeration(bench: Ising, x) -> float:
    """KL(p || q) from the definition: full J matrices, all 2^16 states, sum p log(p/q)."""
    n = 16
    jp = np.zeros((n, n))
    for (i, j), v in zip(bench.edges, bench.interactions):
        jp[i, j] = jp[j, i] = v
    jq = np.zeros((n, n))
    for (i, j), v, keep in zip(bench.edges, bench.interactions, x):
        if keep:
            jq[i, j] = jq[j, i] = v
    z = np.array(list(itertools.product([-1.0, 1.0], repeat=n)))
    ep = np.einsum("si,ij,sj->s", z, jp, z)  # z^T J z
    eq = np.einsum("si,ij,sj->s", z, jq, z)
    log_p = ep - np.log(np.sum(np.exp(ep)))
    log_q = eq - np.log(np.sum(np.exp(eq)))
    return float(np.sum(np.exp(log_p) * (log_p - log_q)))


def test_ising_structure(ising):
    assert len(ising.space) == 24
    assert len(set(ising.edges)) == 24
    for i, j in ising.edges:  # grid neighbours, row-major 4 x 4
        assert (j - i == 1 and i // 4 == j // 4) or j - i == 4
    mags = np.abs(ising.interactions)
    assert np.all((mags >= 0.05) & (mags <= 5.0))
    assert ising.default_budget == 170 and ising.default_n_initial == 20


def test_ising_kl_zero_when_every_edge_kept(ising):
    assert ising.evaluate_index(np.ones(24, dtype=int)) == pytest.approx(0.0, abs=1e-10)
    assert ising({name: True for name in ising.space.names}) == pytest.approx(0.0, abs=1e-10)


def test_ising_kl_positive_when_every_edge_dropped(ising):
    assert ising.evaluate_index(np.zeros(24, dtype=int)) > 0.1


def test_ising_kl_matches_definition(ising):
    rng = np.random.default_rng(0)
    for x in [np.zeros(24, dtype=int), rng.integers(0, 2, 24)]:
        assert ising.kl_divergence(x) == pytest.approx(_kl_by_enumeration(ising, x), rel=1e-9, abs=1e-10)


def test_ising_lambda_term_is_exact(ising):
    lam = 1e-2
    reg = Ising(lamda=lam, seed=3)
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = rng.integers(0, 2, 24)
        assert reg.evaluate_index(x) - ising.evaluate_index(x) == pytest.approx(lam * x.sum(), abs=1e-12)


def test_ising_seed(ising):
    x = np.random.default_rng(2).integers(0, 2, 24)
    assert np.array_equal(Ising(seed=3).interactions, ising.interactions)
    assert Ising(seed=3).evaluate_index(x) == ising.evaluate_index(x)
    other = Ising(seed=4)
    assert not np.allclose(other.interactions, ising.interactions)
    assert other.evaluate_index(x) != ising.evaluate_index(x)


# -- contamination control --------------------------------------------------


def _contamination_by_loop(bench: Contamination, x, lamda: float) -> float:
    """Eq. (13) with the reference's epsilon offset, one sample and stage at a time."""
    d, t = bench.alphas.shape
    total = 0.0
    for i in range(d):
        total += 1.0 * x[i]  # c_i = 1
    for i in range(d):
        n_over = 0
        for k in range(t):
            z = bench.init_z[k]
            for s in range(i + 1):
                z = bench.alphas[s, k] * (1 - x[s]) * (1 - z) + (1 - bench.gammas[s, k] * x[s]) * z
            if not z < 0.1:
                n_over += 1
        total += 1.0 * (n_over / t - 0.05)  # rho = 1
    return total + lamda * sum(x)


D = 25  # stages, as the reference code and the paper's reported values


def test_contamination_structure():
    b = Contamination()
    assert len(b.space) == D
    assert b.init_z.shape == (100,) and b.alphas.shape == (D, 100) and b.gammas.shape == (D, 100)
    assert b.default_budget == 270 and b.default_n_initial == 20
    assert Contamination(n_stages=21).alphas.shape == (21, 100)


def test_contamination_all_zero_is_penalty_only():
    b = Contamination(seed=5)
    x = np.zeros(D, dtype=int)
    # no prevention: z_i = alpha_i (1 - z_{i-1}) + z_{i-1}, no cost
    z = b.init_z.copy()
    expected = 0.0
    for i in range(D):
        z = b.alphas[i] * (1 - z) + z
        expected += np.mean(z >= 0.1) - 0.05
    assert b.evaluate_index(x) == pytest.approx(expected, abs=1e-12)
    assert b.evaluate_index(x) == pytest.approx(_contamination_by_loop(b, x, 0.0), abs=1e-12)
    # contamination never decreases without prevention, so the penalty is at most d (1 - eps)
    assert b.evaluate_index(x) <= D * 0.95 + 1e-12


def test_contamination_matches_loop_with_lambda():
    lam = 1e-2
    b = Contamination(lamda=lam, seed=6)
    rng = np.random.default_rng(3)
    for x in [np.ones(D, dtype=int), rng.integers(0, 2, D)]:
        assert b.evaluate_index(x) == pytest.approx(_contamination_by_loop(b, x, lam), abs=1e-12)
    x = rng.integers(0, 2, D)
    assert b.evaluate_index(x) - Contamination(seed=6).evaluate_index(x) == pytest.approx(lam * x.sum(), abs=1e-12)


def test_contamination_seed():
    x = np.random.default_rng(4).integers(0, 2, D)
    a = Contamination(seed=7)
    assert Contamination(seed=7).evaluate_index(x) == a.evaluate_index(x) == a.evaluate_index(x)
    other = Contamination(seed=8)
    assert not np.allclose(other.alphas, a.alphas)
    assert other.evaluate_index(x) != a.evaluate_index(x)
    config = a.space.from_index(x)
    assert a(config) == a.evaluate_index(x)


# -- pest control -----------------------------------------------------------


def _pest_by_loop(bench: PestControl, x) -> float:
    """The reference's scoring rules, stage by stage, simulation by simulation."""
    n, t = bench.spread_rates.shape
    price = {1: 1.0, 2: 0.8, 3: 0.7, 4: 0.5}
    discount = {1: 0.2, 2: 0.3, 3: 0.3, 4: 0.0}
    tolerance = {1: 1.0 / 7.0, 2: 2.5 / 7.0, 3: 2.0 / 7.0, 4: 0.5 / 7.0}
    beta = {1: 2.0 / 7.0, 2: 3.0 / 7.0, 3: 3.0 / 7.0, 4: 5.0 / 7.0}
    paid = 0.0
    infested = 0.0
    z = list(bench.init_fraction)
    for i in range(n):
        a = int(x[i])
        infested += sum(1 for k in range(t) if z[k] > 0.1) / t
        if a > 0:
            effect = [1.0 - (1.0 - bench.control_uniforms[i, k]) ** (1.0 / beta[a]) for k in range(t)]
            z = [(1.0 - effect[k]) * z[k] for k in range(t)]
            beta[a] += tolerance[a] / n
            paid += price[a] * (1.0 - discount[a] / n * sum(1 for v in x if v == a))
        else:
            z = [bench.spread_rates[i, k] * (1.0 - z[k]) + z[k] for k in range(t)]
    return paid + infested


def test_pest_structure():
    b = PestControl()
    assert len(b.space) == 25
    assert all(list(v.values) == [0, 1, 2, 3, 4] and v.kind == "categorical" for v in b.space.variables)
    assert b.default_budget == 320 and b.default_n_initial == 20


def test_pest_all_zero_pays_no_price():
    b = PestControl(seed=9)
    x = np.zeros(25, dtype=int)
    assert b.price_paid(x) == 0.0
    # no pesticide: pest fraction only grows; value = sum over stations of the infested share on arrival
    z = b.init_fraction.copy()
    expected = 0.0
    for i in range(25):
        expected += np.mean(z > 0.1)
        z = b.spread_rates[i] * (1 - z) + z
    assert b.evaluate_index(x) == pytest.approx(expected, abs=1e-12)
    assert b.evaluate_index(x) == pytest.approx(_pest_by_loop(b, x), abs=1e-12)


def test_pest_matches_loop():
    b = PestControl(seed=10)
    rng = np.random.default_rng(5)
    for x in [rng.integers(0, 5, 25), np.array([1] * 12 + [2, 3, 4, 0] * 3 + [4])]:
        assert b.evaluate_index(x) == pytest.approx(_pest_by_loop(b, x), abs=1e-10)


def test_pest_price_by_hand():
    b = PestControl()
    x = np.zeros(25, dtype=int)
    x[:5] = 1  # five uses of pesticide 1: each at 1.0 * (1 - 0.2 * 5 / 25)
    x[5] = 4  # one use of pesticide 4, no discount
    assert b.price_paid(x) == pytest.approx(5 * (1 - 0.2 * 5 / 25) + 0.5, abs=1e-12)


def test_pest_seed():
    x = np.random.default_rng(6).integers(0, 5, 25)
    a = PestControl(seed=11)
    assert PestControl(seed=11).evaluate_index(x) == a.evaluate_index(x) == a.evaluate_index(x)
    assert PestControl(seed=12).evaluate_index(x) != a.evaluate_index(x)
    assert a(a.space.from_index(x)) == a.evaluate_index(x)


def test_pest_graph_changes_the_space_not_the_objective():
    complete, path = PestControl(seed=4), PestControl(seed=4, graph="path")
    assert all(v.kind == "ordinal" for v in path.space.variables)
    adjacency = path.space.variables[0].adjacency
    assert np.array_equal(adjacency, np.eye(5, k=1) + np.eye(5, k=-1))  # 0 - 1 - 2 - 3 - 4, unit edges
    x = np.random.default_rng(8).integers(0, 5, (6, 25))
    assert [path.evaluate_index(r) for r in x] == [complete.evaluate_index(r) for r in x]
    with pytest.raises(ValueError, match="graph must be one of"):
        PestControl(graph="ring")


def test_pest_noisy_scores_each_plan_with_its_own_stream():
    noisy, fixed = PestControl(seed=3, noisy=True), PestControl(seed=3)
    x, y = np.random.default_rng(9).integers(0, 5, (2, 25))
    assert noisy.evaluate_index(x) == noisy.evaluate_index(x) == PestControl(seed=3, noisy=True).evaluate_index(x)
    streams = [noisy.stream_of(r) for r in (x, y)] + [fixed.stream_of(x)]
    assert not np.array_equal(streams[0][1], streams[1][1]) and not np.array_equal(streams[0][1], streams[2][1])
    assert fixed.stream_of(x)[1] is fixed.spread_rates
    by_loop = PestControl(seed=3)
    by_loop.init_fraction, by_loop.spread_rates, by_loop.control_uniforms = streams[0]
    assert noisy.evaluate_index(x) == pytest.approx(_pest_by_loop(by_loop, x), abs=1e-10)
    assert noisy.evaluate_index(x) != fixed.evaluate_index(x)
    assert PestControl(seed=4, noisy=True).evaluate_index(x) != noisy.evaluate_index(x)
    with pytest.raises(ValueError, match="noisy must be true or false"):
        PestControl(noisy="yes")
    with pytest.raises(ValueError, match="give an integer seed"):
        PestControl(seed=None, noisy=True)


# -- registry ---------------------------------------------------------------


@pytest.mark.parametrize("name, cls", [("contamination", Contamination), ("ising", Ising), ("pestcontrol", PestControl)])
def test_registry(name, cls):
    assert REGISTRY[name].needs == ()
    bench = load_benchmark(name)
    assert isinstance(bench, cls) and bench.name == name
    row = bench.space.sample_index(1, seed=0)[0]
    assert math.isfinite(bench.evaluate_index(row))


def test_bad_lambda():
    with pytest.raises(ValueError):
        Contamination(lamda=-1.0)
    with pytest.raises(ValueError):
        Ising(lamda=float("nan"))
