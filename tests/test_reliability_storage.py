"""Reliability of study files (issue 20, items 2, 3, 6, 8): one writer at a time, stale locks, trials that crash
their process, storage faults (each one error line, the file byte-identical), damage detected on load.

Real SQLite files and real processes throughout: a second process, a killed one, a file-size limit, a
read-only file (for root, a child process without the capabilities that bypass file permissions).
"""

from __future__ import annotations

import hashlib
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
from graphbo.study import Study, read_study_info

SRC = str(Path(__file__).resolve().parents[1] / "src")
SPACE = "gb.Space({'a': gb.Ordinal(list(range(6))), 'b': gb.Categorical(['x', 'y', 'z']), 'c': gb.Binary()})"


def make_space():
    return gb.Space({"a": gb.Ordinal(list(range(6))), "b": gb.Categorical(["x", "y", "z"]), "c": gb.Binary()})


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
    with Study(make_space(), "rs", storage=str(path), seed=0, n_initial=2) as study:
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
            Study(make_space(), "rs", storage=path, seed=0, n_initial=2)
        assert time.perf_counter() - t0 < 5  # immediate, not after SQLite's busy timeout
        info = read_study_info(path)  # a reader while the writer runs (WAL)
        assert (info["n_running"], info["n_complete"], info["writer"]["pid"]) == (1, 0, writer.pid)
        assert sha256(path) == before
        with pytest.raises(StudyLockedError, match="running; stop it first"):
            SQLiteStorage(path).unlock()
        writer.stdin.write("\n")
        writer.stdin.flush()
        wait_for(writer, "done")
    finally:
        writer.kill()
        writer.wait()
    with Study(make_space(), "rs", storage=path, seed=0, n_initial=2) as study:
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
            r = gb.minimize(slow, space, "rs", budget=8, seed=0, storage={path!r}, n_initial=2)
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
    with Study(make_space(), "rs", storage=path, seed=0, n_initial=2) as study:
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
    raw(path, "INSERT INTO meta VALUES ('writer', ?)", (json.dumps(lock),))
    before = sha256(path)
    with pytest.raises(StudyLockedError, match=f"another-host.example.*graphbo unlock {path}"):
        Study(make_space(), "rs", storage=path, seed=0, n_initial=2)
    assert sha256(path) == before
    assert cli_main(["unlock", path]) == 0
    out = capsys.readouterr().out
    assert "process 4242 on host another-host.example" in out
    assert cli_main(["unlock", path]) == 0 and "no writer lock" in capsys.readouterr().out
    with Study(make_space(), "rs", storage=path, seed=0, n_initial=2) as study:
        assert study.n_finished == 2
    assert cli_main(["unlock", str(tmp_path / "missing.db")]) == 2
    assert "no graphbo study" in capsys.readouterr().err


def test_telling_a_configuration_twice_is_refused_and_adds_nothing(tmp_path):
    path = str(tmp_path / "s.db")
    with Study(make_space(), "rs", storage=path, seed=0, n_initial=2) as study:
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
        gb.minimize(dies_on_the_third, space, "rs", budget=6, seed=0, storage={path!r}, n_initial=2)
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
        gb.minimize(segfaults_on_poison, space, "rs", budget=6, seed=0, storage={path!r}, n_initial=2)
    """)
    assert second.returncode == -11 and second.stdout == "segfault\n", second.stderr[-2000:]
    # the second run took the dead first run's lock over and counted the crash, durably, before re-running it
    assert raw(path, "SELECT number, status, crashes FROM trials WHERE status = 'running'") == [(2, "running", 1)]
    result = gb.minimize(f, make_space(), "rs", budget=6, seed=0, storage=path, n_initial=2)
    failed = result.trials[2]
    assert (failed.status, failed.config, failed.crashes) == ("failed", poison, 2)
    assert "process died 2 times while evaluating it" in failed.error and "max_retries=1" in failed.error
    assert (result.n_complete, len(result.trials)) == (5, 6)
    assert poison not in [t.config for t in result.trials if t.status == "complete"]


def test_max_retries_zero_fails_a_crashed_trial_at_once_and_a_clean_close_counts_nothing(tmp_path):
    path = str(tmp_path / "s.db")
    small_study(path, 2)
    with Study(make_space(), "rs", storage=path, seed=0, n_initial=2) as study:
        interrupted = study.ask()  # closed with the trial running, as after Ctrl-C: not a crash
    with Study(make_space(), "rs", storage=path, seed=0, n_initial=2, max_retries=0) as study:
        assert [(t.number, t.crashes) for t in study.running_trials] == [(interrupted.number, 0)]
    dead = run_child(f"""
        study = Study(space, "rs", storage={path!r}, seed=0, n_initial=2)
        print(study.ask().number, flush=True)
        os._exit(0)
    """)
    assert int(dead.stdout) == interrupted.number
    with Study(make_space(), "rs", storage=path, seed=0, n_initial=2, max_retries=0) as study:
        t = study.trials[interrupted.number]
        assert (t.status, t.crashes) == ("failed", 1) and "max_retries=0" in t.error
        assert study.ask().number == interrupted.number + 1
    with pytest.raises(ValueError, match="max_retries"):
        Study(make_space(), "rs", seed=0, max_retries=-1)
