"""Reliability of study files: one writer at a time, stale locks, trials that crash
their process, storage faults (each one error line, the file byte-identical), damage detected on load.

Real SQLite files and real processes throughout: a second process, a killed one, a file-size limit, a
read-only file (for root, a child process without the capabilities that bypass file permissions).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import graphbo as gb
from graphbo.storage import (CorruptStudyError, NewerFormatError, NotAStudyError, SQLiteStorage, StorageError,
                             StudyAccessError, StudyLockedError)
from graphbo.storage.info import read_study_info
from graphbo.study import Study
from support import ordinal6_categorical_binary_space

SRC = str(Path(__file__).resolve().parents[2] / "src")
SPACE = "gb.Space({'a': gb.Ordinal(list(range(6))), 'b': gb.Categorical(['x', 'y', 'z']), 'c': gb.Binary()})"


def f(c):
    return (c["a"] - 3) ** 2 + {"x": 0.0, "y": 1.5, "z": 0.5}[c["b"]] + 0.7 * c["c"]


PRELUDE = f"""
import os, sys, time, json
sys.path.insert(0, {SRC!r})
import graphbo as gb
from graphbo.study import Study
from graphbo.storage import StorageError
space = {SPACE}
def f(c):
    return (c["a"] - 3) ** 2 + {{"x": 0.0, "y": 1.5, "z": 0.5}}[c["b"]] + 0.7 * c["c"]
"""


def child(code: str, **kw) -> subprocess.Popen:
    """A Python process running ``PRELUDE + code`` (stdout and stderr piped, text)."""
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONFAULTHANDLER="")
    return subprocess.Popen([sys.executable, "-c", PRELUDE + textwrap.dedent(code)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, **kw)


def run_child(code: str, timeout: float = 120) -> subprocess.CompletedProcess:
    proc = child(code)
    out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def wait_for(proc: subprocess.Popen, word: str, timeout: float = 120) -> str:
    """Read ``proc``'s stdout until a line with ``word``."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        line = proc.stdout.readline()
        if word in line:
            return line
        if not line and proc.poll() is not None:
            raise AssertionError(f"child ended ({proc.returncode}) before {word!r}: {proc.stderr.read()[-2000:]}")
    raise AssertionError(f"no {word!r} from the child in {timeout} s")


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def small_study(path, n=4) -> None:
    with Study(ordinal6_categorical_binary_space(), "rs", storage=str(path), seed=0, n_initial=2) as study:
        for _ in range(n):
            trial = study.ask()
            study.tell(trial, f(trial.config))


def n_complete(path) -> int:
    """Complete trials of a study that another process may be creating (0 until it exists)."""
    try:
        return read_study_info(path)["n_complete"]
    except StorageError:
        return 0


def raw(path, sql, args=()):
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


