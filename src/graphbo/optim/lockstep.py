"""L-BFGS-B on many starts at once, each an independent run, with batched objective calls.

BO-FM supplement D.1 runs L-BFGS-B (Byrd, Lu, Nocedal and Zhu 1995) on the continuous part of
every start separately, one iteration per round. :class:`Lockstep` gives each start exactly the
iterates of its own ``scipy.optimize.minimize(method="L-BFGS-B")`` call, and evaluates the
acquisition once per step for all the starts that ask for a value then, in the order of the starts.

Two drivers give the same numbers:

* **reverse communication** (the default where it works): SciPy's L-BFGS-B routine
  (``scipy.optimize._lbfgsb.setulb``) returns to its caller whenever it needs the objective, so
  one thread steps every start's routine in turn, exactly as ``minimize``'s own loop does
  (memoised evaluations, the ``maxiter`` and ``maxfun`` checks). The module is private to SciPy,
  so it is used only after :func:`reverse_communication_works` has checked, once per process, that
  it reproduces ``minimize`` bit for bit on a test problem.
* **threads** (the fallback): one thread per start runs ``minimize`` itself, and each of its
  objective calls waits for the batched evaluation. Starting threads and handing values between
  them cost more than the L-BFGS-B work (``benchmarks/bofm_speed.py``), hence the first driver.
"""

from __future__ import annotations

import queue
import threading
from typing import TYPE_CHECKING, Callable

import numpy as np
import scipy.optimize
import torch

if TYPE_CHECKING:
    from .trust_region import Region

__all__ = ["Lockstep", "reverse_communication_works"]

#: ``scipy.optimize.minimize(method="L-BFGS-B")``'s defaults, which both drivers use
_MAXCOR, _FTOL, _GTOL, _MAXLS, _MAXFUN = 10, 2.2204460492503131e-09, 1e-5, 20, 15000
#: the routine's ``task[0]`` codes (SciPy's C translation of L-BFGS-B 3.0)
_FG, _NEW_X, _STOP_TASK = 3, 1, 5
#: ``task[1]`` when the caller stops the run: too many iterations, too many evaluations
_STOP_MAXITER, _STOP_MAXFUN = 504, 502


def bounds_of(region: "Region | None", n_rows: int, n_cont: int) -> list[tuple[float, float]]:
    """L-BFGS-B bounds of ``n_rows`` continuous parts laid end to end: [0, 1] or the region's box."""
    if region is None:
        return [(0.0, 1.0)] * (n_rows * n_cont)
    return list(zip(np.tile(region.lower, n_rows).tolist(), np.tile(region.upper, n_rows).tolist()))


Objective = Callable[[list, np.ndarray], "tuple[np.ndarray, np.ndarray]"]


class _Run:
    """One start's L-BFGS-B state, stepped through SciPy's reverse-communication routine."""

    def __init__(self, x0: np.ndarray, lower: np.ndarray, upper: np.ndarray, maxiter: int) -> None:
        n, m = x0.size, _MAXCOR
        self.lower, self.upper, self.maxiter = lower, upper, maxiter
        self.nbd = np.full(n, 2, dtype=np.int32)  # every variable bounded below and above
        self.x = np.array(np.clip(x0, lower, upper), dtype=np.float64)
        self.f: object = np.array(0.0, dtype=np.float64)
        self.g = np.zeros(n, dtype=np.float64)
        self.wa = np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m, np.float64)
        self.iwa = np.zeros(3 * n, dtype=np.int32)
        self.task = np.zeros(2, dtype=np.int32)
        self.ln_task = np.zeros(2, dtype=np.int32)
        self.lsave = np.zeros(4, dtype=np.int32)
        self.isave = np.zeros(44, dtype=np.int32)
        self.dsave = np.zeros(29, dtype=np.float64)
        self.nit = self.nfev = 0
        self.memo_x = self.x.copy()  # where the last evaluation was made (minimize evaluates x0 first)
        self.memo_f, self.memo_g = 0.0, self.g
        self.asked = False  # the routine waits for the objective at memo_x

    def told(self, f: float, g: np.ndarray) -> None:
        """The objective at :attr:`memo_x`."""
        self.memo_f, self.memo_g, self.nfev = f, g, self.nfev + 1

    def advance(self, setulb: Callable[..., None]) -> bool:
        """Step the routine until it needs the objective at a new point (True: evaluate at :attr:`x`,
        then :meth:`told`) or stops (False)."""
        factr = _FTOL / np.finfo(float).eps
        if self.asked:  # minimize's ``f, g = func_and_grad(x)``
            self.f, self.g, self.asked = self.memo_f, self.memo_g, False
        while True:
            self.g = self.g.astype(np.float64)
            setulb(_MAXCOR, self.x, self.lower, self.upper, self.nbd, self.f, self.g, factr, _GTOL, self.wa,
                   self.iwa, self.task, self.lsave, self.isave, self.dsave, _MAXLS, self.ln_task)
            if self.task[0] == _FG:
                if not np.array_equal(self.x, self.memo_x):
                    self.memo_x, self.asked = self.x.copy(), True
                    return True
                self.f, self.g = self.memo_f, self.memo_g
            elif self.task[0] == _NEW_X:
                self.nit += 1
                if self.nit >= self.maxiter:
                    self.task[:] = (_STOP_TASK, _STOP_MAXITER)
                elif self.nfev > _MAXFUN:
                    self.task[:] = (_STOP_TASK, _STOP_MAXFUN)
            else:
                return False

    @property
    def value(self) -> float:
        """The objective at the last point, as ``minimize``'s ``res.fun``."""
        return float(self.f)  # type: ignore[arg-type]


