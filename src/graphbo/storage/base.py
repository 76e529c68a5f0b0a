"""The storage interface of a study: what a :class:`~graphbo.study.Study` (and a benchmark run) needs from a store.

A store holds one study record:

- its *meta*: ``application`` (``"graphbo"``), ``format`` (storage format
  version), ``graphbo_version``, ``created`` (added by the store), and what the
  study gives: ``method``, ``seed``, ``method_options``, ``space`` (a JSON
  description), ``direction`` (``"minimize"`` or ``"maximize"``; a study
  without it, as earlier graphbo wrote, minimises), ``user_attrs`` (free
  JSON); plus ``optimizer_state``, the latest optimizer state saved;
- its *trials* (:class:`Trial`), each ``running``, ``complete`` or
  ``failed``, with free per-trial attributes (a multi-fidelity method's
  ``fidelity``). Values and penalties are in the user's sign (what the
  objective returned) whatever the direction: a maximising study tells its
  optimizer their negatives.

One writer at a time: :meth:`Storage.create` and :meth:`Storage.open` take the
store for writing and :meth:`Storage.close` gives it back; opening a store that
another writer holds raises :class:`StudyLockedError` (readers through
:meth:`Storage.load` are never refused). Every write is atomic and done before
the method returns. Finishing a trial
succeeds only while it is still ``running`` in the store: otherwise
:class:`TrialNotRunningError`, and nothing is written. Values are JSON (see
:mod:`graphbo.storage.jsonio`); nothing is pickled.

Implementations: :class:`~graphbo.storage.sqlite.SQLiteStorage` (a file) and
:class:`~graphbo.storage.memory.InMemoryStorage`.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Mapping, NamedTuple, Sequence

__all__ = ["Storage", "StoredStudy", "Trial", "StorageError", "TrialNotRunningError", "TraceError",
           "StudyLockedError", "NotAStudyError", "CorruptStudyError", "NewerFormatError", "StudyAccessError",
           "HotJournalError", "StorageFullError", "FORMAT_VERSION", "STATUSES", "APPLICATION", "DIRECTIONS", "now", "stored_direction"]

#: the storage format of graphbo 1.x: every study it creates is written in it, and it is the newest it reads (a
#: store with a larger one is refused, :class:`NewerFormatError`). The number moves only with a release that
#: changes what a study file holds, and that release's changelog says so. Files of graphbo before 1.0 carry
#: format 1 (a study that minimises), 2 (one that maximises, meta ``direction``) or 3 (several objectives or
#: black-box constraints: meta ``directions``, ``n_constraints``); 1.0's format 3 holds all of these, so such
#: files are read as they are
FORMAT_VERSION = 3
#: what a study optimises; the first is the default and what a study without a stored direction does
DIRECTIONS = ("minimize", "maximize")
#: the ``application`` mark in the meta of every graphbo study
APPLICATION = "graphbo"
STATUSES = ("running", "complete", "failed")


class StorageError(Exception):
    """A study file cannot be used: corrupt, foreign, newer, or made for another study.

    The file is left untouched.
    """


class StudyLockedError(StorageError):
    """Another writer (a live process, or another study object of this one) has the study open for writing."""


class NotAStudyError(StorageError):
    """The path is not a graphbo study: a folder, a file that is not SQLite, another program's database."""


class CorruptStudyError(StorageError):
    """The file is a damaged graphbo study (truncated, bit flips, values out of range). Left untouched."""


class NewerFormatError(StorageError):
    """The study was written by a newer graphbo, in a storage format this one does not read."""


class StudyAccessError(StorageError):
    """The study cannot be read or written: permissions of the file or its folder."""


class HotJournalError(StorageError):
    """A rollback journal lies beside the study, which a read-only open cannot roll back; opening the study for
    writing (:class:`graphbo.Study`, ``graphbo resume``) lets SQLite recover it."""


class StorageFullError(StudyAccessError):
    """A write failed for want of space (a full disk, or the process's file-size limit); nothing of it was
    stored, and every trial told before it is kept."""


class TrialNotRunningError(StorageError):
    """A trial cannot be finished: the store has it finished already (or has no such trial). Nothing is written."""


class TraceError(StorageError, ValueError):
    """A benchmark run's file (a run study or a legacy JSON-lines trace) is malformed, foreign, or belongs
    to a different run. The file is left untouched."""


@dataclass(kw_only=True)
class Trial:
    """One evaluation of a study.

    ``number`` counts from 0 in the order the trials were asked (a trial told
    without being asked gets the next one); the store, the log messages and
    the ``graphbo`` command's progress lines use the same number.
    ``status`` is ``"running"`` (asked, not yet told), ``"complete"``
    (``value`` holds the objective, in the user's sign) or ``"failed"`` (``error`` holds the
    message; ``penalty`` the value told to the model instead, if any).
    Timestamps are UTC ISO 8601 strings. ``row`` is the configuration's index
    row (a NumPy array in a study; a list as loaded from a store). ``attrs``
    holds per-trial attributes, e.g. ``{"fidelity": k}`` for a multi-fidelity
    method. ``crashes`` counts the writers that died (killed, ``os._exit``, a
    segfault) while the trial was handed out by them.
    """

    number: int
    config: dict[str, Any]
    status: str = "running"
    value: float | None = None
    error: str | None = None
    penalty: float | None = None
    started: str | None = None
    finished: str | None = None
    suggest_seconds: float | None = None
    evaluate_seconds: float | None = None
    row: Any = field(default=None, repr=False, compare=False)
    tell_order: int | None = field(default=None, repr=False)
    attrs: dict[str, Any] = field(default_factory=dict)
    crashes: int = 0


