"""The compiled transport solver (graphbo.nas.distance.transport_jit) against POT, and BatchOTMANN with it."""

import os
import subprocess
import sys
import types

import numpy as np
import pytest

pytest.importorskip("numba")

from ot.lp.emd_wrap import emd_c  # noqa: E402

from graphbo.nas.distance import transport_jit as tj  # noqa: E402
from graphbo.nas.domain.generate import random_cnn, random_mlp  # noqa: E402
from graphbo.nas.domain.modifiers import mutate  # noqa: E402
from graphbo.nas.distance.otmann import OTMANN  # noqa: E402
from graphbo.nas.distance.otmann_batch import BatchOTMANN  # noqa: E402
from graphbo.nas.domain.space import ArchitectureSpace  # noqa: E402


def pot_cost(a, b, C):
    """POT's optimal cost (on costs shifted to be nonnegative: a constant shift adds its
    multiple of the total mass to every plan's cost)."""
    shift = min(0.0, float(C.min()))
    G, cost, _, _, code = emd_c(a, b * (a.sum() / b.sum()), np.ascontiguousarray(C - shift), 10**7, 1)
    assert code == 1
    return cost + shift * a.sum()


def problem(rng, kind, n1, n2):
    """A random problem of one of several (mostly degenerate) kinds."""
    if kind == "random":
        a, b, C = rng.random(n1), rng.random(n2), rng.random((n1, n2))
    elif kind == "equal-masses-integer-costs":  # many ties in masses and costs
        a, b, C = np.ones(n1), np.ones(n2), rng.integers(0, 3, (n1, n2)).astype(float)
    elif kind == "zero-masses":
        a = rng.random(n1) * (rng.random(n1) < 0.6)
        b = rng.random(n2) * (rng.random(n2) < 0.6)
        a[rng.integers(n1)] += 0.5
        b[rng.integers(n2)] += 0.5
        C = rng.integers(0, 4, (n1, n2)).astype(float)
    elif kind == "a-equals-b":
        n2 = n1
        a = rng.integers(1, 4, n1).astype(float)
        b = a.copy()
        C = np.abs(np.arange(n1)[:, None] - np.arange(n1)[None, :]).astype(float)
        C[rng.random(C.shape) < 0.3] += 1.0
    elif kind == "identical-rows":
        a, b = rng.integers(1, 3, n1).astype(float), rng.integers(1, 3, n2).astype(float)
        C = np.tile(rng.integers(0, 3, (1, n2)), (n1, 1)).astype(float)
    elif kind == "identical-columns":
        a, b = rng.random(n1), np.full(n2, 0.25)
        C = np.tile(rng.random((n1, 1)), (1, n2))
    elif kind == "constant-cost":
        a, b, C = rng.random(n1), rng.random(n2), np.full((n1, n2), 0.7)
    elif kind == "signed-costs":
        a, b, C = rng.random(n1), rng.random(n2), rng.normal(size=(n1, n2)) * 100.0
    else:  # pragma: no cover
        raise ValueError(kind)
    return a / a.sum(), b / b.sum(), C


KINDS = ["random", "equal-masses-integer-costs", "zero-masses", "a-equals-b", "identical-rows",
         "identical-columns", "constant-cost", "signed-costs"]


def assert_feasible(G, a, b):
    assert G.shape == (a.size, b.size)
    assert G.min() >= 0.0
    np.testing.assert_allclose(G.sum(1), a, rtol=0, atol=1e-12)
    np.testing.assert_allclose(G.sum(0), b, rtol=0, atol=1e-12)


