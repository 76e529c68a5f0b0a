"""Objectives that misbehave, timeouts, pool workers that outlive their process, loose arguments and
studies whose files name code to run (real processes and pools, no mocks)."""

import ctypes
import json
import math
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import graphbo as gb
from graphbo import parallel
from graphbo.evaluation import _evaluate
from graphbo.optimizers import RandomSearch
from graphbo.storage.info import read_study_info

SWALLOW_SECONDS = 3.0


def swallow_interruptions(seconds):
    """Catch every BaseException (the timeout included) until ``seconds`` have passed, then return 0.0."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        try:
            time.sleep(0.02)
        except BaseException:
            pass
    return 0.0


def misbehave(config):
    """One way of misbehaving per value of ``a`` below 14; a real value above. Module level: picklable."""
    import torch

    a = config["a"]
    if a == 0:
        raise OverflowError("overflowed")
    if a == 1:
        return float("nan")
    if a == 2:
        return None
    if a == 3:
        return "1.0"
    if a == 4:
        return np.array([1.0, 2.0])
    if a == 5:
        return torch.tensor([1.0])
    if a == 6:
        return 10 ** 400
    if a == 7:
        time.sleep(60)
    if a == 8:
        os._exit(3)
    if a == 9:
        ctypes.string_at(0)  # segfault
    if a == 10:
        os.kill(os.getpid(), signal.SIGKILL)  # what the kernel's out-of-memory killer does
    if a == 11:
        return swallow_interruptions(SWALLOW_SECONDS if config.get("here") else 60.0)
    if a == 12:
        raise SystemExit(4)
    if a == 13:
        return float("inf")
    return float(a)


def misbehave_here(config):
    """``misbehave`` without the ways that end the process it runs in (they are for worker processes)."""
    if config["a"] in (8, 9, 10):
        return float(config["a"])
    return misbehave(dict(config, here=True))


EXPECTED = {
    0: "OverflowError: overflowed",
    1: "objective returned nan, not a finite number",
    2: "objective returned None (NoneType), not a number",
    3: "objective returned '1.0' (str), not a number",
    4: "objective returned an unusable outcome: 2 values for 1 objective(s)",
    5: "objective returned Tensor of shape (1,), not a number",
    6: "objective returned integer with about 400 digits, too large for a float",
    7: "timed out after 1 s",
    8: "the worker process evaluating it died (it exited with status 3)",
    9: "the worker process evaluating it died (killed by SIGSEGV)",
    10: "the worker process evaluating it died (killed by SIGKILL",
    11: "timed out after 1 s",
    12: "SystemExit: 4",
    13: "objective returned inf, not a finite number",
}
SIZE = 18
SPACE = gb.Space({"a": gb.Ordinal(list(range(SIZE)))})


def by_value(trials):
    return {t.config["a"]: t for t in trials}


def check_every_misbehaviour_recorded(result, path, expected):
    trials = by_value(result.trials)
    assert sorted(trials) == list(range(SIZE))  # the run went on to the end of its budget
    for a, t in trials.items():
        if a in expected:
            assert t.status == "failed" and t.error is not None and expected[a] in t.error, (a, t.error)
        else:
            assert t.status == "complete" and t.value == float(a), (a, t.status, t.error)
    info = read_study_info(path)
    assert (info["n_running"], info["n_failed"], info["n_complete"]) == (0, len(expected), SIZE - len(expected))
    assert result.best.value == min(a for a in range(SIZE) if a not in expected)


def test_misbehaving_objectives_in_this_process_are_failed_trials(tmp_path):
    expected = {a: e for a, e in EXPECTED.items() if a not in (8, 9, 10)}
    t0 = time.monotonic()
    result = gb.minimize(misbehave_here, SPACE, method="rs", budget=SIZE, seed=0, n_initial=SIZE, timeout=1.0,
                         storage=tmp_path / "s.db")
    check_every_misbehaviour_recorded(result, tmp_path / "s.db", expected)
    # the swallowing objective ran to its own end (it cannot be killed in this process): recorded as timed out
    assert by_value(result.trials)[11].evaluate_seconds >= SWALLOW_SECONDS - 0.1
    assert time.monotonic() - t0 < 30


def test_misbehaving_objectives_in_worker_processes_are_failed_trials(tmp_path, monkeypatch):
    import multiprocessing

    monkeypatch.setattr(parallel, "TIMEOUT_GRACE", 1.0)  # a worker ignoring its timeout is killed after 2 s
    t0 = time.monotonic()
    result = gb.minimize(misbehave, SPACE, method="rs", budget=SIZE, seed=0, n_initial=SIZE, timeout=1.0, n_workers=2,
                         storage=tmp_path / "s.db")
    wall = time.monotonic() - t0
    check_every_misbehaviour_recorded(result, tmp_path / "s.db", EXPECTED)
    assert wall < 45, wall  # the sleeping (60 s) and swallowing (60 s) evaluations were ended
    assert multiprocessing.active_children() == []  # no pool left behind


def test_a_value_that_swallows_the_timeout_still_times_out():
    # the objective catches the alarm and returns a good value: the evaluation is still a timeout
    ok, value, error, seconds = _evaluate(lambda c: swallow_interruptions(1.5), {}, timeout=0.3)
    assert (ok, value, error) == (False, None, "timed out after 0.3 s") and seconds >= 1.4
    ok, value, error, _ = _evaluate(lambda c: 2.5, {}, timeout=0.3)
    assert (ok, value, error) == (True, 2.5, None)
    # no alarm is left set or handled after an evaluation
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, signal.default_int_handler, None)


@pytest.mark.parametrize("timeout", [None, math.inf, 1e12, 10 ** 400])
def test_an_infinite_timeout_means_none(timeout):
    result = gb.minimize(lambda c: float(c["a"]), SPACE, method="rs", budget=4, seed=0, timeout=timeout)
    assert result.n_complete == 4 and result.n_failed == 0


@pytest.mark.parametrize("timeout, error", [(math.nan, ValueError), (-1.0, ValueError), (0, ValueError),
                                            ("5", TypeError), (True, TypeError), ([1], TypeError)])
def test_a_wrong_timeout_is_refused_by_name(timeout, error, tmp_path):
    with pytest.raises(error, match="^timeout must be a positive number"):
        gb.minimize(lambda c: 1.0, SPACE, method="rs", budget=2, seed=0, timeout=timeout, storage=tmp_path / "s.db")
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize("budget", [math.nan, 2.5, "3", True, None, 0, -1])
def test_a_wrong_budget_is_refused_by_name(budget, tmp_path):
    with pytest.raises((TypeError, ValueError), match="^budget must be"):
        gb.minimize(lambda c: 1.0, SPACE, method="rs", budget=budget, seed=0, storage=tmp_path / "s.db")
    assert not (tmp_path / "s.db").exists()


def test_a_float_budget_is_refused_even_when_integral():
    with pytest.raises(TypeError, match="budget must be an integer"):
        gb.minimize(lambda c: 1.0, SPACE, method="rs", budget=3.0, seed=0)


@pytest.mark.parametrize("seed", ["abc", 1.5, -1, True])
def test_a_wrong_seed_is_refused_by_name(seed):
    with pytest.raises((TypeError, ValueError), match="^seed must be"):
        gb.minimize(lambda c: 1.0, SPACE, method="rs", budget=2, seed=seed)
    with pytest.raises((TypeError, ValueError), match="^seed must be"):
        RandomSearch(SPACE, seed=seed)


@pytest.mark.parametrize("failure_value", ["1", math.nan, math.inf, True])
def test_a_wrong_failure_value_is_refused_by_name(failure_value):
    with pytest.raises((TypeError, ValueError), match="^failure_value must be"):
        gb.minimize(lambda c: 1.0, SPACE, method="rs", budget=2, seed=0, failure_value=failure_value)


def _tensor(value):
    import torch

    return torch.tensor(value)


@pytest.mark.parametrize("value", ["1.0", b"1", True, False, np.bool_(True), 1 + 0j, np.complex128(1.0), None,
                                   np.array([1.0]), [1.0], 10 ** 400, math.nan, -math.inf])
def test_tell_refuses_what_is_not_a_real_number_and_stores_nothing(value):
    opt = RandomSearch(SPACE, seed=0)
    config = opt.ask()
    with pytest.raises(ValueError, match="^tell: value"):
        opt.tell(config, value)
    assert opt.n_told == 0 and opt.n_pending == 1


@pytest.mark.parametrize("value, expected", [(1, 1.0), (2.5, 2.5), (np.float32(0.5), 0.5), (np.int64(3), 3.0),
                                             (np.array(4.0), 4.0), ("tensor", 5.0)])
def test_tell_accepts_real_numbers_of_any_kind(value, expected):
    value = _tensor(5.0) if value == "tensor" else value
    opt = RandomSearch(SPACE, seed=0)
    config = opt.ask()
    opt.tell(config, value)
    assert opt.y.tolist() == [expected] and type(opt.best.value) is float


WORKER_OBJECTIVE = '''
import os, time
def objective(config):
    with open(os.path.join(os.environ["GBT_PIDS"], str(os.getpid())), "w"):
        pass
    time.sleep(60)  # an evaluation that takes long: its worker must not outlive the main process
    return float(config["a"])
'''

MAIN = '''
import graphbo as gb
from gbt_worker_objective import objective
space = gb.Space({"a": gb.Ordinal(list(range(10)))})
gb.minimize(objective, space, method="rs", budget=10, seed=0, n_workers=2, storage="s.db")
'''


def _alive(pid):
    """Whether process ``pid`` runs (a zombie waiting for its parent to collect it does not)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_pool_workers_end_with_a_killed_main_process(tmp_path):
    (tmp_path / "gbt_worker_objective.py").write_text(WORKER_OBJECTIVE)
    (tmp_path / "main.py").write_text(MAIN)
    pids = tmp_path / "pids"
    pids.mkdir()
    path = os.pathsep.join([str(tmp_path)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=path, GBT_PIDS=str(pids))
    main = subprocess.Popen([sys.executable, "main.py"], cwd=tmp_path, env=env)
    try:
        deadline = time.monotonic() + 120
        while len(list(pids.iterdir())) < 2 and time.monotonic() < deadline and main.poll() is None:
            time.sleep(0.1)
        workers = [int(p.name) for p in pids.iterdir()]
        assert len(workers) == 2 and all(map(_alive, workers)), "the workers did not start"
    finally:
        main.send_signal(signal.SIGKILL)
        main.wait()
    deadline = time.monotonic() + 5
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in workers if _alive(pid)]
    for pid in left:  # do not leave them behind this test either
        os.kill(pid, signal.SIGKILL)
    assert left == [], "pool workers outlived their killed main process"