# -- 1. concurrent writers --------------------------------------------------------------------------------
def test_a_second_writer_process_is_refused_at_once_and_readers_keep_working(tmp_path):
    path = str(tmp_path / "s.db")
    writer = child(f"""
        study = Study(space, "rs", storage={path!r}, seed=0, n_initial=2)
        trial = study.ask()
        print("asked", trial.number, json.dumps(trial.config), flush=True)
        sys.stdin.readline()
        study.tell(trial, f(trial.config))
        study.close()
        print("done", flush=True)
    """, stdin=subprocess.PIPE)
    try:
        line = wait_for(writer, "asked")
        in_flight = json.loads(line.split(" ", 2)[2])
        before = sha256(path)
        t0 = time.perf_counter()
        with pytest.raises(StudyLockedError, match=f"being written by process {writer.pid} on host"):
            Study(ordinal6_categorical_binary_space(), "rs", storage=path, seed=0, n_initial=2)
        assert time.perf_counter() - t0 < 5  # immediate, not after SQLite's busy timeout
        info = read_study_info(path)  # a reader while the writer runs (WAL)
        assert (info["n_running"], info["n_complete"], info["writer"]["pid"]) == (1, 0, writer.pid)
        # the command-line readers too: the study's report and its export for optuna-dashboard
        report = subprocess.run([sys.executable, "-m", "graphbo", "report", path, "--out", str(tmp_path / "r.md")],
                                capture_output=True, text=True, timeout=120,
                                env=dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", "")))
        assert report.returncode == 0, report.stderr
        assert "running" in (tmp_path / "r.md").read_text()
        if importlib.util.find_spec("optuna") is not None:
            from graphbo.cli import main as cli_main

            assert cli_main(["export", path, "--optuna", f"sqlite:///{tmp_path / 'optuna.db'}"]) == 0
            import optuna

            exported = optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path / 'optuna.db'}")
            assert [t.state.name for t in exported.trials] == ["RUNNING"]
        assert sha256(path) == before
        with pytest.raises(StudyLockedError, match="running; stop it first"):
            SQLiteStorage(path).unlock()
        writer.stdin.write("\n")
        writer.stdin.flush()
        wait_for(writer, "done")
    finally:
        writer.kill()
        writer.wait()
    with Study(ordinal6_categorical_binary_space(), "rs", storage=path, seed=0, n_initial=2) as study:
        trials = study.trials
        assert [(t.number, t.status, t.config) for t in trials] == [(0, "complete", in_flight)]
        again = study.ask()
        assert again.number == 1 and again.config != in_flight  # the told trial is not handed out twice


def test_two_minimize_processes_on_one_file_one_runs_the_other_gets_one_error_line(tmp_path):
    path = str(tmp_path / "s.db")
    code = f"""
        def slow(c):
            time.sleep(0.3)
            return f(c)
        print("ready", flush=True)
        sys.stdin.readline()  # both import first; then the second starts while the first runs
        try:
            r = gb.minimize(slow, space, method="rs", budget=8, seed=0, storage={path!r}, n_initial=2)
        except StorageError as exc:
            print(type(exc).__name__ + ": " + str(exc), file=sys.stderr)
            sys.exit(3)
        print("finished", r.n_complete, flush=True)
    """
    first, second = child(code, stdin=subprocess.PIPE), child(code, stdin=subprocess.PIPE)
    wait_for(first, "ready")
    wait_for(second, "ready")
    first.stdin.write("\n")
    first.stdin.flush()
    deadline = time.time() + 60
    while n_complete(path) < 1 and time.time() < deadline:
        time.sleep(0.02)
    out2, err2 = second.communicate("\n", timeout=120)
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0 and "finished 8" in out, err
    assert second.returncode == 3, out2 + err2
    assert err2.startswith("StudyLockedError: ") and len(err2.strip().splitlines()) == 1
    assert f"being written by process {first.pid}" in err2
    assert "IntegrityError" not in err2 + err and "Traceback" not in err2
    info = read_study_info(path)
    trials = SQLiteStorage(path).load().trials
    assert (info["n_complete"], info["n_running"]) == (8, 0) and len(trials) == 8
    assert len({json.dumps(t.config, sort_keys=True) for t in trials}) == 8  # nothing evaluated twice


def test_a_lock_left_by_a_killed_process_is_taken_over(tmp_path):
    path = str(tmp_path / "s.db")
    small_study(path, 3)
    dead = run_child(f"""
        study = Study(space, "rs", storage={path!r}, seed=0, n_initial=2)
        trial = study.ask()
        print(os.getpid(), json.dumps(trial.config), flush=True)
        os._exit(0)  # no close: the lock stays
    """)
    assert dead.returncode == 0, dead.stderr
    pid, config = dead.stdout.split(" ", 1)
    in_flight = json.loads(config)
    assert read_study_info(path)["writer"]["pid"] == int(pid)  # the dead process's lock
    with Study(ordinal6_categorical_binary_space(), "rs", storage=path, seed=0, n_initial=2) as study:
        running = study.running_trials
        assert [(t.number, t.config, t.crashes) for t in running] == [(3, in_flight, 1)]
        assert study.ask().config == in_flight  # handed out again: max_retries=1
        assert read_study_info(path)["writer"]["pid"] == os.getpid()
    assert read_study_info(path).get("writer") is None  # released on close


