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
  the two tables above (graphbo 0.1's format, which older versions read).

Every write is one ``BEGIN IMMEDIATE`` transaction, committed (``synchronous
= FULL``) before the method returns. An existing file is first read through a
read-only connection and checked: a file that is not SQLite, corrupt, not a
graphbo study or of a newer format raises :class:`StorageError` naming it,
and it is left byte-for-byte unchanged.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from .base import APPLICATION, FORMAT_VERSION, STATUSES, Storage, StorageError, StoredStudy, Trial, graphbo_version
from .jsonio import dumps

__all__ = ["SQLiteStorage", "APPLICATION_ID"]

#: SQLite ``PRAGMA application_id`` of graphbo study files ("gbo1")
APPLICATION_ID = 0x67626F31
SQLITE_HEADER = b"SQLite format 3\x00"

_SCHEMA = """
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
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
    state            TEXT
);
"""
_ATTRS_SCHEMA = """CREATE TABLE IF NOT EXISTS trial_attrs (
    number INTEGER NOT NULL,
    key    TEXT NOT NULL,
    value  TEXT NOT NULL,
    PRIMARY KEY (number, key)
)"""
_TRIAL_COLUMNS = ("number, config, row, status, value, penalty, error, started, finished, suggest_seconds, "
                  "evaluate_seconds, tell_order")


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

    def __repr__(self) -> str:
        return f"SQLiteStorage({self.path!r})"

    # -- reading ----------------------------------------------------------------------------------
    def load(self) -> StoredStudy | None:
        path = self.path
        if not os.path.exists(path) or (os.path.isfile(path) and os.path.getsize(path) == 0):
            return None
        try:
            with open(path, "rb") as fh:
                head = fh.read(len(SQLITE_HEADER))
        except IsADirectoryError:
            raise StorageError(f"{path}: is a directory, not a graphbo study file") from None
        except OSError as exc:
            raise StorageError(f"{path}: cannot be read ({exc})") from None
        if head != SQLITE_HEADER:
            raise StorageError(f"{path}: not a graphbo study (not an SQLite database)")
        uri = Path(path).resolve().as_uri() + "?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True)
        except sqlite3.Error as exc:
            raise StorageError(f"{path}: cannot open the SQLite database read-only ({exc})") from None
        try:
            check = conn.execute("PRAGMA quick_check").fetchall()
            if [r[0] for r in check] != ["ok"]:
                raise StorageError(f"{path}: corrupt SQLite database ({'; '.join(str(r[0]) for r in check[:3])})")
            tables = _tables(conn)
            if not tables:  # an empty database (a process killed while creating the study): nothing to lose
                return None
            meta = self._read_meta(conn, tables)
            trials = self._read_trials(conn, tables)
        except sqlite3.Error as exc:
            raise StorageError(f"{path}: corrupt or unreadable SQLite database ({exc})") from None
        finally:
            conn.close()
        return StoredStudy(meta, trials)

    def _read_meta(self, conn: sqlite3.Connection, tables: set[str]) -> dict[str, Any]:
        path = self.path
        if "meta" not in tables:
            raise StorageError(f"{path}: an SQLite database but not a graphbo study (no meta table; "
                               f"tables: {sorted(tables)})")
        try:
            raw = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.OperationalError:
            raise StorageError(f"{path}: an SQLite database but not a graphbo study (foreign meta table)") from None
        try:
            meta = {k: json.loads(v) for k, v in raw.items()}
        except (TypeError, json.JSONDecodeError) as exc:
            raise StorageError(f"{path}: corrupt graphbo study (meta is not JSON: {exc})") from None
        if meta.get("application") != APPLICATION:
            raise StorageError(f"{path}: an SQLite database but not a graphbo study (no graphbo application mark)")
        fmt = meta.get("format")
        if not isinstance(fmt, int):
            raise StorageError(f"{path}: corrupt graphbo study (format version {fmt!r})")
        if fmt > FORMAT_VERSION:
            raise StorageError(f"{path}: written by a newer graphbo (storage format {fmt}; this graphbo "
                               f"{graphbo_version()} reads formats up to {FORMAT_VERSION}); upgrade graphbo to open it")
        if "trials" not in tables:
            raise StorageError(f"{path}: corrupt graphbo study (no trials table)")
        for key in ("method", "seed", "method_options", "space"):
            if key not in meta:
                raise StorageError(f"{path}: corrupt graphbo study (meta has no {key!r})")
        return meta

    def _read_trials(self, conn: sqlite3.Connection, tables: set[str]) -> list[Trial]:
        attrs: dict[int, dict[str, Any]] = {}
        number = None
        try:
            if "trial_attrs" in tables:
                for number, key, value in conn.execute("SELECT number, key, value FROM trial_attrs"):
                    attrs.setdefault(number, {})[key] = json.loads(value)
            out = []
            for (number, config, row, status, value, penalty, error, started, finished, s_sec, e_sec,
                 order) in conn.execute(f"SELECT {_TRIAL_COLUMNS} FROM trials ORDER BY number"):
                if status not in STATUSES:
                    raise ValueError(f"status {status!r}")
                out.append(Trial(number, json.loads(config), status, value, error, penalty, started, finished,
                                 s_sec, e_sec, row=json.loads(row), tell_order=order, attrs=attrs.get(number, {})))
        except (TypeError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
            raise StorageError(f"{self.path}: corrupt graphbo study, its trials cannot be read "
                               f"(trial {number}: {exc})") from None
        return out

    def trials(self) -> list[Trial]:
        conn = self._open_connection()
        return self._read_trials(conn, _tables(conn))

    def user_attrs(self) -> dict[str, Any]:
        return self._user_attrs(self._open_connection())

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
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
        except sqlite3.Error as exc:
            raise StorageError(f"{self.path}: cannot open for writing ({exc})") from None
        return conn

    def create(self, meta: Mapping[str, Any]) -> None:
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
            for stmt in _SCHEMA.strip().split(";"):
                if stmt.strip():
                    conn.execute(stmt)
            conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                             [(k, dumps(v)) for k, v in self.stamped(meta).items()])
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            conn.close()
            raise StorageError(f"{self.path}: cannot create the study ({exc})") from None
        self._conn = conn

    def open(self) -> None:
        if self._conn is None:
            self._conn = self._connect()

    @property
    def is_open(self) -> bool:
        return self._conn is not None

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if not self.keep_wal:
            with contextlib.suppress(sqlite3.Error):  # another reader or writer: it stays WAL, which is fine
                conn.execute("PRAGMA journal_mode = DELETE")
        conn.close()

    # -- writing ----------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One committed write transaction; rolled back if anything in it fails."""
        conn = self._open_connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _trial_state(self, trial: Trial, state: Any) -> str | None:
        """The per-trial state column: the state after a finished trial, if this store keeps them."""
        return dumps(state) if self.trial_states and state is not None and trial.status != "running" else None

    @staticmethod
    def _put_meta(conn: sqlite3.Connection, key: str, value: Any) -> None:
        conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, dumps(value)))

    @staticmethod
    def _put_attrs(conn: sqlite3.Connection, trial: Trial) -> None:
        if trial.attrs:
            conn.execute(_ATTRS_SCHEMA)
            conn.executemany("INSERT OR REPLACE INTO trial_attrs (number, key, value) VALUES (?, ?, ?)",
                             [(trial.number, str(k), dumps(v)) for k, v in trial.attrs.items()])

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
            if state is not None:
                self._put_meta(conn, "optimizer_state", state)

    def restart_trial(self, number: int, started: str) -> None:
        with self._transaction() as conn:
            conn.execute("UPDATE trials SET started = ? WHERE number = ? AND status = 'running'", (started, number))

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
            self._put_attrs(conn, trial)
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


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
