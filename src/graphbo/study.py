"""Studies: an optimisation persisted to an embedded SQLite file, crash-safe and resumable.

A :class:`Study` wraps an optimizer (by method name) and records every trial
in an SQLite database (the standard library's :mod:`sqlite3`, WAL mode):

- ``meta``: one row per key (JSON values): ``application`` (``"graphbo"``),
  ``format`` (storage format version), ``graphbo_version``, ``method``,
  ``seed``, ``method_options``, ``space`` (class name and values of every
  variable: enough to detect a different space), ``created``,
  ``user_attrs`` (free JSON, e.g. the benchmark a ``graphbo run`` study
  optimises) and ``optimizer_state``, the optimizer's
  :meth:`~graphbo.optimizers.base.Optimizer.get_state` after the latest
  ask, tell or failure.
- ``trials``: ``number``, ``config`` (JSON), ``row`` (the index row, JSON),
  ``status`` (``running``, ``complete`` or ``failed``), ``value``,
  ``penalty`` (the value told to the model for a failure, if any),
  ``error``, ``started`` / ``finished`` (UTC ISO timestamps),
  ``suggest_seconds``, ``evaluate_seconds``, ``tell_order`` (order in which
  the optimizer learnt the outcome) and ``state`` (optimizer state after it).

Nothing is pickled: the file holds JSON and numbers only. Every write is
committed before :meth:`Study.ask`, :meth:`Study.tell` or :meth:`Study.fail`
returns. Opening an existing file resumes it: the finished trials are replayed
through the optimizer's ``tell`` (failures through ``mark_failed``) in the
order they were told, the latest optimizer state is restored, and trials left
``running`` by a crash are handed out first by the next :meth:`Study.ask`, with
the same configurations. A resumed sequential run therefore ends with the same
trace as an uninterrupted one.

Before anything is written, an existing file is opened read-only and checked;
a file that is corrupt, not SQLite, not a graphbo study, written by a newer
graphbo, or made for another space, method, seed or method options raises
:class:`StorageError` naming the file, which is left byte-for-byte unchanged.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import secrets
import sqlite3
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .optimizers import METHODS
from .optimizers.base import Observation, Optimizer
from .spaces.space import Space

__all__ = ["Study", "Trial", "StorageError", "read_study_info", "FORMAT_VERSION"]

#: version of the storage format; a file with a larger one is refused
FORMAT_VERSION = 1
_APPLICATION = "graphbo"
#: SQLite ``PRAGMA application_id`` of graphbo study files ("gbo1")
APPLICATION_ID = 0x67626F31
_SQLITE_HEADER = b"SQLite format 3\x00"
STATUSES = ("running", "complete", "failed")

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


class StorageError(Exception):
    """A study file cannot be used: corrupt, foreign, newer, or made for another study.

    The file is left untouched.
    """


@dataclass
class Trial:
    """One evaluation of a study.

    ``status`` is ``"running"`` (asked, not yet told), ``"complete"``
    (``value`` holds the objective) or ``"failed"`` (``error`` holds the
    message; ``penalty`` the value told to the model instead, if any).
    Timestamps are UTC ISO 8601 strings.
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
    row: np.ndarray | None = field(default=None, repr=False, compare=False)
    tell_order: int | None = field(default=None, repr=False)


# -- JSON helpers ---------------------------------------------------------------------------------
def _jsonable(x: Any) -> Any:
    """``default=`` for :func:`json.dumps`: NumPy scalars and arrays, tuples; anything else by repr."""
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (set, frozenset)):
        return sorted(map(_plain, x), key=repr)
    return {"__repr__": repr(x)}


def _plain(x: Any) -> Any:
    """A JSON-compatible copy of ``x`` (tuples become lists, unknown objects their repr)."""
    return json.loads(json.dumps(x, default=_jsonable))


def _dumps(x: Any) -> str:
    return json.dumps(x, default=_jsonable)


