"""Studies: SQLite persistence, crash/resume, failures, parallel and Dask evaluation."""

import json
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import graphbo as gb
from graphbo.cli import main as cli_main
from graphbo.loop import minimize
from graphbo.optimizers import RandomSearch
from graphbo.storage.info import read_study_info
from graphbo.study import FORMAT_VERSION, StorageError, Study
from support import counts

TESTS = str(Path(__file__).resolve().parent)
SUPPORT = str(Path(__file__).resolve().parents[1])  # tests/, where support.py is
FAST = {"n_burn": 5, "n_samples": 2, "n_random": 300, "n_spray": 5, "n_starts": 3}
BUDGET = 12


def ordinal6_categorical_binary_ordinal_space():
    return gb.Space({
        "a": gb.Ordinal(list(range(6))),
        "b": gb.Categorical(["x", "y", "z"]),
        "c": gb.Binary(),
        "d": gb.Ordinal([0.1, 0.2, 0.5, 1.0]),
    })


def objective(c):
    return (c["a"] - 3) ** 2 + {"x": 0.0, "y": 1.5, "z": 0.5}[c["b"]] + (0.7 if c["c"] else 0.0) + 3 * c["d"]


def slow_objective(c):
    time.sleep(0.03)
    return objective(c)


def sleepy(c):  # module level: picklable for process pools and Dask
    time.sleep(0.3)
    return objective(c)


def options(method):
    return dict(FAST, n_initial=3) if method == "combo" else {"n_initial": 3}


def run_job(path, method, budget=BUDGET, fn=slow_objective):
    """The deterministic run that the crash test kills (in a subprocess) and resumes."""
    return minimize(fn, ordinal6_categorical_binary_ordinal_space(), method=method, budget=budget, seed=3, storage=path,
                    **options(method))


def trace(result):
    return [(o.config, o.value) for o in result.history]


# -- crash safety ------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["combo", "rs"])
def test_sigkilled_study_resumes_to_the_same_trace(tmp_path, method):
    reference = trace(run_job(str(tmp_path / "full.db"), method))
    assert len(reference) == BUDGET
    assert trace(minimize(slow_objective, ordinal6_categorical_binary_ordinal_space(), method=method, budget=BUDGET,
                          seed=3,
                          **options(method))) == reference
    rng = np.random.default_rng(1 if method == "combo" else 2)
    for attempt in range(3):
        path = tmp_path / f"killed{attempt}.db"
        code = f"import sys; sys.path[:0] = [{TESTS!r}, {SUPPORT!r}]; import test_study as t; t.run_job({str(path)!r}, {method!r})"
        proc = subprocess.Popen([sys.executable, "-c", code])
        target = int(rng.integers(1, BUDGET - 2))
        # attempts 0 and 2 kill while an evaluation is running; attempt 1 as soon as a tell is committed
        # (for COMBO: while it computes the next suggestion)
        need_running = attempt != 1
        deadline = time.time() + 60
        while time.time() < deadline and proc.poll() is None:
            finished, running = counts(path)
            if finished >= target and (running or not need_running):
                break
            time.sleep(0.003)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        info = read_study_info(path)
        print(f"{method}: killed after {info['n_complete']} complete trials, {info['n_running']} running")
        assert target <= info["n_complete"] < BUDGET
        assert info["n_running"] <= 1
        resumed = run_job(str(path), method)
        assert trace(resumed) == reference
        assert [t.number for t in resumed.trials] == list(range(BUDGET))


def test_ctrl_c_keeps_running_trials_for_the_resume(tmp_path):
    path = str(tmp_path / "s.db")
    reference = trace(run_job(str(tmp_path / "full.db"), "combo", fn=objective))
    calls = []

    def interrupted(c):
        if len(calls) == 5:
            raise KeyboardInterrupt
        calls.append(c)
        return objective(c)

    with pytest.raises(KeyboardInterrupt):
        run_job(path, "combo", fn=interrupted)
    info = read_study_info(path)
    assert (info["n_complete"], info["n_running"], info["n_failed"]) == (5, 1, 0)
    with Study(ordinal6_categorical_binary_ordinal_space(), "combo", storage=path, seed=3, **options("combo")) as study:
        assert [(t.number, t.status) for t in study.trials][-1] == (5, "running")
        assert study.ask().config == reference[5][0]  # the interrupted trial comes back first, same number
        assert study.trials[5].status == "running" and len(study.trials) == 6
    assert trace(run_job(path, "combo", fn=objective)) == reference


