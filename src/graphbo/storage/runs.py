"""Benchmark runs on disk, read in one shape whichever way they were stored.

A run of the experiment runner (one benchmark, method and seed) is a study
file, ``OUT/METHOD/seedS.db`` (:class:`~graphbo.storage.sqlite.SQLiteStorage`),
whose user attribute ``"run"`` (:data:`RUN_ATTR`) describes it: ``spec`` (the
benchmark and its options, method, seed, budget, ``n_initial``, method
options), ``benchmark_label``, ``started`` and, for a multi-fidelity method,
``max_fidelity``; each evaluation is a complete trial (its fidelity a trial
attribute). Runs written by graphbo 0.1 are JSON-lines traces,
``OUT/METHOD/seedS.jsonl`` (:mod:`graphbo.storage.legacy`).

:func:`read_run` reads either into a :class:`RunData`; neither file is changed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from .base import StorageError, Trial, TraceError
from .legacy import read_trace
from .sqlite import SQLiteStorage, is_sqlite_file

__all__ = ["RunData", "read_run", "find_run", "run_files", "evaluations", "trace_trials", "RUN_ATTR",
           "RUN_SUFFIX", "TRACE_SUFFIX"]

#: the study user attribute holding a run's description
RUN_ATTR = "run"
RUN_SUFFIX = ".db"
TRACE_SUFFIX = ".jsonl"


@dataclass
class RunData:
    """A run as stored.

    ``head``: the run's description (``spec``, ``benchmark_label``, ``started``,
    ``max_fidelity`` for a multi-fidelity run). ``evals``: the complete
    evaluations in the order the optimizer learnt them, each ``{"i", "config",
    "value", "suggest_seconds", "evaluate_seconds"}`` plus ``"fidelity"`` for a
    multi-fidelity run. ``state``: the latest optimizer state saved (``None``
    if there is none). ``legacy``: whether it is a JSON-lines trace.
    """

    path: str
    head: dict[str, Any]
    evals: list[dict[str, Any]]
    state: dict[str, Any] | None
    legacy: bool


def run_files(path: str) -> tuple[str, str]:
    """``(run study file, legacy trace)`` of the run named by ``path``: ``X.jsonl`` names the run of
    ``X.db``; any other path is the study file itself, its trace beside it with the suffix ``.jsonl``."""
    path = os.fspath(path)
    if path.endswith(TRACE_SUFFIX):
        return path[: -len(TRACE_SUFFIX)] + RUN_SUFFIX, path
    return path, os.path.splitext(path)[0] + TRACE_SUFFIX


def _has_content(path: str) -> bool:
    return os.path.isfile(path) and os.path.getsize(path) > 0


def find_run(path: str) -> str | None:
    """The file holding the run named by ``path`` (see :func:`run_files`): its study file if that holds
    anything, else its legacy trace if there is one, else ``None``."""
    db, trace = run_files(path)
    if _has_content(db):
        return db
    return trace if os.path.isfile(trace) else None


def read_run(path: str | os.PathLike) -> RunData:
    """Read the run stored in ``path``, a run study file or a legacy JSON-lines trace (told apart by
    content), without changing it. Raises :class:`~graphbo.storage.base.TraceError` (a
    :class:`~graphbo.storage.base.StorageError`) for a file that is neither, or a newer graphbo's."""
    path = os.fspath(path)
    if not os.access(path, os.R_OK):
        raise TraceError(f"{path}: cannot be read (missing, or permission denied)")
    if not is_sqlite_file(path):
        head, evals, _ = read_trace(path)
        state = evals[-1].get("state") if evals else None
        return RunData(path, head, [{k: v for k, v in r.items() if k not in ("type", "state")} for r in evals],
                       state, legacy=True)
    try:
        stored = SQLiteStorage(path).load()
    except StorageError as exc:
        raise TraceError(str(exc)) from None
    run_head = None if stored is None else stored.meta.get("user_attrs", {}).get(RUN_ATTR)
    if stored is None or not isinstance(run_head, dict) or "spec" not in run_head:
        raise TraceError(f"{path}: not a graphbo benchmark run (a study without a run description)")
    return RunData(path, run_head, evaluations(stored.trials), stored.meta.get("optimizer_state"), legacy=False)


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


def trace_trials(run: RunData, row_of: Callable[[dict[str, Any]], Any]) -> list[Trial]:
    """The evaluations of a legacy trace as complete trials, numbered and told in trace order
    (``row_of``: a configuration's index row, ``space.to_index``), to migrate it into a run study."""
    return [Trial(e["i"], e["config"], "complete", float(e["value"]), suggest_seconds=e.get("suggest_seconds"),
                  evaluate_seconds=e.get("evaluate_seconds"), row=row_of(e["config"]), tell_order=e["i"],
                  attrs={"fidelity": int(e["fidelity"])} if "fidelity" in e else {})
            for e in run.evals]