def _setulb() -> Callable[..., None] | None:
    try:
        from scipy.optimize import _lbfgsb  # private: checked by reverse_communication_works
    except ImportError:
        return None
    return getattr(_lbfgsb, "setulb", None)


def _minimise_reverse(objective: Objective, x0: np.ndarray, lower: np.ndarray, upper: np.ndarray,
                      maxiter: int, setulb: Callable[..., None]) -> tuple[np.ndarray, np.ndarray]:
    """Every row of ``x0`` minimised by its own L-BFGS-B run. ``objective(ids, points)`` gives the values
    and gradients at ``points``, the current points of the runs ``ids`` (in increasing order). Returns
    the final points and values (``minimize``'s ``res.x`` and ``res.fun`` of each run)."""
    runs = [_Run(x, lower, upper, maxiter) for x in x0]
    ask = list(range(len(runs)))  # minimize evaluates every x0 first
    while ask:
        f, g = objective(ask, np.stack([runs[i].memo_x for i in ask]))
        for k, i in enumerate(ask):
            runs[i].told(float(f[k]), g[k].astype(float))
        ask = [i for i in ask if runs[i].advance(setulb)]
    return np.stack([r.x for r in runs]), np.array([r.value for r in runs])


_WORKS: bool | None = None


def reverse_communication_works() -> bool:
    """Whether SciPy's reverse-communication L-BFGS-B routine is there and, driven here, gives
    ``scipy.optimize.minimize``'s iterates bit for bit (checked once per process on a bounded,
    ill-conditioned quartic from several starts, one and many iterations)."""
    global _WORKS
    if _WORKS is None:
        _WORKS = _check_reverse_communication()
    return _WORKS