def test_study_ask_tell_fail_persist_and_reload(tmp_path):
    path = str(tmp_path / "sub" / "s.db")
    study = Study(ordinal6_categorical_binary_ordinal_space(), "rs", storage=path, seed=0, n_initial=2)
    trials = study.ask(3)
    assert [t.status for t in trials] == ["running"] * 3 and read_study_info(path)["n_running"] == 3
    study.tell(trials[1], 2.5)
    study.fail(trials[0], ValueError("nope"))
    with pytest.raises(ValueError, match="not finite"):
        study.tell(trials[2], float("nan"))
    with pytest.raises(ValueError, match="already complete"):
        study.tell(trials[1], 1.0)
    study.tell(trials[2].config, 1.0)  # by configuration
    extra = {"a": 0, "b": "x", "c": False, "d": 0.1}
    study.tell(extra, 7.0)  # never asked: a new complete trial
    study.set_user_attr("note", {"k": [1, 2]})
    study.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    rows = conn.execute("SELECT number, status, value, error, config, state IS NOT NULL FROM trials").fetchall()
    conn.close()
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == [
        (0, "failed", None, "ValueError: nope"), (1, "complete", 2.5, None), (2, "complete", 1.0, None),
        (3, "complete", 7.0, None)]
    assert json.loads(rows[3][4]) == extra and all(r[5] for r in rows)
    # seed None: the stored one
    again = Study(ordinal6_categorical_binary_ordinal_space(), "rs", storage=path, n_initial=2)
    assert again.seed == 0 and again.user_attrs == {"note": {"k": [1, 2]}}
    assert [t.status for t in again.trials] == ["failed", "complete", "complete", "complete"]
    assert again.best.value == 1.0 and again.optimizer.n_told == 3
    seen = {json.dumps(t.config, sort_keys=True) for t in again.trials}
    for _ in range(10):
        assert json.dumps(again.ask().config, sort_keys=True) not in seen
    again.close()


# -- failures --------------------------------------------------------------------------------------------
BAD = {
    "raise": {"a": 0, "b": "y", "c": False, "d": 0.1},
    "nan": {"a": 1, "b": "x", "c": True, "d": 0.1},
    "inf": {"a": 2, "b": "x", "c": True, "d": 0.2},
    "text": {"a": 4, "b": "z", "c": False, "d": 0.5},
    "sleep": {"a": 5, "b": "x", "c": False, "d": 1.0},
}


def flaky(c):
    if c == BAD["raise"]:
        raise RuntimeError("bad luck")
    if c == BAD["nan"]:
        return float("nan")
    if c == BAD["inf"]:
        return float("-inf")
    if c == BAD["text"]:
        return "oops"
    if c == BAD["sleep"]:
        time.sleep(5)
    return objective(c)


@pytest.mark.parametrize("n_workers", [1, 2])
def test_failures_are_recorded_and_the_budget_completes(tmp_path, n_workers):
    path = str(tmp_path / "f.db")
    t0 = time.perf_counter()
    result = minimize(flaky, ordinal6_categorical_binary_ordinal_space(), method="rs", budget=10, seed=0, storage=path,
                      n_workers=n_workers, timeout=0.5, n_initial=5, initial_configs=list(BAD.values()))
    elapsed = time.perf_counter() - t0
    assert elapsed < 4.5  # the 5-second evaluation was cut at 0.5 s
    assert len(result.trials) == 10 and result.n_complete == 5 and result.n_failed == 5
    errors = {json.dumps(t.config, sort_keys=True): t.error for t in result.failed_trials}
    msg = {k: errors[json.dumps(c, sort_keys=True)] for k, c in BAD.items()}
    assert msg["raise"] == "RuntimeError: bad luck"
    assert "nan" in msg["nan"] and "not a finite number" in msg["nan"]
    assert "-inf" in msg["inf"] and "not a finite number" in msg["inf"]
    assert "'oops'" in msg["text"] and "not a number" in msg["text"]
    assert msg["sleep"] == "timed out after 0.5 s"
    # a failure is told to the model only with a penalty: the worst value completed before it (none before any)
    assert result.optimizer.n_told == 5 + sum(t.penalty is not None for t in result.failed_trials)
    assert len({json.dumps(t.config, sort_keys=True) for t in result.trials}) == 10
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT COUNT(*) FROM trials WHERE status = 'failed' AND error != ''").fetchone()[0] == 5
    conn.close()


