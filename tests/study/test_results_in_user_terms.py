"""Results in the user's terms: best_params / best_value, direction="maximize" (stored, checked on
resume), short reprs, one trial numbering, configurations printed in the variables' own values."""

import itertools
import json
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

import graphbo as gb
from graphbo.loop import REPR_PARAMS, minimize
from graphbo.storage import CorruptStudyError
from graphbo.storage.base import FORMAT_VERSION
from graphbo.storage.info import load_study_file, read_study_info
from graphbo.study import StorageError, Study

VALUES_B = ["x", "y", "z"]
VALUES_D = [0.1, 0.2, 0.5, 1.0]


def ordinal6_categorical_ordinal_space():
    """36 configurations: small enough for random search to see them all."""
    return gb.Space({"a": gb.Ordinal(list(range(6))), "b": gb.Categorical(VALUES_B), "d": gb.Ordinal(VALUES_D)})


def bump(c):
    """Highest at a=2, b='z', d=0.5 (value 4.0); lowest at a=5, b='x', d=0.1."""
    return 4.0 - (c["a"] - 2) ** 2 + {"x": -1.0, "y": -0.5, "z": 0.0}[c["b"]] - abs(c["d"] - 0.5)


def all_values(space, f):
    names = space.names
    grids = [space.variables[j].values for j in range(len(names))]
    return [f(dict(zip(names, combo))) for combo in itertools.product(*grids)]


# -- direction="maximize" --------------------------------------------------------------------------------------
def test_maximize_finds_the_maximum_and_reports_it_in_the_users_sign():
    space = ordinal6_categorical_ordinal_space()
    values = all_values(space, bump)
    result = minimize(bump, space, method="rs", budget=len(values), seed=0, direction="maximize")
    assert result.direction == "maximize"
    assert result.best_value == max(values) == 4.0  # minimising instead would give min(values)
    assert result.best_value == max(t.value for t in result.trials)
    assert result.best_params == {"a": 2, "b": "z", "d": 0.5}
    assert sorted(o.value for o in result.history) == sorted(values)  # not negated
    # the optimizer (a minimiser) was told the negatives
    assert sorted(np.asarray(result.optimizer.y).tolist()) == sorted(-v for v in values)
    # the default still minimises
    low = minimize(bump, space, method="rs", budget=len(values), seed=0)
    assert low.direction == "minimize" and low.best_value == min(values) < 0


def test_maximize_callback_gets_the_objectives_own_value():
    space = ordinal6_categorical_ordinal_space()
    seen = []
    result = minimize(bump, space, method="rs", budget=10, seed=1, direction="maximize",
                      callback=lambda number, config, value, opt, s: seen.append((number, value, bump(config))))
    assert [v for _, v, _ in seen] == [f for _, _, f in seen]  # the callback's value is what the objective returned
    assert [n for n, _, _ in seen] == [t.number for t in result.trials] == list(range(10))


def test_failure_value_is_in_the_users_sign():
    space = ordinal6_categorical_ordinal_space()
    with Study(space, "rs", seed=0, direction="maximize") as study:
        t = study.ask()
        study.fail(t, "boom", value=-7.0)
        u = study.ask()
        study.tell(u, 3.0)
        assert study.failed_trials[0].penalty == -7.0  # stored as given
        assert sorted(np.asarray(study.optimizer.y).tolist()) == [-3.0, 7.0]  # the model is told the negatives
        assert study.best_value == 3.0


@pytest.mark.parametrize("bad", ["max", "Maximize", "", 1, True])
def test_direction_is_validated_naming_the_argument(tmp_path, bad):
    path = tmp_path / "s.db"
    with pytest.raises(ValueError, match="direction must be 'minimize' or 'maximize'"):
        minimize(bump, ordinal6_categorical_ordinal_space(), method="rs", budget=3, seed=0, storage=path, direction=bad)
    with pytest.raises(ValueError, match="direction must be"):
        Study(ordinal6_categorical_ordinal_space(), "rs", storage=path, direction=bad)
    assert not path.exists()  # refused before anything is written


# -- the direction is stored and checked on resume --------------------------------------------------------------
def test_sqlite_study_keeps_its_direction(tmp_path):
    path = tmp_path / "max.db"
    space = ordinal6_categorical_ordinal_space()
    first = minimize(bump, space, method="rs", budget=6, seed=3, storage=path, direction="maximize")
    info = read_study_info(path)
    assert info["direction"] == "maximize" and info["format"] == FORMAT_VERSION
    assert info["best_value"] == first.best_value == max(t.value for t in first.trials)
    before = path.read_bytes()
    with pytest.raises(StorageError, match=r"direction='maximize', not 'minimize'"):
        minimize(bump, space, method="rs", budget=12, seed=3, storage=path, direction="minimize")
    with pytest.raises(StorageError, match="direction='maximize'"):
        Study(space, "rs", storage=path, direction="minimize")
    assert path.read_bytes() == before  # refused before anything is written
    # no direction given: the stored one
    with Study(space, "rs", storage=path) as study:
        assert study.direction == "maximize"
        assert sorted(np.asarray(study.optimizer.y).tolist()) == sorted(-t.value for t in first.trials)  # replayed
    resumed = minimize(bump, space, method="rs", budget=12, seed=3, storage=path)
    assert resumed.direction == "maximize" and len(resumed.trials) == 12
    assert resumed.best_value == max(t.value for t in resumed.trials) >= first.best_value


