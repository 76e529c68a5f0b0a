"""The optimisation loop: ``minimize`` runs an optimizer on a function for a fixed budget.

Every evaluation is a trial of a :class:`~graphbo.study.Study` (in memory, or
in an SQLite file given as ``storage`` so that the run survives crashes and
can be resumed). An objective that raises, returns something other than a
finite number, or runs past ``timeout`` is recorded as a failed trial and the
run goes on. With ``n_workers > 1`` (or an ``executor``), evaluations run
asynchronously: ``n_workers`` are kept in flight and a new configuration is
asked for as soon as any one finishes.

``minimize`` is a thin wrapper: it creates the :class:`~graphbo.study.Study` and runs
:meth:`graphbo.Study.optimize`, which evaluates in this process or, in parallel,
through :mod:`graphbo.parallel`. This module imports no model code at import time.
"""

from __future__ import annotations

import concurrent.futures as cf
import os
import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

import numpy as np

from ._validation import check_budget, check_int, check_seed, check_timeout
from .progress import check_show_progress
from .parallel import check_parallel_run
from .pruners import Pruner, check_pruner
from .threads import DEFAULT_THREADS

if TYPE_CHECKING:  # pragma: no cover
    from .optimizers.base import Observation, Optimizer
    from .storage import Storage
    from .spaces.space import Space
    from .study import Study, Trial

__all__ = ["minimize", "MinimizeResult", "make_optimizer"]



#: entries of ``best_params`` a :class:`MinimizeResult`'s repr shows, and characters of each value
REPR_PARAMS = 4
REPR_VALUE_CHARS = 24


@dataclass(kw_only=True)
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


def make_optimizer(method: str, space: Space, *, seed: int | None = None, **options: Any) -> Optimizer:
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
    *,
    method: str = "auto",
    budget: int = 100,
    seed: int | None = None,
    callback: Callable[[int, Mapping[str, Any], float, Optimizer, float], None] | None = None,
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
        killed ``timeout`` + :data:`graphbo.parallel.TIMEOUT_GRACE` seconds after submission. In
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
    check_parallel_run(objective, n_workers=n_workers, executor=executor,
                       pruner=check_pruner(pruner))  # before a study file is made
    t_start = time.perf_counter()
    study = Study(space, method, storage=storage, seed=seed, n_threads=n_threads, max_retries=max_retries,
                  direction=direction, directions=directions, n_constraints=n_constraints, auto_budget=budget,
                  pruner=pruner, **options)
    try:
        n_initial = getattr(study.optimizer, "n_initial", None)
        if isinstance(n_initial, int) and budget <= n_initial and not study.trials and study.method != "rs":
            warnings.warn(f"budget={budget} is not above the initial design (n_initial={n_initial}): every "
                          "evaluation will be a random one; raise budget or lower n_initial", stacklevel=2)
        study.optimize(objective, budget, n_workers=n_workers, executor=executor, timeout=timeout,
                       failure_value=failure_value, callback=callback, show_progress=show_progress,
                       stop_after_failures=stop_after_failures)
    finally:
        study.close()
    return _result(study, time.perf_counter() - t_start)


#: Optuna's (and scikit-learn's) words for minimize's arguments, and graphbo's
_OTHER_WORDS = {"n_trials": "budget (the number of evaluations)", "n_jobs": "n_workers",
                "maximize": "direction='maximize'"}


def _result(study: Study, wall: float) -> MinimizeResult:
    complete = sorted(study.complete_trials, key=lambda t: t.tell_order)  # type: ignore[arg-type, return-value]
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
