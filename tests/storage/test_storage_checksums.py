"""Per-row checksums of the SQLite study store: a value changed on disk, even to one that
looks right, is refused with one line naming its row, and the file stays byte-identical; files without
checksums (an earlier graphbo's) still open, and every write path keeps the checksums current."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import struct
from pathlib import Path

import pytest

import graphbo as gb
from graphbo.storage import FORMAT_VERSION, CorruptStudyError, SQLiteStorage
from graphbo.storage.base import Trial, now
from graphbo.storage.info import read_study_info
from graphbo.study import Study
from support import ordinal6_categorical_binary_space


def f(c):
    return (c["a"] - 3) ** 2 + {"x": 0.0, "y": 1.5, "z": 0.5}[c["b"]] + 0.7 * c["c"] + 0.01


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def raw(path, script: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.executescript(script)
        conn.execute("PRAGMA journal_mode = DELETE")
    finally:
        conn.close()


def rows(path, sql):
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def open_study(path) -> Study:
    return Study(ordinal6_categorical_binary_space(), "rs", storage=str(path), seed=0, n_initial=2)


def refused(path, match: str) -> str:
    """Opening ``path`` (for writing, and for reading) raises one CorruptStudyError line matching ``match``;
    the file does not change."""
    before = sha256(path)
    with pytest.raises(CorruptStudyError, match=match) as info:
        open_study(path)
    with pytest.raises(CorruptStudyError, match=match):
        read_study_info(path)
    message = str(info.value)
    assert str(path) in message and len(message.splitlines()) == 1
    assert sha256(path) == before
    return message


@pytest.fixture
def good(tmp_path):
    path = tmp_path / "good.db"
    with open_study(path) as study:
        for _ in range(6):
            trial = study.ask()
            study.tell(trial, f(trial.config))
        study.set_user_attr("note", "kept")
    return path


# a trial's row changed behind the trigger (as a bit flip on disk would, without SQL): plausible values all
_UNSEEN = "DROP TRIGGER trials_checksum_stale; "
CASES = [
    ("value.db", _UNSEEN + "UPDATE trials SET value = value + 1e-9 WHERE number = 2", "trial 2"),
    ("timestamp.db", _UNSEEN + "UPDATE trials SET started = substr(started, 1, 25) || CASE substr(started, 26, 1) "
     "WHEN '1' THEN '2' ELSE '1' END || substr(started, 27) WHERE number = 3", "trial 3"),
    ("index.db", _UNSEEN + "UPDATE trials SET row = json_set(row, '$[1]', (json_extract(row, '$[1]') + 1) % 3), "
     "config = json_set(config, '$.b', CASE json_extract(config, '$.b') WHEN 'x' THEN 'y' WHEN 'y' THEN 'z' "
     "ELSE 'x' END) WHERE number = 4", "trial 4"),
    ("crashes.db", _UNSEEN + "UPDATE trials SET crashes = 1 WHERE number = 0", "trial 0"),
    ("meta.db", "UPDATE meta SET value = '{\"n_initial\": 3}' WHERE key = 'method_options'",
     "meta key 'method_options'"),
    ("user_attrs.db", "UPDATE meta SET value = '{\"note\": \"kepT\"}' WHERE key = 'user_attrs'",
     "meta key 'user_attrs'"),
    ("checksum.db", _UNSEEN + "UPDATE trials SET checksum = '0000000000000000' WHERE number = 5", "trial 5"),
]


@pytest.mark.parametrize("name, script, row", CASES, ids=[c[0] for c in CASES])
def test_a_plausible_change_to_a_stored_row_is_refused_naming_the_row(good, tmp_path, name, script, row):
    path = tmp_path / name
    shutil.copy(good, path)
    raw(str(path), script)
    message = refused(path, f"\\({row}: stored values do not match the row's checksum")
    assert "restore it from a copy" in message


def test_one_bit_flipped_in_a_stored_float_on_disk_is_refused_naming_its_trial(good, tmp_path):
    """The lowest bit of a complete trial's value, flipped in the file's bytes: the value is off by one ulp, which
    no plausibility check can see."""
    data = good.read_bytes()
    trials = SQLiteStorage(good).load().trials
    target = next(t for t in trials if data.count(struct.pack(">d", t.value)) == 1)
    pos = data.index(struct.pack(">d", target.value)) + 7
    flipped = bytearray(data)
    flipped[pos] ^= 1
    path = tmp_path / "flip.db"
    path.write_bytes(bytes(flipped))
    refused(path, f"trial {target.number}: stored values do not match")


def test_a_study_round_trips_with_every_row_checksummed(good):
    with open_study(good) as study:
        first = [(t.number, t.config, t.value, t.started, t.finished) for t in study.trials]
        assert len(first) == 6
        for _ in range(3):
            trial = study.ask()
            study.tell(trial, f(trial.config))
        study.fail(study.ask(), "boom")
        study.ask()  # left running
    with open_study(good) as study:
        again = [(t.number, t.config, t.value, t.started, t.finished) for t in study.trials]
        assert again[:6] == first and len(again) == 11
        assert [t.status for t in study.trials][-2:] == ["failed", "running"]
        study.tell(study.trials[-1], 1.25)  # the running trial handed out again, then told
    assert rows(good, "SELECT COUNT(*), COUNT(checksum) FROM trials") == [(11, 11)]
    assert rows(good, "SELECT COUNT(*) - COUNT(checksum) FROM meta") == [(0,)]
    assert SQLiteStorage(good).load().trials[-1].value == 1.25


def test_attributes_restarts_and_crash_counts_keep_their_checksums(tmp_path):
    """Every write path: trial attributes, a trial handed out again, a crash counted when a lock is cleared."""
    path = tmp_path / "paths.db"
    store = SQLiteStorage(path)
    store.create({"method": "rs", "seed": 0, "method_options": {}, "space": None})
    store.add_trials([Trial(number=0, config={"a": 1}, started=now(), row=[1], attrs={"fidelity": 0}),
                      Trial(number=1, config={"a": 2}, started=now(), row=[2])])
    store.finish_trial(Trial(number=0, config={"a": 1}, status="complete", value=0.5, finished=now(), tell_order=0,
                             attrs={"fidelity": 1}))
    store.restart_trial(1, now())
    SQLiteStorage(path).unlock(force=True)  # the open writer's running trial 1 counts one crash
    store.close()
    stored = SQLiteStorage(path).load()
    assert (stored.trials[0].attrs, stored.trials[1].crashes) == ({"fidelity": 1}, 1)
    assert rows(path, "SELECT COUNT(*) - COUNT(checksum) FROM trials") == [(0,)]
    assert rows(path, "SELECT COUNT(checksum) FROM trial_attrs") == [(1,)]
    raw(str(path), "DROP TRIGGER trial_attrs_checksum_stale; UPDATE trial_attrs SET value = '2' WHERE number = 0")
    before = sha256(path)
    with pytest.raises(CorruptStudyError, match="trial 0, attribute 'fidelity': stored values do not match"):
        SQLiteStorage(path).load()
    assert sha256(path) == before


def test_a_file_without_checksums_opens_and_is_converted_once_on_its_first_write(good, tmp_path):
    """An earlier graphbo's file (no checksum columns, no trigger) opens; its rows are not verified until
    the first write converts it: every row sealed as it then reads, the current format stamped, the earlier
    one kept; from then on a changed row is refused."""
    path = tmp_path / "old.db"
    shutil.copy(good, path)
    raw(str(path), "DROP TRIGGER trials_checksum_stale; ALTER TABLE trials DROP COLUMN checksum; "
                   "ALTER TABLE meta DROP COLUMN checksum; UPDATE trials SET value = value + 1e-9 WHERE number = 2; "
                   "UPDATE meta SET value = '2' WHERE key = 'format'")
    assert SQLiteStorage(path).load().trials[2].value == pytest.approx(f(SQLiteStorage(good).load().trials[2].config)
                                                                       + 1e-9)  # unverified: the documented limit
    with open_study(path) as study:
        trial = study.ask()
        study.tell(trial, f(trial.config))
    assert rows(path, "SELECT count(*) FROM trials WHERE checksum IS NULL") == [(0,)]
    assert rows(path, "SELECT count(*) FROM meta WHERE checksum IS NULL") == [(0,)]
    meta = SQLiteStorage(path).load().meta
    assert meta["format"] == FORMAT_VERSION and meta["graphbo_version"] == gb.__version__
    assert meta["converted_from"] == {"format": 2, "graphbo_version": SQLiteStorage(good).load().meta["graphbo_version"]}
    assert len(SQLiteStorage(path).load().trials) == 7
    nulls = tmp_path / "nulls.db"
    shutil.copy(good, nulls)
    raw(str(nulls), "UPDATE trials SET checksum = NULL; UPDATE meta SET checksum = NULL")
    assert len(SQLiteStorage(nulls).load().trials) == 6
    for number in (2, 6):  # a row sealed by the conversion and one written after it
        changed = tmp_path / f"changed{number}.db"
        shutil.copy(path, changed)
        raw(str(changed), _UNSEEN + f"UPDATE trials SET value = value + 1e-9 WHERE number = {number}")
        refused(changed, f"trial {number}: stored values do not match")


def test_a_trial_finished_by_an_earlier_graphbo_is_unverified_not_refused(good, tmp_path):
    """An earlier graphbo writes a trial's columns without its checksum: the trigger clears the stale one, so
    the study still opens (and this graphbo checksums the row again when it next writes it)."""
    with open_study(good) as study:
        study.ask()
    raw(str(good), "UPDATE trials SET status = 'complete', value = 2.5, finished = started, tell_order = 99 "
                   "WHERE number = 6")
    assert rows(good, "SELECT checksum FROM trials WHERE number = 6") == [(None,)]
    assert SQLiteStorage(good).load().trials[6].value == 2.5