def test_every_study_is_written_in_the_one_format_with_the_release_that_made_it(tmp_path):
    path = tmp_path / "min.db"
    minimize(bump, ordinal6_categorical_ordinal_space(), method="rs", budget=3, seed=0, storage=path)
    info = read_study_info(path)
    assert info["format"] == FORMAT_VERSION and info["direction"] == "minimize"
    assert info["graphbo_version"] == gb.__version__ and int(gb.__version__.split(".")[0]) >= 1


def test_old_study_without_direction_reads_as_minimize(tmp_path):
    path = tmp_path / "old.db"
    space = ordinal6_categorical_ordinal_space()
    minimize(bump, space, method="rs", budget=5, seed=0, storage=path)
    with sqlite3.connect(path) as conn:  # as a graphbo before directions wrote it
        conn.execute("DELETE FROM meta WHERE key = 'direction'")
    conn.close()
    info = read_study_info(path)
    assert "direction" in info and info["direction"] == "minimize"
    assert info["best_value"] == min(t.value for t in Study(space, "rs", storage=path).trials)
    with pytest.raises(StorageError, match="direction='minimize', not 'maximize'"):
        Study(space, "rs", storage=path, direction="maximize")
    result = minimize(bump, space, method="rs", budget=8, seed=0, storage=path)
    assert result.direction == "minimize" and result.best_value == min(t.value for t in result.trials)


def test_damaged_direction_is_refused(tmp_path):
    path = tmp_path / "bad.db"
    minimize(bump, ordinal6_categorical_ordinal_space(), method="rs", budget=2, seed=0, storage=path)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'direction'", (json.dumps("sideways"),))
    conn.close()
    with pytest.raises(CorruptStudyError, match="direction 'sideways'"):
        read_study_info(path)


# -- best_params / best_value ---------------------------------------------------------------------------------
def test_best_params_are_the_variables_own_values():
    space = gb.Space({"o": gb.Ordinal(VALUES_D), "c": gb.Categorical(["red", "green", "blue"]),
                      "x": gb.Continuous(-2.0, 3.0)})
    seen = []

    def f(c):
        v = (c["o"] - 0.2) ** 2 + {"red": 1.0, "green": 0.0, "blue": 2.0}[c["c"]] + (c["x"] - 1.0) ** 2
        seen.append((dict(c), v))
        return v

    result = minimize(f, space, method="rs", budget=15, seed=4)
    best_config, best = min(seen, key=lambda cv: cv[1])
    assert result.best_value == best
    assert result.best_params == best_config  # what the objective was given, not index rows
    assert result.best_params["o"] in VALUES_D and result.best_params["c"] in ("red", "green", "blue")
    assert isinstance(result.best_params["x"], float) and -2.0 <= result.best_params["x"] <= 3.0
    result.best_params["o"] = "changed"  # a copy
    assert result.best_params["o"] in VALUES_D
    with Study(space, "rs", seed=4) as study:
        for cfg, v in seen:
            study.tell(cfg, v)
        assert study.best_params == best_config and study.best_value == best


def test_best_params_and_value_raise_when_nothing_completed():
    def broken(c):
        raise RuntimeError("nope")

    result = minimize(broken, ordinal6_categorical_ordinal_space(), method="rs", budget=3, seed=0)
    for attr in ("best_params", "best_value"):
        with pytest.raises(ValueError, match="no evaluation completed"):
            getattr(result, attr)
    with Study(ordinal6_categorical_ordinal_space(), "rs", seed=0) as study:
        study.fail(study.ask(), "nope")
        study.ask()
        for attr in ("best_params", "best_value"):
            with pytest.raises(ValueError, match="no trial .* completed .*1 failed"):
                getattr(study, attr)


# -- short reprs ----------------------------------------------------------------------------------------------
def test_result_repr_is_one_short_line():
    space = gb.Space({f"v{i}": gb.Categorical(["a" * 40, "b" * 40]) for i in range(30)})
    result = minimize(lambda c: sum(v.startswith("a") for v in c.values()), space, method="rs", budget=40, seed=0)
    text = repr(result)
    assert "\n" not in text and len(text) < 300, text
    assert text.startswith("MinimizeResult(method='rs', trials=40 (complete 40, failed 0)")
    assert f"best_value={result.best_value:.6g}" in text and f"... {30 - REPR_PARAMS} more" in text
    maximized = minimize(bump, ordinal6_categorical_ordinal_space(), method="rs", budget=4, seed=0,
                         direction="maximize")
    assert "direction='maximize'" in repr(maximized) and "'b': " in repr(maximized)

    failed = minimize(lambda c: None, ordinal6_categorical_ordinal_space(), method="rs", budget=2, seed=0)
    assert repr(failed) == "MinimizeResult(method='rs', trials=2 (complete 0, failed 2), no completed trial)"


