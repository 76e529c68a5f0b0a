"""A returned tell survives SIGKILL whatever else this or another process does with the study file.

On POSIX, closing any descriptor of a file drops every lock the process holds on it, SQLite's included; a
graphbo that read the file's header with Python's ``open()`` while a writer of the same process was live let
another process checkpoint and remove the ``-wal`` under that writer, and the tells that followed were lost.
Real processes, real SIGKILLs, real SQLite files throughout.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from graphbo.storage import SQLiteStorage, StorageError
from graphbo.storage.runs import read_run

SRC = str(Path(__file__).resolve().parents[2] / "src")

PRELUDE = f"""
import os, sys, sqlite3, time
sys.path.insert(0, {SRC!r})
import graphbo as gb
from graphbo.storage import SQLiteStorage, StudyLockedError
from graphbo.storage.info import read_study_info
from graphbo.study import Study
def second_study(path):
    try:
        Study(space, "rs", storage=path, seed=0)
    except StudyLockedError:
        pass
space = gb.Space({{"a": gb.Ordinal(list(range(1000))), "b": gb.Categorical(["x", "y", "z"]), "c": gb.Binary()}})
"""


def spawn(body: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", PRELUDE + textwrap.dedent(body)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def stored_values(path: str) -> dict[int, float]:
    conn = sqlite3.connect(path)
    try:
        return dict(conn.execute("SELECT number, value FROM trials WHERE status = 'complete'").fetchall())
    finally:
        conn.close()


def touch(path: str) -> None:
    """What another process does to a study without harm: open an SQLite connection, read, close."""
    conn = sqlite3.connect(path)
    conn.execute("SELECT COUNT(*) FROM trials").fetchall()
    conn.close()


def tell_read_touch_tell_kill(path: str, extra_read: str, n_after: int) -> dict[int, float]:
    """A writer process tells one value (1.0), runs ``extra_read`` (a read of its own file), waits while another
    process opens and closes a connection to the file, tells ``n_after`` more (2.0, 3.0, ...) and is SIGKILLed
    once they returned; the values the file holds then."""
    child = spawn(f"""
        from graphbo.storage.runs import read_run
        from graphbo.storage.base import StorageError
        path = {path!r}
        study = Study(space, "rs", storage=path, seed=0)
        t = study.ask(); study.tell(t, 1.0)
        try:
            {extra_read}
        except StorageError:
            pass  # refused (a study that is not a run): still no descriptor of the file closed
        print("ready", flush=True)
        sys.stdin.readline()
        for i in range({n_after}):
            t = study.ask(); study.tell(t, float(i + 2))
        print("told", flush=True)
        time.sleep(60)
    """)
    try:
        assert child.stdout.readline().strip() == "ready", child.stderr.read()
        touch(path)  # another process opens and closes a connection: it must not checkpoint under the writer
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "told", child.stderr.read()
        child.send_signal(signal.SIGKILL)
        child.wait()
    finally:
        child.kill()
    return stored_values(path)


@pytest.mark.parametrize("extra_read", ["read_study_info(path)", "SQLiteStorage(path).writer()",
                                        "second_study(path)", "read_run(path)"])
def test_a_read_of_the_file_by_the_writing_process_loses_no_later_tell(tmp_path, extra_read):
    """``read_run`` included: it tells a study file from another file through SQLite, so it may read a run
    this process is writing."""
    path = str(tmp_path / "s.db")
    assert tell_read_touch_tell_kill(path, extra_read, 5) == {n: float(n + 1) for n in range(6)}


def test_sqlite_files_are_told_from_other_files_without_opening_them(tmp_path):
    from graphbo.storage.sqlite import is_sqlite_file

    study = tmp_path / "s.db"
    SQLiteStorage(str(study)).create({"method": "rs", "seed": 0, "method_options": {}, "space": {}})
    text = tmp_path / "t.jsonl"
    text.write_text('{"type": "run"}\n')
    assert is_sqlite_file(str(study))
    assert not is_sqlite_file(str(text))
    with pytest.raises(StorageError, match="not a graphbo run study file"):
        read_run(text)
    with pytest.raises(StorageError, match="not a graphbo benchmark run"):
        read_run(study)


#: one writer process of the soak: rounds of open, a few tells (each acknowledged once it returned), reads of
#: the file by this and other code paths, close
SOAK_WORKER = """
    path = {path!r}
    rng = __import__("random").Random({seed})
    for round_ in range(10_000):
        try:
            study = Study(space, "rs", storage=path, seed=0)
        except StudyLockedError:
            time.sleep(0.01)
            continue
        read_study_info(path)
        for _ in range(rng.randint(2, 10)):
            t = study.ask()
            value = float(rng.randint(0, 10**6))
            study.tell(t, value)
            print(f"told {{t.number}} {{value}}", flush=True)
            if rng.random() < 0.5:
                read_study_info(path)
            if rng.random() < 0.3:
                c = sqlite3.connect(path); c.execute("SELECT 1").fetchall(); c.close()
            time.sleep(rng.random() * 0.02)
        study.close()
        time.sleep(rng.random() * 0.02)
