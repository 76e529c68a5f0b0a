"""Plausibility checks of a loaded study: what a damaged file (bit flips, a hand edit) shows and SQLite's
own check does not see, because the damage is in the values themselves.

Cheap, linear in the number of trials: trial numbers ``0..n-1``; statuses with what
they need (a complete trial a finite value, a failed one its message); timestamps
that parse and lie between 2000 and tomorrow, a trial finishing after it started;
tell orders distinct; seconds and crash counts not negative; JSON of the shape
written; indices of variables with values (as the stored space description lists them) in range, so
that a damaged ``-1`` never picks a value from the end. A study checks the rows against its space again,
with the values themselves.

Row checksums (:func:`row_checksum`) catch what the plausibility checks cannot: a bit flipped inside a
stored number or timestamp that still looks right. A store writes one with every row and verifies each
present one on load.
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime, timedelta, timezone
from typing import AbstractSet, Any, Sequence

from .base import Trial

__all__ = ["trial_problem", "study_problem", "block_problem", "row_checksum"]

#: trials per sealed block of a stored study (the SQLite store seals each block once its trials are finished)
BLOCK_SIZE = 1000

_EARLIEST = datetime(2000, 1, 1, tzinfo=timezone.utc)
_LAST_YEAR = str(datetime.now(timezone.utc).year - 1)  # before this year: surely not in the future


def row_checksum(kind: str, *columns: Any) -> str:
    """The checksum of one stored row: the first 16 hex digits of the SHA-256 of the JSON list of ``kind``
    (``"trial"``, ``"meta"``, ``"attr"``) and the row's column values as stored (JSON columns as their text,
    floats written exactly by ``repr``). Any change to a value, its type or its key changes it, but for a
    chance of 2**-64."""
    values = [["blob", c.hex()] if isinstance(c, (bytes, bytearray)) else c for c in columns]
    text = json.dumps([kind, *values], ensure_ascii=True, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _time(text: Any, what: str) -> tuple[datetime | None, str | None]:
    """A stored timestamp as a datetime, or why it is not one."""
    if text is None:
        return None, None
    if type(text) is str and len(text) == 32 and text.endswith("+00:00") and "2000" <= text[:4] <= _LAST_YEAR:
        try:  # what graphbo writes: UTC, microseconds; the common case
            return datetime.fromisoformat(text), None
        except ValueError:
            pass
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
    if value is None or (type(value) is float and math.isfinite(value) and (value >= 0 or not non_negative)):
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


def _row_problem(t: Trial, variables: list[tuple[Any, list | None]], conditional: frozenset = frozenset()) -> str | None:
    """A trial's index row and configuration against the variables' names and values (``None``: continuous,
    not checked): each index in range, each stored value the one its index names; a ``conditional``
    variable may also sit on its inactive vertex (index ``len(values)``) when the configuration leaves it out."""
    row = t.row
    if len(row) != len(variables):
        return f"its index row has {len(row)} entries, the space {len(variables)} variables"
    config = t.config
    for k, (name, values) in zip(row, variables):
        if values is None:
            continue
        if type(k) is int and 0 <= k < len(values) and (name not in config or config[name] == values[k]):
            continue  # the common case
        if (isinstance(k, (int, float)) and not isinstance(k, bool) and k == len(values) and name in conditional
                and name not in config):
            continue  # a conditional variable on its inactive vertex (graphbo.spaces.conditions)
        if (isinstance(k, bool) or not isinstance(k, (int, float)) or not 0 <= k < len(values)
                or (isinstance(k, float) and not k.is_integer())):  # a mixed space's rows are floats
            return f"stored index {k!r} of variable {name!r} is not in 0..{len(values) - 1}"
        k = int(k)
        if name in t.config and t.config[name] != values[k]:
            return f"stored value {t.config[name]!r} of variable {name!r} is not the value {values[k]!r} of its index {k}"
    return None


def _variables(space: Any) -> list[tuple[Any, list | None]] | None:
    """Name and values of each variable of a stored space description (``None`` where it is not a list of
    variables, e.g. an architecture space)."""
    if not isinstance(space, list) or not all(isinstance(d, dict) for d in space):
        return None
    if any(d.get("class") == "ArchitectureSpace" for d in space):
        return None  # an architecture's row is its own encoding, of any length
    return [(d.get("name"), d["values"] if isinstance(d.get("values"), list) else None) for d in space]


def study_problem(trials: Sequence[Trial], *, space: Any = None, verified: AbstractSet[int] = frozenset()
                  ) -> str | None:
    """What is wrong across the trials (numbers, tell orders, index rows against the stored space
    description ``space``), or ``None``; each trial checked too, but for those of the sealed blocks in
    ``verified`` (block ``k``: trials ``k * BLOCK_SIZE`` onwards), checked when their block was sealed and
    read back unchanged."""
    return block_problem(trials, 0, space=space, verified=verified)


def block_problem(trials: Sequence[Trial], first: int, *, space: Any = None, verified: AbstractSet[int] = frozenset()
                  ) -> str | None:
    """:func:`study_problem` for the trials numbered from ``first`` on (a block of a study)."""
    variables = _variables(space)
    conditional = frozenset(d.get("name") for d in space if isinstance(d, dict) and "active_if" in d) \
        if variables is not None else frozenset()
    orders: set[int] = set()
    for i, t in enumerate(trials, start=first):
        if t.number != i:
            return f"trial numbers are not {first}..{first + len(trials) - 1} (found {t.number} at position {i})"
        if i // BLOCK_SIZE in verified:
            problem = None
        else:
            problem = trial_problem(t) or (None if variables is None else _row_problem(t, variables, conditional))
        if problem:
            return f"trial {t.number}: {problem}"
        if t.tell_order is not None:
            if t.tell_order in orders:
                return f"trial {t.number}: tell order {t.tell_order} is used twice"
            orders.add(t.tell_order)
    return None
