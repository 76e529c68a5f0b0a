"""Intermediate values and pruning: stop an evaluation early when its learning curve is behind the others'.

An objective reports intermediate values with :func:`report` (``report(value, step)``, for example the
validation loss after each epoch) and asks :func:`should_prune`; when it answers ``True`` the objective
raises :class:`TrialPruned` (or returns; a returned value completes the trial as usual). The study records
the pruned trial with its intermediate values and tells the model its last reported value (docs/pruning.md).

Two pruners decide, from the trial's own curve and the curves of the finished trials (complete or pruned):

* :class:`MedianPruner`: prune at step ``s`` when the trial's best value so far is worse than the median of
  the other trials' values at step ``s`` (as Optuna's ``MedianPruner``; the median stopping rule of Golovin
  et al. 2017, Sec. 3.2.2).
* :class:`SuccessiveHalvingPruner`: asynchronous successive halving (Li et al. 2020, ASHA, Alg. 2): rung
  ``k`` lies at step ``min_resource * reduction_factor ** k``; a trial reaching a rung goes on only if its
  value there is among the best ``1 / reduction_factor`` of the values recorded at that rung.

Values are compared in the study's direction (lower is better when minimising). Outside a study's
evaluation (the objective called directly, or in a worker process of a parallel run) :func:`report` does
nothing and :func:`should_prune` is ``False``, so the same objective runs everywhere. The current trial is a
context variable: a thread the objective starts itself sees it only when started in a copy of the context
(``contextvars.copy_context().run``).
"""

from __future__ import annotations

import contextvars
import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ._validation import check_int

__all__ = ["Pruner", "MedianPruner", "SuccessiveHalvingPruner", "TrialPruned", "report", "should_prune",
           "intermediate_of", "check_pruner"]

#: a trial's intermediate values, ``{step: value}``, in the user's sign
Curve = Mapping[int, float]


class TrialPruned(Exception):
    """Raised by an objective to stop its evaluation because :func:`should_prune` said so."""


class Pruner:
    """Decides whether a trial's curve so far is worth continuing.

    :meth:`prune` gets the trial's curve (``{step: value}``, values in the minimising sign), the curves of
    the complete trials and of the pruned ones, and the step just reported. (Trials that failed otherwise,
    an error or a timeout, are not compared against.)
    """

    def prune(self, curve: Curve, complete: Sequence[Curve], *, pruned: Sequence[Curve],
              step: int) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError


class MedianPruner(Pruner):
    """Prune when the trial's best value so far is worse than the median of the complete trials' values at
    the same step (pruned trials are not counted, as in Optuna's ``MedianPruner``).

    Parameters
    ----------
    n_startup_trials : int, default 5
        Never prune before this many trials have completed with a curve.
    n_warmup_steps : int, default 0
        Never prune at a step below this.
    interval_steps : int, default 1
        Decide only at every ``interval_steps``-th step from ``n_warmup_steps``.
    """

    def __init__(self, n_startup_trials: int = 5, n_warmup_steps: int = 0, *, interval_steps: int = 1):
        self.n_startup_trials = check_int("n_startup_trials", n_startup_trials, minimum=0)
        self.n_warmup_steps = check_int("n_warmup_steps", n_warmup_steps, minimum=0)
        self.interval_steps = check_int("interval_steps", interval_steps, minimum=1)

    def prune(self, curve: Curve, complete: Sequence[Curve], *, pruned: Sequence[Curve], step: int) -> bool:
        if len(complete) < self.n_startup_trials or step < self.n_warmup_steps:
            return False
        if (step - self.n_warmup_steps) % self.interval_steps:
            return False
        at_step = [c[step] for c in complete if step in c]
        if not at_step:
            return False
        best = min(v for s, v in curve.items() if s <= step)
        return bool(best > float(np.median(at_step)))

    def __repr__(self) -> str:
        return (f"MedianPruner(n_startup_trials={self.n_startup_trials}, n_warmup_steps={self.n_warmup_steps}, "
                f"interval_steps={self.interval_steps})")


