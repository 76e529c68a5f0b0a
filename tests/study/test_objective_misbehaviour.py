"""An objective cannot corrupt its study: it gets a copy of the configuration, a process it forks records
nothing, any exception but Ctrl-C is a failed trial, and masked values are not values."""

from __future__ import annotations

import asyncio
import os
import sqlite3

import numpy as np
import pytest

import graphbo as gb
from graphbo.storage import SQLiteStorage, StorageError
from graphbo.storage.info import read_study_info
from graphbo.study import Study

SPACE = gb.Space({"a": gb.Ordinal(list(range(30))), "b": gb.Categorical(["x", "y", "z"])})


def plain(c):
    return (c["a"] - 7) ** 2 + {"x": 0.0, "y": 1.0, "z": 2.0}[c["b"]]


def test_an_objective_that_changes_its_configuration_changes_nothing_of_the_study(tmp_path):
    def vandal(c):
        value = plain(c)
        c["a"] = -1
        c.pop("b")
        return value

    result = gb.minimize(vandal, SPACE, method="rs", budget=8, seed=0, storage=str(tmp_path / "s.db"))
    assert result.best_value == min(plain(t.config) for t in result.trials)
    assert all(set(t.config) == {"a", "b"} and 0 <= t.config["a"] < 30 for t in result.trials)
    assert read_study_info(tmp_path / "s.db")["n_complete"] == 8


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_of_the_objective_records_nothing(tmp_path):
    def forks(c):
        pid = os.fork()
        if pid == 0:
            return 123456.0  # the child returns into graphbo: it must exit without writing
        os.waitpid(pid, 0)
        return plain(c)

    path = tmp_path / "s.db"
    result = gb.minimize(forks, SPACE, method="rs", budget=5, seed=0, storage=str(path))
    conn = sqlite3.connect(path)
    rows = conn.execute("SELECT status, value FROM trials").fetchall()
    conn.close()
    assert [s for s, _ in rows] == ["complete"] * 5
    assert sorted(v for _, v in rows) == sorted(plain(t.config) for t in result.trials)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_cannot_write_or_unlock_its_parents_study(tmp_path):
    path = str(tmp_path / "s.db")
    study = Study(SPACE, "rs", storage=path, seed=0)
    trial = study.ask()
    pid = os.fork()
    if pid == 0:  # the child tries to tell and close; both must leave the file alone
        code = 0
        try:
            study.tell(trial, 1.0)
            code = 3
        except StorageError:
            pass
        except BaseException:
            code = 4
        study.close()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    study.tell(trial, 2.0)
    assert SQLiteStorage(path).writer()["pid"] == os.getpid()  # the child's close removed no lock
    study.close()
    assert read_study_info(path)["best_value"] == 2.0


@pytest.mark.parametrize("exc", [SystemExit(0), asyncio.CancelledError(), GeneratorExit(), BaseException("x")])
def test_any_exception_but_ctrl_c_is_a_failed_trial(tmp_path, exc):
    calls = []

    def raises_once(c):
        calls.append(c)
        if len(calls) == 2:
            raise exc
        return plain(c)

    result = gb.minimize(raises_once, SPACE, method="rs", budget=5, seed=0, storage=str(tmp_path / "s.db"))
    info = read_study_info(tmp_path / "s.db")
    assert (info["n_complete"], info["n_failed"], info["n_running"]) == (4, 1, 0)
    assert [t.status for t in result.trials].count("failed") == 1


def test_masked_values_are_not_values(tmp_path):
    study = Study(SPACE, "rs", storage=str(tmp_path / "s.db"), seed=0)
    for value in (np.ma.masked, np.ma.array(5.0, mask=True)):
        with pytest.raises(ValueError, match="masked value"):
            study.tell(study.ask(), value)
    study.close()
    info = read_study_info(tmp_path / "s.db")
    assert info["n_complete"] == 0 and info["best_value"] is None


def test_an_objective_returning_a_masked_value_fails_its_trial(tmp_path):
    def masked_sometimes(c):
        return np.ma.masked if c["b"] == "x" else plain(c)

    result = gb.minimize(masked_sometimes, SPACE, method="rs", budget=12, seed=0, storage=str(tmp_path / "s.db"))
    failed = [t for t in result.trials if t.status == "failed"]
    assert failed and all(t.config["b"] == "x" and "masked" in t.error for t in failed)
    assert result.best_value == min(plain(t.config) for t in result.trials if t.config["b"] != "x")


def test_an_objective_that_silences_the_alarm_is_still_timed_out(tmp_path):
    import signal
    import time

    def deaf(c):
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        time.sleep(0.6)
        return plain(c)

    result = gb.minimize(deaf, SPACE, method="rs", budget=2, seed=0, timeout=0.2, stop_after_failures=None)
    assert [t.status for t in result.trials] == ["failed", "failed"]
    assert all(t.error.startswith("timed out after 0.2 s") for t in result.trials)


_CLOSES_DESCRIPTORS = """
import os, sys
import graphbo as gb

keep = []
space = gb.Space({"x": gb.Ordinal(list(range(10)))})


def objective(config):
    if config["x"] % 3 == 0:
        os.closerange(3, 1024)  # every descriptor of the process, the study's included
        handle = open("user.txt", "a")  # takes a freed number
        handle.write("user data\\n")
        if sys.argv[1] == "keeps":
            keep.append(handle)  # still open on that number when the objective returns
        else:
            handle.close()
    return float(config["x"])


if sys.argv[1] == "link":  # the study reached through a symbolic link: SQLite names its -wal after the target
    os.makedirs("real", exist_ok=True)
    open("real/s.db", "w").close()
    os.symlink("real/s.db", "s.db")
try:
    study = gb.Study(space, "rs", storage="s.db", seed=0)
    study.optimize(objective, 8)
    # every descriptor the store noted is open again, on its own file
    store = study._storage
    print("descriptors", len(store._descriptors), all(
        (os.fstat(fd).st_dev, os.fstat(fd).st_ino) == ident for fd, ident in store._descriptors.items()))
    study.close()
except gb.StorageError as exc:
    print("StorageError:", exc)
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="descriptors are named in /proc/self/fd on Linux")
@pytest.mark.parametrize("handle", ["closes", "keeps", "link"])
def test_an_objective_that_closes_every_descriptor_loses_no_value(tmp_path, handle):
    import subprocess
    import sys
    from pathlib import Path

    src = str(Path(__file__).resolve().parents[2] / "src")
    (tmp_path / "run.py").write_text(_CLOSES_DESCRIPTORS)
    out = subprocess.run([sys.executable, "run.py", handle], cwd=tmp_path, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": src}, timeout=120)
    assert out.returncode == 0, out.stderr
    with sqlite3.connect(tmp_path / "s.db") as con:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        done = con.execute("SELECT COUNT(*) FROM trials WHERE status = 'complete'").fetchone()[0]
    assert set((tmp_path / "user.txt").read_text().splitlines()) == {"user data"}  # nothing of graphbo's in it
    if handle in ("closes", "link"):  # the descriptors are put back: every value stored
        assert done == 8 and "reopened them" in out.stderr
        assert "descriptors 3 True" in out.stdout, out.stdout  # the file, its -wal and its -shm
    else:  # a number now the user's own file: graphbo stops writing, one line, what was told before is stored
        assert "StorageError:" in out.stdout and "stops writing" in out.stdout
        info = read_study_info(tmp_path / "s.db")
        assert info["n_complete"] == done and info["n_running"] == 1  # that trial is evaluated again on resume