class StoredStudy(NamedTuple):
    """What a store holds: the meta (JSON values by key) and the trials by number."""

    meta: dict[str, Any]
    trials: list[Trial]


def stored_direction(meta: Mapping[str, Any]) -> str | None:
    """The direction a stored meta records: ``"minimize"`` when it has none (a study written before directions
    existed), ``None`` when the stored value is not one of :data:`DIRECTIONS` (damage)."""
    direction = meta.get("direction", DIRECTIONS[0])
    return direction if isinstance(direction, str) and direction in DIRECTIONS else None


def now() -> str:
    """The current UTC time as an ISO 8601 string (microseconds), as trials record it."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def graphbo_version() -> str:
    from .. import __version__

    return __version__


class Storage(abc.ABC):
    """Where a study keeps its record and its trials. See the module docstring for the contract."""

    #: the file behind the store, ``None`` for one in memory
    path: str | None = None

    @property
    def name(self) -> str:
        """How messages name the store: its file, or ``(in memory)``."""
        return self.path or "(in memory)"

    def stamped(self, meta: Mapping[str, Any]) -> dict[str, Any]:
        """``meta`` with what the store adds to a new record: application, format (:data:`FORMAT_VERSION`),
        graphbo version, creation time."""
        out = {"application": APPLICATION, "format": FORMAT_VERSION, "graphbo_version": graphbo_version()}
        out.update(meta)
        out.setdefault("created", now())
        out.setdefault("user_attrs", {})
        return out

    # -- reading ----------------------------------------------------------------------------------
    @abc.abstractmethod
    def load(self) -> StoredStudy | None:
        """The stored study (meta and trials), read without changing anything; ``None`` if there is none yet.

        Raises :class:`StorageError` for a store that cannot be used (corrupt,
        foreign, newer format), which is left untouched.
        """

    @abc.abstractmethod
    def trials(self) -> list[Trial]:
        """The trials of the open study, by number."""

    @abc.abstractmethod
    def user_attrs(self) -> dict[str, Any]:
        """The free attributes of the open study."""

    # -- opening ----------------------------------------------------------------------------------
    @abc.abstractmethod
    def create(self, meta: Mapping[str, Any]) -> None:
        """Record a new study (``meta``: method, seed, method_options, space, direction, user_attrs) and open it
        for writing.

        Raises :class:`StorageError` if the store holds a study already or cannot be written.
        """

    @abc.abstractmethod
    def open(self) -> None:
        """Open the stored study (see :meth:`load`) for writing; :class:`StudyLockedError` if another writer
        has it open."""

    def unchanged_since(self, stored: StoredStudy) -> bool:
        """Whether the open store still holds the trials of ``stored`` (what :meth:`load` gave before
        :meth:`open`), by a cheap check; ``False`` means: load again. This default always says ``False``."""
        return False

    @abc.abstractmethod
    def close(self) -> None:
        """Stop writing; the record stays (and can be loaded and opened again). Idempotent."""

    def repair_after_evaluation(self) -> bool:
        """After code of the user ran in this process (an objective): make sure the store still writes where it
        should, reconnecting if that code closed or replaced the store's open files; returns whether it had to.
        This default has nothing to check."""
        return False

    @property
    @abc.abstractmethod
    def is_open(self) -> bool:
        """Whether the store is open for writing."""

    # -- writing (each call one atomic write) -----------------------------------------------------
    @abc.abstractmethod
    def add_trials(self, trials: Sequence[Trial], state: Any = None) -> None:
        """Add new trials (``running`` ones just asked, or a finished one never asked), with ``state`` (if
        not ``None``) as the latest optimizer state. Raises :class:`StorageError` if a number is taken."""

    @abc.abstractmethod
    def restart_trial(self, number: int, started: str) -> None:
        """Give a ``running`` trial a new start time (handed out again after a resume)."""

    @abc.abstractmethod
    def finish_trial(self, trial: Trial, state: Any = None) -> None:
        """Record the outcome of a ``running`` trial: ``trial`` carries its status (``complete`` or ``failed``),
        value, penalty, error, finish time, evaluation seconds, tell order and attributes; ``state`` (if not
        ``None``) is the latest optimizer state. Raises :class:`TrialNotRunningError`, writing nothing, if the
        store does not have the trial ``running``."""

    @abc.abstractmethod
    def save_state(self, state: Any) -> None:
        """Save ``state`` as the latest optimizer state."""

    @abc.abstractmethod
    def set_user_attr(self, key: str, value: Any) -> None:
        """Set one free attribute of the study (a JSON value)."""

    # -- shared checks ------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if not self.is_open:
            raise ValueError(f"study {self.name} is closed")

    def _not_running(self, number: int, status: str | None) -> TrialNotRunningError:
        why = "the study has no such trial" if status is None else f"it is {status} already"
        return TrialNotRunningError(f"{self.name}: trial {number} cannot be finished: {why} (nothing written)")
