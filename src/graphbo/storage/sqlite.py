"""The SQLite store: a study in one file (the standard library's :mod:`sqlite3`, WAL mode).

Tables:

- ``meta``: one row per key, JSON values (see :mod:`graphbo.storage.base`);
  the file also carries ``PRAGMA application_id`` = :data:`APPLICATION_ID`.
- ``trials``: ``number``, ``config`` (JSON), ``row`` (the index row, JSON),
  ``status`` (``running``, ``complete`` or ``failed``), ``value``,
  ``penalty`` (the value told to the model for a failure, if any),
  ``error``, ``started`` / ``finished`` (UTC ISO timestamps),
  ``suggest_seconds``, ``evaluate_seconds``, ``tell_order`` (order in which
  the optimizer learnt the outcome) and ``state`` (optimizer state after it,
  unless the store was made with ``trial_states=False``).
- ``trial_attrs`` (``number``, ``key``, ``value`` JSON): per-trial
  attributes; created with the first one, so a study without any has exactly
  the two tables above.

Each row of the three tables also has a ``checksum`` column
(:func:`graphbo.storage.checks.row_checksum` of its other columns, except a
trial's ``state``, which graphbo never reads back): written with every write of
the row, verified for every row that has one on load, so a bit flipped inside a
stored value is refused (:class:`CorruptStudyError` naming the trial or meta
key). A file of an earlier graphbo (storage format 1 or 2, or no checksum
columns) is converted once, in the first write transaction this one makes to
it (opening it for writing, or :meth:`~SQLiteStorage.unlock`): it gets the
columns, its rows are sealed as they read then, and it is stamped with the
current format (the earlier pair kept under the meta key ``converted_from``),
which a version from before format 3 refuses as newer. Until then it is read as
it is, its rows unverified. The triggers ``trials_checksum_stale``
and ``trial_attrs_checksum_stale`` clear the checksum of a trial (attribute)
that an UPDATE leaves with its old one (a hand edit): that row is then
unverified, not refused.

Every write is one ``BEGIN IMMEDIATE`` transaction, committed (``synchronous
= FULL``) before the method returns. An existing file is first read through a
read-only connection and checked: a file that is not SQLite, truncated, corrupt
(SQLite's ``quick_check``, then the values themselves, :mod:`graphbo.storage.checks`),
not a graphbo study or of a newer format raises a :class:`StorageError` subclass
naming it and saying what to do, and it is left byte-for-byte unchanged. So do
a read-only file or folder, and a write that finds the disk full
(:class:`StorageFullError`: nothing of that write is stored).

One writer at a time: a store open for writing records its writer (process id,
host, process start, since when; :mod:`graphbo.storage.lock`) under the meta key
``writer`` and removes it on :meth:`~SQLiteStorage.close`. Opening a file whose
writer is alive raises :class:`StudyLockedError` at once; readers
(:meth:`~SQLiteStorage.load`, ``graphbo report``) are never blocked (WAL). A lock
left by a writer that died on this host is taken over, and each ``running`` trial
that writer had handed out gets one more ``crashes``; :meth:`~SQLiteStorage.unlock`
(``graphbo unlock STUDY.db``) clears one that cannot be checked from here
(another host).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
import sqlite3
from pathlib import Path
from typing import AbstractSet, Any, Iterator, Mapping, Sequence

from .base import (APPLICATION, DIRECTIONS, FORMAT_VERSION, STATUSES, CorruptStudyError, HotJournalError,
                   NewerFormatError, NotAStudyError, Storage, StorageError, StorageFullError, StoredStudy, StudyAccessError,
                   StudyLockedError, Trial, graphbo_version, stored_direction)
from .checks import BLOCK_SIZE, block_problem, row_checksum, study_problem
from .jsonio import dumps
from .lock import describe_writer, holder_alive, is_ours, this_writer

__all__ = ["SQLiteStorage", "APPLICATION_ID", "is_sqlite_file"]

#: the meta key of the sealed blocks' digests, a list (the ``k``-th: trials ``k * BLOCK_SIZE`` onwards)
BLOCKS_KEY = "sealed_blocks"

#: SQLite ``PRAGMA application_id`` of graphbo study files ("gbo1")
APPLICATION_ID = 0x67626F31

_SCHEMA = """
CREATE TABLE meta (
    key      TEXT PRIMARY KEY,
    value    TEXT NOT NULL,
    checksum TEXT
);
CREATE TABLE trials (
    number           INTEGER PRIMARY KEY,
    config           TEXT NOT NULL,
    row              TEXT NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('running', 'complete', 'failed')),
    value            REAL,
    penalty          REAL,
    error            TEXT,
    started          TEXT,
    finished         TEXT,
    suggest_seconds  REAL,
    evaluate_seconds REAL,
    tell_order       INTEGER,
    state            TEXT,
    crashes          INTEGER NOT NULL DEFAULT 0,
    checksum         TEXT
);
"""
#: an UPDATE of a trial that leaves its checksum as it was (a graphbo without checksums wrote it) clears it
_STALE_TRIGGER = """CREATE TRIGGER IF NOT EXISTS trials_checksum_stale AFTER UPDATE ON trials
WHEN NEW.checksum IS OLD.checksum AND NEW.checksum IS NOT NULL
BEGIN UPDATE trials SET checksum = NULL WHERE number = NEW.number; END"""
_ATTRS_STALE_TRIGGER = """CREATE TRIGGER IF NOT EXISTS trial_attrs_checksum_stale AFTER UPDATE ON trial_attrs
WHEN NEW.checksum IS OLD.checksum AND NEW.checksum IS NOT NULL
BEGIN UPDATE trial_attrs SET checksum = NULL WHERE number = NEW.number AND key = NEW.key; END"""
_ATTRS_SCHEMA = """CREATE TABLE IF NOT EXISTS trial_attrs (
    number INTEGER NOT NULL,
    key    TEXT NOT NULL,
    value  TEXT NOT NULL,
    checksum TEXT,
    PRIMARY KEY (number, key)
)"""
_TRIAL_COLUMNS = ("number, config, row, status, value, penalty, error, started, finished, suggest_seconds, "
                  "evaluate_seconds, tell_order")
#: the columns of a trial its checksum covers, in order
_SEALED_COLUMNS = _TRIAL_COLUMNS + ", crashes"


class SQLiteStorage(Storage):
    """A study stored in the SQLite file ``path`` (created with its folder if absent).

    ``trial_states=False`` keeps only the latest optimizer state (in ``meta``),
    not one per trial: for long runs of optimizers with a large state (BOCS's
    is tens of kilobytes). ``keep_wal=False`` switches the file back from WAL
    to a rollback journal when it is closed, so that read-only readers leave
    no ``-wal``/``-shm`` files beside it (files committed to a repository).
    """

    path: str  # always a file (the base class allows None for a store in memory)

    def __init__(self, path: str | os.PathLike, *, trial_states: bool = True, keep_wal: bool = True):
        self.path = os.fspath(path)
        self.trial_states = trial_states
        self.keep_wal = keep_wal
        self._conn: sqlite3.Connection | None = None
        self._writer: dict[str, Any] | None = None
        #: descriptors of the study's files at opening, to see that an objective left them alone
        self._descriptors: dict[int, tuple[int, int]] = {}
        #: the lock taken over when this store was opened (a writer that died), else None
        self.taken_over: dict[str, Any] | None = None
        #: how many trials, from the first, the latest :meth:`load` read back as checked when they were written
        #: (sealed blocks, :meth:`_seal_blocks`): their index rows are lists of ints, their JSON of the shapes written
        self.checked_trials = 0
        #: the digests of the sealed blocks of trials (:meth:`_seal_blocks`), read at the first write
        self._sealed: list[str] | None = None

    def __repr__(self) -> str:
        return f"SQLiteStorage({self.path!r})"

    # -- reading ----------------------------------------------------------------------------------
    def load(self) -> StoredStudy | None:
        path = self.path
        if os.path.isdir(path):
            raise NotAStudyError(f"{path}: is a folder, not a graphbo study file; give the path of a study file "
                                 f"(e.g. {os.path.join(path, 'study.db')})")
        if not os.path.exists(path) or os.path.getsize(path) == 0:
            return None
        if not os.access(path, os.R_OK):
            raise StudyAccessError(f"{path}: cannot be read (permission denied); make it readable "
                                   f"(chmod u+r) and try again")
        try:
            conn = self._read_connection()
        except sqlite3.Error as exc:
            raise self._unreadable(exc) from None
        try:
            check = conn.execute("PRAGMA quick_check").fetchall()
            if [r[0] for r in check] != ["ok"]:
                raise CorruptStudyError(f"{path}: corrupt SQLite database "
                                        f"({'; '.join(str(r[0]) for r in check[:3])}); restore it from a copy "
                                        "(graphbo wrote nothing to it)")
            tables = _tables(conn)
            if not tables:  # an empty database (a process killed while creating the study): nothing to lose
                return None
            meta = self._read_meta(conn, tables)
            foreign = foreign_schema(conn)
            if foreign:
                raise self._foreign(foreign)
            trials, bad_row, verified = self._read_checked_trials(conn, tables, meta.get(BLOCKS_KEY))
            bad_row = _meta_mismatch(conn) or bad_row
        except sqlite3.Error as exc:
            raise self._error(exc, "cannot be read") from None
        finally:
            conn.close()
        problem = study_problem(trials, space=meta.get("space"),
                                verified=verified)  # its messages say more than a checksum's
        if problem:
            raise CorruptStudyError(f"{path}: corrupt graphbo study ({problem}); restore it from a copy "
                                    "(graphbo wrote nothing to it)")
        if bad_row:
            raise self._checksum_error(bad_row)
        checked = 0
        while checked // BLOCK_SIZE in verified:
            checked += BLOCK_SIZE
        self.checked_trials = checked
        return StoredStudy(meta, trials)

    def recover_journal(self) -> None:
        """Let SQLite recover a rollback journal beside the file (:class:`HotJournalError`): one connection that
        may write reads the schema, which rolls a hot journal back (or drops one that is not SQLite's) as
        SQLite does at any writer's first read; nothing else is written."""
        try:
            conn = sqlite3.connect(Path(self.path).resolve().as_uri() + "?mode=rw", uri=True)
            try:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
            finally:
                conn.close()
        except sqlite3.Error as exc:
            raise sqlite_error(self.path, exc, "recovering its rollback journal") from None

    def _refuse_foreign_schema(self) -> None:
        """Refuse, before anything is written (even the journal mode), a file holding SQL graphbo did not make."""
        if not os.path.exists(self.path) or os.path.getsize(self.path) == 0:
            return
        try:
            conn = self._read_connection()
        except sqlite3.Error:
            return  # the write connection's error says what is wrong
        try:
            foreign = foreign_schema(conn) if "meta" in _tables(conn) else None  # else not a study: said later
        except sqlite3.Error:
            foreign = None
        finally:
            conn.close()
        if foreign:
            raise self._foreign(foreign)

    def _foreign(self, what: str) -> CorruptStudyError:
        return CorruptStudyError(f"{self.path}: holds a {what} that graphbo did not make (SQL in a study file "
                                 "would run when graphbo writes it); graphbo opens only the study files it made: "
                                 "drop it in a copy (sqlite3 COPY.db 'DROP ...') if the data are yours (graphbo "
                                 "wrote nothing to it)")

    def _checksum_error(self, row: str) -> CorruptStudyError:
        return CorruptStudyError(f"{self.path}: corrupt graphbo study ({row}: stored values do not match the "
                                 "row's checksum, e.g. a bit flipped on disk); restore it from a copy (graphbo "
                                 "wrote nothing to it)")

    def _unreadable(self, exc: sqlite3.Error) -> StorageError:
        """Why SQLite cannot read the file at all: not SQLite, cut short (by a copy or a full disk), else the
        SQLite error. The file is never opened outside SQLite: on POSIX, closing any descriptor of a file drops
        every lock this process holds on it, a live writer's included (SQLite's "How To Corrupt An SQLite
        Database File", section 2.2)."""
        path = self.path
        code = getattr(exc, "sqlite_errorcode", None)
        if code == _NOTADB or "not a database" in str(exc).lower():
            return NotAStudyError(f"{path}: not a graphbo study (not an SQLite database); give a study file "
                                  "made by graphbo")
        truncated = self._truncated()
        if truncated:
            return CorruptStudyError(f"{path}: truncated SQLite database ({truncated}); restore it from a copy "
                                     "(graphbo wrote nothing to it)")
        return self._error(exc, "cannot be opened read-only")

    def _truncated(self) -> str | None:
        """How the file is shorter than its header says, if it is (and no ``-wal`` file, whose pages may stand
        for the missing ones, is beside it). The header's page count is read through SQLite with
        ``writable_schema`` on, which skips SQLite's own refusal of a short file."""
        if _size(self.path + "-wal"):  # a writer's pages may stand for the missing ones
            return None
        try:
            conn = sqlite3.connect(Path(self.path).resolve().as_uri() + "?mode=ro", uri=True)
        except sqlite3.Error:
            return None
        try:
            conn.execute("PRAGMA writable_schema = ON")
            n_pages = conn.execute("PRAGMA page_count").fetchone()[0]
            page = conn.execute("PRAGMA page_size").fetchone()[0]
        except sqlite3.Error:
            return None
        finally:
            conn.close()
        size = _size(self.path)
        if size is not None and n_pages and size < n_pages * page:
            return f"{size} bytes; its header says {n_pages} pages of {page}"
        return None

    def _read_connection(self) -> sqlite3.Connection:
        """A read-only connection. In a folder nobody can write to, SQLite cannot make the shared-memory file
        that WAL mode reads through; with no ``-wal`` file there is no writer, and the file is read as
        immutable."""
        uri = Path(self.path).resolve().as_uri()
        folder = os.path.dirname(os.path.abspath(self.path))
        if not os.access(folder, os.W_OK) and not os.path.exists(self.path + "-wal"):
            conn = sqlite3.connect(uri + "?immutable=1", uri=True)
        else:
            conn = sqlite3.connect(uri + "?mode=ro", uri=True)
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()  # opens the file: errors show here
        return conn

    def _error(self, exc: sqlite3.Error, doing: str) -> StorageError:
        """The :class:`StorageError` subclass for an SQLite error, naming the file and what to do."""
        return sqlite_error(self.path, exc, doing)

    def _read_meta(self, conn: sqlite3.Connection, tables: set[str]) -> dict[str, Any]:
        path = self.path
        if "meta" not in tables:
            raise NotAStudyError(f"{path}: an SQLite database but not a graphbo study (no meta table; "
                                 f"tables: {sorted(tables)})")
        try:
            raw = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.OperationalError:
            raise NotAStudyError(f"{path}: an SQLite database but not a graphbo study (foreign meta table)") from None
        try:
            meta = {k: json.loads(v) for k, v in raw.items()}
        except (TypeError, json.JSONDecodeError, RecursionError) as exc:
            raise CorruptStudyError(f"{path}: corrupt graphbo study (meta is not JSON: {exc}); restore it from "
                                    "a copy") from None
        if meta.get("application") != APPLICATION:
            raise NotAStudyError(f"{path}: an SQLite database but not a graphbo study (no graphbo application "
                                 "mark)")
        fmt = meta.get("format")
        if not isinstance(fmt, int) or isinstance(fmt, bool) or fmt < 1:
            raise CorruptStudyError(f"{path}: corrupt graphbo study (format version {fmt!r})")
        if fmt > FORMAT_VERSION:
            raise NewerFormatError(f"{path}: written by a newer graphbo (storage format {fmt}; this graphbo "
                                   f"{graphbo_version()} reads formats up to {FORMAT_VERSION}); upgrade graphbo "
                                   "to open it")
        if "trials" not in tables:
            raise CorruptStudyError(f"{path}: corrupt graphbo study (no trials table)")
        for key in ("method", "seed", "method_options", "space"):
            if key not in meta:
                raise CorruptStudyError(f"{path}: corrupt graphbo study (meta has no {key!r})")
        seed = meta["seed"]
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise CorruptStudyError(f"{path}: corrupt graphbo study (seed {seed!r})")
        if stored_direction(meta) is None:
            raise CorruptStudyError(f"{path}: corrupt graphbo study (direction {meta['direction']!r}, not one of "
                                    f"{list(DIRECTIONS)})")
        writer = meta.get("writer")
        if writer is not None and not isinstance(writer, dict):
            raise CorruptStudyError(f"{path}: corrupt graphbo study (writer lock {writer!r}); "
                                    f"`graphbo unlock {path}` clears it")
        return meta

    def _read_trials(self, conn: sqlite3.Connection, tables: set[str]) -> list[Trial]:
        trials, bad_row, _ = self._read_checked_trials(conn, tables)
        if bad_row:
            raise self._checksum_error(bad_row)
        return trials

    def _read_checked_trials(self, conn: sqlite3.Connection, tables: set[str], blocks: Any = None
                             ) -> tuple[list[Trial], str | None, frozenset[int]]:
        """The trials, the first row (a trial or an attribute) whose checksum does not match, if any, and the
        numbers of the blocks of trials found as sealed (:func:`_seal_blocks`).

        The rows of a block whose digest matches the one stored in ``blocks`` (the meta key
        :data:`BLOCKS_KEY`) are byte for byte those graphbo checked when it sealed the block: their row
        checksums are not computed again and their JSON is parsed in one call. Any other row is checked
        one by one."""
        rows, attr_rows = _stored_rows(conn, tables)
        digests = blocks if isinstance(blocks, list) else []
        verified: set[int] = set()
        attrs: dict[int, dict[str, Any]] = {}
        bad_row: str | None = None
        number = None
        out: list[Trial] = []
        try:
            a = 0  # the first attribute row of the block
            for b in range(0, len(rows), BLOCK_SIZE):
                block = rows[b:b + BLOCK_SIZE]
                a_end = a
                while a_end < len(attr_rows) and attr_rows[a_end][0] < b + BLOCK_SIZE:
                    a_end += 1
                block_attrs = attr_rows[a:a_end]
                a = a_end
                sealed = (b // BLOCK_SIZE < len(digests) and len(block) == BLOCK_SIZE and block[0][0] == b
                          and block[-1][0] == b + BLOCK_SIZE - 1 and _block_digest(block, block_attrs)
                          == digests[b // BLOCK_SIZE])
                if sealed:
                    verified.add(b // BLOCK_SIZE)
                    values = json.loads("[" + ",".join(v for _, _, v, _ in block_attrs) + "]")
                    for (number, key, _, _), value in zip(block_attrs, values):
                        attrs.setdefault(number, {})[key] = value
                    configs = json.loads("[" + ",".join(r[1] for r in block) + "]")
                    index_rows = json.loads("[" + ",".join(r[2] for r in block) + "]")
                    for r, config, index_row in zip(block, configs, index_rows):
                        out.append(Trial(number=r[0], config=config, status=r[3], value=r[4], error=r[6], penalty=r[5],
                                         started=r[7], finished=r[8], suggest_seconds=r[9], evaluate_seconds=r[10],
                                         row=index_row, tell_order=r[11], attrs=attrs.get(r[0], {}), crashes=r[12]))
                    continue
                for number, key, value, stored in block_attrs:
                    if stored is not None and bad_row is None and stored != row_checksum("attr", number, key, value):
                        bad_row = f"trial {number}, attribute {key!r}"
                    attrs.setdefault(number, {})[key] = json.loads(value)
                for stored_row in block:
                    (number, config, row, status, value, penalty, error, started, finished, s_sec, e_sec,
                     order, n_crashes, stored) = stored_row
                    if stored is not None and bad_row is None and stored != row_checksum("trial", *stored_row[:-1]):
                        bad_row = f"trial {number}"
                    if status not in STATUSES:
                        raise ValueError(f"status {status!r}")
                    out.append(Trial(number=number, config=json.loads(config), status=status, value=value, error=error,
                                     penalty=penalty, started=started, finished=finished,
                                     suggest_seconds=s_sec, evaluate_seconds=e_sec, row=json.loads(row),
                                     tell_order=order, attrs=attrs.get(number, {}),
                                     crashes=n_crashes))
            for number, key, value, stored in attr_rows[a:]:  # attributes of no trial: checked, then left out
                if stored is not None and bad_row is None and stored != row_checksum("attr", number, key, value):
                    bad_row = f"trial {number}, attribute {key!r}"
                json.loads(value)
        except (TypeError, ValueError, RecursionError) as exc:  # json.JSONDecodeError is a ValueError
            raise CorruptStudyError(f"{self.path}: corrupt graphbo study, its trials cannot be read "
                                    f"(trial {number}: {exc}); restore it from a copy") from None
        return out, bad_row, frozenset(verified)

    def trials(self) -> list[Trial]:
        conn = self._open_connection()
        return self._read_trials(conn, _tables(conn))

    def user_attrs(self) -> dict[str, Any]:
        return self._user_attrs(self._open_connection())

    def writer(self) -> dict[str, Any] | None:
        """The writer recorded in the file (see :mod:`graphbo.storage.lock`), read without changing anything;
        ``None`` if there is none (or no study)."""
        stored = self.load()
        return None if stored is None else stored.meta.get("writer")

    def _open_connection(self) -> sqlite3.Connection:
        """The connection of the open store; ``ValueError`` if it is closed (``_check_open``)."""
        self._check_open()
        conn = self._conn
        assert conn is not None, "an open store has a connection"
        return conn

    @staticmethod
    def _user_attrs(conn: sqlite3.Connection) -> dict[str, Any]:
        row = conn.execute("SELECT value FROM meta WHERE key = 'user_attrs'").fetchone()
        return json.loads(row[0]) if row else {}

    # -- opening ----------------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        path = self.path
        folder = os.path.dirname(os.path.abspath(path))
        if os.path.isdir(path):
            raise NotAStudyError(f"{path}: is a folder, not a graphbo study file; give the path of a study file "
                                 f"(e.g. {os.path.join(path, 'study.db')})")
        try:
            os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            raise StudyAccessError(f"{path}: cannot make its folder ({exc.strerror}); choose a writable "
                                   "location") from None
        if os.path.exists(path) and not os.access(path, os.W_OK):
            raise StudyAccessError(f"{path}: the file is read-only; make it writable (chmod u+w) to continue "
                                   "the study, or copy it (graphbo report reads it as it is)")
        if not os.access(folder, os.W_OK):
            raise StudyAccessError(f"{path}: its folder {folder} is read-only, and SQLite needs to write its "
                                   "journal beside the study; make the folder writable or copy the study to a "
                                   "writable folder (graphbo report reads it as it is)")
        try:
            conn = sqlite3.connect(path, isolation_level=None, timeout=30.0)
        except sqlite3.Error as exc:
            raise self._error(exc, "cannot be opened for writing") from None
        try:
            conn.execute("PRAGMA trusted_schema = OFF")  # no function with side effects from the schema
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
        except sqlite3.Error as exc:
            conn.close()
            raise self._error(exc, "cannot be opened for writing") from None
        return conn

    def create(self, meta: Mapping[str, Any]) -> None:
        """A new study in a new file; a failed creation (a full disk) leaves no file behind but one that was
        there before: the study is complete or absent."""
        existed = os.path.exists(self.path)
        try:
            self._create(meta)
        except StudyLockedError:
            raise  # another process made the study meanwhile: it is theirs
        except StorageError:
            if not existed and self._holds_no_table():
                for suffix in ("", "-wal", "-shm", "-journal"):
                    with contextlib.suppress(OSError):
                        os.remove(self.path + suffix)
            raise

    def _holds_no_table(self) -> bool:
        """Whether the file holds no table (a creation that wrote nothing), asked read-only."""
        try:
            conn = self._read_connection()
        except sqlite3.Error:
            return os.path.exists(self.path) and os.path.getsize(self.path) == 0
        try:
            return not _tables(conn)
        except sqlite3.Error:
            return False
        finally:
            conn.close()

    def _create(self, meta: Mapping[str, Any]) -> None:
        others = set(_descriptors_of(self.path))  # another connection's of this process, if any
        conn = self._connect()
        writer = this_writer()
        try:
            conn.execute("BEGIN IMMEDIATE")
            if _tables(conn):
                conn.execute("ROLLBACK")
                conn.close()
                raise StudyLockedError(f"{self.path}: cannot create the study: the file holds one already (made "
                                       "by another process at the same time?); open it to continue that study")
            for stmt in _SCHEMA.strip().split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            conn.execute(_STALE_TRIGGER)
            for key, value in [*self.stamped(meta).items(), ("writer", writer)]:
                self._put_meta(conn, key, value)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._abandon(conn, exc, "cannot create the study") from None
        self._start_writing(conn, writer, others)

    def open(self) -> None:
        if self._conn is not None:
            return
        self._refuse_foreign_schema()
        others = set(_descriptors_of(self.path))  # another connection's of this process, if any
        conn = self._connect()
        writer = this_writer()
        try:
            conn.execute("BEGIN IMMEDIATE")
            foreign = foreign_schema(conn)
            if foreign:
                conn.execute("ROLLBACK")
                conn.close()
                raise self._foreign(foreign)
            row = conn.execute("SELECT value FROM meta WHERE key = 'writer'").fetchone()
            held = _json_or_none(row[0]) if row else None
            if held is not None:
                if holder_alive(held) is not False:
                    conn.execute("ROLLBACK")
                    conn.close()
                    raise self._locked(held)
            _convert_earlier_file(conn)
            if held is not None:
                _count_crashes(conn, held)
                self.taken_over = held
            self._put_meta(conn, "writer", writer)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            raise self._abandon(conn, exc, "cannot be opened for writing") from None
        self._start_writing(conn, writer, others)

    def _abandon(self, conn: sqlite3.Connection, exc: sqlite3.Error, doing: str) -> StorageError:
        """Roll back and close a connection whose opening write failed; the error to raise."""
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.close()
        return self._error(exc, doing)

    def _start_writing(self, conn: sqlite3.Connection, writer: dict[str, Any], others: AbstractSet[int]) -> None:
        """The store writes through ``conn`` as ``writer``; the descriptors of its files are noted
        (:meth:`repair_after_evaluation`)."""
        self._conn, self._writer = conn, writer
        self._descriptors = {fd: i for fd, i in _descriptors_of(self.path).items() if fd not in others}

    def repair_after_evaluation(self) -> bool:
        """Put back the descriptors of the study's files that an objective closed (on Linux, where
        ``/proc/self/fd`` names them): each is reopened on its file and moved back to its number, so that
        SQLite's connection writes where it did; returns whether any was. A number the objective reused for
        another file cannot be given back without taking that file from it: :class:`StorageError`, and nothing
        more is written (the trials told before are stored)."""
        if self._conn is None or not self._descriptors:
            return False
        repaired = False
        for fd, identity in self._descriptors.items():
            try:
                st = os.fstat(fd)
            except OSError:  # closed: reopened on the same file, under the same number
                real = os.path.realpath(self.path)  # SQLite names -wal and -shm after the link's target
                path = next((p for p in (real + s for s in ("", "-wal", "-shm")) if _identity(p) == identity), None)
                if path is None:
                    self._retire_connection()
                    raise StorageError(f"{self.path}: the objective closed the study's open files, and one of "
                                       "them is no longer there; graphbo stops writing it") from None
                new = os.open(path, os.O_RDWR)
                if new != fd:  # the lowest free number may be the one to fill: then it is already in place
                    os.dup2(new, fd)
                    os.close(new)
                repaired = True
                continue
            if (st.st_dev, st.st_ino) != identity:
                self._retire_connection()
                raise StorageError(f"{self.path}: the objective closed the study's open files and opened others "
                                   f"under their numbers (descriptor {fd}); graphbo stops writing rather than "
                                   "write into another file (the trials told before are stored; resume the study)")
        if repaired:
            # closing a descriptor dropped this process's locks on the file (POSIX), SQLite's included: the
            # connection, writing through its own files again, is closed and opened anew to hold them again
            self._conn.close()
            self._conn = None
            others = set(_descriptors_of(self.path))
            conn = self._connect()
            row = conn.execute("SELECT value FROM meta WHERE key = 'writer'").fetchone()
            if row is None or _json_or_none(row[0]) != self._writer:
                conn.close()
                self._writer = None
                raise StudyLockedError(f"{self.path}: the objective closed the study's open files, and meanwhile "
                                       "another process took the study; this one stops writing it")
            self._conn = conn
            self._descriptors = {fd: i for fd, i in _descriptors_of(self.path).items() if fd not in others}
        return repaired

    def _retire_connection(self) -> None:
        """Never use nor close the connection again: closing it would close (and a checkpoint write into) files
        that may now be the objective's; it is kept from finalisation for the life of the process."""
        if self._conn is not None:
            ctypes.pythonapi.Py_IncRef(ctypes.py_object(self._conn))
            self._conn = None

    def unchanged_since(self, stored: StoredStudy) -> bool:
        conn = self._open_connection()
        crashes = "TOTAL(crashes)" if "crashes" in _columns(conn, "trials") else "0"
        now_ = conn.execute(f"SELECT COUNT(*), COUNT(finished), MAX(started), MAX(finished), {crashes} "
                            "FROM trials").fetchone()
        trials = stored.trials
        then = (len(trials), sum(t.finished is not None for t in trials),
                max((t.started for t in trials if t.started is not None), default=None),
                max((t.finished for t in trials if t.finished is not None), default=None),
                sum(t.crashes for t in trials))
        return tuple(now_) == then

    def _locked(self, held: Any) -> StudyLockedError:
        if not isinstance(held, dict):
            return StudyLockedError(f"{self.path}: has an unreadable writer lock {held!r}; if no graphbo process "
                                    f"writes it, run `graphbo unlock {self.path}`")
        if held.get("pid") == os.getpid() and holder_alive(held):
            return StudyLockedError(f"{self.path}: is open for writing by another Study of this process "
                                    f"(since {held.get('since')}); close that one first")
        alive = holder_alive(held)
        if alive is None:
            return StudyLockedError(f"{self.path}: is being written by {describe_writer(held)}, which cannot be "
                                    f"checked from here; if it is no longer running, run `graphbo unlock "
                                    f"{self.path}` and try again")
        return StudyLockedError(f"{self.path}: is being written by {describe_writer(held)}; one writer at a "
                                "time (reading it, e.g. graphbo report, works meanwhile)")

    @property
    def is_open(self) -> bool:
        return self._conn is not None

    def close(self) -> None:
        conn, self._conn = self._conn, None
        writer, self._writer = self._writer, None
        if conn is None:
            return
        if writer is not None and writer.get("pid") != os.getpid():
            return  # a forked child: the lock and the connection are its parent's
        if writer is not None:
            with contextlib.suppress(sqlite3.Error):  # cannot write (a full disk): the stale lock is taken over
                conn.execute("DELETE FROM meta WHERE key = 'writer' AND value = ?", (dumps(writer),))
        if not self.keep_wal:
            with contextlib.suppress(sqlite3.Error):  # another reader or writer: it stays WAL, which is fine
                conn.execute("PRAGMA journal_mode = DELETE")
        conn.close()

    def unlock(self, *, force: bool = False) -> dict[str, Any] | None:
        """Clear the writer lock left in the file (``graphbo unlock``): returns the lock cleared, ``None`` if
        there was none. A writer alive on this host is not unlocked (:class:`StudyLockedError`) unless
        ``force``. The ``running`` trials that writer had handed out count one more crash, as when a lock is
        taken over."""
        if self.load() is None:
            raise NotAStudyError(f"{self.path}: no graphbo study here")
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
            row = conn.execute("SELECT value FROM meta WHERE key = 'writer'").fetchone()
            held = _json_or_none(row[0]) if row else None
            if row is not None and not force and isinstance(held, dict) and holder_alive(held):
                conn.execute("ROLLBACK")
                raise StudyLockedError(f"{self.path}: is being written by {describe_writer(held)}, which is "
                                       "running; stop it first (or give --force if it is not a graphbo process "
                                       "writing this study)")
            if row is not None:
                if isinstance(held, dict):
                    _convert_earlier_file(conn)
                    _count_crashes(conn, held)
                conn.execute("DELETE FROM meta WHERE key = 'writer'")
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise self._error(exc, "cannot be unlocked") from None
        finally:
            conn.close()
        return None if row is None else (held if isinstance(held, dict) else {"lock": row[0]})

    # -- writing ----------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One committed write transaction; rolled back if anything in it fails (an SQLite error becomes a
        :class:`StorageError`: nothing of the transaction was stored)."""
        conn = self._open_connection()
        if self._writer is not None and self._writer.get("pid") != os.getpid():
            raise StorageError(f"{self.path}: a process forked from the study's writer (pid "
                               f"{self._writer.get('pid')}) cannot write it; only the process that opened the "
                               "study records results")
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise self._error(exc, "cannot be written") from None

    def _trial_state(self, trial: Trial, state: Any) -> str | None:
        """The per-trial state column: the state after a finished trial, if this store keeps them."""
        return dumps(state) if self.trial_states and state is not None and trial.status != "running" else None

    @staticmethod
    def _put_meta(conn: sqlite3.Connection, key: str, value: Any) -> None:
        text = dumps(value)
        conn.execute("INSERT OR REPLACE INTO meta (key, value, checksum) VALUES (?, ?, ?)",
                     (key, text, row_checksum("meta", key, text)))

    @staticmethod
    def _put_attrs(conn: sqlite3.Connection, trial: Trial) -> None:
        if trial.attrs:
            conn.execute(_ATTRS_SCHEMA)
            conn.execute(_ATTRS_STALE_TRIGGER)
            rows = [(trial.number, str(k), dumps(v)) for k, v in trial.attrs.items()]
            conn.executemany("INSERT OR REPLACE INTO trial_attrs (number, key, value, checksum) VALUES (?, ?, ?, ?)",
                             [(*r, row_checksum("attr", *r)) for r in rows])

    def add_trials(self, trials: Sequence[Trial], state: Any = None) -> None:
        with self._transaction() as conn:
            for t in trials:
                try:
                    conn.execute(
                        f"INSERT INTO trials ({_TRIAL_COLUMNS}, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (t.number, dumps(t.config), dumps(t.row), t.status, t.value, t.penalty, t.error, t.started,
                         t.finished, t.suggest_seconds, t.evaluate_seconds, t.tell_order, self._trial_state(t, state)))
                except sqlite3.IntegrityError:
                    raise StorageError(f"{self.path}: trial {t.number} exists already (is another process "
                                       "writing this study?); nothing written") from None
                self._put_attrs(conn, t)
            _seal_trials(conn, [t.number for t in trials])
            self._seal_blocks(conn)
            if state is not None:
                self._put_meta(conn, "optimizer_state", state)

    def _seal_blocks(self, conn: sqlite3.Connection) -> None:
        """In a write transaction: seal every block of :data:`BLOCK_SIZE` trials that is now whole and finished.

        A block's trials (numbers ``k * BLOCK_SIZE`` up to the next block's) are sealed once none is running:
        each row is checked as a load checks it (its checksum; :func:`~graphbo.storage.checks.study_problem`
        against the stored space), and the digest of the rows as stored (:func:`_block_digest`) joins the list
        in the meta key :data:`BLOCKS_KEY`. graphbo never changes a finished trial, so a load that finds the
        same digest skips those checks; a block that reads otherwise is checked row by row, as without it.
        A block that fails its checks is left unsealed (the load names the row)."""
        if self._sealed is None:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (BLOCKS_KEY,)).fetchone()
            stored = _json_or_none(row[0]) if row else None
            self._sealed = list(stored) if isinstance(stored, list) else []
        sealed = self._sealed
        space = None
        changed = False
        while True:
            first = len(sealed) * BLOCK_SIZE
            if conn.execute("SELECT 1 FROM trials WHERE number = ?", (first + BLOCK_SIZE - 1,)).fetchone() is None:
                break  # the block's last trial is not there yet (one look-up, not a scan, on most writes)
            done, running = conn.execute(
                "SELECT count(*), sum(status = 'running') FROM trials WHERE number >= ? AND number < ?",
                (first, first + BLOCK_SIZE)).fetchone()
            if done != BLOCK_SIZE or running:
                break
            block, block_attrs = _stored_rows(conn, {"trial_attrs"} if _has_attrs(conn) else set(),
                                              first, first + BLOCK_SIZE)
            if space is None:
                space_row = conn.execute("SELECT value FROM meta WHERE key = 'space'").fetchone()
                space = _json_or_none(space_row[0]) if space_row else None
            if not _block_is_sound(block, block_attrs, space):
                break
            sealed.append(_block_digest(block, block_attrs))
            changed = True
        if changed:
            self._put_meta(conn, BLOCKS_KEY, sealed)

    def restart_trial(self, number: int, started: str) -> None:
        with self._transaction() as conn:
            conn.execute("UPDATE trials SET started = ? WHERE number = ? AND status = 'running'", (started, number))
            _seal_trials(conn, [number])

    def finish_trial(self, trial: Trial, state: Any = None) -> None:
        with self._transaction() as conn:
            done = conn.execute(
                "UPDATE trials SET status = ?, value = ?, penalty = ?, error = ?, finished = ?, evaluate_seconds = ?, "
                "tell_order = ?, state = ? WHERE number = ? AND status = 'running'",
                (trial.status, trial.value, trial.penalty, trial.error, trial.finished, trial.evaluate_seconds,
                 trial.tell_order, self._trial_state(trial, state), trial.number)).rowcount
            if done != 1:
                row = conn.execute("SELECT status FROM trials WHERE number = ?", (trial.number,)).fetchone()
                raise self._not_running(trial.number, row[0] if row else None)
            stored = conn.execute("SELECT status, value, penalty, error, finished FROM trials WHERE number = ?",
                                  (trial.number,)).fetchone()
            if not all(map(_same_value, stored, (trial.status, trial.value, trial.penalty, trial.error,
                                                 trial.finished))):
                # only SQL of the file's own could do this: refused at open, so never sealed here
                raise CorruptStudyError(f"{self.path}: trial {trial.number} reads back other values than graphbo "
                                        "wrote; nothing of this write was stored")
            _seal_trials(conn, [trial.number])
            self._put_attrs(conn, trial)
            self._seal_blocks(conn)
            if state is not None:
                self._put_meta(conn, "optimizer_state", state)

    def save_state(self, state: Any) -> None:
        with self._transaction() as conn:
            self._put_meta(conn, "optimizer_state", state)

    def set_user_attr(self, key: str, value: Any) -> None:
        with self._transaction() as conn:
            attrs = self._user_attrs(conn)
            attrs[str(key)] = value
            self._put_meta(conn, "user_attrs", attrs)


def is_sqlite_file(path: str) -> bool:
    """Whether SQLite takes the non-empty file ``path`` for one of its databases (a damaged one included), asked
    through SQLite itself: a Python ``open``/``close`` of a database file would drop the locks of every live
    connection of this process on it (see :meth:`SQLiteStorage.load`)."""
    try:
        conn = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error:
        return False
    try:
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.Error as exc:
        return not (getattr(exc, "sqlite_errorcode", None) == _NOTADB or "not a database" in str(exc).lower())
    finally:
        conn.close()
    return True


def _same_value(stored: Any, written: Any) -> bool:
    """Whether SQLite's ``stored`` is the ``written`` value (SQLite stores a NaN as NULL)."""
    if isinstance(written, float) and written != written:
        return stored is None or stored != stored
    return bool(stored == written)


def _normal_sql(sql: str | None) -> str:
    return " ".join((sql or "").replace("IF NOT EXISTS ", "").split())


#: the schema objects graphbo makes besides its tables (SQLite names its own ``sqlite_...``)
_OWN_TRIGGERS = {"trials_checksum_stale": _normal_sql(_STALE_TRIGGER),
                 "trial_attrs_checksum_stale": _normal_sql(_ATTRS_STALE_TRIGGER)}
_OWN_TABLES = {"meta", "trials", "trial_attrs"}


def foreign_schema(conn: sqlite3.Connection) -> str | None:
    """The first schema object of the database that graphbo does not make (``"trigger 'x'"``), if any: a
    trigger or view runs SQL when graphbo writes or reads, so a study file holding one is refused."""
    for kind, name, sql in conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name"):
        if name.startswith("sqlite_") or (kind == "table" and name in _OWN_TABLES):
            continue
        if kind == "trigger" and _OWN_TRIGGERS.get(name) == _normal_sql(sql):
            continue
        return f"{kind} {name!r}"
    return None


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}


def _json_or_none(text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def _count_crashes(conn: sqlite3.Connection, held: Mapping[str, Any]) -> None:
    """In a write transaction, after :func:`_convert_earlier_file`: one more crash for each ``running`` trial the
    dead writer ``held`` handed out (started at or after it took the lock)."""
    since = held.get("since")
    if isinstance(since, str):
        numbers = [r[0] for r in conn.execute("SELECT number FROM trials WHERE status = 'running' AND started >= ?",
                                              (since,))]
        conn.execute("UPDATE trials SET crashes = crashes + 1 WHERE status = 'running' AND started >= ?", (since,))
        _seal_trials(conn, numbers)


def _convert_earlier_file(conn: sqlite3.Connection) -> None:
    """In a write transaction: the one-time conversion of a file an earlier graphbo wrote (storage format below
    :data:`FORMAT_VERSION`, or without checksum columns) to the current format; nothing for a current file.

    It gets the ``checksum`` and ``crashes`` columns and the triggers that clear a stale checksum; every row is
    sealed as it reads now (so verified from then on: what changed in it before cannot be told); a study without
    a ``direction`` records ``"minimize"`` (what it meant); ``format`` becomes :data:`FORMAT_VERSION` and
    ``graphbo_version`` this one's, the earlier pair kept under ``converted_from``. A version from before
    format 3 then refuses the file as newer instead of writing rows without checksums into it."""
    tables = _tables(conn)
    added = False
    for table in ("meta", "trials", "trial_attrs"):
        if table in tables and "checksum" not in _columns(conn, table):
            conn.execute(f"ALTER TABLE {table} ADD COLUMN checksum TEXT")
            added = True
    if "crashes" not in _columns(conn, "trials"):
        conn.execute("ALTER TABLE trials ADD COLUMN crashes INTEGER NOT NULL DEFAULT 0")
        added = True
    conn.execute(_STALE_TRIGGER)
    if "trial_attrs" in tables:
        conn.execute(_ATTRS_STALE_TRIGGER)
    row = conn.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
    fmt = _json_or_none(row[0]) if row else None
    if not added and isinstance(fmt, int) and fmt >= FORMAT_VERSION:
        return
    meta = {k: _json_or_none(v) for k, v in conn.execute("SELECT key, value FROM meta WHERE key IN "
                                                          "('graphbo_version', 'direction')")}

    def put(key: str, value: Any) -> None:
        text = dumps(value)
        conn.execute("INSERT OR REPLACE INTO meta (key, value, checksum) VALUES (?, ?, ?)",
                     (key, text, row_checksum("meta", key, text)))

    put("converted_from", {"format": fmt, "graphbo_version": meta.get("graphbo_version")})
    put("format", FORMAT_VERSION)
    put("graphbo_version", graphbo_version())
    if "direction" not in meta:
        put("direction", DIRECTIONS[0])
    for key, text in conn.execute("SELECT key, value FROM meta WHERE checksum IS NULL AND key != 'writer'"
                                  ).fetchall():
        conn.execute("UPDATE meta SET checksum = ? WHERE key = ?", (row_checksum("meta", key, text), key))
    _seal_trials(conn, [r[0] for r in conn.execute("SELECT number FROM trials WHERE checksum IS NULL")])
    if "trial_attrs" in tables:
        for number, key, text in conn.execute("SELECT number, key, value FROM trial_attrs WHERE checksum IS NULL"
                                              ).fetchall():
            conn.execute("UPDATE trial_attrs SET checksum = ? WHERE number = ? AND key = ?",
                         (row_checksum("attr", number, key, text), number, key))


def _has_attrs(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'trial_attrs'").fetchone() \
        is not None


def _stored_rows(conn: sqlite3.Connection, tables: AbstractSet[str], first: int | None = None,
                 stop: int | None = None) -> tuple[list[tuple], list[tuple]]:
    """The trials' rows (:data:`_SEALED_COLUMNS` and the checksum) and their attributes' rows (number, key,
    value, checksum), by number (and key), of the numbers ``first`` to ``stop - 1`` or of all."""
    columns = _columns(conn, "trials")
    crashes = "crashes" if "crashes" in columns else "0"
    checksum = "checksum" if "checksum" in columns else "NULL"
    where, args = ("WHERE number >= ? AND number < ? ", (first, stop)) if first is not None else ("", ())
    rows = conn.execute(f"SELECT {_TRIAL_COLUMNS}, {crashes}, {checksum} FROM trials {where}ORDER BY number",
                        args).fetchall()
    attr_rows: list[tuple] = []
    if "trial_attrs" in tables:
        attr_sum = "checksum" if "checksum" in _columns(conn, "trial_attrs") else "NULL"
        attr_rows = conn.execute(f"SELECT number, key, value, {attr_sum} FROM trial_attrs {where}"
                                 "ORDER BY number, key", args).fetchall()
    return rows, attr_rows


def _block_digest(rows: Sequence[tuple], attr_rows: Sequence[tuple]) -> str:
    """SHA-256 (32 hex digits) of a block's trial and attribute rows as SQLite returns them (``repr`` writes
    each value exactly: a float by its shortest round trip, text with every character)."""
    return hashlib.sha256(repr((list(rows), list(attr_rows))).encode()).hexdigest()[:32]


def _block_is_sound(rows: Sequence[tuple], attr_rows: Sequence[tuple], space: Any) -> bool:
    """Whether a block's rows pass a load's checks: each row's checksum (every row has one) and the
    plausibility checks of :func:`~graphbo.storage.checks.study_problem` against the stored space."""
    try:
        attrs: dict[int, dict[str, Any]] = {}
        for number, key, value, stored in attr_rows:
            if stored is None or stored != row_checksum("attr", number, key, value):
                return False
            attrs.setdefault(number, {})[key] = json.loads(value)
        trials = []
        for r in rows:
            if r[-1] is None or r[-1] != row_checksum("trial", *r[:-1]) or r[3] not in STATUSES:
                return False
            trials.append(Trial(number=r[0], config=json.loads(r[1]), status=r[3], value=r[4], error=r[6], penalty=r[5],
                                started=r[7], finished=r[8], suggest_seconds=r[9], evaluate_seconds=r[10],
                                row=json.loads(r[2]), tell_order=r[11], attrs=attrs.get(r[0], {}), crashes=r[12]))
    except (TypeError, ValueError, RecursionError):
        return False
    first = rows[0][0] if rows else 0
    return block_problem(trials, first, space=space) is None


def _seal_trials(conn: sqlite3.Connection, numbers: Sequence[int]) -> None:
    """In a write transaction: store the checksum of each trial of ``numbers`` as its row now reads."""
    for number in numbers:
        row = conn.execute(f"SELECT {_SEALED_COLUMNS}, checksum FROM trials WHERE number = ?", (number,)).fetchone()
        # written only when it differs: writing the same one again would fire the trigger, which clears it
        if row is not None and row[-1] != (checksum := row_checksum("trial", *row[:-1])):
            conn.execute("UPDATE trials SET checksum = ? WHERE number = ?", (checksum, number))


def _meta_mismatch(conn: sqlite3.Connection) -> str | None:
    """The first meta row whose checksum does not match (``"meta key 'seed'"``), if any."""
    if "checksum" not in _columns(conn, "meta"):
        return None
    rows = conn.execute("SELECT key, value, checksum FROM meta ORDER BY key").fetchall()
    # a study made with checksums (its format row has one: written at creation) has one on every meta row
    sealed = any(key == "format" and stored is not None for key, _, stored in rows)
    for key, value, stored in rows:
        if stored is None and sealed and key != "writer":
            return f"meta key {key!r} (no checksum)"
        if stored is not None and stored != row_checksum("meta", key, value):
            return f"meta key {key!r}"
    return None


#: SQLite result codes (``sqlite3.Error.sqlite_errorcode``, Python 3.11+; the message otherwise)
_FULL, _READONLY, _CANTOPEN, _CORRUPT, _NOTADB, _PERM, _BUSY, _IOERR = 13, 8, 14, 11, 26, 3, 5, 10
#: SQLITE_READONLY_ROLLBACK: a hot journal that a read-only connection cannot roll back
_READONLY_ROLLBACK = 776


def _out_of_space(path: str) -> bool:
    """Whether a failed write on ``path`` is for want of space: its file system has less than 1 MiB left, or
    the study or its WAL is within 64 KiB of the process's file-size limit (SQLite reports that as an I/O
    error)."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        st = os.statvfs(folder)
        if st.f_bavail * st.f_frsize < 1 << 20:
            return True
    except (OSError, AttributeError):
        pass
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    except (ImportError, OSError, ValueError):
        return False
    if soft == resource.RLIM_INFINITY:
        return False
    sizes = [n for n in (_size(path), _size(path + "-wal")) if n is not None]
    return bool(sizes) and max(sizes) + (64 << 10) >= soft


def _descriptors_of(path: str) -> dict[int, tuple[int, int]]:
    """This process's open descriptors of the study file and its ``-wal`` and ``-shm``, with each file's device
    and inode (Linux's ``/proc/self/fd``; empty elsewhere)."""
    real = os.path.realpath(path)  # SQLite opens the -wal and -shm beside the link's target
    names = {real + suffix for suffix in ("", "-wal", "-shm")}
    out: dict[int, tuple[int, int]] = {}
    try:
        entries = os.listdir("/proc/self/fd")
    except OSError:
        return out
    for entry in entries:
        try:
            fd = int(entry)
            if os.readlink(f"/proc/self/fd/{fd}") in names:
                st = os.fstat(fd)
                out[fd] = (st.st_dev, st.st_ino)
        except (OSError, ValueError):
            continue
    return out


def _identity(path: str) -> tuple[int, int] | None:
    """The device and inode of ``path``, or ``None`` if it is not there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _size(path: str) -> int | None:
    """The size of ``path``, or ``None`` if it is not there: another process's checkpoint may delete a
    ``-wal`` between a check that it exists and a look at its size."""
    try:
        return os.path.getsize(path)
    except OSError:
        return None


def sqlite_error(path: str, exc: sqlite3.Error, doing: str) -> StorageError:
    """The :class:`StorageError` subclass for an SQLite error on ``path``, saying what is wrong and what to do."""
    code = getattr(exc, "sqlite_errorcode", None)
    primary = None if code is None else code & 0xFF
    text = str(exc).lower()
    folder = os.path.dirname(os.path.abspath(path))
    if primary == _FULL or "disk is full" in text or ((primary == _IOERR or "disk i/o error" in text)
                                                      and _out_of_space(path)):
        return StorageFullError(f"{path}: {doing}: no space left (a full disk, or the process's file-size limit); "
                                "nothing of this write was stored and every trial told before it is kept; free "
                                "space and resume the study")
    if code == _READONLY_ROLLBACK or (code is None and "readonly" in text and os.path.exists(path + "-journal")):
        # (Python before 3.11 gives no error code: a read-only error with a journal beside the file)
        return HotJournalError(f"{path}: {doing}: a rollback journal lies beside it ({path}-journal: a writer "
                               "crashed mid-write, or the file is not SQLite's), which a read-only open cannot roll "
                               "back; open the study for writing once (graphbo resume, graphbo.Study) and SQLite "
                               "recovers it")
    if primary in (_READONLY, _PERM) or "readonly" in text or "read-only" in text:
        return StudyAccessError(f"{path}: {doing}: the file or its folder is read-only; make both writable "
                                "to continue the study, or copy it elsewhere")
    if primary == _CANTOPEN or "unable to open" in text:
        if not os.access(folder, os.W_OK):
            return StudyAccessError(f"{path}: {doing}: its folder {folder} is read-only, and SQLite needs to "
                                    "write beside the study; make the folder writable or copy the study")
        return StudyAccessError(f"{path}: {doing}: SQLite cannot open it ({exc}); check the permissions of the "
                                "file and its folder")
    if primary in (_CORRUPT, _NOTADB) or "malformed" in text or "not a database" in text:
        return CorruptStudyError(f"{path}: corrupt SQLite database ({exc}); restore it from a copy")
    if primary == _BUSY or "locked" in text:
        return StudyLockedError(f"{path}: {doing}: the database stayed locked by another connection ({exc}); "
                                "one writer at a time")
    return StorageError(f"{path}: {doing} ({exc})")
