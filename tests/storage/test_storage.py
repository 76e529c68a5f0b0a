"""The storage interface: the SQLite and in-memory stores behave alike; graphbo 0.1 study files still open."""

import json
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest

import graphbo as gb
from graphbo.optimizers import RandomSearch
from graphbo.storage import (InMemoryStorage, SQLiteStorage, Storage, StorageError, StudyLockedError, Trial,
                             TrialNotRunningError, as_storage)
from graphbo.storage.base import FORMAT_VERSION
from graphbo.storage.info import read_study_info
from graphbo.study import Study, describe_space


def make_store(kind, tmp_path):
    return SQLiteStorage(tmp_path / "sub" / "s.db") if kind == "sqlite" else InMemoryStorage()


META = {"method": "rs", "seed": 3, "method_options": {"n_initial": 2}, "space": [{"name": "a"}, {"name": "b"}],
        "user_attrs": {"benchmark": "branin"}}


T0, T1, T2, T3, T4, T9 = (f"2026-01-01T00:00:0{k}.000000+00:00" for k in (0, 1, 2, 3, 4, 9))  # times of trials


def running(number, config):
    return Trial(number=number, config=config, status="running", started=T0, suggest_seconds=0.5,
                 row=np.array([number, 1]))


@pytest.fixture(params=["sqlite", "memory"])
def store(request, tmp_path):
    s = make_store(request.param, tmp_path)
    yield s
    s.close()


def test_both_stores_keep_a_study_record_and_its_trials(store):
    assert isinstance(store, Storage) and store.load() is None and not store.is_open
    store.create(META)
    assert store.is_open
    meta, trials = store.load()
    assert trials == [] and meta["application"] == "graphbo" and meta["format"] == FORMAT_VERSION
    assert {k: meta[k] for k in META} == META and meta["graphbo_version"] == gb.__version__ and meta["created"]
    with pytest.raises(StorageError, match="exists|holds|cannot create"):
        store.create(META)

    store.add_trials([running(0, {"a": (1, 2)}), running(1, {"a": np.int64(5)})], state={"rng": [1, 2]})
    assert [(t.number, t.status, t.config) for t in store.trials()] == [(0, "running", {"a": [1, 2]}),
                                                                         (1, "running", {"a": 5})]
    assert store.load().meta["optimizer_state"] == {"rng": [1, 2]}
    with pytest.raises(StorageError, match="trial 1 exists already"):
        store.add_trials([running(2, {"a": 0}), running(1, {"a": 0})])
    assert len(store.trials()) == 2  # nothing of the refused write

    done = Trial(number=1, config={"a": 5}, status="complete", value=2.5, finished=T1, evaluate_seconds=0.25,
                 tell_order=0,
                 attrs={"fidelity": 3})
    store.finish_trial(done, state={"rng": [3]})
    with pytest.raises(TrialNotRunningError, match="trial 1 cannot be finished: it is complete already"):
        store.finish_trial(Trial(number=1, config={"a": 5}, status="failed", error="late", finished=T2, tell_order=1),
                           state={"x": 1})
    with pytest.raises(TrialNotRunningError, match="no such trial"):
        store.finish_trial(Trial(number=7, config={"a": 5}, status="complete", value=1.0, tell_order=1))
    store.restart_trial(0, T3)
    store.restart_trial(1, T9)  # finished: its start time stays
    store.save_state({"rng": [4]})
    store.set_user_attr("budget", 10)
    assert store.user_attrs() == {"benchmark": "branin", "budget": 10}
    store.close()
    assert not store.is_open
    with pytest.raises(ValueError, match="closed"):
        store.save_state({})

    meta, trials = store.load()  # what survives closing
    assert meta["optimizer_state"] == {"rng": [4]} and meta["user_attrs"] == {"benchmark": "branin", "budget": 10}
    t0, t1 = trials
    assert (t0.status, t0.started, t0.row, t0.attrs) == ("running", T3, [0, 1], {})
    assert (t1.status, t1.value, t1.error, t1.started, t1.finished, t1.suggest_seconds, t1.evaluate_seconds,
            t1.tell_order, t1.attrs) == ("complete", 2.5, None, T0, T1, 0.5, 0.25, 0, {"fidelity": 3})
    store.open()
    store.finish_trial(Trial(number=0, config={"a": [1, 2]}, status="failed", error="boom", penalty=9.0, finished=T4,
                             evaluate_seconds=1.0, tell_order=1), state={"rng": [5]})
    assert [(t.status, t.error, t.penalty) for t in store.trials()] == [("failed", "boom", 9.0),
                                                                        ("complete", None, None)]


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_a_study_resumes_from_either_store(kind, tmp_path):
    space = gb.Space({"a": gb.Ordinal(list(range(8))), "b": gb.Categorical(["x", "y"])})
    f = lambda c: (c["a"] - 5) ** 2 + (c["b"] == "y")
    store = make_store(kind, tmp_path)
    with Study(space, "rs", storage=store, seed=1, n_initial=3) as study:
        for _ in range(4):
            trial = study.ask()
            study.tell(trial, f(trial.config))
        pending = study.ask()
        assert study.path == store.path
    with Study(space, "rs", storage=store, n_initial=3) as again:  # the stored seed
        assert [t.status for t in again.trials] == ["complete"] * 4 + ["running"]
        assert again.ask().config == pending.config
        with pytest.raises(StorageError, match="seed 1, not 2"):
            Study(space, "rs", storage=store, seed=2, n_initial=3)
    reference = gb.minimize(f, space, method="rs", budget=5, seed=1, n_initial=3)
    assert [t.config for t in again.trials] == [t.config for t in reference.trials]


