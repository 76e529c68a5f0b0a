"""Trials as a pandas table, as Optuna's trials_dataframe: one row per trial, one column per variable."""

import math

import pytest

import graphbo as gb
from graphbo.study import Study

pd = pytest.importorskip("pandas")

SPACE = gb.Space({"a": gb.Ordinal(list(range(10))), "x": gb.Continuous(0.0, 1.0), "c": gb.Categorical(["p", "q"])})


def f(c):
    if c["a"] == 3:
        raise RuntimeError("three")
    return c["a"] * c["x"] + (c["c"] == "q")


def test_the_table_holds_every_trial_with_its_values_state_and_times(tmp_path):
    result = gb.minimize(f, SPACE, method="rs", budget=15, seed=1, storage=str(tmp_path / "s.db"))
    frame = result.trials_dataframe()
    assert list(frame["number"]) == list(range(15))
    assert [c for c in frame.columns if c.startswith("params_")] == ["params_a", "params_x", "params_c"]
    for t, (_, row) in zip(result.trials, frame.iterrows()):
        assert row["state"] == t.status
        assert row["params_a"] == t.config["a"] and row["params_x"] == t.config["x"]
        if t.status == "complete":
            assert row["value"] == t.value and pd.isna(row["error"])
        else:
            assert math.isnan(row["value"]) and "three" in row["error"]
        assert row["duration"] == row["datetime_complete"] - row["datetime_start"]
        assert row["duration"].total_seconds() >= 0
    assert set(frame["state"]) <= {"complete", "failed"}
    # the study reopened gives the same table
    with Study(SPACE, "rs", storage=str(tmp_path / "s.db"), seed=1) as study:
        again = study.trials_dataframe()
    pd.testing.assert_frame_equal(again, frame)


def test_a_running_trial_has_no_value_or_end():
    study = Study(SPACE, "rs", seed=0)
    study.tell(study.ask(), 1.0)
    study.ask()
    frame = study.trials_dataframe()
    assert list(frame["state"]) == ["complete", "running"]
    assert math.isnan(frame["value"][1]) and pd.isna(frame["datetime_complete"][1]) and pd.isna(frame["duration"][1])