def test_study_repr_is_one_short_line():
    space = gb.Space({f"v{i}": gb.Categorical(["a" * 40, "b" * 40]) for i in range(30)})
    with Study(space, "rs", seed=0, direction="maximize") as study:
        for _ in range(50):
            t = study.ask()
            study.tell(t, float(sum(v.startswith("a") for v in t.config.values())))
        text = repr(study)
        assert "\n" not in text and len(text) < 200, text
        assert "direction='maximize'" in text and "complete 50" in text and f"best {study.best_value:.6g}" in text


# -- the graphbo command: one trial numbering, values in the user's terms ---------------------------------------
SPACE_YAML = """variables:
  a: {type: ordinal, values: [0, 1, 2, 3, 4]}
  b: {type: categorical, choices: [x, y, z]}
"""
OBJECTIVE_PY = """def f(c):
    return -(c["a"] - 2) ** 2 + (1.0 if c["b"] == "z" else 0.0)
"""


def progress_rows(stdout):
    """``(trial, value, best)`` of the progress lines under the ``trial value best seconds`` header."""
    rows = []
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0].isdigit():
            rows.append((int(parts[0]), float(parts[1]), float(parts[2])))
    return rows


def run_cli(*argv, cwd):
    return subprocess.run([sys.executable, "-m", "graphbo", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})


def test_cli_numbers_trials_as_the_study_does_and_maximizes(tmp_path):
    (tmp_path / "space.yaml").write_text(SPACE_YAML)
    (tmp_path / "userobj.py").write_text(OBJECTIVE_PY)
    out = run_cli("run", "--space", "space.yaml", "--objective", "userobj:f", "--budget", "6", "--method", "rs",
                  "--direction", "maximize", "--storage", "m.db", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "maximising userobj:f" in out.stdout
    out2 = run_cli("resume", "m.db", "--objective", "userobj:f", "--budget", "10", cwd=tmp_path)
    assert out2.returncode == 0, out2.stderr
    assert "rs maximising userobj:f" in out2.stdout
    with Study(gb.load_space(tmp_path / "space.yaml"), "rs", storage=tmp_path / "m.db", n_initial=10) as study:
        trials = study.trials
        assert study.direction == "maximize"
    stored = {t.number: t.value for t in trials}
    rows = progress_rows(out.stdout) + progress_rows(out2.stdout)
    assert [r[0] for r in rows] == sorted(stored) == list(range(10))  # the printed number is Trial.number
    assert all(stored[n] == value for n, value, _ in rows)
    running = [max(v for _, v, _ in rows[: k + 1]) for k in range(len(rows))]
    assert [b for _, _, b in rows] == running  # best so far is the highest
    best = max(stored.values())
    best_trial = min(n for n, v in stored.items() if v == best)
    assert (f"best value {best:.6g} at {json.dumps(trials[best_trial].config)}"
            in out2.stdout.splitlines()[-2])
    # the other direction is refused, the file unchanged
    before = (tmp_path / "m.db").read_bytes()
    wrong = run_cli("run", "--space", "space.yaml", "--objective", "userobj:f", "--budget", "12", "--method", "rs",
                    "--direction", "minimize", "--storage", "m.db", cwd=tmp_path)
    assert wrong.returncode == 2 and "direction='maximize', not 'minimize'" in wrong.stderr
    assert (tmp_path / "m.db").read_bytes() == before
    bench = run_cli("run", "branin", "--direction", "maximize", cwd=tmp_path)
    assert bench.returncode == 2 and "benchmarks are minimised" in bench.stderr


def test_progress_lines_number_trials_as_the_study_file_does(tmp_path):
    out = run_cli("run", "branin", "--method", "rs", "--budget", "4", "--storage", "t.db", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    trials = load_study_file(tmp_path / "t.db").trials
    rows = progress_rows(out.stdout)
    assert [r[0] for r in rows] == [t.number for t in trials] == [0, 1, 2, 3]
    assert [r[1] for r in rows] == pytest.approx([t.value for t in trials], rel=1e-4)


def test_config_text_uses_the_variables_values_or_a_benchmarks_native_domain():
    from graphbo.cli._common import config_text

    assert config_text(None, {"a": np.int64(3), "b": "z", "x": np.float64(0.25)}) == '{"a": 3, "b": "z", "x": 0.25}'

    class OnAGrid:
        """A benchmark whose variables are unit coordinates of x in [-5, 10]."""

        def native_config(self, config):
            return {"x": -5.0 + 15.0 * config["u"]}

    assert config_text(OnAGrid(), {"u": 0.2}) == '{"x": -2.0} (the space\'s values: {"u": 0.2})'