def _strict_options(options: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Method options as JSON; a value that does not survive JSON is an error (it could not be compared)."""
    out = {}
    for key, value in options.items():
        try:
            text = json.dumps(value, default=lambda o: o.item() if isinstance(o, np.generic) else _raise(o))
        except TypeError:
            raise TypeError(
                f"{where}: method option {key}={value!r} cannot be stored as JSON; "
                "persistent studies take numbers, strings, lists and dicts of them"
            ) from None
        out[key] = json.loads(text)
    return out


def _raise(o: Any):
    raise TypeError(type(o).__name__)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def describe_space(space: Space) -> list[dict[str, Any]]:
    """JSON description of a space: for each variable its name, class and values (or bounds).

    Graph variables also carry a SHA-256 of their adjacency matrix (edge weights
    included). Used to refuse resuming a study with a different space. A space with
    its own ``describe()`` (an architecture space) describes itself.
    """
    if not isinstance(space, Space) and hasattr(space, "describe"):
        return _plain(space.describe())
    out = []
    for name, var in zip(space.names, space.variables):
        d: dict[str, Any] = {"name": name, "class": type(var).__name__}
        values = getattr(var, "values", None)
        if values is not None:
            d["values"] = _plain(list(values))
        for attr in ("low", "high", "log"):
            if hasattr(var, attr):
                d[attr] = _plain(getattr(var, attr))
        adj = getattr(var, "adjacency", None)
        if adj is not None:
            d["adjacency_sha256"] = hashlib.sha256(np.ascontiguousarray(adj, dtype="<f8").tobytes()).hexdigest()
        out.append(d)
    return out


def _space_difference(stored: list[dict[str, Any]], given: list[dict[str, Any]]) -> str | None:
    if stored == given:
        return None
    s_names, g_names = [d.get("name") for d in stored], [d.get("name") for d in given]
    if s_names != g_names:
        return f"the study's variables are {s_names}, the given space has {g_names}"
    for s, g in zip(stored, given):
        if s != g:
            keys = [k for k in list(g) + [k for k in s if k not in g] if s.get(k) != g.get(k)]
            k = keys[0]
            if k == "adjacency_sha256":
                return f"variable {s['name']!r} has another graph (adjacency matrix or edge weights)"
            return (f"variable {s['name']!r} differs in {k}: the study has {s.get(k)!r}, "
                    f"the given space has {g.get(k)!r}")
    return "the spaces differ"  # pragma: no cover


def _space_types() -> tuple[type, ...]:
    """The space classes a study accepts: graphbo spaces and NAS architecture spaces."""
    from .nas.space import ArchitectureSpace

    return (Space, ArchitectureSpace)


def _check_number(value: Any, what: str) -> float:
    if isinstance(value, (str, bytes, bool)) or value is None:
        raise ValueError(f"{what} {value!r} is not a number")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what} {value!r} is not a number") from None
    if not math.isfinite(v):
        raise ValueError(f"{what} {value!r} is not finite")
    return v


# -- reading a file (read-only) -----------------------------------------------------------------
def _read_file(path: str) -> tuple[dict[str, Any], list[tuple]]:
    """Meta and trial rows of an existing study file, opened read-only; ``StorageError`` otherwise."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(_SQLITE_HEADER))
    except IsADirectoryError:
        raise StorageError(f"{path}: is a directory, not a graphbo study file") from None
    except OSError as exc:
        raise StorageError(f"{path}: cannot be read ({exc})") from None
    if head != _SQLITE_HEADER:
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
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
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
        if meta.get("application") != _APPLICATION:
            raise StorageError(f"{path}: an SQLite database but not a graphbo study (no graphbo application mark)")
        fmt = meta.get("format")
        if not isinstance(fmt, int):
            raise StorageError(f"{path}: corrupt graphbo study (format version {fmt!r})")
        if fmt > FORMAT_VERSION:
            raise StorageError(f"{path}: written by a newer graphbo (storage format {fmt}; this graphbo "
                               f"{_version()} reads formats up to {FORMAT_VERSION}); upgrade graphbo to open it")
        if "trials" not in tables:
            raise StorageError(f"{path}: corrupt graphbo study (no trials table)")
        rows = conn.execute(
            "SELECT number, config, row, status, value, penalty, error, started, finished, suggest_seconds, "
            "evaluate_seconds, tell_order, state FROM trials ORDER BY number").fetchall()
    except sqlite3.Error as exc:
        raise StorageError(f"{path}: corrupt or unreadable SQLite database ({exc})") from None
    finally:
        conn.close()
    for key in ("method", "seed", "method_options", "space"):
        if key not in meta:
            raise StorageError(f"{path}: corrupt graphbo study (meta has no {key!r})")
    return meta, rows


def _version() -> str:
    from . import __version__

    return __version__


def read_study_info(path: str | os.PathLike) -> dict[str, Any]:
    """What a study file holds, read-only: its meta (method, seed, options, space, user_attrs), trial counts
    (``n_trials``, ``n_running``, ``n_complete``, ``n_failed``) and ``best_value``.

    Raises :class:`StorageError` if ``path`` is missing or not a usable study.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise StorageError(f"{path}: no such study file")
    meta, rows = _read_file(path)
    counts = {s: sum(1 for r in rows if r[3] == s) for s in STATUSES}
    info = {k: v for k, v in meta.items() if k != "optimizer_state"}
    info.setdefault("user_attrs", {})
    info["n_trials"] = len(rows)
    values = [r[4] for r in rows if r[3] == "complete" and r[4] is not None]
    info["best_value"] = min(values) if values else None
    info.update({f"n_{s}": n for s, n in counts.items()})
    return info


# -- the study ------------------------------------------------------------------------------------
class Study:
    """An optimisation whose trials are stored in an SQLite file (or in memory).

    Parameters
    ----------
    space : Space
    method : str, default "combo"
        Optimizer name, as for :func:`graphbo.minimize`.
    storage : str or path-like, optional
        SQLite file. Created if absent (with its folder); resumed if it exists.
        ``None`` keeps the study in memory (nothing survives the process).
    seed : int, optional
        Seed of the optimizer. ``None`` draws one, which is stored, so a resumed
        study continues with the same random choices; resuming with ``None``
        takes the stored seed.
    **method_options
        Passed to the optimizer (``n_initial``, COMBO's ``n_random``, ...). For a
        file they must be JSON values; resuming with other options is refused.

    Examples
    --------
    A loop of your own (``minimize(..., storage=...)`` runs this one)::

        with Study(space, "combo", storage="runs/s.db", seed=0) as study:
            while study.n_finished < 50:
                trial = study.ask()          # recorded `running`
                try:
                    study.tell(trial, objective(trial.config))
                except Exception as exc:
                    study.fail(trial, exc)   # never suggested again
    """

    def __init__(self, space: Space, method: str = "combo", storage: str | os.PathLike | None = None,
                 seed: int | None = None, **method_options: Any):
        if not isinstance(space, _space_types()):
            raise TypeError(f"space must be a graphbo.Space or a graphbo.nas.ArchitectureSpace, "
                            f"got {type(space).__name__}")
        if not isinstance(method, str) or method.lower() not in METHODS:
            raise ValueError(f"unknown method {method!r}; choose one of {sorted(METHODS)}")
        if getattr(METHODS[method.lower()], "multi_fidelity", False):
            raise ValueError(f"method {method!r} chooses a fidelity (epochs) for each evaluation, which a study's "
                             "objective(config) cannot take: run it on a benchmark with fidelities through "
                             "graphbo.experiments.runner (graphbo compare), or drive its ask_with_fidelity/tell(..., "
                             "fidelity=k) yourself")
        if seed is not None and (isinstance(seed, bool) or int(seed) != seed):
            raise ValueError(f"seed must be an integer or None, got {seed!r}")
        self.space = space
        self.method = method.lower()
        self.path: str | None = None if storage is None else os.fspath(storage)
        where = f"Study({self.path})" if self.path else "Study"
        options = _strict_options(method_options, where) if self.path else dict(method_options)
        self.method_options = options
        space_desc = describe_space(space)
        meta: dict[str, Any] | None = None
        rows: list[tuple] = []
        if self.path is not None and os.path.exists(self.path) and (
                os.path.isdir(self.path) or os.path.getsize(self.path) > 0):
            meta, rows = _read_file(self.path)
            self._check_match(meta, space_desc, seed, options)
            seed = meta["seed"]
        elif seed is None:
            seed = secrets.randbits(31)
        self.seed = None if seed is None else int(seed)
        self.optimizer: Optimizer = METHODS[self.method](space, seed=self.seed, **method_options)
        self._trials: list[Trial] = []
        self._resume_queue: list[Trial] = []
        self._t_ask: dict[int, float] = {}
        self._next_order = 0
        if meta is not None:
            self._restore(meta, rows)
        self._conn = self._connect(new=meta is None, space_desc=space_desc)

    # -- opening ----------------------------------------------------------------------------
    def _check_match(self, meta: Mapping[str, Any], space_desc: list, seed: int | None,
                     options: Mapping[str, Any]) -> None:
        path = self.path
        stored = meta["method"]
        if METHODS.get(str(stored).lower()) is not METHODS[self.method]:
            raise StorageError(f"{path}: the study was created with method {stored!r}, not {self.method!r}")
        if seed is not None and meta["seed"] != int(seed):
            raise StorageError(f"{path}: the study was created with seed {meta['seed']!r}, not {seed!r}")
        if meta["method_options"] != options:
            raise StorageError(f"{path}: the study was created with method options {meta['method_options']!r}, "
                               f"not {options!r}")
        diff = _space_difference(meta["space"], space_desc)
        if diff:
            raise StorageError(f"{path}: the study was created for another space: {diff}")

    def _config_of(self, row: np.ndarray, stored: Mapping[str, Any]) -> dict[str, Any]:
        """The configuration of a stored trial: discrete values from the row, continuous ones from the JSON."""
        if not isinstance(self.space, Space):  # an architecture space: the row encodes the whole network
            return self.space.from_index(row)
        out = {}
        for j, (name, var) in enumerate(zip(self.space.names, self.space.variables)):
            if self.space.n_values[j] > 0:
                out[name] = var.value_at(int(row[j]))
            else:
                out[name] = stored[name]
        return out

    def _restore(self, meta: Mapping[str, Any], rows: list[tuple]) -> None:
        path = self.path
        try:
            for (number, config, row, status, value, penalty, error, started, finished, s_sec, e_sec, order,
                 _state) in rows:
                if status not in STATUSES:
                    raise ValueError(f"trial {number} has status {status!r}")
                r = np.asarray(json.loads(row), dtype=self.space.row_dtype)
                cfg = self._config_of(r, json.loads(config))
                self._trials.append(Trial(number, cfg, status, value, error, penalty, started, finished, s_sec, e_sec,
                                          row=self.space.to_index(cfg), tell_order=order))
            finished_trials = sorted((t for t in self._trials if t.status != "running"),
                                     key=lambda t: (t.tell_order is None, t.tell_order, t.number))
            for t in finished_trials:
                if t.status == "complete":
                    self.optimizer.tell(t.config, t.value)
                elif t.penalty is not None:
                    self.optimizer.tell(t.config, t.penalty)
                else:
                    self.optimizer.mark_failed(t.config)
            state = meta.get("optimizer_state")
            if state is not None:
                self.optimizer.set_state(state)
            for t in self._trials:
                if t.status == "running":
                    # asked before the crash: pending again, handed out first by the next ask
                    self.optimizer._pending[t.row.tobytes()] = t.row
                    self._resume_queue.append(t)
        except StorageError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, json.JSONDecodeError) as exc:
            raise StorageError(f"{path}: corrupt graphbo study, its trials cannot be replayed ({exc})") from None
        self._next_order = 1 + max((t.tell_order for t in self._trials if t.tell_order is not None), default=-1)

    def _connect(self, new: bool, space_desc: list) -> sqlite3.Connection:
        if self.path is None:
            conn = sqlite3.connect(":memory:", isolation_level=None)
        else:
            folder = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(folder, exist_ok=True)
            try:
                conn = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = FULL")
            except sqlite3.Error as exc:
                raise StorageError(f"{self.path}: cannot open for writing ({exc})") from None
        if new:
            meta = {
                "application": _APPLICATION,
                "format": FORMAT_VERSION,
                "graphbo_version": _version(),
                "method": self.method,
                "seed": self.seed,
                "method_options": self.method_options if self.path else _plain(self.method_options),
                "space": space_desc,
                "created": _now(),
                "user_attrs": {},
            }
            try:
                conn.execute("BEGIN IMMEDIATE")
                for stmt in _SCHEMA.strip().split(";"):
                    if stmt.strip():
                        conn.execute(stmt)
                conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                                 [(k, _dumps(v)) for k, v in meta.items()])
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                conn.close()
                raise StorageError(f"{self.path or ':memory:'}: cannot create the study ({exc})") from None
        return conn

    # -- writing --------------------------------------------------------------------------
    def _write(self, statements: list[tuple[str, tuple]], state: bool = True) -> None:
        """Run ``statements`` in one committed transaction, with the optimizer state when ``state``."""
        if state:
            statements = statements + [("INSERT OR REPLACE INTO meta (key, value) VALUES ('optimizer_state', ?)",
                                        (_dumps(self.optimizer.get_state()),))]
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            for sql, params in statements:
                conn.execute(sql, params)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _insert(self, t: Trial) -> tuple[str, tuple]:
        return ("INSERT INTO trials (number, config, row, status, value, penalty, error, started, finished, "
                "suggest_seconds, evaluate_seconds, tell_order, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (t.number, _dumps(t.config), _dumps(np.asarray(t.row).tolist()), t.status, t.value, t.penalty,
                 t.error, t.started, t.finished, t.suggest_seconds, t.evaluate_seconds, t.tell_order, None))

    # -- protocol -------------------------------------------------------------------------
    def ask(self, n: int | None = None) -> Trial | list[Trial]:
        """The next trial to evaluate (``n``: a list of ``n``), recorded as ``running`` before returning.

        Trials left running by a crash or an interruption are handed out first,
        with their original numbers and configurations.
        """
        self._check_open()
        if n is not None and (isinstance(n, bool) or int(n) != n or n < 1):
            raise ValueError(f"ask: n must be a positive integer, got {n!r}")
        count = 1 if n is None else int(n)
        out: list[Trial] = []
        statements: list[tuple[str, tuple]] = []
        while self._resume_queue and len(out) < count:
            t = self._resume_queue.pop(0)
            t.started = _now()
            statements.append(("UPDATE trials SET started = ? WHERE number = ?", (t.started, t.number)))
            out.append(t)
        k = count - len(out)
        if k:
            t0 = time.perf_counter()
            configs = self.optimizer.ask(k)
            seconds = (time.perf_counter() - t0) / k
            number = len(self._trials)
            started = _now()
            for i, cfg in enumerate(configs):
                t = Trial(number + i, cfg, "running", started=started, suggest_seconds=seconds,
                          row=self.space.to_index(cfg))
                statements.append(self._insert(t))
                out.append(t)
        try:
            self._write(statements, state=bool(k))
        except BaseException:
            if k:  # keep memory and file in step: the new configurations were not recorded
                for t in out[count - k:]:
                    self.optimizer._pending.pop(t.row.tobytes(), None)
            self._resume_queue[:0] = [t for t in out[:count - k]]
            raise
        now = time.perf_counter()
        for t in out:
            if t.number == len(self._trials):
                self._trials.append(t)
            self._t_ask[t.number] = now
        copies = [dataclasses.replace(t) for t in out]
        return copies[0] if n is None else copies

    def _resolve(self, trial_or_config: Trial | Mapping[str, Any] | int, what: str) -> Trial | None:
        """The running trial meant by a Trial, a trial number or a configuration (``None``: never asked)."""
        if isinstance(trial_or_config, Trial) or isinstance(trial_or_config, (int, np.integer)):
            number = trial_or_config.number if isinstance(trial_or_config, Trial) else int(trial_or_config)
            if not 0 <= number < len(self._trials):
                raise ValueError(f"{what}: no trial number {number} in this study")
            t = self._trials[number]
            if t.status != "running":
                raise ValueError(f"{what}: trial {number} is already {t.status}")
            return t
        row = self.space.to_index(trial_or_config).tobytes()
        for t in self._trials:
            if t.status == "running" and t.row.tobytes() == row:
                return t
        return None

    def tell(self, trial: Trial | Mapping[str, Any] | int, value: float, *, seconds: float | None = None) -> Trial:
        """Record that a trial (a :class:`Trial`, its number, or its configuration) evaluated to ``value``.

        The optimizer learns it and the trial is stored ``complete`` (with the
        optimizer state) before this returns. A configuration that was never
        asked is added as a new complete trial. ``value`` must be a finite
        number: otherwise ``ValueError`` and nothing is stored.
        ``seconds`` (evaluation time) defaults to the time since it was asked.
        """
        self._check_open()
        t = self._resolve(trial, "tell")
        v = _check_number(value, "tell: value")
        cfg = t.config if t is not None else self.space.from_index(self.space.to_index(trial))
        self.optimizer.tell(cfg, v)
        return self._finish(t, cfg, "complete", v, None, None, seconds)

    def fail(self, trial: Trial | Mapping[str, Any] | int, error: str | BaseException = "failed", *,
             value: float | None = None, seconds: float | None = None) -> Trial:
        """Record that a trial failed, with ``error`` (a message or the exception).

        The configuration is never suggested again. By default the model is not
        told; with ``value``, it is told that value instead (a penalty).
        """
        self._check_open()
        t = self._resolve(trial, "fail")
        if isinstance(error, BaseException):
            error = f"{type(error).__name__}: {error}"
        penalty = None if value is None else _check_number(value, "fail: penalty value")
        cfg = t.config if t is not None else self.space.from_index(self.space.to_index(trial))
        if penalty is None:
            self.optimizer.mark_failed(cfg)
        else:
            self.optimizer.tell(cfg, penalty)
        return self._finish(t, cfg, "failed", None, str(error), penalty, seconds)

    def _finish(self, t: Trial | None, cfg: dict[str, Any], status: str, value: float | None, error: str | None,
                penalty: float | None, seconds: float | None) -> Trial:
        now = time.perf_counter()
        state = self.optimizer.get_state()
        stamp = _now()
        if t is None:
            t = Trial(len(self._trials), cfg, status, started=stamp, row=self.space.to_index(cfg))
            new = True
        else:
            new = False
        if seconds is None:
            seconds = now - self._t_ask.get(t.number, now)
        updated = dataclasses.replace(t, status=status, value=value, error=error, penalty=penalty, finished=stamp,
                                      evaluate_seconds=float(seconds), tell_order=self._next_order)
        if new:
            sql = self._insert(updated)
            statements = [sql, ("UPDATE trials SET state = ? WHERE number = ?", (_dumps(state), t.number))]
        else:
            statements = [("UPDATE trials SET status = ?, value = ?, penalty = ?, error = ?, finished = ?, "
                           "evaluate_seconds = ?, tell_order = ?, state = ? WHERE number = ?",
                           (status, value, penalty, error, stamp, float(seconds), self._next_order, _dumps(state),
                            t.number))]
        statements.append(("INSERT OR REPLACE INTO meta (key, value) VALUES ('optimizer_state', ?)",
                           (_dumps(state),)))
        self._write(statements, state=False)
        self._next_order += 1
        if new:
            self._trials.append(updated)
        else:
            self._trials[t.number] = updated
            self._resume_queue = [q for q in self._resume_queue if q.number != t.number]
        self._t_ask.pop(t.number, None)
        return dataclasses.replace(updated)

    # -- results --------------------------------------------------------------------------
    @property
    def trials(self) -> list[Trial]:
        """All trials, by number (copies)."""
        return [dataclasses.replace(t) for t in self._trials]

    def _by_status(self, status: str) -> list[Trial]:
        return [dataclasses.replace(t) for t in self._trials if t.status == status]

    @property
    def complete_trials(self) -> list[Trial]:
        return self._by_status("complete")

    @property
    def failed_trials(self) -> list[Trial]:
        return self._by_status("failed")

    @property
    def running_trials(self) -> list[Trial]:
        return self._by_status("running")

    @property
    def n_finished(self) -> int:
        """Complete plus failed trials (what a budget counts)."""
        return sum(1 for t in self._trials if t.status != "running")

    @property
    def history(self) -> list[Observation]:
        """The complete evaluations, in the order the optimizer was told them."""
        done = sorted((t for t in self._trials if t.status == "complete"), key=lambda t: t.tell_order)
        return [Observation(dict(t.config), float(t.value)) for t in done]

    @property
    def best_trial(self) -> Trial | None:
        """The complete trial with the lowest value (the first of equals), or ``None``."""
        done = [t for t in self._trials if t.status == "complete"]
        return dataclasses.replace(min(done, key=lambda t: (t.value, t.tell_order))) if done else None

    @property
    def best(self) -> Observation | None:
        t = self.best_trial
        return None if t is None else Observation(t.config, t.value)

    # -- free attributes ------------------------------------------------------------------
    @property
    def user_attrs(self) -> dict[str, Any]:
        self._check_open()
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'user_attrs'").fetchone()
        return json.loads(row[0]) if row else {}

    def set_user_attr(self, key: str, value: Any) -> None:
        """Store a JSON value under ``key`` in the study's meta (e.g. what the objective is)."""
        attrs = self.user_attrs
        attrs[str(key)] = _plain(value)
        self._write([("INSERT OR REPLACE INTO meta (key, value) VALUES ('user_attrs', ?)", (_dumps(attrs),))],
                    state=False)

    # -- lifetime -------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._conn is None:
            raise ValueError(f"study {self.path or '(in memory)'} is closed")

    def close(self) -> None:
        """Close the database (a WAL file is checkpointed into the main file). Idempotent."""
        conn, self._conn = getattr(self, "_conn", None), None
        if conn is not None:
            conn.close()

    def __enter__(self) -> "Study":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # pragma: no cover - best effort
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        counts = ", ".join(f"{s} {sum(1 for t in self._trials if t.status == s)}" for s in STATUSES)
        return f"Study({self.path or '(in memory)'}, method={self.method!r}, seed={self.seed}, {counts})"
