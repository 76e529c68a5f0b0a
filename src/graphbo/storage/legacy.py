"""Legacy JSON-lines traces: how graphbo 0.1's runner stored a benchmark run (``OUT/METHOD/seedS.jsonl``).

A trace is a first ``run`` line (``{"type": "run", "format": 1, "spec": {...},
"benchmark_label": ..., "started": ..., "max_fidelity": k}``, the last for a
multi-fidelity method only), then one line per evaluation
(``{"type": "eval", "i", "config", "value", "fidelity" (multi-fidelity),
"suggest_seconds", "evaluate_seconds", "state"}``), the optimizer state kept on
the last line only once the run had finished. graphbo now stores runs as
studies (:mod:`graphbo.storage.runs`); traces are only read (and migrated
into a run study), never written or changed.
"""

from __future__ import annotations

import json
from typing import Any

from .base import TraceError

__all__ = ["read_trace", "TRACE_FORMAT"]

#: the newest trace format this graphbo reads
TRACE_FORMAT = 1


def read_trace(path: str) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    """Parse a trace: ``(run line, eval lines, byte length of the complete lines)``.

    A last line cut short by a crash is ignored (its length is not counted);
    any other malformed line raises :class:`~graphbo.storage.base.TraceError`.
    """
    with open(path, "rb") as fh:
        data = fh.read()
    complete = data.split(b"\n")[:-1]  # the text after the last newline is incomplete (or empty)
    good_len = sum(len(line) + 1 for line in complete)
    if not complete:
        raise TraceError(f"{path}: empty trace")
    try:
        records = [json.loads(line) for line in complete]
    except json.JSONDecodeError as exc:
        raise TraceError(f"{path}: not a graphbo trace ({exc})") from None
    head = records[0]
    if not isinstance(head, dict) or head.get("type") != "run":
        raise TraceError(f"{path}: not a graphbo trace (first line is not a run description)")
    if head.get("format", TRACE_FORMAT) > TRACE_FORMAT:
        raise TraceError(f"{path}: written by a newer graphbo (format {head.get('format')})")
    evals = records[1:]
    for i, r in enumerate(evals):
        if not isinstance(r, dict) or r.get("type") != "eval" or r.get("i") != i:
            raise TraceError(f"{path}: line {i + 2} is not evaluation {i}")
    return head, evals, good_len
