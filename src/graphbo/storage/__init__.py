"""Where studies and benchmark runs are kept: one storage interface, an SQLite store and an in-memory store.

- :mod:`~graphbo.storage.base`: the :class:`Storage` interface, :class:`Trial`, the errors;
- :mod:`~graphbo.storage.sqlite`: :class:`SQLiteStorage`, a study in one SQLite file;
- :mod:`~graphbo.storage.memory`: :class:`InMemoryStorage`, a study in this process;
- :mod:`~graphbo.storage.runs`: benchmark runs (a study file each), read with :func:`read_run`;
- :mod:`~graphbo.storage.jsonio`: the JSON encoding every store uses;
- :mod:`~graphbo.storage.lock`: the writer lock of a study file (one writer at a time, stale locks);
- :mod:`~graphbo.storage.checks`: plausibility checks of a loaded study (damage SQLite does not see).
"""

from __future__ import annotations

import os

from .base import (FORMAT_VERSION, CorruptStudyError, NewerFormatError, NotAStudyError, Storage, StorageError,
                   StorageFullError, StoredStudy, StudyAccessError, StudyLockedError, TraceError, Trial,
                   TrialNotRunningError)
from .memory import InMemoryStorage
from .runs import RunData, find_run, read_run
from .sqlite import SQLiteStorage

__all__ = ["Storage", "StoredStudy", "Trial", "StorageError", "TrialNotRunningError", "TraceError",
           "StudyLockedError", "NotAStudyError", "CorruptStudyError", "NewerFormatError", "StudyAccessError",
           "StorageFullError",
           "SQLiteStorage", "InMemoryStorage", "as_storage", "read_run", "RunData", "find_run",
           "FORMAT_VERSION"]


def as_storage(storage: str | os.PathLike | Storage | None) -> Storage:
    """The store a study is given as: ``None`` -> a new :class:`InMemoryStorage`; a path -> an
    :class:`SQLiteStorage` of that file; a :class:`Storage` as it is."""
    if storage is None:
        return InMemoryStorage()
    if isinstance(storage, Storage):
        return storage
    if isinstance(storage, (str, os.PathLike)):
        return SQLiteStorage(storage)
    raise TypeError(f"storage must be a path, a graphbo.storage.Storage or None, got {type(storage).__name__}")
