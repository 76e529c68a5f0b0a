"""What a study file holds, read without opening it for writing and without importing the optimizers (the
command line answers a wrong path or a foreign file in well under a second)."""

from __future__ import annotations

import os
from typing import Any

from .base import STATUSES, StorageError, StoredStudy, stored_direction
from .sqlite import SQLiteStorage

__all__ = ["load_study_file", "read_study_info"]


def load_study_file(path: str | os.PathLike) -> StoredStudy:
    """The meta and trials of the study file ``path``, read-only (reports, exports).

    Raises :class:`StorageError` if ``path`` is missing or not a usable study.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise StorageError(f"{path}: no such study file")
    stored = SQLiteStorage(path).load()
    if stored is None:
        raise StorageError(f"{path}: not a graphbo study (empty)")
    return stored


def read_study_info(path: str | os.PathLike) -> dict[str, Any]:
    """What a study file holds, read-only: its meta (method, seed, options, space, user_attrs), its
    ``direction`` (``"minimize"`` for a study that stores none), trial counts (``n_trials``, ``n_running``,
    ``n_complete``, ``n_failed``, and ``n_pruned`` among the failed ones) and ``best_value`` (the lowest complete value, the highest for a maximising
    study, of the feasible trials with black-box constraints; ``None`` if none completed, and with several
    objectives).

    Raises :class:`StorageError` if ``path`` is missing or not a usable study.
    """
    stored = load_study_file(path)
    trials = stored.trials
    info = {k: v for k, v in stored.meta.items() if k != "optimizer_state"}
    info.setdefault("user_attrs", {})
    info["direction"] = stored_direction(stored.meta)  # checked by the loader
    info["n_trials"] = len(trials)
    values = [t.value for t in trials if t.status == "complete" and t.value is not None
              and all(c <= 0 for c in t.attrs.get("constraints", ()))]  # feasible ones only
    best = (max if info["direction"] == "maximize" else min)(values) if values else None
    info["best_value"] = None if stored.meta.get("directions") else best  # several objectives: no single best
    info.update({f"n_{s}": sum(1 for t in trials if t.status == s) for s in STATUSES})
    info["n_pruned"] = sum(1 for t in trials if t.status == "failed" and "pruned" in t.attrs)  # among n_failed
    return info
