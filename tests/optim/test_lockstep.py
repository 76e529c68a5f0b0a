"""L-BFGS-B in lockstep (graphbo.optim.lockstep): every start gets exactly its own
``scipy.optimize.minimize(method="L-BFGS-B")`` run, whichever driver steps it."""

from __future__ import annotations

import threading
import time
import types

import numpy as np
import pytest
import scipy.optimize
import torch

from graphbo.optim import lockstep
from graphbo.optim.lockstep import Lockstep


def _acquisition(rows: torch.Tensor) -> torch.Tensor:
    """A non-convex surface in the continuous columns 1 and 3 whose shape depends on the discrete column 0."""
    x, y = rows[:, 1], rows[:, 3]
    k = 1.0 + rows[:, 0]
    return torch.sin(3 * k * x) * torch.cos(2 * y) - (x - 0.3 * k) ** 2 - 0.5 * (y - 0.7) ** 2 + 0.2 * x * y


def _rows(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rows = rng.random((n, 4))
    rows[:, 0] = rng.integers(0, 3, n)
    rows[:, 2] = rng.integers(0, 2, n)
    return rows


def _one_by_one(rows: np.ndarray, cont: np.ndarray, maxiter: int, bounds: list[tuple[float, float]]):
    """Each row's own minimize call, the reference both drivers must reproduce."""
    xs, vals = [], []
    for row in rows:
        def fun(c, row=row):
            full = torch.tensor(row, dtype=torch.float64).clone()[None]
            ct = torch.tensor(c, dtype=torch.float64, requires_grad=True)
            full[0, torch.as_tensor(cont)] = ct
            v = -_acquisition(full).sum()
            (g,) = torch.autograd.grad(v, ct)
            return float(v.detach()), g.numpy().astype(float)
        res = scipy.optimize.minimize(fun, row[cont], jac=True, method="L-BFGS-B", bounds=bounds,
                                      options={"maxiter": maxiter})
        xs.append(res.x)
        vals.append(-float(res.fun))
    return np.array(xs), np.array(vals)


def test_the_installed_scipy_supports_the_reverse_communication_driver():
    """Without it D.1 falls back to one thread per start, correct but slower (benchmarks/bofm_speed.py)."""
    assert lockstep.reverse_communication_works()
    assert not Lockstep(_acquisition, np.array([1, 3])).threads


@pytest.mark.parametrize("threads", [False, True])
@pytest.mark.parametrize("maxiter", [1, 3, 15000])
def test_each_start_gets_its_own_l_bfgs_b_run_bit_for_bit(threads, maxiter):
    cont = np.array([1, 3])
    rows = _rows(7, maxiter)
    x, v = Lockstep(_acquisition, cont, threads=threads).run(rows, maxiter)
    want_x, want_v = _one_by_one(rows, cont, maxiter, [(0.0, 1.0)] * 2)
    np.testing.assert_array_equal(x, want_x)
    np.testing.assert_array_equal(v, want_v)
    if maxiter > 1:  # the runs moved: a driver that returned its starts would fail above only by luck
        assert np.all(v >= _acquisition(torch.as_tensor(rows)).numpy() - 1e-12)
        assert np.any(np.abs(x - rows[:, cont]) > 1e-3)


@pytest.mark.parametrize("threads", [False, True])
def test_no_rows_no_runs(threads):
    x, v = Lockstep(_acquisition, np.array([1, 3]), threads=threads).run(np.empty((0, 4)), 1)
    assert x.shape == (0, 2) and v.shape == (0,)


def test_a_trust_region_box_bounds_every_run():
    cont = np.array([1, 3])
    rows = _rows(5, 11)
    region = types.SimpleNamespace(lower=np.array([0.2, 0.45]), upper=np.array([0.6, 0.9]))
    rows[:, cont] = np.clip(rows[:, cont], region.lower, region.upper)
    x, v = Lockstep(_acquisition, cont, region=region).run(rows, 15000)  # type: ignore[arg-type]
    want_x, want_v = _one_by_one(rows, cont, 15000, list(zip(region.lower, region.upper)))
    np.testing.assert_array_equal(x, want_x)
    np.testing.assert_array_equal(v, want_v)
    assert np.all((x >= region.lower) & (x <= region.upper))


def test_batches_are_the_runs_asking_in_the_order_of_the_starts():
    """One acquisition call per step, for the runs that need a value then; finished runs drop out."""
    cont = np.array([1, 3])
    rows = _rows(6, 2)
    sizes, orders = [], []

    def counting(full: torch.Tensor) -> torch.Tensor:
        sizes.append(full.shape[0])
        orders.append(full[:, 0].tolist())
        return _acquisition(full)

    Lockstep(counting, cont).run(rows, 2)
    assert sizes[0] == 6 and orders[0] == rows[:, 0].tolist()  # minimize evaluates every start first
    assert sizes == sorted(sizes, reverse=True) and sizes[-1] < 6


def test_a_routine_that_does_not_reproduce_minimize_is_not_used(monkeypatch):
    """The check compares with minimize itself: a SciPy whose private routine behaves otherwise gets the
    thread driver (here: a routine that stops at once)."""
    def stops_at_once(m, x, l, u, nbd, f, g, factr, pgtol, wa, iwa, task, lsave, isave, dsave, maxls, ln_task):
        task[0] = 4

    monkeypatch.setattr(lockstep, "_setulb", lambda: stops_at_once)
    monkeypatch.setattr(lockstep, "_WORKS", None)
    assert not lockstep.reverse_communication_works()
    assert Lockstep(_acquisition, np.array([1, 3])).threads
    monkeypatch.setattr(lockstep, "_setulb", lambda: None)
    monkeypatch.setattr(lockstep, "_WORKS", None)
    assert not lockstep.reverse_communication_works()


def test_lockstep_close_ends_threads_left_inside_an_l_bfgs_b_call():
    """D.1's per-start L-BFGS-B threads are kept for a whole acquisition optimisation; a run interrupted
    while they wait for answers (Ctrl-C in the main thread) must not leave close() waiting for them."""
    cont = np.array([1, 2])

    def acquisition(rows):
        return -(rows[:, 1:] - 0.3).square().sum(1)

    lock = lockstep.Lockstep(acquisition, cont, threads=True)
    rows = np.tile(np.array([0.0, 0.9, 0.1]), (4, 1))
    x, v = lock.run(rows, maxiter=50)  # a normal run first: the threads are reused afterwards
    assert np.allclose(x, 0.3, atol=1e-4) and np.all(v <= 1e-8)
    original = threading.Condition.wait_for

    def interrupted(cond, predicate, timeout=None):
        original(cond, predicate, timeout)
        raise KeyboardInterrupt  # what Ctrl-C does while the main thread waits for the requests

    lock._posted.wait_for = types.MethodType(interrupted, lock._posted)
    threads = list(lock._threads)
    with pytest.raises(KeyboardInterrupt):
        lock.run(rows, maxiter=50)
    assert all(t.is_alive() for t in threads)  # each is inside its L-BFGS-B call, waiting for an answer
    t0 = time.monotonic()
    lock.close()
    assert time.monotonic() - t0 < 5.0
    assert not any(t.is_alive() for t in threads)
    assert torch.is_tensor(acquisition(torch.zeros(1, 3)))
