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
from graphbo.study import Study, read_study_info

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