def test_graphbo_unlock_clears_a_lock_that_cannot_be_checked_here(tmp_path, capsys):
    from graphbo.cli import main as cli_main

    path = str(tmp_path / "s.db")
    small_study(path, 2)
    lock = {"pid": 4242, "host": "another-host.example", "process_start": 1, "since": "2026-01-01T00:00:00+00:00",
            "token": "x"}
    raw(path, "INSERT INTO meta (key, value) VALUES ('writer', ?)", (json.dumps(lock),))
    before = sha256(path)
    with pytest.raises(StudyLockedError, match=f"another-host.example.*graphbo unlock {path}"):
        Study(ordinal6_categorical_binary_space(), "rs", storage=path, seed=0, n_initial=2)
    assert sha256(path) == before
    assert cli_main(["unlock", path]) == 0
    out = capsys.readouterr().out
    assert "process 4242 on host another-host.example" in out
    assert cli_main(["unlock", path]) == 0 and "no writer lock" in capsys.readouterr().out
    with Study(ordinal6_categorical_binary_space(), "rs", storage=path, seed=0, n_initial=2) as study:
        assert study.n_finished == 2
    assert cli_main(["unlock", str(tmp_path / "missing.db")]) == 2
    assert "no graphbo study" in capsys.readouterr().err


def test_telling_a_configuration_twice_is_refused_and_adds_nothing(tmp_path):
    path = str(tmp_path / "s.db")
    with Study(ordinal6_categorical_binary_space(), "rs", storage=path, seed=0, n_initial=2) as study:
        trial = study.ask()
        study.tell(trial, 1.0)
        config = {"a": 5, "b": "z", "c": 1}
        study.tell(config, 2.0)  # never asked: a new trial
        for told, number in ((trial.config, 0), (config, 1)):
            with pytest.raises(ValueError, match=f"configuration is trial {number}, already complete"):
                study.tell(told, 3.0)
            with pytest.raises(ValueError, match=f"trial {number}, already complete"):
                study.fail(told, "late")
        with pytest.raises(ValueError, match="trial 0 is already complete"):
            study.tell(0, 4.0)
        assert [(t.number, t.value) for t in study.trials] == [(0, 1.0), (1, 2.0)]
    assert [(t.number, t.value) for t in SQLiteStorage(path).load().trials] == [(0, 1.0), (1, 2.0)]


# -- 2. a trial that kills its process cannot wedge the study ------------------------------------------------
def test_a_trial_that_kills_its_process_is_rerun_once_then_recorded_failed(tmp_path):
    path = str(tmp_path / "s.db")
    first = run_child(f"""
        calls = []
        def dies_on_the_third(c):
            calls.append(c)
            if len(calls) == 3:
                print(json.dumps(c), flush=True)
                os._exit(7)  # as a crash in the objective: no cleanup, the lock stays
            return f(c)
        gb.minimize(dies_on_the_third, space, method="rs", budget=6, seed=0, storage={path!r}, n_initial=2)
    """)
    assert first.returncode == 7, first.stderr
    poison = json.loads(first.stdout)
    assert raw(path, "SELECT number, status, crashes FROM trials WHERE status = 'running'") == [(2, "running", 0)]
    second = run_child(f"""
        import ctypes
        poison = json.loads({json.dumps(poison)!r})
        def segfaults_on_poison(c):
            if c == poison:
                print("segfault", flush=True)
                ctypes.string_at(0)  # SIGSEGV
            return f(c)
        gb.minimize(segfaults_on_poison, space, method="rs", budget=6, seed=0, storage={path!r}, n_initial=2)
    """)
    assert second.returncode == -11 and second.stdout == "segfault\n", second.stderr[-2000:]
    # the second run took the dead first run's lock over and counted the crash, durably, before re-running it
    assert raw(path, "SELECT number, status, crashes FROM trials WHERE status = 'running'") == [(2, "running", 1)]
    result = gb.minimize(f, ordinal6_categorical_binary_space(), method="rs", budget=6, seed=0, storage=path,
                         n_initial=2)
    failed = result.trials[2]
    assert (failed.status, failed.config, failed.crashes) == ("failed", poison, 2)
    assert "process died 2 times while evaluating it" in failed.error and "max_retries=1" in failed.error
    assert (result.n_complete, len(result.trials)) == (5, 6)
    assert poison not in [t.config for t in result.trials if t.status == "complete"]


