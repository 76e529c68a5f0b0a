"""Sealed blocks of a study file: each block of ``BLOCK_SIZE`` finished trials is checked once, when it is sealed,
and a load that reads the block back byte for byte (its digest) skips the row-by-row checks; a block that reads
otherwise is checked row by row, so damage inside a sealed block is still found and named."""

from __future__ import annotations

import shutil
import sqlite3

import pytest

import graphbo as gb
from graphbo.storage import CorruptStudyError
from graphbo.storage.checks import BLOCK_SIZE
from graphbo.storage.sqlite import BLOCKS_KEY, SQLiteStorage, _tables
from graphbo.storage.info import read_study_info
from graphbo.study import Study


def _six_ordinals_space():
    return gb.Space({f"x{i}": gb.Ordinal(list(range(10))) for i in range(6)})


def _fill(path, n, running_first=False):
    space = _six_ordinals_space()
    with Study(space, "rs", storage=path, seed=0, n_initial=0) as study:
        first = study.ask() if running_first else None
        told = 0
        for config in gb.RandomSearch(space, seed=1).ask(n + 50):
            if told == n:
                break
            if first is not None and config == first.config:
                continue
            study.tell(config, float(sum(config.values())))
            told += 1
        return study, first


def _digests(path):
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (BLOCKS_KEY,)).fetchone()
    import json
    return json.loads(row[0]) if row else []


def _read(path, blocks):
    conn = sqlite3.connect(path)
    try:
        return SQLiteStorage(path)._read_checked_trials(conn, _tables(conn), blocks)
    finally:
        conn.close()


def test_whole_finished_blocks_are_sealed_and_read_back_as_checked_row_by_row(tmp_path):
    path = tmp_path / "s.db"
    _fill(path, 2 * BLOCK_SIZE + 37)
    digests = _digests(path)
    assert len(digests) == 2  # the third block is not whole
    fast, bad, verified = _read(str(path), digests)
    slow, bad_slow, none = _read(str(path), None)
    assert verified == {0, 1} and none == frozenset() and bad is None and bad_slow is None
    assert fast == slow  # the same trials, attributes and all
    info = read_study_info(path)
    assert info["n_complete"] == 2 * BLOCK_SIZE + 37


def test_a_block_with_a_running_trial_is_sealed_once_it_finishes(tmp_path):
    path = tmp_path / "s.db"
    study, first = _fill(path, BLOCK_SIZE + 5, running_first=True)
    assert _digests(path) == []  # trial 0 still running: block 0 stays open
    with Study(_six_ordinals_space(), "rs", storage=path, n_initial=0) as again:
        trial = again.ask()  # the trial left running is handed out again first
        assert trial.number == 0
        again.tell(trial, 1.0)
    assert len(_digests(path)) == 1


def test_damage_inside_a_sealed_block_is_still_found_and_named(tmp_path):
    path = tmp_path / "s.db"
    _fill(path, BLOCK_SIZE + 3)
    assert len(_digests(path)) == 1
    damaged = tmp_path / "damaged.db"
    shutil.copy(path, damaged)
    with sqlite3.connect(damaged) as conn:  # a value changed under its checksum, as a flipped bit would
        (trigger,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'trials_checksum_stale'").fetchone()
        conn.execute("DROP TRIGGER trials_checksum_stale")
        conn.execute("UPDATE trials SET value = value + 1 WHERE number = 417")
        conn.execute(trigger)
    with pytest.raises(CorruptStudyError, match="trial 417"):
        read_study_info(damaged)
    _, bad, verified = _read(str(damaged), _digests(damaged))
    assert verified == frozenset() and bad == "trial 417"


def test_a_sealed_row_that_a_load_would_refuse_is_never_sealed(tmp_path):
    path = tmp_path / "s.db"
    _fill(path, BLOCK_SIZE - 1)
    with sqlite3.connect(path) as conn:  # a checksum-less row (as an earlier graphbo wrote): not sealed over
        (trigger,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'trials_checksum_stale'").fetchone()
        conn.execute("DROP TRIGGER trials_checksum_stale")
        conn.execute("UPDATE trials SET checksum = NULL WHERE number = 3")
        conn.execute(trigger)
    with Study(_six_ordinals_space(), "rs", storage=path, n_initial=0) as again:
        config = again.ask().config
        again.tell(config, 1.0)
    assert _digests(path) == []  # the block is whole and finished, but one row has no checksum


def test_a_study_reopened_from_sealed_blocks_is_the_one_replayed_trial_by_trial(tmp_path):
    path = tmp_path / "s.db"
    _fill(path, BLOCK_SIZE + 20)
    unsealed = tmp_path / "unsealed.db"
    shutil.copy(path, unsealed)
    with sqlite3.connect(unsealed) as conn:  # without the digests every trial is read and replayed one by one
        conn.execute("DELETE FROM meta WHERE key = ?", (BLOCKS_KEY,))
    runs = []
    for p in (path, unsealed):
        store = SQLiteStorage(p)
        with Study(_six_ordinals_space(), "rs", storage=store, n_initial=0) as study:
            trials = [(t.number, t.config, t.row.tolist(), t.status, t.value) for t in study.trials]
            asked = []
            for _ in range(5):
                trial = study.ask()
                study.tell(trial, float(sum(trial.config.values())))
                asked.append(trial.config)
            runs.append((store.checked_trials, trials, asked, study.best.value))
    (checked, *sealed), (none, *plain) = runs
    assert checked == BLOCK_SIZE and none == 0
    assert sealed == plain
