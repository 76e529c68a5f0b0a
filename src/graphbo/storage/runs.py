"""Benchmark runs on disk, read in one shape whichever way they were stored.

A run of the experiment runner (one benchmark, method and seed) is a study
file, ``OUT/METHOD/seedS.db`` (:class:`~graphbo.storage.sqlite.SQLiteStorage`),
whose user attribute ``"run"`` (:data:`RUN_ATTR`) describes it: ``spec`` (the
benchmark and its options, method, seed, budget, ``n_initial``, method
options), ``benchmark_label``, ``started`` and, for a multi-fidelity method,
``max_fidelity``; each evaluation is a complete trial (its fidelity a trial
attribute). :func:`read_run` reads one into a :class:`RunData` without changing it; packed
tables of many runs (:mod:`graphbo.storage.packed`) give the same :class:`RunData`. (The JSON-lines
traces of graphbo before 1.0 were converted once, into ``data/runs``, and are not read.)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterable

from .base import StorageError, Trial, TraceError
from .sqlite import SQLiteStorage, is_sqlite_file

__all__ = ["RunData", "read_run", "find_run", "evaluations", "RUN_ATTR", "RUN_SUFFIX"]

#: the study user attribute holding a run's description
RUN_ATTR = "run"
RUN_SUFFIX = ".db"


@dataclass(kw_only=True)
class RunData:
    """A run as stored.

    ``head``: the run's description (``spec``, ``benchmark_label``, ``started``,
    ``max_fidelity`` for a multi-fidelity run). ``evals``: the complete
    evaluations in the order the optimizer learnt them, each ``{"i", "config",
    "value", "suggest_seconds", "evaluate_seconds"}`` plus ``"fidelity"`` for a
    multi-fidelity run. ``state``: the latest optimizer state saved (``None``
    if there is none).
    """

    path: str
    head: dict[str, Any]
    evals: list[dict[str, Any]]
    state: dict[str, Any] | None


def find_run(path: str | os.PathLike) -> str | None:
    """``path`` if it is a file holding anything (a run, or what :func:`read_run` refuses), else ``None``."""
    path = os.fspath(path)
    return path if os.path.isfile(path) and os.path.getsize(path) > 0 else None


def read_run(path: str | os.PathLike) -> RunData:
    """Read the run stored in the study file ``path`` without changing it. Raises
    :class:`~graphbo.storage.base.TraceError` (a :class:`~graphbo.storage.base.StorageError`) for a file that
    is not a run study (a JSON-lines trace of graphbo before 1.0 included), or a newer graphbo's."""
    path = os.fspath(path)
    if not os.access(path, os.R_OK):
        raise TraceError(f"{path}: cannot be read (missing, or permission denied)")
    if not is_sqlite_file(path):
        raise TraceError(f"{path}: not a graphbo run study file (a JSON-lines trace of graphbo before 1.0 is not "
                         "read; its runs are in the packed data set, data/runs)")
    try:
        stored = SQLiteStorage(path).load()
    except StorageError as exc:
        raise TraceError(str(exc)) from None
    run_head = None if stored is None else stored.meta.get("user_attrs", {}).get(RUN_ATTR)
    if stored is None or not isinstance(run_head, dict) or "spec" not in run_head:
        raise TraceError(f"{path}: not a graphbo benchmark run (a study without a run description)")
    return RunData(path=path, head=run_head, evals=evaluations(stored.trials), state=stored.meta.get("optimizer_state"))


def evaluations(trials: Iterable[Trial]) -> list[dict[str, Any]]:
    """The complete trials of a run as :attr:`RunData.evals`, in the order the optimizer learnt them."""
    done = sorted((t for t in trials if t.status == "complete"), key=lambda t: (t.tell_order, t.number))
    out = []
    for i, t in enumerate(done):
        e = {"i": i, "config": t.config, "value": t.value, "suggest_seconds": t.suggest_seconds or 0.0,
             "evaluate_seconds": t.evaluate_seconds or 0.0}
        if "fidelity" in t.attrs:
            e["fidelity"] = t.attrs["fidelity"]
        out.append(e)
    return out
