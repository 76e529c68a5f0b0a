"""Progress and logging: the progress bar of minimize and Study.optimize on standard error (shown when
asked, or when standard error is a terminal), the ``graphbo`` logger's records, and the per-run progress lines
of ``graphbo compare`` in parallel."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys

import pytest

import graphbo as gb
from graphbo.progress import ProgressBar


def binary_categorical_ordinal4_space():
    return gb.Space({"a": gb.Binary(), "b": gb.Categorical([1, 2, 3]), "c": gb.Ordinal([0, 5, 10, 20])})


def objective(config):
    return (config["b"] - 2) ** 2 + 0.1 * config["c"] + (0.5 if config["a"] else 0.0)


def test_minimize_shows_the_final_count_and_the_best_value(capfd):
    result = gb.minimize(objective, binary_categorical_ordinal4_space(), method="rs", budget=7, seed=3,
                         show_progress=True)
    out, err = capfd.readouterr()
    assert out == ""  # the bar goes to standard error only
    assert "7/7" in err
    assert f"best {result.best_value:.6g}" in err
    assert "suggest" in err


def test_a_maximising_study_shows_its_best_in_the_users_sign(capfd):
    with gb.Study(binary_categorical_ordinal4_space(), "rs", seed=1, direction="maximize") as study:
        study.optimize(objective, 6, show_progress=True)
        err = capfd.readouterr().err
        assert study.best_value > 0
        assert "6/6" in err
        assert f"best {study.best_value:.6g}" in err  # the highest value, not its negative
        assert f"best {-study.best_value:.6g}" not in err


def test_a_resumed_study_starts_its_bar_from_its_finished_trials(tmp_path, capfd):
    path = tmp_path / "s.db"
    gb.minimize(objective, binary_categorical_ordinal4_space(), method="rs", budget=3, seed=0, storage=path,
                show_progress=False)
    assert capfd.readouterr().err == ""
    with gb.Study(binary_categorical_ordinal4_space(), "rs", storage=path) as study:
        study.optimize(objective, 8, show_progress=True)
        assert study.n_finished == 8
    err = capfd.readouterr().err
    assert "3/8" in err and "8/8" in err
    assert "0/8" not in err


def test_parallel_workers_show_the_bar_too(capfd):
    result = gb.minimize(objective, binary_categorical_ordinal4_space(), method="rs", budget=5, seed=0, n_workers=2,
                         show_progress=True)
    err = capfd.readouterr().err
    assert "5/5" in err and f"best {result.best_value:.6g}" in err


def test_nothing_is_printed_when_standard_error_is_not_a_terminal(capfd):
    assert not sys.stderr.isatty()
    gb.minimize(objective, binary_categorical_ordinal4_space(), method="rs", budget=4, seed=0)
    with gb.Study(binary_categorical_ordinal4_space(), "rs", seed=0) as study:
        study.optimize(objective, 4)
    assert capfd.readouterr() == ("", "")


def test_the_bar_is_closed_when_the_objective_interrupts_the_run(capfd):
    def interrupted(config):
        if interrupted.calls == 2:
            raise KeyboardInterrupt
        interrupted.calls += 1
        return objective(config)

    interrupted.calls = 0
    with gb.Study(binary_categorical_ordinal4_space(), "rs", seed=0) as study:
        with pytest.raises(KeyboardInterrupt):
            study.optimize(interrupted, 6, show_progress=True)
        assert study.n_finished == 2 and len(study.running_trials) == 1
    err = capfd.readouterr().err
    assert "2/6" in err
    assert err.endswith("\n")  # closed: the terminal is left on a new line


def test_a_bar_that_is_not_shown_creates_nothing():
    bar = ProgressBar(10, show=False)
    bar.finished(1.0, 0.1)
    assert not bar.shown and bar.best == 1.0
    bar.close()


@pytest.mark.parametrize("bad", [1, 0, "yes", 1.0])
def test_an_invalid_show_progress_is_refused_naming_the_argument(bad):
    with pytest.raises(TypeError, match="show_progress"):
        gb.minimize(objective, binary_categorical_ordinal4_space(), method="rs", budget=2, seed=0, show_progress=bad)
    with gb.Study(binary_categorical_ordinal4_space(), "rs", seed=0) as study:
        with pytest.raises(TypeError, match="show_progress"):
            study.optimize(objective, 2, show_progress=bad)
        assert study.n_finished == 0


def test_study_optimize_counts_the_budget_over_sessions_and_calls_back(tmp_path):
    seen = []
    with gb.Study(binary_categorical_ordinal4_space(), "rs", storage=tmp_path / "s.db", seed=2) as study:
        study.optimize(objective, 3, callback=lambda n, c, v, opt, s: seen.append((n, v)))
        assert study.optimize(objective, 5) is study
        assert study.n_finished == 5
    assert [n for n, _ in seen] == [0, 1, 2]
    assert [v for _, v in seen] == [t.value for t in gb.Study(binary_categorical_ordinal4_space(), "rs",
                                                              storage=tmp_path / "s.db").trials[:3]]


def test_a_failing_objective_is_a_warning_of_the_graphbo_logger(caplog):
    def fails_on_b2(config):
        if config["b"] == 2:
            raise RuntimeError("no b=2 here")
        return objective(config)

    with caplog.at_level(logging.DEBUG, logger="graphbo"):
        result = gb.minimize(fails_on_b2, binary_categorical_ordinal4_space(), method="rs", budget=12, seed=0)
    assert result.n_failed > 0
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and r.name.startswith("graphbo")]
    assert len(warnings) == result.n_failed
    assert all("RuntimeError: no b=2 here" in r.getMessage() for r in warnings)
    debug = [r for r in caplog.records if r.levelno == logging.DEBUG and r.name.startswith("graphbo")]
    assert len(debug) == 12  # one per finished trial


def test_creating_and_resuming_a_study_is_logged_with_its_path(tmp_path, caplog):
    path = str(tmp_path / "runs" / "s.db")
    with caplog.at_level(logging.INFO, logger="graphbo"):
        gb.minimize(objective, binary_categorical_ordinal4_space(), method="rs", budget=3, seed=0, storage=path)
    created = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO and "created" in r.getMessage()]
    assert len(created) == 1 and path in created[0]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="graphbo"):
        gb.Study(binary_categorical_ordinal4_space(), "rs", storage=path).close()
    resumed = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert len(resumed) == 1 and path in resumed[0] and "resumed" in resumed[0] and "3 trials" in resumed[0]


def small_objective(config):
    return config["b"] + config["a"]


def test_an_exhausted_space_ends_the_run_with_its_result_and_a_warning(caplog):
    small = gb.Space({"a": gb.Binary(), "b": gb.Categorical([1, 2, 3])})  # 6 configurations
    with caplog.at_level(logging.WARNING, logger="graphbo"):
        result = gb.minimize(small_objective, small, method="rs", budget=10, seed=0)
    assert len(result.trials) == 6 and result.best_value == 1
    assert any("exhausted" in r.getMessage() and "10" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="graphbo"):
        result = gb.minimize(small_objective, small, method="rs", budget=10, seed=0, n_workers=2)
    assert len(result.trials) == 6 and result.best_value == 1
    assert any("exhausted" in r.getMessage() for r in caplog.records)


def test_graphbo_adds_no_handler_of_its_own():
    assert not [h for h in logging.getLogger("graphbo").handlers if not isinstance(h, logging.NullHandler)]


def test_parallel_compare_prints_each_runs_progress(tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1")
    out = tmp_path / "cmp"
    done = subprocess.run([sys.executable, "-m", "graphbo", "compare", "branin", "--methods", "rs", "--seeds", "0-1",
                           "--budget", "12", "--workers", "2", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    for seed in (0, 1):  # a line at 10 evaluations and at the end, each with the best so far
        assert re.search(rf"^branin rs seed {seed}: 10/12 best -?\d", done.stdout, re.M), done.stdout
        final = re.search(rf"^branin rs seed {seed}: 12/12 best (\S+)$", done.stdout, re.M)
        assert final, done.stdout
        summary = re.search(rf"^done rs seed {seed}: best (\S+) ", done.stdout, re.M)
        assert summary and float(summary.group(1)) == float(final.group(1))


def test_a_slow_run_prints_a_progress_line_per_evaluation_past_the_interval(tmp_path, monkeypatch):
    from graphbo.experiments import runner

    spec = runner.RunSpec(benchmark="branin", method="rs", seed=0, budget=4, n_initial=2)
    lines: list[str] = []
    monkeypatch.setattr(runner, "LOG_SECONDS", 0.0)  # every evaluation ends past the interval
    runner.compare([spec], str(tmp_path), log=lines.append)
    assert [line.split(":")[1].split()[0] for line in lines[:-1]] == ["1/4", "2/4", "3/4", "4/4"]
    lines.clear()
    monkeypatch.setattr(runner, "LOG_SECONDS", 3600.0)
    runner.compare([runner.RunSpec(benchmark="branin", method="rs", seed=1, budget=4, n_initial=2)], str(tmp_path),
                   log=lines.append)
    assert [line.split(":")[1].split()[0] for line in lines[:-1]] == ["4/4"]


def test_report_reading_has_a_bar_only_when_asked(capfd):
    from graphbo.progress import progress_over

    items = list(range(7))
    assert progress_over(items, "reading runs") is items  # not a terminal under pytest: the list itself
    assert list(progress_over(items, "reading runs", show=True)) == items
    err = capfd.readouterr().err
    assert "reading runs" in err and "/7" in err
    with pytest.raises(TypeError, match="show_progress"):
        progress_over(items, "x", show="yes")


_FAILING_RUN = """
import logging, sys
import graphbo as gb
if sys.argv[1] == "configured":
    logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