def test_max_retries_zero_fails_a_crashed_trial_at_once_and_a_clean_close_counts_nothing(tmp_path):
    path = str(tmp_path / "s.db")
    small_study(path, 2)
    with Study(ordinal6_categorical_binary_space(), "rs", storage=path, seed=0, n_initial=2) as study:
        interrupted = study.ask()  # closed with the trial running, as after Ctrl-C: not a crash
    with Study(ordinal6_categorical_binary_space(), "rs", storage=path, seed=0, n_initial=2, max_retries=0) as study:
        assert [(t.number, t.crashes) for t in study.running_trials] == [(interrupted.number, 0)]
    dead = run_child(f"""
        study = Study(space, "rs", storage={path!r}, seed=0, n_initial=2)
        print(study.ask().number, flush=True)
        os._exit(0)
    """)
    assert int(dead.stdout) == interrupted.number
    with Study(ordinal6_categorical_binary_space(), "rs", storage=path, seed=0, n_initial=2, max_retries=0) as study:
        t = study.trials[interrupted.number]
        assert (t.status, t.crashes) == ("failed", 1) and "max_retries=0" in t.error
        assert study.ask().number == interrupted.number + 1
    with pytest.raises(ValueError, match="max_retries"):
        Study(ordinal6_categorical_binary_space(), "rs", seed=0, max_retries=-1)


# -- 3. storage faults: one error line each, the file byte-identical -----------------------------------------
def refused(path, kind, match, space=None):
    """Opening ``path`` raises ``kind`` (a StorageError) with one line naming it; the file does not change."""
    before = sha256(path) if os.path.isfile(path) else None
    with pytest.raises(kind, match=match) as info:
        Study(space or ordinal6_categorical_binary_space(), "rs", storage=str(path), seed=0, n_initial=2)
    message = str(info.value)
    assert str(path) in message and len(message.splitlines()) == 1
    if before is not None:
        assert sha256(path) == before
    return message


@pytest.fixture
def good(tmp_path):
    path = tmp_path / "good.db"
    small_study(path, 6)
    assert not Path(str(path) + "-wal").exists()  # closed: everything is in the file
    return path


def damaged(good, tmp_path, name, sql, args=()):
    path = tmp_path / name
    shutil.copy(good, path)
    raw(str(path), sql, args)
    raw(str(path), "PRAGMA journal_mode = DELETE")
    return path