def _check_reverse_communication() -> bool:
    setulb = _setulb()
    if setulb is None:
        return False
    A = np.array([[3.0, 1.2, 0.0], [1.2, 1.0, 0.3], [0.0, 0.3, 0.5]])
    c = np.array([0.8, -0.4, 0.35])

    def one(x: np.ndarray) -> tuple[float, np.ndarray]:
        d = x - c
        q = float(d @ A @ d)
        return q + q * q, (1 + 2 * q) * 2 * (A @ d)

    def batch(ids: list, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        out = [one(p) for p in points]
        return np.array([o[0] for o in out]), np.stack([o[1] for o in out])

    x0 = np.random.default_rng(0).random((4, 3))
    lower, upper = np.zeros(3), np.ones(3)
    try:
        for maxiter in (1, 2, 15000):
            x, v = _minimise_reverse(batch, x0, lower, upper, maxiter, setulb)
            for i in range(x0.shape[0]):
                res = scipy.optimize.minimize(one, x0[i], jac=True, method="L-BFGS-B",
                                              bounds=list(zip(lower, upper)), options={"maxiter": maxiter})
                if not (np.array_equal(res.x, x[i]) and float(res.fun) == v[i]):
                    return False
    except Exception:  # noqa: BLE001 - another SciPy's private routine: use the threads
        return False
    return True


class Lockstep:
    """L-BFGS-B on the continuous columns ``cont`` of many rows at once (the other columns fixed),
    each row an independent run, maximising ``acquisition``; objective requests are answered in one
    batched acquisition evaluation per step. ``threads=True`` forces the thread driver (the module
    docstring); by default it is used only where :func:`reverse_communication_works` is False.

    The thread driver's threads are started once and serve every :meth:`run` until :meth:`close` (a
    context manager closes them). Each thread waits on its own queue, and the main thread on one
    condition that only it waits on, so an answer wakes one thread, not all of them. A step waits for
    every running call's request (or its end) and scores them in the order of the starts, so the
    results do not depend on the threads' timing.
    """

    def __init__(self, acquisition: Callable[[torch.Tensor], torch.Tensor], cont: np.ndarray,
                 *, region: "Region | None" = None, threads: bool | None = None) -> None:
        self.acquisition, self.cont = acquisition, torch.as_tensor(cont, dtype=torch.long)
        self.region = region
        self.threads = not reverse_communication_works() if threads is None else threads
        self._inbox: dict[int, tuple[str, object]] = {}  # a thread's next message to the main thread
        self._posted = threading.Condition()
        self._queues: list[queue.SimpleQueue] = []
        self._threads: list[threading.Thread] = []

    def __enter__(self) -> "Lockstep":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the threads, if any. Each gets a stop: an idle one returns, and one inside an L-BFGS-B
        call (left there when :meth:`run` was interrupted, e.g. by Ctrl-C) gets it as its answer, which
        ends the call and the thread. None is left running."""
        for q in self._queues:
            q.put(_STOP)
        for t in self._threads:
            t.join(timeout=10.0)  # daemon threads: a stuck one cannot keep the interpreter alive
        self._queues, self._threads = [], []

    def _evaluate(self, fixed: torch.Tensor, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Minus the acquisition and its gradient at the continuous ``points`` of the rows ``fixed``."""
        c = torch.tensor(points, dtype=torch.float64, requires_grad=True)
        full = fixed.clone()
        full[:, self.cont] = c
        vals = -self.acquisition(full).reshape(-1)
        (g,) = torch.autograd.grad(vals.sum(), c)
        # one transfer from the model's device (a no-op on CPU), not one per start
        return vals.detach().cpu().numpy(), g.cpu().numpy()

    def run(self, rows: np.ndarray, maxiter: int) -> tuple[np.ndarray, np.ndarray]:
        """L-BFGS-B (``maxiter`` iterations, bounds [0, 1] or the region's box) on each row's
        continuous part, the discrete part fixed. Returns the new continuous parts and acquisition
        values."""
        if rows.shape[0] == 0:
            return np.empty((0, self.cont.numel())), np.empty(0)
        if self.threads:
            return self._run_threads(rows, maxiter)
        setulb = _setulb()
        assert setulb is not None
        box = np.array(bounds_of(self.region, 1, self.cont.numel()), dtype=float)
        fixed = torch.as_tensor(rows, dtype=torch.float64)
        x, f = _minimise_reverse(lambda ids, points: self._evaluate(fixed[torch.as_tensor(ids)], points),
                                 rows[:, self.cont.numpy()], box[:, 0].copy(), box[:, 1].copy(), maxiter, setulb)
        return x.reshape(rows.shape[0], -1), -f

    # the thread driver

    def _post(self, i: int, kind: str, payload: object) -> None:
        with self._posted:
            self._inbox[i] = (kind, payload)
            self._posted.notify()

    def _serve(self, i: int, jobs: queue.SimpleQueue) -> None:
        bounds = bounds_of(self.region, 1, self.cont.numel())
        while True:
            job = jobs.get()
            if job is _STOP:
                return
            x0, maxiter = job

            def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
                self._post(i, "request", np.array(x, dtype=float))
                answer = jobs.get()
                if answer is _STOP:
                    raise _Stopped
                if isinstance(answer, BaseException):
                    raise answer
                return answer

            try:
                res = scipy.optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                                              options={"maxiter": maxiter})
                self._post(i, "result", (np.asarray(res.x, dtype=float), -float(res.fun)))
            except _Stopped:
                return
            except BaseException as e:  # noqa: BLE001 - handed to the main thread
                self._post(i, "error", e)

    def _run_threads(self, rows: np.ndarray, maxiter: int) -> tuple[np.ndarray, np.ndarray]:
        n, dc = rows.shape[0], self.cont.numel()
        while len(self._threads) < n:
            jobs: queue.SimpleQueue = queue.SimpleQueue()
            thread = threading.Thread(target=self._serve, args=(len(self._threads), jobs), daemon=True)
            self._queues.append(jobs)
            self._threads.append(thread)
            thread.start()
        cont = self.cont.numpy()
        for i in range(n):
            self._queues[i].put((rows[i, cont].astype(float), maxiter))
        fixed = torch.as_tensor(rows, dtype=torch.float64)
        results: dict[int, tuple[np.ndarray, float]] = {}
        errors: list[BaseException] = []
        waiting = set(range(n))  # the calls whose next message is awaited
        while waiting:
            with self._posted:
                self._posted.wait_for(lambda: all(i in self._inbox for i in waiting))
                messages = {i: self._inbox.pop(i) for i in sorted(waiting)}
            requests: dict[int, np.ndarray] = {}
            for i, (kind, payload) in messages.items():
                if kind == "request":
                    requests[i] = payload  # type: ignore[assignment]
                elif kind == "result":
                    results[i] = payload  # type: ignore[assignment]
                else:
                    errors.append(payload)  # type: ignore[arg-type]
            waiting = set(requests)
            if not requests:
                break
            ids = np.array(sorted(requests), dtype=int)
            if errors:  # unwind the other calls: each raises in its objective and reports an error
                for i in ids:
                    self._queues[i].put(RuntimeError("another start failed"))
                continue
            try:
                vals_np, g_np = self._evaluate(fixed[torch.as_tensor(ids)], np.stack([requests[i] for i in ids]))
            except BaseException as e:  # noqa: BLE001
                errors.append(e)
                for i in ids:
                    self._queues[i].put(RuntimeError("another start failed"))
                continue
            for k, i in enumerate(ids):
                self._queues[i].put((float(vals_np[k]), g_np[k].astype(float)))
        if errors:
            raise errors[0]
        x = np.stack([results[i][0] for i in range(n)]).reshape(n, dc)
        return x, np.array([results[i][1] for i in range(n)])


#: what :meth:`Lockstep.close` puts in a thread's queue (a job or an answer can never be it)
_STOP = object()


class _Stopped(Exception):
    """Raised in a :class:`Lockstep` thread's objective when it is stopped mid-call."""