# -- graphbo resume runs only what the user names -------------------------------------------------
USER_OBJECTIVE = '''
def objective(config):
    return float(config["touch"] + 10 * config["pwned"])
'''
# variable names that spell a command: subprocess.run(config) runs `touch pwned`
USER_SPACE = "variables:\n  touch: {type: ordinal, values: [0, 1, 2]}\n  pwned: {type: ordinal, values: [0, 1]}\n"


@pytest.fixture
def user_study(tmp_path, monkeypatch):
    """A study of a user's function made by `graphbo run` in ``work/``; the test continues from ``other/``."""
    from graphbo import objective_loading
    from graphbo.cli import main as cli_main

    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(objective_loading, "_LOADED", {})
    work, other = tmp_path / "work", tmp_path / "other"
    work.mkdir()
    other.mkdir()
    (work / "gbt_resume_objective.py").write_text(USER_OBJECTIVE)
    (work / "space.yaml").write_text(USER_SPACE)
    monkeypatch.chdir(work)
    assert cli_main(["run", "--space", "space.yaml", "--objective", "gbt_resume_objective:objective",
                     "--method", "rs", "--budget", "3", "--seed", "0", "--storage", "s.db", "--quiet"]) == 0
    monkeypatch.delitem(sys.modules, "gbt_resume_objective")
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != str(work)]
    monkeypatch.setattr(objective_loading, "_LOADED", {})
    monkeypatch.chdir(other)
    return work / "s.db", work, other