# -- one problem ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_optimal_cost_equals_pot_and_plan_is_feasible(kind):
    rng = np.random.default_rng(KINDS.index(kind))
    sizes = [(1, 1), (1, 7), (9, 1), (2, 2), (30, 30), (30, 1), (1, 30)]
    sizes += [tuple(rng.integers(1, 31, 2)) for _ in range(150)]
    pivots = 0
    for n1, n2 in sizes:
        a, b, C = problem(rng, kind, int(n1), int(n2))
        G, cost, status, it, basis = tj.transport(a, b, C)
        assert status == tj.OPTIMAL
        assert abs(cost - pot_cost(a, b, C)) <= 1e-10 * max(1.0, np.abs(C).max())
        assert abs(cost - float((G * C).sum())) <= 1e-12 * max(1.0, np.abs(C).max())
        assert_feasible(G, a, b)
        # a basis: n1 + n2 - 1 distinct cells (of the rows and columns with mass)
        assert basis.bi.size == basis.rows.size + basis.cols.size - 1
        assert len(set(zip(basis.bi.tolist(), basis.bj.tolist()))) == basis.bi.size
        assert np.count_nonzero(G) <= basis.bi.size
        pivots += it
        # re-solving from its own optimal basis takes no pivot
        G2, cost2, status2, it2, _ = tj.transport(a, b, C, basis=basis)
        assert status2 == tj.OPTIMAL and it2 == 0 and cost2 == cost
    if kind in ("random", "signed-costs"):
        assert pivots > 0  # the greedy start is not always optimal: the simplex does work


def test_a_problem_with_a_known_optimum():
    # row 1 sends 0.25 to column 1 (cost 0) and the rest to column 0 (3; column 2 costs 5),
    # row 0 all to column 2 (1): 0.75 + 0.5; sending row 0 to column 0 instead costs 1.5
    a = np.array([0.5, 0.5])
    b = np.array([0.25, 0.25, 0.5])
    C = np.array([[0.0, 2.0, 1.0], [3.0, 0.0, 5.0]])
    G, cost, status, _, _ = tj.transport(a, b, C)
    np.testing.assert_allclose(G, [[0.0, 0.0, 0.5], [0.25, 0.25, 0.0]], rtol=0, atol=1e-15)
    assert status == tj.OPTIMAL and cost == pytest.approx(1.25, abs=1e-15)
    assert cost == pytest.approx(pot_cost(a, b, C), abs=1e-15)


def test_warm_starts_equal_cold_solves():
    rng = np.random.default_rng(11)
    warm_pivots = cold_pivots = 0
    for _ in range(200):
        n1, n2 = (int(v) for v in rng.integers(2, 26, 2))
        a, b, L = problem(rng, ["random", "equal-masses-integer-costs", "zero-masses"][_ % 3], n1, n2)
        S = np.abs(rng.normal(size=(n1, n2)))  # the costs change with nu, the masses do not
        _, c0, s0, _, basis = tj.transport(a, b, L + 0.1 * S)
        assert s0 == tj.OPTIMAL
        for nu in (0.2, 0.4, 0.8):
            C = L + nu * S
            Gw, cw, sw, itw, basis_w = tj.transport(a, b, C, basis=basis)
            Gc, cc, sc, itc, _ = tj.transport(a, b, C)
            assert sw == sc == tj.OPTIMAL
            assert abs(cw - cc) <= 1e-12 and abs(cw - pot_cost(a, b, C)) <= 1e-10
            assert_feasible(Gw, a, b)
            warm_pivots += itw
            cold_pivots += itc
            basis = basis_w
    assert warm_pivots < cold_pivots  # and the warm start does save work
    with pytest.raises(ValueError, match="other masses"):
        a, b, C = problem(rng, "random", 3, 4)
        _, _, _, _, basis = tj.transport(a, b, C)
        tj.transport(np.array([0.5, 0.0, 0.5]), b, C, basis=basis)


