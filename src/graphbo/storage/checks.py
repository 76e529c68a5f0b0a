"""Plausibility checks of a loaded study: what a damaged file (bit flips, a hand edit) shows and SQLite's
own check does not see, because the damage is in the values themselves.

Cheap, linear in the number of trials: trial numbers ``0..n-1``; statuses with what
they need (a complete trial a finite value, a failed one its message); timestamps
that parse and lie between 2000 and tomorrow, a trial finishing after it started;
tell orders distinct; seconds and crash counts not negative; JSON of the shape
written. Index rows are checked against the space by the study, which knows it.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from typing import Any, Sequence

from .base import Trial

__all__ = ["trial_problem", "study_problem"]

_EARLIEST = datetime(2000, 1, 1, tzinfo=timezone.utc)


def _time(text: Any, what: str) -> tuple[datetime | None, str | None]:
    """A stored timestamp as a datetime, or why it is not one."""
    if text is None:
        return None, None
    if not isinstance(text, str):
        return None, f"{what} {text!r} is not a timestamp"
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        return None, f"{what} {text!r} is not a timestamp"
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    if not _EARLIEST <= t <= datetime.now(timezone.utc) + timedelta(days=1):
        return None, f"{what} {text!r} is outside 2000..today"
    return t, None


def _number_problem(value: Any, what: str, *, finite: bool = True, non_negative: bool = False) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{what} {value!r} is not a number"
    if finite and not math.isfinite(value):
        return f"{what} {value!r} is not finite"
    if non_negative and value < 0:
        return f"{what} {value!r} is negative"
    return None


def trial_problem(t: Trial) -> str | None:
    """What is wrong with a loaded trial, or ``None``."""
    if not isinstance(t.config, dict):
        return f"its configuration is {type(t.config).__name__}, not an object"
    if not isinstance(t.row, list):
        return f"its index row is {type(t.row).__name__}, not a list"
    if t.status == "complete" and t.value is None:
        return "complete without a value"
    if t.status == "failed" and t.error is None:
        return "failed without an error message"
    if t.status == "running" and (t.value is not None or t.finished is not None):
        return "running but with a value or a finish time"
    for value, what, nonneg in ((t.value, "value", False), (t.penalty, "penalty", False),
                                (t.suggest_seconds, "suggest_seconds", True),
                                (t.evaluate_seconds, "evaluate_seconds", True),
                                (t.crashes, "crash count", True), (t.tell_order, "tell order", True)):
        problem = _number_problem(value, what, non_negative=nonneg)
        if problem:
            return problem
    started, problem = _time(t.started, "start time")
    if problem:
        return problem
    finished, problem = _time(t.finished, "finish time")
    if problem:
        return problem
    if started is not None and finished is not None and finished < started - timedelta(seconds=1):
        return f"finished ({t.finished}) before it started ({t.started})"
    return None


def study_problem(trials: Sequence[Trial]) -> str | None:
    """What is wrong across the trials (numbers, tell orders), or ``None``; each trial checked too."""
    orders: set[int] = set()
    for i, t in enumerate(trials):
        if t.number != i:
            return f"trial numbers are not 0..{len(trials) - 1} (found {t.number} at position {i})"
        problem = trial_problem(t)
        if problem:
            return f"trial {t.number}: {problem}"
        if t.tell_order is not None:
            if t.tell_order in orders:
                return f"trial {t.number}: tell order {t.tell_order} is used twice"
            orders.add(t.tell_order)
    return None
