"""Trials as a table: one row per trial, one column per variable (Optuna's ``trials_dataframe``)."""

from __future__ import annotations

import datetime as _dt
from typing import Any, Sequence

from .._lazy import require
from .base import Trial

__all__ = ["trials_dataframe"]


def _time(text: str | None) -> Any:
    return None if text is None else _dt.datetime.fromisoformat(text)


def trials_dataframe(trials: Sequence[Trial], names: Sequence[str] | None = None) -> Any:
    """A pandas ``DataFrame`` of ``trials``, one row per trial by number: ``number``, ``state`` (``running``,
    ``complete``, ``failed``), ``value`` (the user's sign; NaN unless complete), ``params_<name>`` for each
    variable of ``names`` (default: the variables of the first trial's configuration), ``datetime_start``,
    ``datetime_complete``, ``duration`` (a ``Timedelta``), ``suggest_seconds``, ``evaluate_seconds``, ``error``
    and ``attrs_<key>`` for each per-trial attribute. Needs pandas (``pip install "graphbo[dataframe]"``)."""
    pd = require("pandas", "trials_dataframe", "dataframe")
    trials = sorted(trials, key=lambda t: t.number)
    if names is None:
        names = list(trials[0].config) if trials and isinstance(trials[0].config, dict) else []
    attr_keys = sorted({k for t in trials for k in t.attrs})
    rows = []
    for t in trials:
        row: dict[str, Any] = {"number": t.number, "state": t.status,
                               "value": t.value if t.status == "complete" else float("nan")}
        row.update({f"params_{n}": t.config.get(n) for n in names})
        row.update({"datetime_start": _time(t.started), "datetime_complete": _time(t.finished),
                    "suggest_seconds": t.suggest_seconds, "evaluate_seconds": t.evaluate_seconds,
                    "error": t.error})
        row.update({f"attrs_{k}": t.attrs.get(k) for k in attr_keys})
        rows.append(row)
    columns = ["number", "state", "value", *[f"params_{n}" for n in names], "datetime_start", "datetime_complete",
               "suggest_seconds", "evaluate_seconds", "error", *[f"attrs_{k}" for k in attr_keys]]
    frame = pd.DataFrame(rows, columns=columns)
    for column in ("datetime_start", "datetime_complete"):
        frame[column] = pd.to_datetime(frame[column], utc=True)
    frame.insert(columns.index("datetime_complete") + 1, "duration",
                 frame["datetime_complete"] - frame["datetime_start"])
    return frame