space = gb.Space({"x": gb.Ordinal([0, 1, 2, 3])})
def f(config):
    raise ValueError("boom")
gb.minimize(f, space, budget=1, method="rs", seed=0)
"""


@pytest.mark.parametrize("logging_setup", ["none", "configured"])
def test_a_log_line_names_graphbo_once(logging_setup):
    from pathlib import Path

    src = str(Path(__file__).resolve().parents[1] / "src")
    out = subprocess.run([sys.executable, "-c", _FAILING_RUN, logging_setup], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": src}, timeout=120)
    lines = [line for line in out.stderr.splitlines() if "trial 0 failed" in line]
    assert len(lines) == 1, out.stderr  # printed once: by graphbo's default handler or by the application's
    if logging_setup == "none":  # Python's last-resort handler: the message alone
        assert lines[0].startswith("trial 0 failed (ValueError: boom)"), lines
    else:
        assert lines[0].startswith("WARNING graphbo.study: trial 0 failed") and "graphbo: " not in lines[0], lines


def test_the_command_line_prints_warnings_with_its_prefix(tmp_path):
    (tmp_path / "space.yaml").write_text("variables:\n  x: {type: ordinal, values: [0, 1, 2, 3]}\n")
    (tmp_path / "bad.py").write_text("def objective(config):\n    raise ValueError('boom')\n")
    from pathlib import Path

    src = str(Path(__file__).resolve().parents[1] / "src")
    out = subprocess.run([sys.executable, "-m", "graphbo", "run", "--space", "space.yaml", "--objective",
                          "bad.py:objective", "--budget", "2", "--method", "rs", "--storage", "s.db"], cwd=tmp_path,
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": src}, timeout=120)
    lines = [line for line in out.stderr.splitlines() if "trial 0 failed" in line]
    assert lines == [line for line in lines if line.startswith("graphbo: trial 0 failed (ValueError: boom)")]
    assert len(lines) == 1, out.stderr