def test_failed_configs_are_never_suggested_again():
    space = gb.Space({f"x{i}": gb.Binary() for i in range(4)})  # 16 configurations

    def half_fail(c):
        if c["x0"]:
            raise ValueError("x0 set")
        return sum(c.values())

    # half the space fails with one error: the run must not stop for it (stop_after_failures is tested apart)
    result = minimize(half_fail, space, method="rs", budget=16, seed=0, n_initial=2, stop_after_failures=None)
    configs = [tuple(t.config.values()) for t in result.trials]
    assert len(set(configs)) == 16 and result.n_failed == 8 and result.n_complete == 8
    assert result.best.value == 0
    assert result.optimizer.n_told == 8 + sum(t.penalty is not None for t in result.failed_trials)
    combo = minimize(half_fail, space, method="combo", budget=12, seed=1, n_initial=3, **FAST)
    assert len({tuple(t.config.values()) for t in combo.trials}) == 12
    assert combo.optimizer.n_told == combo.n_complete + sum(t.penalty is not None for t in combo.failed_trials)
    penalised = minimize(half_fail, space, method="combo", budget=12, seed=1, failure_value=10.0, n_initial=3, **FAST)
    assert penalised.optimizer.n_told == 12 and len({tuple(t.config.values()) for t in penalised.trials}) == 12
    assert all(t.penalty == 10.0 for t in penalised.failed_trials) and penalised.n_failed > 0
    assert penalised.best.value < 10  # penalties are not results
    opt = RandomSearch(space, seed=0, n_initial=0)
    failed = [dict(zip(space.names, (True, b, c, d))) for b in (0, 1) for c in (0, 1) for d in (0, 1)]
    failed = [{k: bool(v) for k, v in f.items()} for f in failed]
    for f in failed:
        opt.mark_failed(f)
    asked = opt.ask(8)
    assert all(not c["x0"] for c in asked) and opt.n_told == 0


# -- refusing files ---------------------------------------------------------------------------------------
def test_foreign_corrupt_newer_or_mismatched_files_raise_and_stay_identical(tmp_path):
    good = tmp_path / "good.db"
    run_job(str(good), "rs", budget=4, fn=objective)
    good_bytes = good.read_bytes()

    def refused(path, match, **kw):
        before = Path(path).read_bytes()
        args = dict(method="rs", seed=3, **options("rs"))
        args.update(kw)
        space = args.pop("space", None) or ordinal6_categorical_binary_ordinal_space()
        with pytest.raises(StorageError, match=match) as info:
            Study(space, storage=str(path), **args)
        assert str(path) in str(info.value)
        assert Path(path).read_bytes() == before
        assert not Path(str(path) + "-wal").exists() or Path(str(path) + "-wal").stat().st_size == 0

    text = tmp_path / "notes.txt"
    text.write_text("hello\nworld\n")
    refused(text, "not an SQLite database")
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE foo (x)")
    conn.execute("INSERT INTO foo VALUES (1)")
    conn.commit()
    conn.close()
    refused(foreign, "not a graphbo study")
    other_tool = tmp_path / "other_tool.db"
    conn = sqlite3.connect(other_tool)
    conn.execute("CREATE TABLE meta (key TEXT, value TEXT)")
    conn.execute("INSERT INTO meta VALUES ('application', '\"something else\"')")
    conn.execute("CREATE TABLE trials (x)")
    conn.commit()
    conn.close()
    refused(other_tool, "not a graphbo study")
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 40)
    refused(garbage, "corrupt|not a database|unreadable")
    corrupt = tmp_path / "corrupt.db"
    data = bytearray(good_bytes)
    page = 4096
    assert len(data) >= 3 * page
    data[page:len(data)] = b"\xa5" * (len(data) - page)
    corrupt.write_bytes(bytes(data))
    refused(corrupt, "corrupt|malformed")
    newer = tmp_path / "newer.db"
    shutil.copy(good, newer)
    conn = sqlite3.connect(newer)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'format'", (json.dumps(FORMAT_VERSION + 1),))
    conn.commit()
    conn.close()
    refused(newer, "newer graphbo")
    refused(good, "seed 3, not 4", seed=4)
    refused(good, "method 'rs', not 'combo'", method="combo", **FAST)
    refused(good, "method options", n_initial=4)
    other = gb.Space({"a": gb.Ordinal(list(range(7))), "b": gb.Categorical(["x", "y", "z"]), "c": gb.Binary(),
                      "d": gb.Ordinal([0.1, 0.2, 0.5, 1.0])})
    refused(good, "another space: variable 'a' differs in values", space=other)
    renamed = gb.Space({"a": gb.Ordinal(list(range(6))), "b": gb.Categorical(["x", "y", "z"]), "e": gb.Binary(),
                        "d": gb.Ordinal([0.1, 0.2, 0.5, 1.0])})
    refused(good, "another space", space=renamed)
    with pytest.raises(StorageError, match="newer graphbo"):
        minimize(objective, ordinal6_categorical_binary_ordinal_space(), method="rs", budget=6, seed=3,
                 storage=str(newer),
                 n_initial=3)
    assert good.read_bytes() == good_bytes
    assert len(Study(ordinal6_categorical_binary_ordinal_space(), "rs", storage=str(good), seed=3,
                     n_initial=3).trials) == 4  # still fine