def test_a_second_study_on_an_open_file_is_refused_and_changes_nothing(tmp_path):
    space = gb.Space({"a": gb.Ordinal(list(range(8)))})
    path = str(tmp_path / "s.db")
    first = Study(space, "rs", storage=path, seed=0, n_initial=2)
    trial = first.ask()
    before = [(t.number, t.status) for t in SQLiteStorage(path).load().trials]
    with pytest.raises(StudyLockedError, match="another Study of this process"):
        Study(space, "rs", storage=path, seed=0, n_initial=2)
    assert [(t.number, t.status) for t in SQLiteStorage(path).load().trials] == before == [(0, "running")]
    first.tell(trial, 1.0)
    first.close()
    info = read_study_info(path)
    assert (info["n_complete"], info["best_value"], info.get("writer")) == (1, 1.0, None)
    with Study(space, "rs", storage=path, seed=0, n_initial=2) as again:  # closed: free to open
        assert again.n_finished == 1


def test_as_storage():
    assert isinstance(as_storage(None), InMemoryStorage)
    assert isinstance(as_storage("x.db"), SQLiteStorage) and as_storage(Path("x.db")).path == "x.db"
    store = InMemoryStorage()
    assert as_storage(store) is store
    with pytest.raises(TypeError, match="storage must be"):
        as_storage(3)
    assert gb.StorageError is StorageError and issubclass(TrialNotRunningError, StorageError)


def test_run_stores_keep_one_state_and_leave_nothing_beside_a_closed_file(tmp_path):
    path = tmp_path / "r.db"
    store = SQLiteStorage(path, trial_states=False, keep_wal=False)
    store.create(META)
    store.add_trials([running(0, {"a": 1})], state={"s": 1})
    store.finish_trial(Trial(number=0, config={"a": 1}, status="complete", value=1.0, tell_order=0), state={"s": 2})
    store.close()
    conn = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert conn.execute("SELECT state FROM trials").fetchall() == [(None,)]
    conn.close()
    assert sorted(os.listdir(tmp_path)) == ["r.db"]  # a read-only reader left no -wal / -shm
    assert store.load().meta["optimizer_state"] == {"s": 2}


def test_an_empty_database_left_by_a_kill_while_creating_is_a_new_study(tmp_path):
    path = tmp_path / "e.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")  # what creating does first
    conn.close()
    assert path.stat().st_size > 0 and SQLiteStorage(path).load() is None
    Study(gb.Space({"a": gb.Binary()}), "rs", storage=str(path), seed=0).close()
    assert read_study_info(path)["method"] == "rs"


def test_a_study_file_of_graphbo_0_1_opens_and_resumes(tmp_path):
    """A file written with graphbo 0.1's schema (built here with sqlite3 alone): 3 trials told, one asked and
    left running, the optimizer state after that ask. It opens, hands the running trial out first and
    continues exactly as an uninterrupted run; it gets no new table unless a trial attribute is written."""
    space = gb.Space({"a": gb.Ordinal(list(range(10))), "b": gb.Categorical(["x", "y", "z"])})
    f = lambda c: abs(c["a"] - 4) + {"x": 0, "y": 1, "z": 2}[c["b"]]
    opt = RandomSearch(space, seed=7, n_initial=2)
    rows = []
    for i in range(4):
        config = opt.ask()
        status, value = ("complete", f(config)) if i < 3 else ("running", None)
        if i < 3:
            opt.tell(config, value)
        rows.append((i, json.dumps(config), json.dumps(space.to_index(config).tolist()), status, value, None, None,
                     "2026-01-01T00:00:00+00:00", None if i == 3 else "2026-01-01T00:00:01+00:00", 0.01,
                     None if i == 3 else 0.02, None if i == 3 else i, None))
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE trials (number INTEGER PRIMARY KEY, config TEXT NOT NULL, row TEXT NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('running', 'complete', 'failed')), value REAL, penalty REAL,
            error TEXT, started TEXT, finished TEXT, suggest_seconds REAL, evaluate_seconds REAL,
            tell_order INTEGER, state TEXT);
        PRAGMA application_id = 1734504241;  -- "gbo1"
    """)
    meta = {"application": "graphbo", "format": 1, "graphbo_version": "0.1.0", "method": "rs", "seed": 7,
            "method_options": {"n_initial": 2}, "space": describe_space(space), "created": "2026-01-01",
            "user_attrs": {"note": "0.1"}, "optimizer_state": opt.get_state()}
    conn.executemany("INSERT INTO meta VALUES (?, ?)", [(k, json.dumps(v)) for k, v in meta.items()])
    conn.executemany("INSERT INTO trials VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    conn.close()

    info = read_study_info(path)
    assert (info["n_complete"], info["n_running"], info["user_attrs"]) == (3, 1, {"note": "0.1"})
    result = gb.minimize(f, space, method="rs", budget=8, seed=7, storage=str(path), n_initial=2)
    reference = gb.minimize(f, space, method="rs", budget=8, seed=7, n_initial=2)
    assert [t.config for t in result.trials] == [t.config for t in reference.trials]
    assert result.trials[3].config == json.loads(rows[3][1]) and result.trials[3].status == "complete"
    conn = sqlite3.connect(path)
    assert {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} == {"meta", "trials"}
    conn.close()