def _name_in_file(path, objective):
    """Edit the study file as someone else could: its stored objective becomes ``objective``."""
    from graphbo.spaces import load_space

    info = read_study_info(path)
    space = load_space(Path(path).parent / "space.yaml")
    with gb.Study(space, info["method"], storage=path, seed=info["seed"], **info["method_options"]) as study:
        study.set_user_attr("objective", objective)


def test_resume_never_runs_what_a_study_file_names_without_the_users_word(user_study, capsys):
    from graphbo.cli import main as cli_main

    path, work, other = user_study
    _name_in_file(path, "subprocess:run")
    before = path.read_bytes()
    capsys.readouterr()
    assert cli_main(["resume", str(path), "--budget", "4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--objective subprocess:run" in err and "--trust-stored-objective" in err
    assert not (other / "pwned").exists() and path.read_bytes() == before  # nothing ran, nothing written
    assert str(work) not in map(os.path.abspath, sys.path)
    # even trusted, a function of Python's standard library is no objective
    assert cli_main(["resume", str(path), "--budget", "4", "--trust-stored-objective"]) == 2
    assert "standard library (subprocess)" in capsys.readouterr().err
    assert not (other / "pwned").exists() and path.read_bytes() == before
    # a file naming other code: it runs only when the file is trusted (here it leaves a mark)
    (work / "gbt_marker.py").write_text("import pathlib\n\ndef objective(config):\n"
                                        "    pathlib.Path('marked').touch()\n    return 1.0\n")
    _name_in_file(path, "gbt_marker:objective")
    assert cli_main(["resume", str(path), "--budget", "4"]) == 2
    assert not (other / "marked").exists()
    assert cli_main(["resume", str(path), "--budget", "4", "--trust-stored-objective", "--quiet"]) == 0
    assert (other / "marked").exists() and "trusting" in capsys.readouterr().err


def test_resume_runs_the_objective_named_and_adds_no_stored_folder_to_the_path(user_study, capsys):
    from graphbo.cli import main as cli_main

    path, work, other = user_study
    capsys.readouterr()
    # the stored working folder is not searched: the module is not found from elsewhere
    assert cli_main(["resume", str(path), "--budget", "5", "--objective", "gbt_resume_objective:objective"]) == 2
    assert "objective module 'gbt_resume_objective' not found" in capsys.readouterr().err
    assert str(work) not in map(os.path.abspath, sys.path) and len(read_study_info(path)["user_attrs"]) > 0
    assert read_study_info(path)["n_complete"] == 3
    # named by its file, it runs, and the trials are its values
    spec = f"{work / 'gbt_resume_objective.py'}:objective"
    assert cli_main(["resume", str(path), "--budget", "5", "--objective", spec, "--quiet"]) == 0
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = conn.execute("SELECT config, status, value FROM trials ORDER BY number").fetchall()
    conn.close()
    assert len(rows) == 5
    for config, status, value in rows:
        c = json.loads(config)
        assert status == "complete" and value == c["touch"] + 10 * c["pwned"]
    # with the flag, the stored folder goes on sys.path, and the command says so
    capsys.readouterr()
    assert cli_main(["resume", str(path), "--budget", "6", "--trust-stored-objective", "--quiet"]) == 0
    assert f"with {work} put on sys.path" in capsys.readouterr().err
    assert read_study_info(path)["n_complete"] == 6


def test_resume_refuses_objective_flags_for_a_benchmark_study(tmp_path, capsys):
    from graphbo.cli import main as cli_main

    path = str(tmp_path / "b.db")
    assert cli_main(["run", "branin", "--method", "rs", "--budget", "3", "--storage", path, "--quiet"]) == 0
    capsys.readouterr()
    assert cli_main(["resume", path, "--objective", "os:system"]) == 2
    assert "applies to studies of your own function" in capsys.readouterr().err
    assert read_study_info(path)["n_complete"] == 3


@pytest.mark.parametrize("budget", ["ten", 2.5, None, True])
def test_resume_with_a_stored_budget_that_is_not_a_count_is_one_line(user_study, capsys, budget):
    from graphbo.cli import main as cli_main

    path, work, _ = user_study
    info = read_study_info(path)
    from graphbo.spaces import load_space

    with gb.Study(load_space(work / "space.yaml"), info["method"], storage=path, seed=info["seed"],
                  **info["method_options"]) as study:
        study.set_user_attr("budget", budget)
    capsys.readouterr()
    spec = f"{work / 'gbt_resume_objective.py'}:objective"
    assert cli_main(["resume", str(path), "--objective", spec, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "stored budget" in err and "--budget N" in err, err
    assert cli_main(["resume", str(path), "--objective", spec, "--budget", "4", "--quiet"]) == 0