# -- parallel ---------------------------------------------------------------------------------------------
def test_process_workers_overlap_and_suggest_distinct_configs(tmp_path):
    t0 = time.perf_counter()
    result = minimize(sleepy, ordinal6_categorical_binary_ordinal_space(), method="combo", budget=16, seed=0,
                      n_workers=2,
                      storage=str(tmp_path / "p.db"), n_initial=3, **FAST)
    wall = time.perf_counter() - t0
    serial = sum(t.evaluate_seconds for t in result.trials)
    print(f"16 x 0.3 s with 2 processes: {wall:.2f} s wall, {serial:.2f} s of evaluations")
    assert result.n_complete == 16 and len(result.history) == 16
    assert len({tuple(t.config.values()) for t in result.trials}) == 16
    # never more than 2 in flight, and 2 at a time indeed (asked while another was evaluating)
    events = sorted([(t.started, 1) for t in result.trials] + [(t.finished, -1) for t in result.trials],
                    key=lambda e: (e[0], e[1]))
    level, peak = 0, 0
    for _, step in events:
        level += step
        peak = max(peak, level)
    assert peak == 2
    with pytest.raises(TypeError, match="picklable"):
        minimize(lambda c: 0.0, ordinal6_categorical_binary_ordinal_space(), method="rs", budget=2, n_workers=2)


def quick(c):
    time.sleep(0.1)
    return objective(c)


def test_interrupted_parallel_run_leaves_running_trials_and_resumes(tmp_path):
    path = str(tmp_path / "i.db")

    def stop(number, config, value, optimizer, seconds):
        # As Ctrl-C in the loop with an evaluation in flight. Both workers' evaluations can finish
        # in the same wait and be told before the next ask, so wait for a tell with one pending.
        if optimizer.n_told >= 4 and optimizer.n_pending:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        minimize(quick, ordinal6_categorical_binary_ordinal_space(), method="rs", budget=10, seed=0, n_workers=2,
                 storage=path,
                 callback=stop, n_initial=3)
    info = read_study_info(path)
    assert info["n_complete"] in (4, 5) and info["n_running"] == 1 and info["n_failed"] == 0
    with Study(ordinal6_categorical_binary_ordinal_space(), "rs", storage=path, seed=0, n_initial=3) as study:
        running = study.running_trials[0]
    result = minimize(quick, ordinal6_categorical_binary_ordinal_space(), method="rs", budget=10, seed=0, n_workers=2,
                      storage=path, n_initial=3)
    assert result.n_complete == 10 and [t.number for t in result.trials] == list(range(10))
    assert result.trials[running.number].config == running.config
    assert result.trials[running.number].status == "complete"
    assert len({tuple(t.config.values()) for t in result.trials}) == 10