def test_damaged_files_are_refused_with_what_is_wrong(good, tmp_path):
    data = good.read_bytes()
    truncated = tmp_path / "truncated.db"
    truncated.write_bytes(data[: len(data) * 6 // 10])
    refused(truncated, CorruptStudyError, "truncated SQLite database .* restore it from a copy")
    short = tmp_path / "short.db"
    short.write_bytes(data[:60])
    refused(short, CorruptStudyError, "truncated")
    cases = [
        ("index.db", "UPDATE trials SET row = json_set(row, '$[0]', -1) WHERE number = 1", (),
         "trial 1: stored index -1 of variable 'a' is not in 0..5"),
        ("index_big.db", "UPDATE trials SET row = json_set(row, '$[1]', 3) WHERE number = 2", (),
         "stored index 3 of variable 'b' is not in 0..2"),
        ("mismatch.db", "UPDATE trials SET config = json_set(config, '$.b', 'q') WHERE number = 3", (),
         "stored value 'q' of variable 'b' is not the value"),
        # the year only: a replace() of every '20' also hits the minute or second when the clock shows 20
        ("year.db", "UPDATE trials SET finished = '60' || substr(finished, 3) WHERE number = 0", (),
         "trial 0: finish time '60.*is outside 2000..today"),
        ("time.db", "UPDATE trials SET started = 'yesterday' WHERE number = 4", (), "start time 'yesterday' is not"),
        ("seconds.db", "UPDATE trials SET evaluate_seconds = -3 WHERE number = 5", (), "evaluate_seconds -3.0 is neg"),
        ("value.db", "UPDATE trials SET value = NULL WHERE number = 5", (), "trial 5: complete without a value"),
        ("status.db", "UPDATE trials SET value = 'x' WHERE number = 1", (), "value 'x' is not a number"),
        ("order.db", "UPDATE trials SET tell_order = 0 WHERE number = 1", (), "tell order 0 is used twice"),
        ("number.db", "UPDATE trials SET number = 9 WHERE number = 5", (), "trial numbers are not 0..5"),
        ("seed.db", "UPDATE meta SET value = '\"3\"' WHERE key = 'seed'", (), "seed '3'"),
        ("meta.db", "UPDATE meta SET value = '{\"rng\": ' WHERE key = 'optimizer_state'", (), "meta is not JSON"),
    ]
    for name, sql, args, match in cases:
        refused(damaged(good, tmp_path, name, sql, args), CorruptStudyError, match)
        with pytest.raises(CorruptStudyError):
            read_study_info(tmp_path / name)


def test_foreign_newer_and_folder_paths_are_refused(good, tmp_path):
    text = tmp_path / "notes.db"
    text.write_text("not a study\n")
    refused(text, NotAStudyError, r"not an SQLite database\); give a study file made by graphbo")
    foreign = tmp_path / "foreign.db"
    raw(str(foreign), "CREATE TABLE foo (x)")
    refused(foreign, NotAStudyError, "not a graphbo study")
    newer = damaged(good, tmp_path, "newer.db", "UPDATE meta SET value = '99' WHERE key = 'format'")
    refused(newer, NewerFormatError, "newer graphbo .* upgrade graphbo to open it")
    folder = tmp_path / "folder.db"
    folder.mkdir()
    refused(folder, NotAStudyError, "is a folder, not a graphbo study file")
    assert list(folder.iterdir()) == []


def test_random_bit_flips_are_refused_or_change_no_trial(good, tmp_path):
    """One random bit flipped anywhere past the header, 24 times: the file is refused with a StorageError, or
    what loads is the study as it was (the flip hit free space, an index, or a per-trial state not read)."""
    import numpy as np

    data = good.read_bytes()
    original = [(t.number, t.config, t.status, t.value, t.started, t.finished) for t in
                SQLiteStorage(good).load().trials]
    rng = np.random.default_rng(0)
    outcomes = {"refused": 0, "unchanged": 0}
    for i in range(24):
        flipped = bytearray(data)
        pos = int(rng.integers(100, len(data)))
        flipped[pos] ^= 1 << int(rng.integers(0, 8))
        path = tmp_path / f"flip{i}.db"
        path.write_bytes(bytes(flipped))
        before = sha256(path)
        try:
            with Study(ordinal6_categorical_binary_space(), "rs", storage=str(path), seed=0, n_initial=2) as study:
                loaded = [(t.number, t.config, t.status, t.value, t.started, t.finished) for t in study.trials]
        except StorageError as exc:
            assert len(str(exc).splitlines()) == 1
            assert sha256(path) == before
            outcomes["refused"] += 1
        else:
            assert loaded == original, f"flip at byte {pos} changed a trial silently"
            outcomes["unchanged"] += 1
    print(outcomes)
    assert outcomes["refused"] >= 1


def _no_dac(code: str) -> str:
    """``code`` run by a process that obeys file permissions even as root (CAP_DAC_OVERRIDE and
    CAP_DAC_READ_SEARCH dropped)."""
    return """
import ctypes
class _H(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
class _D(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]
if os.geteuid() == 0:
    _libc = ctypes.CDLL(None, use_errno=True)
    _h, _d = _H(0x20080522, 0), (_D * 2)()
    assert _libc.capget(ctypes.byref(_h), _d) == 0
    for _x in _d:
        _x.effective &= ~6; _x.permitted &= ~6; _x.inheritable &= ~6
    assert _libc.capset(ctypes.byref(_h), _d) == 0, "cannot drop capabilities"
""" + textwrap.dedent(code)


READ_ONLY_PROBE = """
from graphbo.storage.info import read_study_info
try:
    Study(space, "rs", storage=PATH, seed=0, n_initial=2)
except StorageError as exc:
    print(type(exc).__name__ + ": " + str(exc))
print("reader:", read_study_info(PATH)["n_complete"])
"""


@pytest.mark.skipif(sys.platform != "linux", reason="Linux capabilities")
def test_read_only_file_and_folder_give_one_line_and_stay_readable(good, tmp_path):
    ro_file = tmp_path / "ro_file" / "s.db"
    ro_file.parent.mkdir()
    shutil.copy(good, ro_file)
    ro_file.chmod(0o444)
    ro_dir = tmp_path / "ro_dir" / "s.db"
    ro_dir.parent.mkdir()
    shutil.copy(good, ro_dir)
    ro_dir.parent.chmod(0o555)
    try:
        for path, match in ((ro_file, "the file is read-only; make it writable"),
                            (ro_dir, "its folder .* is read-only")):
            before = sha256(path)
            done = run_child(_no_dac(READ_ONLY_PROBE.replace("PATH", repr(str(path)))))
            assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
            error, reader = done.stdout.splitlines()
            assert error.startswith(f"StudyAccessError: {path}: ") and __import__("re").search(match, error)
            assert reader == "reader: 6"
            assert sha256(path) == before
            wal = Path(str(path) + "-wal")  # a reader of a WAL file in a writable folder may leave an empty one
            assert not wal.exists() or wal.stat().st_size == 0
    finally:
        ro_dir.parent.chmod(0o755)


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE and SIGXFSZ")
def test_a_full_disk_stops_the_run_cleanly_and_keeps_every_told_evaluation(tmp_path):
    path = str(tmp_path / "full.db")
    done = run_child(f"""
        import resource, signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG) instead of killing
        told = []
        space = gb.Space({{f"x{{i}}": gb.Ordinal(list(range(10))) for i in range(3)}})
        run = lambda budget: gb.minimize(lambda c: float(sum(c.values())), space, method="rs", budget=budget, seed=1,
                                         storage={path!r}, n_initial=0, callback=lambda n, c, v, o, s: told.append([n, v]))
        run(3)
        limit = os.path.getsize({path!r}) + 256 * 1024  # the file-size limit stands for a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        try:
            run(900)
        except StorageError as exc:
            print(type(exc).__name__ + ": " + str(exc), file=sys.stderr)
        print(json.dumps(told))
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stderr.startswith("StorageFullError: ") and len(done.stderr.strip().splitlines()) == 1
    assert "nothing of this write was stored and every trial told before it is kept" in done.stderr
    told = json.loads(done.stdout)
    assert 10 < len(told) < 900
    assert raw(path, "PRAGMA integrity_check") == [("ok",)]
    conn = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)
    stored = conn.execute("SELECT number, value FROM trials WHERE status = 'complete' ORDER BY number").fetchall()
    conn.close()
    assert [list(r) for r in stored] == told  # every told evaluation kept, nothing else