class SuccessiveHalvingPruner(Pruner):
    """Asynchronous successive halving.

    Parameters
    ----------
    min_resource : int, default 1
        The first rung's step.
    reduction_factor : int, default 3
        ``eta``: the rungs lie at ``min_resource * eta ** k``, and a trial passes a rung when its value
        there is among the best ``max(1, n // eta)`` of the ``n`` values recorded at the rung (its own
        included).
    """

    def __init__(self, min_resource: int = 1, reduction_factor: int = 3):
        self.min_resource = check_int("min_resource", min_resource, minimum=1)
        self.reduction_factor = check_int("reduction_factor", reduction_factor, minimum=2)

    def rungs(self, step: int) -> list[int]:
        """The rung steps up to ``step``."""
        out, r = [], self.min_resource
        while r <= step:
            out.append(r)
            r *= self.reduction_factor
        return out

    @staticmethod
    def _value_at(curve: Curve, rung: int) -> float | None:
        """A curve's value at a rung: its best value up to that step (``None`` if it never got there)."""
        if not any(s >= rung for s in curve):
            return None
        return min(v for s, v in curve.items() if s <= rung) if any(s <= rung for s in curve) else None

    def prune(self, curve: Curve, complete: Sequence[Curve], *, pruned: Sequence[Curve], step: int) -> bool:
        others = [*complete, *pruned]  # every value recorded at a rung, as ASHA keeps them
        rungs = self.rungs(step)
        if not rungs or rungs[-1] > step or max((s for s in curve if s < step), default=-1) >= rungs[-1]:
            return False  # no rung reached at this step (or this rung was decided at an earlier report)
        rung = rungs[-1]
        mine = self._value_at(curve, rung)
        if mine is None:
            return False
        recorded = [v for v in (self._value_at(c, rung) for c in others) if v is not None] + [mine]
        k = max(1, len(recorded) // self.reduction_factor)
        return bool(mine > sorted(recorded)[k - 1])

    def __repr__(self) -> str:
        return f"SuccessiveHalvingPruner(min_resource={self.min_resource}, reduction_factor={self.reduction_factor})"


def check_pruner(pruner: Any) -> Pruner | None:
    """``pruner`` if it is ``None`` or a :class:`Pruner`; ``TypeError`` otherwise."""
    if pruner is not None and not isinstance(pruner, Pruner):
        raise TypeError(f"pruner must be a graphbo.MedianPruner, graphbo.SuccessiveHalvingPruner (a "
                        f"graphbo.pruners.Pruner) or None, got {type(pruner).__name__}")
    return pruner


def intermediate_of(attrs: Mapping[str, Any], sign: float = 1.0) -> dict[int, float]:
    """A stored trial's intermediate values (attribute ``"intermediate"``, ``{"step": value}``) as
    ``{step: sign * value}``."""
    stored = attrs.get("intermediate") or {}
    return {int(s): sign * float(v) for s, v in stored.items()}


class _Reporter:
    """The trial being evaluated: where :func:`report` writes and what :func:`should_prune` reads."""

    def __init__(self, pruner: Pruner | None, complete: Sequence[Curve], pruned: Sequence[Curve], sign: float):
        self.pruner, self.sign = pruner, sign
        self.complete_curves, self.pruned_curves = list(complete), list(pruned)
        self.curve: dict[int, float] = {}  # user's sign
        self.last_step: int | None = None
        #: whether the objective raised TrialPruned
        self.pruned = False

    def report(self, value: Any, step: Any) -> None:
        step = check_int("step", step, minimum=0)
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise TypeError(f"report: value must be a real number, got {type(value).__name__}") from None
        if isinstance(value, bool) or not math.isfinite(v):
            raise ValueError(f"report: value must be a finite real number, got {value!r}")
        if step in self.curve:
            return  # as Optuna: the first value reported at a step is kept
        self.curve[step] = v
        self.last_step = step

    def should_prune(self) -> bool:
        if self.pruner is None or self.last_step is None:
            return False
        mine = {s: self.sign * v for s, v in self.curve.items()}
        return self.pruner.prune(mine, self.complete_curves, pruned=self.pruned_curves, step=self.last_step)

    def last_value(self) -> float | None:
        return None if self.last_step is None else self.curve[self.last_step]


_CURRENT: contextvars.ContextVar[_Reporter | None] = contextvars.ContextVar("graphbo_trial", default=None)


def report(value: float, step: int) -> None:
    """Record the evaluation's intermediate ``value`` at ``step`` (an integer from 0: an epoch, a number of
    samples); the first value of a step counts. Nothing happens outside a study's evaluation."""
    reporter = _CURRENT.get()
    if reporter is not None:
        reporter.report(value, step)


def should_prune() -> bool:
    """Whether the study's pruner would stop this evaluation at its last reported step; ``False`` without a
    pruner, before any report, or outside a study's evaluation."""
    reporter = _CURRENT.get()
    return False if reporter is None else reporter.should_prune()


def _evaluating(reporter: _Reporter, objective: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
    """``objective`` run with ``reporter`` as the current trial, in whichever thread runs it; a
    :class:`TrialPruned` it raises marks the reporter pruned (and still propagates)."""

    def run(config: dict[str, Any]) -> Any:
        token = _CURRENT.set(reporter)
        try:
            return objective(config)
        except TrialPruned:
            reporter.pruned = True
            raise
        finally:
            _CURRENT.reset(token)

    return run