def test_the_iteration_cap_is_reported():
    rng = np.random.default_rng(5)
    a, b, C = problem(rng, "random", 20, 20)
    G, cost, status, it, _ = tj.transport(a, b, C)
    assert status == tj.OPTIMAL and it > 1
    G1, cost1, status1, it1, _ = tj.transport(a, b, C, max_iter=1)
    assert status1 == tj.ITERATION_LIMIT and it1 == 1 and cost1 > cost + 1e-12
    assert_feasible(G1, a, b)  # a feasible, not optimal, plan


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="shape"):
        tj.transport(np.ones(2), np.ones(3), np.ones((3, 2)))
    with pytest.raises(ValueError, match="nonnegative"):
        tj.transport(np.array([1.0, -0.5]), np.ones(2), np.ones((2, 2)))
    G, cost, status, it, basis = tj.transport(np.zeros(2), np.ones(2), np.ones((2, 2)))
    assert cost == 0.0 and not G.any() and basis is None


# -- BatchOTMANN ---------------------------------------------------------------------------------------
def networks(domain, n, seed):
    """A third random networks of 5 to 40 layers, the initial pool, and mutations of them."""
    space = ArchitectureSpace(domain)
    rng = np.random.default_rng(seed)
    if domain == "cnn":
        out = [random_cnn(rng, n_layers=int(rng.integers(5, 41))) for _ in range(n // 3)]
    else:
        task = "regression" if domain == "mlp-reg" else "classification"
        out = [random_mlp(rng, n_layers=int(rng.integers(4, 41)), task=task) for _ in range(n // 3)]
    out += space.initial_pool()
    while len(out) < n:
        child = mutate(out[int(rng.integers(len(out)))], rng, is_valid=space.constraints)
        if child is not None:
            out.append(child)
    return out[:n]


@pytest.mark.parametrize("domain,nu_strs", [
    ("cnn", (0.1, 0.2, 0.4, 0.8)),
    ("cnn", (0.8, 0.05, 0.3, 0.1, 1.6, 0.2, 0.4)),  # unsorted, more bisection
    ("cnn", (0.3,)),
    ("cnn", (0.1, 0.8)),
    ("mlp-reg", (0.1, 0.2, 0.4, 0.8)),
    ("mlp-class", (0.1, 0.25, 0.6)),
])
def test_cross_equals_pot(domain, nu_strs):
    refs = networks(domain, 30, seed=1)
    cands = networks(domain, 24, seed=2)
    ot = OTMANN("cnn" if domain == "cnn" else "mlp")
    pot = BatchOTMANN(ot, nu_strs=nu_strs, n_jobs=1, solver="pot")
    jit = BatchOTMANN(ot, nu_strs=nu_strs, n_jobs=1, solver="numba")
    assert pot.solver == "pot" and jit.solver == "numba"
    D0, Db0 = pot.cross(cands, refs)
    D1, Db1 = jit.cross(cands, jit.stack(refs))
    assert D1.shape == (len(nu_strs), len(cands), len(refs))
    np.testing.assert_allclose(D1, D0, rtol=1e-9, atol=0)
    np.testing.assert_allclose(Db1, Db0, rtol=1e-9, atol=0)
    assert (D0 > 0).mean() > 0.9  # distinct networks: the comparison is not trivial
    assert jit.solves > 0 and jit.pivots > 0 and jit.fallbacks == 0
    # the same concavity logic: about as many solves as POT's (plans may differ at ties)
    assert abs(jit.solves - pot.solves) <= 0.05 * pot.solves
    # and the exact reference (OTMANN.pairwise) on a few rows
    D2, _ = ot.pairwise(cands[:4], refs, nu_strs=nu_strs)
    np.testing.assert_allclose(D1[:, :4], D2, rtol=1e-9, atol=1e-6)


@pytest.mark.parametrize("domain", ["cnn", "mlp-reg"])
def test_threads_give_identical_results_with_the_compiled_solver(domain):
    refs = networks(domain, 26, seed=3)
    cands = networks(domain, 21, seed=4)
    ot = OTMANN("cnn" if domain == "cnn" else "mlp")
    one, two = BatchOTMANN(ot, n_jobs=1, solver="numba"), BatchOTMANN(ot, n_jobs=2, solver="numba")
    D1, Db1 = one.cross(cands, refs)
    D2, Db2 = two.cross(cands, refs)
    assert np.array_equal(D1, D2) and np.array_equal(Db1, Db2)  # bit for bit
    assert one.solves == two.solves > 0 and one.pivots == two.pivots > 0


def test_failed_compiled_solves_fall_back_on_pot():
    refs = networks("cnn", 20, seed=5)
    cands = networks("cnn", 10, seed=6)
    ot = OTMANN("cnn")
    D0, Db0 = BatchOTMANN(ot, n_jobs=1, solver="pot").cross(cands, refs)
    flagged = []

    def failing_rows(*args):  # the real solver, then every other network reported as failed
        vals, ns, failed, piv = tj.transport_rows(*args)
        failed = failed.copy()
        failed[::2] = True
        vals[failed] = -123.0  # garbage that must not survive
        flagged.append(int(failed.sum()))
        return vals, ns, failed, piv

    batch = BatchOTMANN(ot, n_jobs=1, solver="numba")
    batch._jit = types.SimpleNamespace(transport_rows=failing_rows)
    D1, Db1 = batch.cross(cands, refs)
    assert sum(flagged) > 0 and batch.fallbacks == sum(flagged)
    np.testing.assert_allclose(D1, D0, rtol=1e-9, atol=0)
    np.testing.assert_allclose(Db1, Db0, rtol=1e-9, atol=0)


def test_solver_choice(monkeypatch):
    ot = OTMANN("mlp")
    assert BatchOTMANN(ot).solver == "numba"  # auto: numba is installed here
    assert BatchOTMANN(ot, solver="pot").solver == "pot"
    with pytest.raises(ValueError, match="solver"):
        BatchOTMANN(ot, solver="lemon")
    b = BatchOTMANN(ot, solver="pot")
    b.solver = "numba"
    assert b.solver == "numba"
    monkeypatch.setattr(tj, "AVAILABLE", False)  # as without numba
    assert BatchOTMANN(ot).solver == "pot"
    with pytest.raises(ImportError, match=r"graphbo\[fast\]"):
        BatchOTMANN(ot, solver="numba")


def test_without_numba_everything_still_works():
    code = (
        "import sys; sys.modules['numba'] = None\n"
        "import numpy as np\n"
        "import graphbo\n"
        "from graphbo.nas.distance import transport_jit as tj\n"
        "from graphbo.nas.distance.otmann import OTMANN\n"
        "from graphbo.nas.distance.otmann_batch import BatchOTMANN\n"
        "from graphbo.nas.domain.space import ArchitectureSpace\n"
        "assert not tj.AVAILABLE and not hasattr(tj, 'transport_rows')\n"
        "b = BatchOTMANN(OTMANN('cnn'))\n"
        "assert b.solver == 'pot'\n"
        "pool = ArchitectureSpace('cnn').initial_pool()\n"
        "D, _ = b.cross(pool, pool)\n"
        "assert D.shape[1:] == (len(pool), len(pool)) and (D > 0).any()\n"
        "try:\n"
        "    BatchOTMANN(OTMANN('cnn'), solver='numba')\n"
        "except ImportError as e:\n"
        "    assert 'graphbo[fast]' in str(e)\n"
        "else:\n"
        "    raise AssertionError('no ImportError')\n"
        "try:\n"
        "    tj.transport(np.ones(1), np.ones(1), np.zeros((1, 1)))\n"
        "except ImportError:\n"
        "    pass\n"
        "else:\n"
        "    raise AssertionError('no ImportError')\n"
    )
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr


def test_importing_graphbo_does_not_import_numba():
    code = ("import sys, graphbo, graphbo.nas.distance.otmann_batch, graphbo.optimizers.nasbot\n"
            "assert 'numba' not in sys.modules\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, OMP_NUM_THREADS="1"))
    assert out.returncode == 0, out.stderr
