"""The optimisation loop: ``minimize`` runs an optimizer on a function for a fixed budget.

Every evaluation is a trial of a :class:`~graphbo.study.Study` (in memory, or
in an SQLite file given as ``storage`` so that the run survives crashes and
can be resumed). An objective that raises, returns something other than a
finite number, or runs past ``timeout`` is recorded as a failed trial and the
run goes on. With ``n_workers > 1`` (or an ``executor``), evaluations run
asynchronously: ``n_workers`` are kept in flight and a new configuration is
asked for as soon as any one finishes.

This module imports no model code at import time, so the evaluation helper
:func:`_evaluate`, which runs in worker processes, stays light to unpickle.
"""

from __future__ import annotations

import concurrent.futures as cf
import logging
import math
import numbers
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping

from .threads import DEFAULT_THREADS

if TYPE_CHECKING:  # pragma: no cover
    from .optimizers.base import Observation, Optimizer
    from .storage import Storage
    from .spaces.space import Space
    from .study import Study, Trial

__all__ = ["minimize", "MinimizeResult", "make_optimizer"]

logger = logging.getLogger("graphbo")

#: seconds the loop waits beyond ``timeout`` for a submitted evaluation before giving up on it: the worker
#: interrupts the evaluation itself after ``timeout`` seconds from its start; the grace covers the time
#: before it starts (transfer, a fresh worker importing the objective's modules) and workers that cannot
#: interrupt it (code that holds on to the interpreter)
TIMEOUT_GRACE = 10.0


@dataclass
class MinimizeResult:
    """Outcome of :func:`minimize`.

    ``history`` holds the complete evaluations in the order the optimizer
    learnt them (with ``storage``, those of earlier sessions too);
    ``suggest_seconds`` and ``evaluate_seconds`` are aligned with it.
    ``trials`` holds every trial, failed ones included, by number. ``best`` is
    ``None`` only if every evaluation failed.
    """

    best: Observation | None
    history: list[Observation]
    optimizer: Optimizer
    suggest_seconds: list[float] = field(default_factory=list)
    evaluate_seconds: list[float] = field(default_factory=list)
    trials: list[Trial] = field(default_factory=list)
    storage: str | None = None
    wall_seconds: float | None = None

    def _completed_best(self) -> Observation:
        if self.best is None:
            raise ValueError(f"no evaluation completed: all {len(self.trials)} trials failed "
                             "(their errors are in result.failed_trials)")
        return self.best

    @property
    def best_config(self) -> dict[str, Any]:
        """The best configuration; ``ValueError`` if every evaluation failed."""
        return self._completed_best().config

    @property
    def best_value(self) -> float:
        """The best value; ``ValueError`` if every evaluation failed."""
        return self._completed_best().value

    @property
    def failed_trials(self) -> list[Trial]:
        return [t for t in self.trials if t.status == "failed"]

    @property
    def n_failed(self) -> int:
        return len(self.failed_trials)

    @property
    def n_complete(self) -> int:
        return sum(1 for t in self.trials if t.status == "complete")


def make_optimizer(method: str, space: Space, seed: int | None = None, **options: Any) -> Optimizer:
    """An optimizer by name (``"combo"``, ``"random"``)."""
    from .optimizers import METHODS

    try:
        cls = METHODS[method.lower()]
    except KeyError:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(METHODS)}") from None
    return cls(space, seed=seed, **options)


# -- evaluating one configuration (in this process or a worker) ----------------------------------
class _EvaluationTimeout(BaseException):
    """Raised by the alarm inside an evaluation that ran past its timeout (a BaseException, so that
    an objective catching ``Exception`` does not swallow it)."""


def _on_alarm(signum, frame):
    raise _EvaluationTimeout()


