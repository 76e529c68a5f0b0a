"""Evaluations in parallel: the loop of :meth:`graphbo.Study.optimize` with ``n_workers > 1`` or an ``executor``.

``n_workers`` evaluations are kept in flight, in graphbo's own process pool or in a
:class:`concurrent.futures.Executor` (a Dask client's ``get_executor()``), and a new configuration is asked
for as soon as any one finishes. The evaluation helper :func:`graphbo.evaluation._evaluate` runs in the
workers; a worker that dies fails the trial it was evaluating and the pool is replaced. This module is the
study's own machinery: it asks, records and shows progress through the study it is given.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import signal
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from .evaluation import _describe_error, _evaluate
from .exceptions import ExecutorLostError
from .outcomes import Outcome

if TYPE_CHECKING:  # pragma: no cover
    from .progress import ProgressBar
    from .study import Study, Trial

__all__ = ["run_parallel", "check_parallel_run", "check_picklable", "watch_parent", "TIMEOUT_GRACE", "MAX_RESTARTS"]

#: seconds the loop waits beyond ``timeout`` for a submitted evaluation before giving up on it: the worker
#: interrupts the evaluation itself after ``timeout`` seconds from its start; the grace covers the time
#: before it starts (transfer, a fresh worker importing the objective's modules) and workers that cannot
#: interrupt it (code that holds on to the interpreter)
TIMEOUT_GRACE = 10.0


def check_parallel_run(objective: Callable, *, n_workers: int, executor: Any, pruner: Any) -> None:
    """What a run with ``n_workers > 1`` or an ``executor`` needs, checked before anything runs: no pruner
    (``ValueError``), and with graphbo's own pool an objective that can travel (:func:`check_picklable`).
    A sequential run (``n_workers == 1``, no executor) passes."""
    if n_workers == 1 and executor is None:
        return
    if pruner is not None:
        raise ValueError("a pruner reads intermediate values in this process: give n_workers=1 and no executor "
                         "(an objective's graphbo.report() does nothing in a worker process)")
    if executor is None:
        check_picklable(objective)


def check_picklable(objective: Callable) -> None:
    """``TypeError`` unless ``objective`` can be sent to another process (a module-level function)."""
    import pickle

    try:
        pickle.dumps(objective)
    except Exception as exc:
        raise TypeError(
            f"with n_workers > 1 the objective runs in other processes and must be picklable "
            f"(a module-level function, not a lambda or a closure): {type(exc).__name__}: {exc}"
        ) from None


def _record(study: Study, trial: Trial, ok: bool, value: float | Outcome | None, error: str | None, seconds: float,
            failure_value: float | str | None, callback: Callable | None, bar: ProgressBar) -> None:
    done = study._record_evaluation(trial, ok, value, error, seconds, failure_value, callback)
    bar.finished(study._shown_value(done), done.suggest_seconds)


def run_parallel(study: Study, objective: Callable, *, budget: int, n_workers: int, executor: cf.Executor | None,
                 timeout: float | None, failure_value: float | str | None, callback: Callable | None,
                 bar: ProgressBar) -> None:
    """Keep ``n_workers`` evaluations in flight; ask for a new one as soon as any finishes (none once the space
    is exhausted: the run ends when the evaluations in flight do).

    With the loop's own pool (no ``executor``): a worker that dies fails the trial
    it was evaluating (found by the process id each evaluation writes first), the
    pool is replaced and the other trials in flight are evaluated again (at most
    :data:`MAX_RESTARTS` times each); a worker past ``timeout`` +
    :data:`TIMEOUT_GRACE` is killed the same way.
    """
    own = _OwnPool(n_workers) if executor is None else None
    in_flight: dict[cf.Future, _Job] = {}
    zombies: set[cf.Future] = set()  # timed out but still running in a foreign executor: they occupy a worker
    exhausted = False  # every configuration is evaluated or in flight

    def submit(job: _Job) -> None:
        job.t0 = time.monotonic()
        if own is None:
            assert executor is not None
            try:
                in_flight[executor.submit(_evaluate, objective, job.trial.config, timeout)] = job
            except Exception as exc:  # a closed client, a lost scheduler
                raise ExecutorLostError(f"the executor refused trial {job.trial.number} ({_describe_error(exc)}); "
                                        "the trials in flight stay running in the study: resume it (same "
                                        "storage) once the executor is back") from None
            return
        try:
            fut, job.tag = own.submit(objective, job.trial.config, timeout, job.trial.number)
        except cf.BrokenExecutor as exc:  # broke since the last wait: handled with the others at the next one
            fut, job.tag = cf.Future(), None
            fut.set_exception(exc)
        in_flight[fut] = job

    def record(job: _Job, outcome: tuple[bool, float | None, str | None, float]) -> None:
        if own is not None:
            own.forget(job.tag)
        _record(study, job.trial, *outcome, failure_value, callback, bar)

    def recover(hit: list[_Job], cause_known: bool = False) -> None:
        """The own pool broke: wait for the other evaluations to end, fail those whose worker died, start a
        fresh pool and evaluate the others again (counted as a restart only when no dead worker was found, or
        ``cause_known``, so that an unexplained break cannot repeat for ever)."""
        assert own is not None
        cf.wait(list(in_flight), timeout=10)
        for fut, job in list(in_flight.items()):
            outcome, dead = _outcome(fut, job.t0) if fut.done() else (None, True)
            del in_flight[fut]
            if dead:
                hit.append(job)
            else:
                assert outcome is not None
                record(job, outcome)
        exit_codes = own.renew()
        codes: dict[int, int] = {}  # a worker that died has its own exit code; the pool stopped the others (SIGTERM)
        for job in hit:
            code = exit_codes.get(own.pid_of(job.tag) or -1)
            if code is not None and code != -signal.SIGTERM:
                codes[id(job)] = code
        for job in hit:
            if id(job) in codes:
                record(job, (False, None, f"the worker process evaluating it died ({_exit_reason(codes[id(job)])})",
                             time.monotonic() - job.t0))
                continue
            if codes or cause_known:  # an innocent bystander: evaluated again from the start
                own.forget(job.tag)
                submit(job)
            elif job.restarts >= MAX_RESTARTS:
                record(job, (False, None, f"the worker pool broke {job.restarts + 1} times during this evaluation, "
                                          "and no worker was found dead", time.monotonic() - job.t0))
            else:
                own.forget(job.tag)
                job.restarts += 1
                submit(job)

    try:
        while True:
            zombies = {f for f in zombies if not f.done()}
            while (not exhausted and len(in_flight) + len(zombies) < n_workers
                   and study.n_finished + len(in_flight) < budget):
                trial = study._ask_within(budget)
                if trial is None:
                    exhausted = True
                    break
                submit(_Job(trial))
            if not in_flight:
                if study.n_finished >= budget or exhausted or not zombies:
                    break
                cf.wait(zombies, return_when=cf.FIRST_COMPLETED)
                continue
            wait_for = None
            if timeout is not None:
                first_deadline = min(j.t0 for j in in_flight.values()) + timeout + TIMEOUT_GRACE
                wait_for = max(0.0, first_deadline - time.monotonic())
            done, _ = cf.wait(list(in_flight) + list(zombies), timeout=wait_for, return_when=cf.FIRST_COMPLETED)
            hit: list[_Job] = []
            lost: list[_Job] = []
            for fut in done:
                if fut not in in_flight:
                    continue
                job = in_flight.pop(fut)
                if own is None and (fut.cancelled() or fut.exception() is not None):
                    lost.append(job)  # _evaluate never raises: the executor lost it, not the objective
                    continue
                outcome, dead = _outcome(fut, job.t0)
                if dead and own is not None:
                    hit.append(job)
                else:
                    record(job, outcome)
            if lost:
                first = next(f for f in done if f.cancelled() or f.exception() is not None)
                error = None if first.cancelled() else first.exception()
                cause = "cancelled" if error is None else _describe_error(error)
                numbers = ", ".join(str(j.trial.number) for j in lost)
                raise ExecutorLostError(f"the executor lost the evaluation of trial(s) {numbers} ({cause}); they "
                                        "stay running in the study, with the others in flight: resume it (same "
                                        "storage) to evaluate them again")
            if hit:
                recover(hit)
            if timeout is not None:
                now = time.monotonic()
                for fut, job in list(in_flight.items()):
                    if fut in in_flight and not fut.done() and now - job.t0 >= timeout + TIMEOUT_GRACE:
                        del in_flight[fut]
                        record(job, (False, None, f"timed out after {timeout:g} s", now - job.t0))
                        if fut.cancel():
                            continue
                        if own is not None and own.kill(job.tag):  # it ignores the alarm: end its worker
                            recover([], cause_known=True)
                        else:
                            zombies.add(fut)
    except BaseException:
        # Ctrl-C or an error of the loop: the trials in flight stay `running` in the study, for a resume
        for fut in in_flight:
            fut.cancel()
        if own is not None:
            own.close(kill=True)
        raise
    else:
        for fut in zombies:
            fut.cancel()
        if own is not None:
            own.close(kill=bool(zombies))


#: times an evaluation in the loop's own pool is started again because the pool broke under it for no reason
#: found (no worker of an evaluation in flight died) before it is recorded as failed; an evaluation whose
#: pool broke because another one's worker died is started again without counting
MAX_RESTARTS = 2

#: seconds between a pool worker's checks that the process that started it is still there
PARENT_POLL = 0.5


@dataclass
class _Job:
    """A trial in flight: when it was submitted, the file its worker writes its process id to, restarts."""

    trial: Trial
    t0: float = 0.0
    tag: str | None = None
    restarts: int = 0


class _OwnPool:
    """The loop's process pool: workers that end with this process, and which worker evaluates what.

    Each evaluation first writes its worker's process id into a file of a
    private folder (its *tag*), so that when the pool breaks the loop knows which
    trial's worker died, and can kill the worker of an evaluation that ignores
    its timeout.
    """

    def __init__(self, n_workers: int) -> None:
        import tempfile

        self.n_workers = n_workers
        self.folder = tempfile.mkdtemp(prefix="graphbo-pool-")
        self.count = 0
        self.pool = self._new_pool()
        self.processes: dict[int, Any] = {}  # pid -> multiprocessing.Process of the current pool

    def _new_pool(self) -> cf.ProcessPoolExecutor:
        return cf.ProcessPoolExecutor(max_workers=self.n_workers, initializer=watch_parent, initargs=(os.getpid(),))

    def submit(self, objective: Callable, config: dict[str, Any], timeout: float | None,
               number: int) -> tuple[cf.Future, str]:
        self.count += 1
        tag = os.path.join(self.folder, f"{number}-{self.count}")
        fut = self.pool.submit(_evaluate, objective, config, timeout, True, tag)
        self.processes.update(getattr(self.pool, "_processes", None) or {})  # the workers start on submit
        return fut, tag

    def pid_of(self, tag: str | None) -> int | None:
        """The process id the evaluation of ``tag`` wrote, or ``None`` (it had not started)."""
        if tag is None:
            return None
        try:
            with open(tag) as fh:
                return int(fh.read())
        except (OSError, ValueError):
            return None

    def forget(self, tag: str | None) -> None:
        if tag is not None:
            try:
                os.remove(tag)
            except OSError:
                pass

    def kill(self, tag: str | None) -> bool:
        """Kill the worker evaluating ``tag`` (``SIGKILL``); ``False`` if it is not known."""
        pid = self.pid_of(tag)
        if pid is None or pid not in self.processes:
            return False
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            return False
        return True

    def renew(self) -> dict[int, int | None]:
        """Stop the (broken) pool and start a fresh one; returns the old workers' exit codes by process id
        (a worker that died before this has its own code, the others ``-SIGTERM``)."""
        old = dict(self.processes)
        _terminate(self.pool, list(old.values()))
        codes = {pid: p.exitcode for pid, p in old.items()}
        self.processes = {}
        self.pool = self._new_pool()
        return codes

    def close(self, kill: bool) -> None:
        import shutil

        if kill:
            _terminate(self.pool, list(self.processes.values()))
        else:
            self.pool.shutdown(wait=True)
        shutil.rmtree(self.folder, ignore_errors=True)


def watch_parent(parent: int) -> None:
    """Initializer of the loop's pool workers: end this worker (``os._exit``) when the process that started the
    pool is gone, checked every :data:`PARENT_POLL` seconds by a daemon thread; on Linux, also ask the kernel to
    kill it when its parent exits (``PR_SET_PDEATHSIG``), which works while the worker holds the interpreter."""
    start_ppid = os.getppid()

    def gone() -> bool:
        if os.getppid() != start_ppid:
            return True
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            return True
        except OSError:  # pragma: no cover - exists, not ours to signal
            pass
        return False

    if gone():
        os._exit(1)
    if start_ppid == parent and hasattr(os, "sched_getaffinity"):  # forked by the loop's process, on Linux
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
        except Exception:  # pragma: no cover - no prctl: the thread below does it
            pass

    def watch() -> None:
        while not gone():
            time.sleep(PARENT_POLL)
        os._exit(1)

    threading.Thread(target=watch, name="graphbo-parent-watch", daemon=True).start()


def _exit_reason(code: int) -> str:
    """What a worker's exit code says: a signal (``killed by SIGSEGV``) or an exit status."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}" + (", e.g. for memory" if -code == signal.SIGKILL else "")
    return f"it exited with status {code}"


def _outcome(fut: cf.Future, t0: float) -> tuple[tuple[bool, float | None, str | None, float], bool]:
    """The ``_evaluate`` result of a finished future, and whether its process pool broke."""
    try:
        return fut.result(), False
    except cf.CancelledError:
        return (False, None, "cancelled", time.monotonic() - t0), False
    except (Exception, SystemExit) as exc:  # the executor failed: unpicklable objective or result, a worker died, ...
        broken = isinstance(exc, cf.BrokenExecutor)
        return (False, None, _describe_error(exc), time.monotonic() - t0), broken


def _terminate(pool: cf.Executor, processes: list | None = None) -> None:
    """Stop a process pool now, its running evaluations included (they could not be cancelled): its workers
    get ``SIGTERM`` first (so that one that died before keeps its own exit code), then the pool shuts down."""
    if processes is None:
        processes = list((getattr(pool, "_processes", None) or {}).values())
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
    pool.shutdown(wait=False, cancel_futures=True)
