"""The in-memory store: a study kept in this process only (what a study without a file uses).

It keeps what the SQLite store would give back, JSON copies, so a study
behaves the same on either; closing it keeps the record, and a new study
given the same object resumes it (nothing survives the process). As a file,
it has one writer at a time: opening it while it is open raises
:class:`~graphbo.storage.base.StudyLockedError`.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Mapping, Sequence

from .base import Storage, StorageError, StoredStudy, StudyLockedError, Trial
from .jsonio import dumps, plain

__all__ = ["InMemoryStorage"]


def _copy(trial: Trial) -> Trial:
    """A trial as a store gives it back: JSON values, the row as a list."""
    return dataclasses.replace(trial, config=plain(trial.config), row=plain(trial.row), attrs=plain(trial.attrs))


class InMemoryStorage(Storage):
    """A study in this process's memory."""

    path = None

    def __init__(self) -> None:
        self._meta: dict[str, str] | None = None  # JSON text by key, as the SQLite store's meta table
        self._trials: dict[int, Trial] = {}
        self._open = False

    def __repr__(self) -> str:
        return f"InMemoryStorage({len(self._trials)} trials)"

    # -- reading ----------------------------------------------------------------------------------
    def load(self) -> StoredStudy | None:
        if self._meta is None:
            return None
        return StoredStudy({k: json.loads(v) for k, v in self._meta.items()}, self._copies())

    def _copies(self) -> list[Trial]:
        return [_copy(self._trials[n]) for n in sorted(self._trials)]

    def trials(self) -> list[Trial]:
        self._check_open()
        return self._copies()

    def user_attrs(self) -> dict[str, Any]:
        self._check_open()
        return json.loads(self._record().get("user_attrs", "{}"))

    def _record(self) -> dict[str, str]:
        """The meta of the study, which an open store has (it was opened by ``create`` or ``open``)."""
        meta = self._meta
        assert meta is not None, "an open store holds a study"
        return meta

    # -- opening ----------------------------------------------------------------------------------
    def create(self, meta: Mapping[str, Any]) -> None:
        if self._meta is not None:
            raise StorageError(f"{self.name}: cannot create the study (it holds one already)")
        self._meta = {k: dumps(v) for k, v in self.stamped(meta).items()}
        self._open = True

    def open(self) -> None:
        if self._meta is None:
            raise StorageError(f"{self.name}: no study to open")
        if self._open:
            raise StudyLockedError(f"{self.name}: the study is open in another Study; close that one first "
                                   "(one writer at a time)")
        self._open = True

    @property
    def is_open(self) -> bool:
        return self._open

    def close(self) -> None:
        self._open = False

    # -- writing ----------------------------------------------------------------------------------
    def add_trials(self, trials: Sequence[Trial], state: Any = None) -> None:
        self._check_open()
        taken = [t.number for t in trials if t.number in self._trials]
        if taken or len({t.number for t in trials}) < len(trials):
            raise StorageError(f"{self.name}: trial {taken[0] if taken else trials[0].number} exists already; "
                               "nothing written")
        copies = [_copy(t) for t in trials]  # all encoded before anything is written
        self._save(state)
        self._trials.update((t.number, t) for t in copies)

    def restart_trial(self, number: int, started: str) -> None:
        self._check_open()
        t = self._trials.get(number)
        if t is not None and t.status == "running":
            t.started = started

    def finish_trial(self, trial: Trial, state: Any = None) -> None:
        self._check_open()
        stored = self._trials.get(trial.number)
        if stored is None or stored.status != "running":
            raise self._not_running(trial.number, None if stored is None else stored.status)
        finished = _copy(dataclasses.replace(trial, config=stored.config, row=stored.row, started=stored.started,
                                             suggest_seconds=stored.suggest_seconds,
                                             attrs={**stored.attrs, **trial.attrs}))
        self._save(state)
        self._trials[trial.number] = finished

    def _save(self, state: Any) -> None:
        if state is not None:
            self._record()["optimizer_state"] = dumps(state)

    def save_state(self, state: Any) -> None:
        self._check_open()
        self._save(state)

    def set_user_attr(self, key: str, value: Any) -> None:
        self._check_open()
        meta = self._record()
        attrs = json.loads(meta.get("user_attrs", "{}"))
        attrs[str(key)] = value
        meta["user_attrs"] = dumps(attrs)