def test_dask_local_cluster_executor_runs_to_completion(tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        client.wait_for_workers(2)
        # Warm the workers up (imports of this module, graphbo and torch), so that a loaded
        # machine's first-call latency is not mistaken for the objective running past its timeout.
        client.run(flaky, BAD["nan"])
        result = minimize(flaky, ordinal6_categorical_binary_ordinal_space(), method="rs", budget=8, seed=0,
                          n_workers=2,
                          timeout=1.0, storage=str(tmp_path / "d.db"), executor=client.get_executor(),
                          n_initial=3, initial_configs=[BAD["raise"], BAD["sleep"]])
    assert len(result.trials) == 8 and result.n_complete == 6 and result.n_failed == 2
    errors = sorted(t.error for t in result.failed_trials)
    assert errors == ["RuntimeError: bad luck", "timed out after 1 s"]
    assert len({tuple(t.config.values()) for t in result.trials}) == 8


# -- command line -------------------------------------------------------------------------------------------
def test_cli_run_with_storage_and_resume(tmp_path, capsys):
    path = str(tmp_path / "b.db")
    assert cli_main(["run", "branin", "--method", "rs", "--budget", "5", "--storage", path, "--quiet"]) == 0
    info = read_study_info(path)
    assert info["n_complete"] == 5 and info["user_attrs"]["benchmark"] == "branin"
    assert cli_main(["resume", path, "--budget", "8", "--workers", "2", "--quiet"]) == 0
    assert read_study_info(path)["n_complete"] == 8
    py = str(tmp_path / "py.db")
    Study(ordinal6_categorical_binary_ordinal_space(), "rs", storage=py, seed=0).close()
    capsys.readouterr()
    assert cli_main(["resume", py]) == 2
    err = capsys.readouterr().err
    assert py in err and "graphbo run" in err and "objective" in err
    assert cli_main(["resume", str(tmp_path / "missing.db")]) == 2
    assert "no such study file" in capsys.readouterr().err


# -- multi-fidelity ------------------------------------------------------------------------------------------
def test_multi_fidelity_study_asks_again_for_trials_left_running(tmp_path):
    """BOHB's trials carry their fidelity; on resuming, SMAC is asked again for the trials left running: the
    same one comes back (same number), and one it no longer suggests is failed, its replacement handed out."""
    pytest.importorskip("smac")
    from support import BOHB_FAST, toy_f, toy_space

    path = str(tmp_path / "mf.db")

    studies = []

    def open_study():
        studies.append(Study(toy_space(), "bohb", storage=path, seed=0, max_fidelity=9, n_initial=4, **BOHB_FAST))
        return studies[-1]

    with open_study() as study:
        for _ in range(5):
            trial = study.ask()
            study.tell(trial, toy_f(trial.config) + 1.0 / trial.attrs["fidelity"])
        first, second = study.ask(2)
        study.tell(second, 1.0)
    with open_study() as study:
        again = study.ask()
        assert (again.number, again.config, again.attrs) == (first.number, first.config, first.attrs)
    conn = sqlite3.connect(path)  # as if that trial had been asked at another fidelity: SMAC won't repeat it
    conn.execute("UPDATE trial_attrs SET value = '9' WHERE number = ?", (first.number,))
    conn.commit()
    conn.close()
    with open_study() as study:
        lost = study.trials[first.number]
        assert lost.status == "failed" and "not suggested again" in lost.error
        replacement = study.ask()
        assert replacement.number == len(study.trials) - 1 and replacement.attrs == first.attrs
        assert replacement.config == first.config
        study.tell(replacement, 0.5)
    info = read_study_info(path)
    assert (info["n_complete"], info["n_failed"], info["n_running"]) == (7, 1, 0)
    for study in studies:
        study.optimizer.close()  # SMAC's temporary folder


def test_threads_are_set_for_suggestions_and_restored(tmp_path):
    """Study decides the torch threads of each suggestion (n_threads) and restores the process's setting."""
    import torch

    import graphbo as gb

    space = gb.Space({"a": gb.Ordinal(list(range(5))), "b": gb.Binary()})
    seen = []

    class Recording(gb.RandomSearch):  # records the thread count while it suggests
        def _suggest(self):
            seen.append(torch.get_num_threads())
            return super()._suggest()

    from graphbo.optimizers import METHODS

    METHODS["recording-rs"] = Recording
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        study = gb.Study(space, "recording-rs", seed=0, n_initial=0, n_threads=1)
        study.tell(study.ask(), 1.0)
        assert seen == [1] and torch.get_num_threads() == 2
        study = gb.Study(space, "recording-rs", seed=0, n_initial=0, n_threads=None)
        study.ask()
        assert seen == [1, 2]
        with pytest.raises(ValueError, match="n_threads"):
            gb.Study(space, "rs", n_threads=0)
    finally:
        METHODS.pop("recording-rs", None)
        torch.set_num_threads(old)


def test_a_run_where_everything_failed_says_so():
    space = gb.Space({f"x{i}": gb.Binary() for i in range(3)})

    def always_fails(c):
        raise RuntimeError("broken objective")

    result = minimize(always_fails, space, method="rs", budget=4, seed=0)
    assert result.best is None and result.n_failed == 4
    for attribute in ("best_params", "best_value"):
        with pytest.raises(ValueError, match="all 4 trials failed"):
            getattr(result, attribute)


def test_a_store_without_tell_order_replays_by_trial_number():
    """A custom store may keep no tell order: history, best and resume fall back on trial numbers."""
    import dataclasses

    from graphbo.storage import InMemoryStorage

    store = InMemoryStorage()
    study = Study(ordinal6_categorical_binary_ordinal_space(), "rs", storage=store, seed=0)
    for value in (3.0, 1.0, 2.0):
        study.tell(study.ask(), value)
    study.close()  # one writer at a time, in memory too
    store._trials = {n: dataclasses.replace(t, tell_order=None) for n, t in store._trials.items()}
    again = Study(ordinal6_categorical_binary_ordinal_space(), "rs", storage=store, seed=0)
    assert [o.value for o in again.history] == [3.0, 1.0, 2.0]
    assert again.best.value == 1.0
