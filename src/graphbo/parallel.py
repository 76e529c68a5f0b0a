"""Evaluations in parallel: the loop of :meth:`graphbo.Study.optimize` with ``n_workers > 1`` or an ``executor``.

``n_workers`` evaluations are kept in flight, in graphbo's own process pool or in a
:class:`concurrent.futures.Executor` (a Dask client's ``get_executor()``), and a new configuration is asked
for as soon as any one finishes. The evaluation helper :func:`graphbo.evaluation._evaluate` runs in the
workers; a worker that dies fails the trial it was evaluating and the pool is replaced. The loop itself
(asking, stopping, recording, progress) is the study's: :class:`ParallelEvaluations` only keeps the
evaluations in flight and hands each outcome back through the ``record`` function it is given.
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
    from .storage.base import Trial

__all__ = ["ParallelEvaluations", "check_parallel_run", "check_picklable", "watch_parent", "TIMEOUT_GRACE", "MAX_RESTARTS"]

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


#: what :class:`ParallelEvaluations` hands its ``record`` for each finished evaluation: the trial and
#: :func:`graphbo.evaluation._evaluate`'s outcome (``ok, value, error, seconds``)
Record = Callable[["Trial", bool, "float | Outcome | None", "str | None", float], None]


class ParallelEvaluations:
    """The evaluations in flight of a parallel run of :meth:`graphbo.Study.optimize`, whose loop asks for the
    trials and decides when to stop; this class evaluates them and hands each outcome to ``record``.

    The loop, as the study runs it (``finished``: the budget is used or the space exhausted)::

        with ParallelEvaluations(objective, n_workers, executor=executor, timeout=timeout, record=record) as evaluations:
            while True:
                while <not finished> and evaluations.has_room() and <finished + n_in_flight < budget>:
                    evaluations.submit(<a new trial>)
                if not evaluations.wait(<finished>):
                    break

    With the loop's own pool (no ``executor``): a worker that dies fails the trial
    it was evaluating (found by the process id each evaluation writes first), the
    pool is replaced and the other trials in flight are evaluated again (at most
    :data:`MAX_RESTARTS` times each); a worker past ``timeout`` +
    :data:`TIMEOUT_GRACE` is killed the same way. Leaving the ``with`` block on an
    exception (Ctrl-C, an error of the loop) leaves the trials in flight ``running``
    in the study, for a resume, and kills the own pool's workers.
    """

    def __init__(self, objective: Callable, n_workers: int, *, executor: cf.Executor | None,
                 timeout: float | None, record: Record) -> None:
        self.objective = objective
        self.n_workers = n_workers
        self.executor = executor
        self.timeout = timeout
        self.record = record
        self.own: _OwnPool | None = None
        self.in_flight: dict[cf.Future, _Job] = {}
        self.zombies: set[cf.Future] = set()  # timed out but still running in a foreign executor: they occupy a worker

    def __enter__(self) -> ParallelEvaluations:
        self.own = _OwnPool(self.n_workers) if self.executor is None else None
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        own = self.own
        if exc_type is not None:
            # Ctrl-C or an error of the loop: the trials in flight stay `running` in the study, for a resume
            for fut in self.in_flight:
                fut.cancel()
            if own is not None:
                own.close(kill=True)
            return
        for fut in self.zombies:
            fut.cancel()
        if own is not None:
            own.close(kill=bool(self.zombies))

    @property
    def n_in_flight(self) -> int:
        """The evaluations submitted and not yet recorded."""
        return len(self.in_flight)

    def has_room(self) -> bool:
        """Whether a worker is free for another evaluation (one that timed out in a foreign executor and still
        runs there occupies its worker)."""
        return len(self.in_flight) + len(self.zombies) < self.n_workers

    def submit(self, trial: Trial) -> None:
        """Start evaluating ``trial``'s configuration."""
        self._submit(_Job(trial))

    def _submit(self, job: _Job) -> None:
        job.t0 = time.monotonic()
        own = self.own
        if own is None:
            assert self.executor is not None
            try:
                self.in_flight[self.executor.submit(_evaluate, self.objective, job.trial.config, self.timeout)] = job
            except Exception as exc:  # a closed client, a lost scheduler
                raise ExecutorLostError(f"the executor refused trial {job.trial.number} ({_describe_error(exc)}); "
                                        "the trials in flight stay running in the study: resume it (same "
                                        "storage) once the executor is back") from None
            return
        try:
            fut, job.tag = own.submit(self.objective, job.trial.config, self.timeout, job.trial.number)
        except cf.BrokenExecutor as exc:  # broke since the last wait: handled with the others at the next one
            fut, job.tag = cf.Future(), None
            fut.set_exception(exc)
        self.in_flight[fut] = job

    def _record(self, job: _Job, outcome: tuple[bool, float | None, str | None, float]) -> None:
        if self.own is not None:
            self.own.forget(job.tag)
        self.record(job.trial, *outcome)

    def _recover(self, hit: list[_Job], cause_known: bool = False) -> None:
        """The own pool broke: wait for the other evaluations to end, fail those whose worker died, start a
        fresh pool and evaluate the others again (counted as a restart only when no dead worker was found, or
        ``cause_known``, so that an unexplained break cannot repeat for ever)."""
        own, in_flight = self.own, self.in_flight
        assert own is not None
        cf.wait(list(in_flight), timeout=10)
        for fut, job in list(in_flight.items()):
            outcome, dead = _outcome(fut, job.t0) if fut.done() else (None, True)
            del in_flight[fut]
            if dead:
                hit.append(job)
            else:
                assert outcome is not None
                self._record(job, outcome)
        exit_codes = own.renew()
        codes: dict[int, int] = {}  # a worker that died has its own exit code; the pool stopped the others (SIGTERM)
        for job in hit:
            code = exit_codes.get(own.pid_of(job.tag) or -1)
            if code is not None and code != -signal.SIGTERM:
                codes[id(job)] = code
        for job in hit:
            if id(job) in codes:
                self._record(job, (False, None,
                                   f"the worker process evaluating it died ({_exit_reason(codes[id(job)])})",
                                   time.monotonic() - job.t0))
                continue
            if codes or cause_known:  # an innocent bystander: evaluated again from the start
                own.forget(job.tag)
                self._submit(job)
            elif job.restarts >= MAX_RESTARTS:
                self._record(job, (False, None, f"the worker pool broke {job.restarts + 1} times during this "
                                                "evaluation, and no worker was found dead",
                                   time.monotonic() - job.t0))
            else:
                own.forget(job.tag)
                job.restarts += 1
                self._submit(job)

    def wait(self, finished: bool) -> bool:
        """Wait until an evaluation ends (or one passes its deadline) and record what ended; ``False``, at
        once, when there is nothing to wait for: no evaluation in flight and ``finished`` (no trial is to
        be asked for) or none still occupying a worker."""
        own, in_flight, timeout = self.own, self.in_flight, self.timeout
        if not in_flight:
            if finished or not self.zombies:
                return False
            cf.wait(self.zombies, return_when=cf.FIRST_COMPLETED)
            self.zombies = {f for f in self.zombies if not f.done()}
            return True
        wait_for = None
        if timeout is not None:
            first_deadline = min(j.t0 for j in in_flight.values()) + timeout + TIMEOUT_GRACE
            wait_for = max(0.0, first_deadline - time.monotonic())
        done, _ = cf.wait(list(in_flight) + list(self.zombies), timeout=wait_for, return_when=cf.FIRST_COMPLETED)
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
                self._record(job, outcome)
        if lost:
            first = next(f for f in done if f.cancelled() or f.exception() is not None)
            error = None if first.cancelled() else first.exception()
            cause = "cancelled" if error is None else _describe_error(error)
            numbers = ", ".join(str(j.trial.number) for j in lost)
            raise ExecutorLostError(f"the executor lost the evaluation of trial(s) {numbers} ({cause}); they "
                                    "stay running in the study, with the others in flight: resume it (same "
                                    "storage) to evaluate them again")
        if hit:
            self._recover(hit)
        if timeout is not None:
            now = time.monotonic()
            for fut, job in list(in_flight.items()):
                if fut in in_flight and not fut.done() and now - job.t0 >= timeout + TIMEOUT_GRACE:
                    del in_flight[fut]
                    self._record(job, (False, None, f"timed out after {timeout:g} s", now - job.t0))
                    if fut.cancel():
                        continue
                    if own is not None and own.kill(job.tag):  # it ignores the alarm: end its worker
                        self._recover([], cause_known=True)
                    else:
                        self.zombies.add(fut)
        self.zombies = {f for f in self.zombies if not f.done()}
        return True


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