def _call(objective: Callable, config: dict[str, Any], timeout: float | None, thread_fallback: bool) -> Any:
    """``objective(config)``, interrupted after ``timeout`` seconds where possible.

    In a main thread (this process with ``n_workers=1``, or a process-pool worker)
    a ``SIGALRM`` timer interrupts Python code and sleeps. Elsewhere (a Dask
    worker's thread, a caller's thread), with ``thread_fallback``, the objective
    runs in a daemon thread that is abandoned at the timeout: the caller moves
    on, the abandoned evaluation runs to its end in the background.
    """
    if timeout is None:
        return objective(config)
    if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            return objective(config)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    if not thread_fallback:
        return objective(config)
    box: dict[str, Any] = {}

    def target():
        try:
            box["value"] = objective(config)
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    worker = threading.Thread(target=target, name="graphbo-evaluation", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise _EvaluationTimeout()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _evaluate(objective: Callable, config: dict[str, Any], timeout: float | None = None,
              thread_fallback: bool = True) -> tuple[bool, float | None, str | None, float]:
    """Evaluate and classify: ``(ok, value, error message, seconds)``. Never raises an ``Exception``.

    Failures: the objective raised, returned a non-number or a non-finite
    number, or ran past ``timeout``. ``KeyboardInterrupt`` propagates.
    """
    t0 = time.perf_counter()
    try:
        try:
            raw = _call(objective, config, timeout, thread_fallback)
        except _EvaluationTimeout:
            return False, None, f"timed out after {timeout:g} s", time.perf_counter() - t0
        except Exception as exc:
            return False, None, f"{type(exc).__name__}: {exc}", time.perf_counter() - t0
    except _EvaluationTimeout:  # the alarm went off just as the objective returned or raised
        return False, None, f"timed out after {timeout:g} s", time.perf_counter() - t0
    seconds = time.perf_counter() - t0
    if isinstance(raw, (str, bytes, bool)) or raw is None:
        return False, None, f"objective returned {raw!r}, not a number", seconds
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return False, None, f"objective returned {raw!r} ({type(raw).__name__}), not a number", seconds
    if not math.isfinite(value):
        return False, None, f"objective returned {value!r}, not a finite number", seconds
    return True, value, None, seconds


# -- the loop -------------------------------------------------------------------------------------
def minimize(
    objective: Callable[[dict[str, Any]], float],
    space: Space,
    method: str = "combo",
    budget: int = 100,
    seed: int | None = None,
    callback: Callable[[int, Mapping[str, Any], float, Optimizer, float], None] | None = None,
    *,
    storage: str | os.PathLike | Storage | None = None,
    n_workers: int = 1,
    executor: cf.Executor | None = None,
    timeout: float | None = None,
    failure_value: float | None = None,
    n_threads: int | None = DEFAULT_THREADS,
    **options: Any,
) -> MinimizeResult:
    """Minimise ``objective`` over ``space`` with ``budget`` evaluations.

    Parameters
    ----------
    objective : callable
        Maps a configuration dict to a float. With ``n_workers > 1`` and no
        ``executor`` it runs in a :class:`concurrent.futures.ProcessPoolExecutor`
        and must be picklable (a module-level function or an instance of a
        module-level class, not a lambda or a closure).
    space : Space
    method : str
        ``"combo"``, ``"rs"``, ... (see ``graphbo.optimizers.METHODS``).
    budget : int
        Number of evaluations, the initial design and failed evaluations
        included. With ``storage``, the total over all sessions of the study.
    seed : int, optional
    callback : callable, optional
        ``callback(number, config, value, optimizer, seconds)`` after each
        complete evaluation (``seconds``: suggestion plus evaluation time;
        ``number``: the trial number). Not called for failed ones.
    storage : str, path-like or graphbo.storage.Storage, optional
        SQLite file of the study (see :class:`graphbo.Study`), or another store. If it exists, the
        run resumes it: finished trials are not evaluated again, trials left
        running by a crash or Ctrl-C are evaluated first; a file of another
        study raises :class:`graphbo.StorageError` and is left untouched.
    n_workers : int, default 1
        Evaluations kept in flight. With 1 and no ``executor``, the objective
        runs in this process (nothing is pickled).
    executor : concurrent.futures.Executor, optional
        Where to evaluate, e.g. ``distributed.Client(...).get_executor()`` for
        Dask; it is not shut down. Default: a process pool of ``n_workers``,
        shut down at the end.
    timeout : float, optional
        Seconds an evaluation may take from its start; a longer one is recorded
        as failed (``"timed out after ... s"``) and the run goes on. In this
        process and in process-pool workers an alarm signal (``SIGALRM``)
        interrupts it; in worker threads (Dask) it is left running in a
        background thread. The loop itself gives up on a future that is not back
        ``timeout`` + :data:`TIMEOUT_GRACE` seconds after submission (a worker
        that cannot be interrupted): it is cancelled if possible and recorded failed.
    failure_value : float, optional
        By default a failed configuration stays out of the model (it is only
        excluded from later suggestions). With a value, the model is told that
        value for it instead: a penalty, which should be worse than the values
        expected, e.g. the worst value seen.
    n_threads : int or None, default 1
        torch and BLAS threads while the optimizer suggests (see :class:`graphbo.Study`;
        evaluations in this process run with the process's own settings). ``None`` leaves
        the settings alone.
    **options
        Passed to the optimizer (for COMBO: ``n_initial``, ``n_random``, ...).

    A ``KeyboardInterrupt`` (Ctrl-C) stops the run: finished trials are saved,
    the ones in flight stay ``running`` for the resume, and it is re-raised.
    """
    from .optimizers import METHODS
    from .study import Study

    if getattr(METHODS.get(str(method).lower()), "multi_fidelity", False):
        raise ValueError(f"method {method!r} chooses a fidelity (epochs) for each evaluation, which "
                         "minimize's objective(config) cannot take: run it on a benchmark with fidelities through "
                         "graphbo.experiments.runner (graphbo compare), or drive a graphbo.Study yourself "
                         "(each trial's fidelity is trial.attrs['fidelity'])")
    if budget < 1:
        raise ValueError(f"budget must be >= 1, got {budget}")
    if isinstance(n_workers, bool) or int(n_workers) != n_workers or n_workers < 1:
        raise ValueError(f"n_workers must be a positive integer, got {n_workers!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, numbers.Real)
                                or not timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    timeout = None if timeout is None else float(timeout)
    if failure_value is not None:
        try:
            ok = math.isfinite(float(failure_value))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError(f"failure_value must be a finite number, got {failure_value!r}")
        failure_value = float(failure_value)
    if executor is None and n_workers > 1:
        _check_picklable(objective)
    t_start = time.perf_counter()
    study = Study(space, method, storage=storage, seed=seed, n_threads=n_threads, **options)
    try:
        if executor is None and n_workers == 1:
            _run_in_process(study, objective, budget, timeout, failure_value, callback)
        else:
            _run_async(study, objective, budget, int(n_workers), executor, timeout, failure_value, callback)
    finally:
        study.close()
    return _result(study, time.perf_counter() - t_start)


def _check_picklable(objective: Callable) -> None:
    import pickle

    try:
        pickle.dumps(objective)
    except Exception as exc:
        raise TypeError(
            f"with n_workers > 1 the objective runs in other processes and must be picklable "
            f"(a module-level function, not a lambda or a closure): {type(exc).__name__}: {exc}"
        ) from None


def _result(study: Study, wall: float) -> MinimizeResult:
    complete = sorted((t for t in study._trials if t.status == "complete"),
                      key=lambda t: t.tell_order)  # type: ignore[arg-type, return-value]  # set by Study._finish
    return MinimizeResult(
        best=study.best,
        history=study.history,
        optimizer=study.optimizer,
        suggest_seconds=[float(t.suggest_seconds or 0.0) for t in complete],
        evaluate_seconds=[float(t.evaluate_seconds or 0.0) for t in complete],
        trials=study.trials,
        storage=study.path,
        wall_seconds=wall,
    )


def _record(study: Study, trial: Trial, ok: bool, value: float | None, error: str | None, seconds: float,
            failure_value: float | None, callback: Callable | None) -> None:
    if ok:
        assert value is not None  # _evaluate returns a number with ok
        done = study.tell(trial, value, seconds=seconds)
        if callback is not None:
            callback(done.number, done.config, done.value, study.optimizer, (done.suggest_seconds or 0.0) + seconds)
    else:
        assert error is not None  # every failure comes with its message
        study.fail(trial, error, value=failure_value, seconds=seconds)
        logger.warning("graphbo: trial %d failed (%s) at %s", trial.number, error, trial.config)


def _run_in_process(study: Study, objective: Callable, budget: int, timeout: float | None,
                    failure_value: float | None, callback: Callable | None) -> None:
    while study.n_finished < budget:
        trial = study.ask()
        ok, value, error, seconds = _evaluate(objective, trial.config, timeout)
        _record(study, trial, ok, value, error, seconds, failure_value, callback)


def _run_async(study: Study, objective: Callable, budget: int, n_workers: int, executor: cf.Executor | None,
               timeout: float | None, failure_value: float | None, callback: Callable | None) -> None:
    """Keep ``n_workers`` evaluations in flight; ask for a new one as soon as any finishes."""
    own = executor is None
    pool: cf.Executor = cf.ProcessPoolExecutor(max_workers=n_workers) if executor is None else executor
    in_flight: dict[cf.Future, tuple[Trial, float]] = {}
    zombies: set[cf.Future] = set()  # timed out but still running: they occupy a worker
    try:
        while True:
            zombies = {f for f in zombies if not f.done()}
            while len(in_flight) + len(zombies) < n_workers and study.n_finished + len(in_flight) < budget:
                trial = study.ask()
                fut = pool.submit(_evaluate, objective, trial.config, timeout)
                in_flight[fut] = (trial, time.monotonic())
            if not in_flight:
                if study.n_finished >= budget or not zombies:
                    break
                cf.wait(zombies, return_when=cf.FIRST_COMPLETED)
                continue
            wait_for = None
            if timeout is not None:
                first_deadline = min(t0 for _, t0 in in_flight.values()) + timeout + TIMEOUT_GRACE
                wait_for = max(0.0, first_deadline - time.monotonic())
            done, _ = cf.wait(list(in_flight) + list(zombies), timeout=wait_for, return_when=cf.FIRST_COMPLETED)
            broken = False
            for fut in done:
                if fut not in in_flight:
                    continue
                trial, t0 = in_flight.pop(fut)
                outcome, dead = _outcome(fut, t0)
                broken |= dead
                _record(study, trial, *outcome, failure_value, callback)
            if broken and own:
                # a worker died (killed, out of memory): the pool is unusable and fails every
                # evaluation in flight; record them and start a fresh pool
                cf.wait(list(in_flight), timeout=10)
                for fut, (trial, t0) in list(in_flight.items()):
                    outcome, _ = _outcome(fut, t0) if fut.done() else (
                        (False, None, "worker pool broken", time.monotonic() - t0), True)
                    _record(study, trial, *outcome, failure_value, callback)
                in_flight.clear()
                zombies.clear()
                _terminate(pool)
                pool = cf.ProcessPoolExecutor(max_workers=n_workers)
            if timeout is not None:
                now = time.monotonic()
                for fut, (trial, t0) in list(in_flight.items()):
                    if not fut.done() and now - t0 >= timeout + TIMEOUT_GRACE:
                        del in_flight[fut]
                        if not fut.cancel():
                            zombies.add(fut)
                        _record(study, trial, False, None, f"timed out after {timeout:g} s", now - t0,
                                failure_value, callback)
    except BaseException:
        # Ctrl-C or an error of the loop: the trials in flight stay `running` in the study, for a resume
        for fut in in_flight:
            fut.cancel()
        if own:
            _terminate(pool)
        raise
    else:
        for fut in zombies:
            fut.cancel()
        if own:
            if zombies:
                _terminate(pool)
            else:
                pool.shutdown(wait=True)


def _outcome(fut: cf.Future, t0: float) -> tuple[tuple[bool, float | None, str | None, float], bool]:
    """The ``_evaluate`` result of a finished future, and whether its process pool broke."""
    try:
        return fut.result(), False
    except cf.CancelledError:
        return (False, None, "cancelled", time.monotonic() - t0), False
    except Exception as exc:  # the executor failed: unpicklable objective or result, a worker died, ...
        broken = isinstance(exc, cf.BrokenExecutor)
        return (False, None, f"{type(exc).__name__}: {exc}", time.monotonic() - t0), broken


def _terminate(pool: cf.Executor) -> None:
    """Stop a process pool now, its running evaluations included (they could not be cancelled)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        try:
            p.terminate()
        except Exception:  # pragma: no cover - already gone
            pass
    for p in processes:
        try:
            p.join(timeout=5)
        except Exception:  # pragma: no cover
            pass