"""


@pytest.mark.slow
def test_soak_of_processes_opening_telling_closing_and_killed_loses_no_returned_tell(tmp_path):
    """Four processes open, tell and close one study in turn; every 0.3-1.0 s, while an onlooker process reads
    the file, one that has told something is SIGKILLed and replaced, for 40 s. Every tell that returned is stored with its value, and the locks of the
    killed writers are taken over without a manual step (later processes go on telling)."""
    path = str(tmp_path / "soak.db")
    rng = random.Random(0)
    acked: dict[int, float] = {}
    procs: dict[subprocess.Popen, int] = {}  # worker -> tells it returned
    n_started = n_killed = 0

    def start() -> None:
        nonlocal n_started
        p = spawn(SOAK_WORKER.format(path=path, seed=n_started))
        os.set_blocking(p.stdout.fileno(), False)
        procs[p] = 0
        n_started += 1

    def drain(p: subprocess.Popen) -> None:
        for line in iter(p.stdout.readline, ""):
            if line.startswith("told "):
                _, number, value = line.split()
                acked[int(number)] = float(value)
                procs[p] = procs.get(p, 0) + 1

    for _ in range(4):
        start()
    end = time.monotonic() + 40.0
    try:
        while time.monotonic() < end:
            for _ in range(rng.randint(3, 10)):  # an onlooker (a monitoring script) reads the study meanwhile
                time.sleep(0.1)
                with contextlib.suppress(sqlite3.OperationalError):  # before the study's tables exist
                    touch(path)
            for p in list(procs):
                drain(p)
                assert p.poll() is None, p.stderr.read()
            telling = [p for p, n in procs.items() if n > 0]
            if not telling:
                continue
            victim = rng.choice(telling)
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            drain(victim)
            del procs[victim]
            n_killed += 1
            start()
    finally:
        for p in list(procs):
            p.kill()
            p.wait()
            drain(p)
    stored = stored_values(path)
    lost = {n: v for n, v in acked.items() if stored.get(n) != v}
    print(f"soak: {n_started} processes, {n_killed} killed, {len(acked)} tells returned, {len(stored)} stored")
    assert not lost, f"{len(lost)} of {len(acked)} returned tells lost or altered: {sorted(lost)[:10]}"
    assert n_killed >= 10


# -- a study file is data, never code ----------------------------------------------------------------------
def _study(path, n=3):
    import graphbo as gb
    from graphbo.study import Study

    space = gb.Space({"a": gb.Ordinal(list(range(20)))})
    with Study(space, "rs", storage=str(path), seed=0) as study:
        for i in range(n):
            study.tell(study.ask(), float(i))
    return space


@pytest.mark.parametrize("sql, what", [
    ("CREATE TRIGGER evil AFTER UPDATE OF value ON trials BEGIN UPDATE trials SET value = -1000; END",
     "trigger 'evil'"),
    ("CREATE TRIGGER gone AFTER INSERT ON trials BEGIN DELETE FROM trials WHERE number = 0; END", "trigger 'gone'"),
    ("CREATE TRIGGER loop AFTER UPDATE ON meta BEGIN UPDATE meta SET value = value; END", "trigger 'loop'"),
    ("CREATE VIEW v AS SELECT * FROM trials", "view 'v'"),
    ("DROP TRIGGER trials_checksum_stale; CREATE TRIGGER trials_checksum_stale AFTER UPDATE ON trials "
     "BEGIN UPDATE trials SET value = 0; END", "trigger 'trials_checksum_stale'"),
])
def test_a_study_file_with_sql_graphbo_did_not_make_is_refused_unchanged(tmp_path, sql, what):
    import hashlib

    from graphbo.storage import CorruptStudyError
    from graphbo.storage.info import read_study_info
    from graphbo.study import Study

    path = tmp_path / "s.db"
    space = _study(path)
    conn = sqlite3.connect(path)
    conn.executescript(sql)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    for attempt in (lambda: Study(space, "rs", storage=str(path), seed=0), lambda: read_study_info(path),
                    lambda: SQLiteStorage(str(path)).open(), lambda: SQLiteStorage(str(path)).unlock()):
        with pytest.raises(CorruptStudyError, match=f"holds a {what} that graphbo did not make"):
            attempt()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_graphbos_own_triggers_are_accepted(tmp_path):
    from graphbo.storage.info import read_study_info

    path = tmp_path / "s.db"
    _study(path)
    assert read_study_info(path)["n_complete"] == 3


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE and SIGXFSZ")
def test_a_study_created_on_a_full_disk_is_absent_not_empty(tmp_path):
    path = str(tmp_path / "new.db")
    child = subprocess.run([sys.executable, "-c", PRELUDE + textwrap.dedent(f"""
        import resource, signal
        from graphbo.storage import StorageError
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))  # stands for a full disk
        try:
            Study(space, "rs", storage={path!r}, seed=0)
        except StorageError as exc:
            print(type(exc).__name__)
    """)], capture_output=True, text=True, timeout=120)
    assert child.stdout.strip() == "StorageFullError", child.stderr[-2000:]
    assert not [p for p in os.listdir(tmp_path) if p.startswith("new.db")]


@pytest.mark.parametrize("key, text", [
    ("space", "5"),
    ("optimizer_state", "[1, 2]"),
    ("optimizer_state", '{"rng": {"bit_generator": "PCG64", "state": {"state": 1e400, "inc": 3}}}'),
    ("optimizer_state", "[" * 100000 + "]" * 100000),
])
def test_a_hostile_meta_value_with_a_valid_checksum_is_one_storage_error(tmp_path, key, text):
    """An edit whose checksum the editor recomputed (anyone can): still one StorageError naming the file."""
    from graphbo.storage import StorageError
    from graphbo.storage.checks import row_checksum
    from graphbo.study import Study

    path = tmp_path / "s.db"
    space = _study(path)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = ?, checksum = ? WHERE key = ?", (text, row_checksum("meta", key, text), key))
    conn.commit()
    conn.close()
    with pytest.raises(StorageError, match=str(path)):
        Study(space, "rs", storage=str(path), seed=0)


def test_a_meta_row_whose_checksum_was_removed_is_refused(tmp_path):
    from graphbo.storage import CorruptStudyError
    from graphbo.storage.info import read_study_info

    path = tmp_path / "s.db"
    _study(path)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = '7', checksum = NULL WHERE key = 'seed'")
    conn.commit()
    conn.close()
    with pytest.raises(CorruptStudyError, match="meta key 'seed' \\(no checksum\\)"):
        read_study_info(path)
