"""The optimisation loop: ``minimize`` runs an optimizer on a function for a fixed budget.

Every evaluation is a trial of a :class:`~graphbo.study.Study` (in memory, or
in an SQLite file given as ``storage`` so that the run survives crashes and
can be resumed). An objective that raises, returns something other than a
finite number, or runs past ``timeout`` is recorded as a failed trial and the
run goes on. With ``n_workers > 1`` (or an ``executor``), evaluations run
asynchronously: ``n_workers`` are kept in flight and a new configuration is
asked for as soon as any one finishes.

This module imports no model code at import time; the evaluation helper
:func:`graphbo.evaluation._evaluate`, which runs in worker processes, stays
light to unpickle. The sequential run is :meth:`graphbo.Study.optimize`; the
progress bar is :mod:`graphbo.progress`'s.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import signal
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from ._validation import check_budget, check_int, check_optional_int, check_seed, check_timeout
from .evaluation import _describe_error, _evaluate
from .outcomes import Outcome
from .exceptions import ExecutorLostError
from .progress import check_show_progress
from .pruners import Pruner, check_pruner
from .threads import DEFAULT_THREADS

if TYPE_CHECKING:  # pragma: no cover
    from .optimizers.base import Observation, Optimizer
    from .progress import ProgressBar
    from .storage import Storage
    from .spaces.space import Space
    from .study import Study, Trial

__all__ = ["minimize", "MinimizeResult", "make_optimizer"]

#: seconds the loop waits beyond ``timeout`` for a submitted evaluation before giving up on it: the worker
#: interrupts the evaluation itself after ``timeout`` seconds from its start; the grace covers the time
#: before it starts (transfer, a fresh worker importing the objective's modules) and workers that cannot
#: interrupt it (code that holds on to the interpreter)
TIMEOUT_GRACE = 10.0


#: entries of ``best_params`` a :class:`MinimizeResult`'s repr shows, and characters of each value
REPR_PARAMS = 4
REPR_VALUE_CHARS = 24


@dataclass
class MinimizeResult:
    """Outcome of :func:`minimize`, in the user's terms.

    ``best_value`` and ``best_params`` (the best configuration as a dict of
    the variables' own values) are what most callers want. ``history`` holds
    the complete evaluations in the order the optimizer learnt them (with
    ``storage``, those of earlier sessions too); ``suggest_seconds`` and
    ``evaluate_seconds`` are aligned with it. ``trials`` holds every trial,
    failed ones included, by number (from 0, as everywhere in graphbo). ``best``
    is ``None`` only if every evaluation failed. Every value (``best``,
    ``history``, ``trials``) is in the user's sign: with
    ``direction="maximize"`` the best is the highest; only ``optimizer``, which
    graphbo runs as a minimiser, holds the negatives.
    """

    best: Observation | None
    history: list[Observation]
    optimizer: Optimizer
    suggest_seconds: list[float] = field(default_factory=list)
    evaluate_seconds: list[float] = field(default_factory=list)
    trials: list[Trial] = field(default_factory=list)
    storage: str | None = None
    wall_seconds: float | None = None
    method: str | None = None
    direction: str = "minimize"
    #: each objective's direction (one entry for a single objective)
    directions: list[str] = field(default_factory=lambda: ["minimize"])
    #: the number of black-box constraint values of each trial
    n_constraints: int = 0
    #: the feasible complete trials no other feasible one dominates (:attr:`graphbo.Study.pareto_front`)
    pareto_front: list[Trial] = field(default_factory=list)

    def hypervolume(self, reference_point: Sequence[float] | None = None) -> float:
        """The hypervolume of :attr:`pareto_front` against ``reference_point`` (in the objectives' own signs;
        default: the feasible trials' worst values moved out by a tenth of their ranges), as
        :meth:`graphbo.Study.hypervolume` computes it."""
        from .outcomes import check_reference_point, reference_point as default_reference
        from .study import _front_hypervolume

        signs = np.array([-1.0 if d == "maximize" else 1.0 for d in self.directions])

        def objectives(trials: list[Trial]) -> np.ndarray:
            rows = [t.attrs["values"] if len(signs) > 1 else [t.value] for t in trials]
            return np.array(rows, dtype=float).reshape(-1, len(signs)) * signs

        if reference_point is not None:
            ref = np.array(check_reference_point(reference_point, len(signs))) * signs
        if not self.pareto_front:
            return 0.0
        if reference_point is None:
            feasible = [t for t in self.trials if t.status == "complete"
                        and all(c <= 0 for c in t.attrs.get("constraints", ()))]
            ref = default_reference(objectives(feasible))
        return _front_hypervolume(objectives(self.pareto_front), ref)

    def trials_dataframe(self) -> Any:
        """Every trial as a pandas ``DataFrame``, one row per trial, one ``params_<name>`` column per variable
        (:func:`graphbo.storage.frame.trials_dataframe`; needs ``pip install "graphbo[dataframe]"``)."""
        from .storage.frame import trials_dataframe

        return trials_dataframe(self.trials, list(self.optimizer.space) if hasattr(self.optimizer.space,
                                                                                    "names") else None)

    def param_importances(self, *, objective: int = 0, seed: int = 0) -> dict[str, float]:
        """Each variable's importance for the complete trials, largest first, summing to 1, as
        :meth:`graphbo.Study.param_importances` computes it."""
        from .importance import trial_importances

        return trial_importances(self.optimizer.space, self.trials, objective=objective,
                                 n_objectives=len(self.directions), seed=seed)

    def _completed_best(self) -> Observation:
        if self.best is None:
            raise ValueError(f"no evaluation completed: all {len(self.trials)} trials failed "
                             "(their errors are in result.failed_trials)")
        return self.best

    @property
    def best_params(self) -> dict[str, Any]:
        """The best configuration as a dict of the variables' own values (a Categorical's category, an
        Ordinal's value, a Continuous number; not index rows), a copy; ``ValueError`` if every evaluation
        failed."""
        return dict(self._completed_best().config)

    @property
    def best_value(self) -> float:
        """The best value in the user's sign (the lowest, or the highest with ``direction="maximize"``);
        ``ValueError`` if every evaluation failed."""
        return self._completed_best().value

    def __repr__(self) -> str:
        """One line: method, direction when maximising, trial counts, best value and the first
        :data:`REPR_PARAMS` best parameters, each value cut to :data:`REPR_VALUE_CHARS` characters."""
        several = len(self.directions) > 1
        head = f"MinimizeResult(method={self.method!r}" + (
            f", directions={self.directions!r}" if several else
            f", direction={self.direction!r}" if self.direction != "minimize" else "")
        counts = f"trials={len(self.trials)} (complete {self.n_complete}, failed {self.n_failed})"
        if several:
            return f"{head}, {counts}, pareto_front={len(self.pareto_front)} trials)"
        if self.best is None:
            return f"{head}, {counts}, no completed trial)"
        items = list(self.best.config.items())
        shown = ", ".join(f"{k!r}: {_cut(_short(v), REPR_VALUE_CHARS)}" for k, v in items[:REPR_PARAMS])
        more = f", ... {len(items) - REPR_PARAMS} more" if len(items) > REPR_PARAMS else ""
        return f"{head}, {counts}, best_value={self.best.value:.6g}, best_params={{{shown}{more}}})"

    @property
    def failed_trials(self) -> list[Trial]:
        return [t for t in self.trials if t.status == "failed"]

    @property
    def n_failed(self) -> int:
        return len(self.failed_trials)

    @property
    def n_complete(self) -> int:
        return sum(1 for t in self.trials if t.status == "complete")


def _short(value: Any) -> str:
    """A value for a one-line repr: a float to 6 significant digits, anything else its repr."""
    return format(value, ".6g") if isinstance(value, float) else repr(value)


def _cut(text: str, n: int) -> str:
    """``text``, or its first ``n - 3`` characters and ``...``."""
    return text if len(text) <= n else text[: n - 3] + "..."


def make_optimizer(method: str, space: Space, seed: int | None = None, **options: Any) -> Optimizer:
    """An optimizer by name (``"combo"``, ``"rs"``)."""
    from .optimizers import METHODS
    from .optimizers.auto import AUTO, choose_method

    if isinstance(method, str) and method.lower() == AUTO:  # the budget is not known here (docs/auto.md)
        method = choose_method(space, None)
    try:
        cls = METHODS[method.lower()]
    except (KeyError, AttributeError):
        raise ValueError(f"unknown method {method!r}; choose {AUTO!r} or one of {sorted(METHODS)}") from None
    return cls(space, seed=seed, **options)


# -- the loop -------------------------------------------------------------------------------------
def minimize(
    objective: Callable[[dict[str, Any]], float],
    space: Space,
    method: str = "auto",
    budget: int = 100,
    seed: int | None = None,
    callback: Callable[[int, Mapping[str, Any], float, Optimizer, float], None] | None = None,
    *,
    storage: str | os.PathLike | Storage | None = None,
    n_workers: int = 1,
    executor: cf.Executor | None = None,
    timeout: float | None = None,
    failure_value: float | str | None = "worst",
    n_threads: int | None = DEFAULT_THREADS,
    max_retries: int = 1,
    direction: str | None = None,
    directions: Sequence[str] | None = None,
    n_constraints: int | None = None,
    show_progress: bool | None = None,
    stop_after_failures: int | None = 10,
    pruner: Pruner | None = None,
    **options: Any,
) -> MinimizeResult:
    """Minimise (or, with ``direction="maximize"``, maximise) ``objective`` over ``space`` with ``budget``
    evaluations.

    Parameters
    ----------
    objective : callable
        Maps a configuration dict to a float; with ``directions``, to a list of floats (one per objective);
        with ``n_constraints``, to a dict ``{"values": [...], "constraints": [...]}`` (``"value"`` for one
        objective; docs/multiobjective.md). With ``n_workers > 1`` and no
        ``executor`` it runs in a :class:`concurrent.futures.ProcessPoolExecutor`
        and must be picklable (a module-level function or an instance of a
        module-level class, not a lambda or a closure).
    space : Space
    method : str, default "auto"
        ``"auto"``, ``"combo"``, ``"rs"``, ... (see ``graphbo.optimizers.METHODS``). ``"auto"`` is
        :func:`graphbo.optimizers.auto.choose_method`'s choice for ``space`` and ``budget`` (combo, combo-tr,
        bofm, bofm-tr or nasbot; docs/auto.md); a resumed study keeps the method it was created with.
    budget : int
        Number of evaluations (an integer >= 1), the initial design and failed
        evaluations included. With ``storage``, the total over all sessions of the study.
    seed : int, optional
        A non-negative integer; ``None`` draws one (stored with ``storage``).
    callback : callable, optional
        ``callback(number, config, value, optimizer, seconds)`` after each
        complete evaluation (``seconds``: suggestion plus evaluation time;
        ``number``: the trial number, from 0; ``value``: as the objective
        returned it, in the user's sign). Not called for failed ones.
    storage : str, path-like or graphbo.storage.Storage, optional
        SQLite file of the study (see :class:`graphbo.Study`), or another store. If it exists, the
        run resumes it: finished trials are not evaluated again, trials left
        running by a crash or Ctrl-C are evaluated first; a file of another
        study raises :class:`graphbo.StorageError` and is left untouched.
    n_workers : int, default 1
        Evaluations kept in flight. With 1 and no ``executor``, the objective
        runs in this process (nothing is pickled). Otherwise the loop's own
        process pool evaluates it; its workers end with this process (each
        watches its parent), and one that dies (``os._exit``, a segfault, killed
        for memory) fails the trial it was evaluating, with the reason, while
        the trials of the other workers are evaluated again in a fresh pool.
    executor : concurrent.futures.Executor, optional
        Where to evaluate, e.g. ``distributed.Client(...).get_executor()`` for
        Dask; it is not shut down. Default: a process pool of ``n_workers``,
        shut down at the end.
    timeout : float, optional
        Seconds an evaluation may take from its start (a positive number; ``None``
        or ``inf``, or more than 10**8 s, mean no timeout); a longer one is recorded
        as failed (``"timed out after ... s"``) and the run goes on. In this
        process and in process-pool workers an alarm signal (``SIGALRM``)
        interrupts it, again every second until the objective gives up, and an
        evaluation interrupted once counts as timed out even if the objective
        catches the interruption (``except BaseException``) and returns a value.
        An objective that catches every interruption and never returns runs on in
        this process (``n_workers=1``); in the loop's process pool, its worker is
        killed ``timeout`` + :data:`TIMEOUT_GRACE` seconds after submission. In
        worker threads (Dask) it is left running in a background thread; the loop
        gives up on such a future at the same deadline: it is cancelled if
        possible and recorded failed.
    failure_value : float, "worst" or None, default "worst"
        What the model learns of a failed evaluation (its configuration is never suggested again
        whatever this is). ``"worst"``: the worst complete value so far (the highest, or with
        ``direction="maximize"`` the lowest), so that the model turns away from a region that fails;
        before any evaluation completed, nothing. A number: that value, a fixed penalty in the
        objective's sign. ``None``: nothing (the failure only excludes its configuration). The value
        told is stored as the trial's ``penalty``, so a resumed study replays the same.
    n_threads : int or None, default 1
        torch and BLAS threads while the optimizer suggests (see :class:`graphbo.Study`;
        evaluations in this process run with the process's own settings). ``None`` leaves
        the settings alone.
    max_retries : int, default 1
        With ``storage``: how many times a trial left ``running`` by a process that
        died while evaluating it (``os._exit``, a segfault, SIGKILL) is evaluated
        again when the study is resumed; after that it is recorded failed with the
        reason (see :class:`graphbo.Study`). An integer >= 0.
    direction : {"minimize", "maximize"}, optional
        ``"maximize"`` looks for the highest value: the optimizer (a minimiser)
        is told ``-value`` (and ``-failure_value``), while the result, the trials,
        the history and the callback's ``value`` keep the objective's own sign.
        Stored with ``storage``: ``None`` (the default) resumes a stored study in
        its own direction and starts a new one minimising; resuming with the
        other direction raises :class:`graphbo.StorageError`.
    directions : list of {"minimize", "maximize"}, optional
        Several objectives, one direction each (instead of ``direction``). The result's
        :attr:`MinimizeResult.pareto_front` holds the non-dominated trials and
        :meth:`MinimizeResult.hypervolume` their hypervolume; every method of graphbo's own (COMBO, BO-FM,
        NASBOT, their baselines) models ParEGO's random scalarisation (:mod:`graphbo.outcomes`).
    n_constraints : int, optional
        The number of black-box constraint values the objective returns with its values (feasible when
        every one is ``<= 0``). COMBO, BO-FM and NASBOT model each constraint with its own surrogate and weight
        expected improvement by the probability of feasibility; the best result is the best feasible one.
        Known constraints (rules on the configuration) are given with the space: ``Space(..., constraints=)``.
    show_progress : bool or None, default None
        A progress bar on standard error (:mod:`graphbo.progress`): finished
        trials out of ``budget``, the best value so far (in the objective's
        sign) and the seconds of the last suggestion. ``None`` shows it only
        when standard error is a terminal; ``True`` or ``False`` force it.
        Everything else goes to the ``graphbo`` logger (Python ``logging``):
        the study created or resumed (INFO), each finished trial (DEBUG),
        failed evaluations and an exhausted space (WARNING).
    stop_after_failures : int or None, default 10
        When that many evaluations have failed, all with the same error, and none has completed, the run
        stops with :class:`graphbo.exceptions.ObjectiveFailingError` naming the error (see
        :meth:`graphbo.Study.optimize`); ``None`` never stops.
    pruner : graphbo.MedianPruner or graphbo.SuccessiveHalvingPruner, optional
        Stops evaluations whose intermediate values, reported by the objective with
        :func:`graphbo.report`, fall behind those of the finished trials; the objective asks
        :func:`graphbo.should_prune` and raises :class:`graphbo.TrialPruned` (docs/pruning.md). With
        ``n_workers=1`` and no executor only.
    **options
        Passed to the optimizer (for COMBO: ``n_initial``, ``n_random``, ...). Optuna's words are refused
        with graphbo's: ``n_trials`` (``budget``), ``n_jobs`` (``n_workers``), ``maximize`` (``direction``).

    Notes
    -----
    Whatever the objective does wrong is a failed trial with its reason: any
    ``Exception`` or ``SystemExit``; a value that is not a real number (``None``,
    a string, a bool, a complex number, an array or tensor of several numbers,
    an integer too large for a float) or not finite; a timeout; in a worker
    process, the worker's death. An objective that ends or crashes *this*
    process (``os._exit``, a segfault with ``n_workers=1``) leaves its trial
    ``running``, to be resumed. A discrete space whose configurations are all
    evaluated before the budget is used ends the run there, with its result
    and a warning.

    A ``KeyboardInterrupt`` (Ctrl-C) stops the run: finished trials are saved,
    the ones in flight stay ``running`` for the resume, and it is re-raised.
    """
    from .optimizers import METHODS
    from .study import Study, check_direction, check_failure_value

    for word, ours in _OTHER_WORDS.items():
        if word in options:
            raise TypeError(f"minimize() got {word}={options[word]!r}: graphbo's word is {ours}")
    direction = check_direction(direction)
    if getattr(METHODS.get(str(method).lower()), "multi_fidelity", False):
        raise ValueError(f"method {method!r} chooses a fidelity (epochs) for each evaluation, which "
                         "minimize's objective(config) cannot take: run it on a benchmark with fidelities through "
                         "graphbo.experiments.runner (graphbo compare), or drive a graphbo.Study yourself "
                         "(each trial's fidelity is trial.attrs['fidelity'])")
    budget = check_budget(budget)
    seed = check_seed(seed)
    n_workers = check_int("n_workers", n_workers, minimum=1)
    max_retries = check_int("max_retries", max_retries, minimum=0)
    timeout = check_timeout(timeout)
    failure_value = check_failure_value(failure_value)
    show_progress = check_show_progress(show_progress)
    if check_pruner(pruner) is not None and (executor is not None or n_workers > 1):
        raise ValueError("a pruner reads intermediate values in this process: give n_workers=1 and no executor "
                         "(an objective's graphbo.report() does nothing in a worker process)")
    if executor is None and n_workers > 1:
        _check_picklable(objective)
    t_start = time.perf_counter()
    study = Study(space, method, storage=storage, seed=seed, n_threads=n_threads, max_retries=max_retries,
                  direction=direction, directions=directions, n_constraints=n_constraints, auto_budget=budget,
                  pruner=pruner, **options)
    try:
        n_initial = getattr(study.optimizer, "n_initial", None)
        if isinstance(n_initial, int) and budget <= n_initial and not study.trials and study.method != "rs":
            warnings.warn(f"budget={budget} is not above the initial design (n_initial={n_initial}): every "
                          "evaluation will be a random one; raise budget or lower n_initial", stacklevel=2)
        if executor is None and n_workers == 1:
            study.optimize(objective, budget, timeout=timeout, failure_value=failure_value, callback=callback,
                           show_progress=show_progress, stop_after_failures=stop_after_failures)
        else:
            study.stop_after_failures = check_optional_int("stop_after_failures", stop_after_failures, minimum=1)
            with study._progress_bar(budget, show_progress) as bar:
                _run_async(study, objective, budget, int(n_workers), executor, timeout, failure_value, callback,
                           bar)
    finally:
        study.close()
    return _result(study, time.perf_counter() - t_start)


#: Optuna's (and scikit-learn's) words for minimize's arguments, and graphbo's
_OTHER_WORDS = {"n_trials": "budget (the number of evaluations)", "n_jobs": "n_workers",
                "maximize": "direction='maximize'"}


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
        method=study.method,
        direction=study.direction,
        directions=list(study.directions),
        n_constraints=study.n_constraints,
        pareto_front=study.pareto_front,
    )


def _record(study: Study, trial: Trial, ok: bool, value: float | Outcome | None, error: str | None, seconds: float,
            failure_value: float | str | None, callback: Callable | None, bar: ProgressBar) -> None:
    done = study._record_evaluation(trial, ok, value, error, seconds, failure_value, callback)
    bar.finished(study._shown_value(done), done.suggest_seconds)


def _run_async(study: Study, objective: Callable, budget: int, n_workers: int, executor: cf.Executor | None,
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
