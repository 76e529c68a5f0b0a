"""Reliability follow-ups: an ask that copies nothing proportional to the study, ``minimize(max_retries=)``,
``Study``'s seed and value checks through ``graphbo._validation``, ``graphbo resume``'s budget check before it
prints, and the resume command printed after an interrupted run of a user's function.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import signal
import shlex
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import graphbo as gb
from graphbo.cli import main as cli_main
from graphbo.exceptions import SpaceExhaustedError
from graphbo.optimizers import METHODS
from graphbo.storage.info import read_study_info
from graphbo.study import Study

SRC = str(Path(__file__).resolve().parents[2] / "src")
ENV = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))


def ordinal3_categorical_ordinal3_space():
    return gb.Space({"a": gb.Ordinal([0, 1, 2]), "b": gb.Categorical(["x", "y", "z"]), "c": gb.Ordinal([0, 1, 2])})


def f(c):
    return (c["a"] - 1) ** 2 + {"x": 0.0, "y": 1.5, "z": 0.5}[c["b"]] + 0.3 * c["c"]


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# -- a. ask: O(1) in the number of trials -------------------------------------------------------------------------
def _ask_peak_bytes(n_told: int) -> int:
    """Peak bytes allocated by one random-search ``ask`` after ``n_told`` tells on a space of 2^20 points."""
    space = gb.Space({f"x{i}": gb.Binary() for i in range(20)})
    opt = METHODS["rs"](space, seed=0, n_initial=0)
    rng = np.random.default_rng(1)
    rows = np.unique(rng.integers(0, 2, size=(n_told + n_told // 4 + 8, 20)), axis=0)[:n_told]
    for r in rows:
        opt.tell(space.from_index(r), 0.0)
    assert opt.n_told == n_told
    opt.ask()  # warm up (first-call caches)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        opt.ask()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_an_ask_allocates_nothing_that_grows_with_the_trials():
    small, large = _ask_peak_bytes(100), _ask_peak_bytes(20_000)
    # copying 20,000 excluded rows into a set allocates about 2 MiB per ask (before: 8.5 KiB at 100 trials,
    # 2.0 MiB at 20,000); the view copies none (2.1 KiB at both)
    assert large < small + 32 * 1024, (small, large)


# -- a'. tell and re-open: the same SQL work at any size (the load promise without a clock) ------------------
def _traced_study(path, monkeypatch):
    """A study on ``path`` whose SQLite connections record every statement they run (in the returned list)."""
    import sqlite3

    statements: list[str] = []
    connect = sqlite3.connect

    def traced(*args, **kwargs):
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced)
    return statements


def _shapes(statements):
    """The statements with their literal values (strings, numbers, blobs) replaced by ``?``."""
    import re

    out = []
    for text in statements:
        text = re.sub(r"X?'(?:[^']|'')*'", "?", text)
        out.append(re.sub(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])", "?", text))
    return out


def _filled(path, n):
    space = gb.Space({f"x{i}": gb.Binary() for i in range(20)})
    rows = np.unique(np.random.default_rng(2).integers(0, 2, size=(n + n // 4 + 8, 20)), axis=0)[:n + 1]
    with Study(space, "rs", storage=str(path), seed=0, n_initial=0) as study:
        for r in rows[:n]:
            study.tell(space.from_index(r), float(r.sum()))
    return space, space.from_index(rows[n])


@pytest.fixture(scope="module")
def filled_studies(tmp_path_factory):
    """Study files of 200 and 3,000 told trials (built once: 3,000 synchronous commits take seconds), with the
    space and a configuration not told yet."""
    folder = tmp_path_factory.mktemp("filled")
    return {n: (folder / f"s{n}.db", *_filled(folder / f"s{n}.db", n)) for n in (200, 3000)}


@pytest.mark.parametrize("what", ["tell", "re-open"])
def test_a_tell_and_a_re_open_run_the_same_sql_and_allocate_alike_at_200_and_3000_trials(tmp_path, monkeypatch,
                                                                                         what, filled_studies):
    """A tell writes one transaction whatever the study's size, and re-opening reads the trials with a fixed
    number of statements (no query per trial); a tell's Python allocations do not grow with the trials either.
    The measured times are in docs/reliability.md (benchmarks/study_load.py)."""
    import shutil

    seen = {}
    for n in (200, 3000):
        source, space, fresh = filled_studies[n]
        path = tmp_path / f"s{n}.db"
        shutil.copyfile(source, path)  # each case tells into its own copy
        statements = _traced_study(path, monkeypatch)
        study = Study(space, "rs", storage=str(path), seed=0, n_initial=0)
        try:
            opened = _shapes(statements)
            statements.clear()
            tracemalloc.start()
            try:
                study.tell(fresh, 1.0)
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            told = _shapes(statements)
        finally:
            study.close()
            monkeypatch.undo()
        assert study.n_finished == n + 1
        seen[n] = (opened, told, peak)
    if what == "tell":
        assert seen[200][1] == seen[3000][1] and seen[200][1]  # the same statements, in the same order
        assert seen[3000][2] < seen[200][2] + 64 * 1024, (seen[200][2], seen[3000][2])
    else:
        assert len(seen[200][0]) == len(seen[3000][0]) > 0, (len(seen[200][0]), len(seen[3000][0]))


def test_the_excluded_view_is_the_union_of_evaluated_and_pending():
    from graphbo.optimizers.base import _Excluded

    evaluated, pending = {b"a", b"b"}, {b"b": None, b"c": None}
    view = _Excluded(evaluated, pending)
    assert len(view) == 3 and sorted(view) == [b"a", b"b", b"c"]
    assert b"a" in view and b"c" in view and b"d" not in view
    assert view | {b"d"} == {b"a", b"b", b"c", b"d"} and isinstance(view - {b"a"}, set)
    pending[b"d"] = None  # a view: later changes show
    evaluated.add(b"e")
    assert len(view) == 5 and b"d" in view and b"e" in view


@pytest.mark.parametrize("method", ["rs", "sa", "re", "tpe"])
def test_suggestions_are_never_told_failed_or_pending_ones(method):
    space = ordinal3_categorical_ordinal3_space()
    opt = METHODS[method](space, seed=3, n_initial=4)
    seen, pending = [], []
    while len(seen) < space.size:
        config = opt.ask()
        assert config not in seen, f"{method} suggested {config} again"
        seen.append(config)
        pending.append(config)
        if len(pending) > 2:  # keep two in flight; fail every fifth, tell the others
            done = pending.pop(0)
            opt.mark_failed(done) if len(seen) % 5 == 0 else opt.tell(done, f(done))
    assert opt.n_pending == len(pending) == 2
    with pytest.raises(SpaceExhaustedError):
        opt.ask()


def test_exhaustion_counts_a_pending_row_once():
    space = ordinal3_categorical_ordinal3_space()
    opt = METHODS["rs"](space, seed=0, n_initial=0)
    configs = [opt.ask() for _ in range(space.size - 1)]
    for c in configs:
        opt.tell(c, f(c))
    last = opt.ask()  # the one configuration left, pending
    assert last not in configs
    with pytest.raises(SpaceExhaustedError):
        opt.ask()
    opt.tell(last, f(last))
    assert len(opt.excluded_rows) == space.size


# -- b. minimize(max_retries=) ----------------------------------------------------------------------------------------
def test_minimize_takes_max_retries_and_checks_it_by_name(tmp_path):
    assert inspect.signature(gb.minimize).parameters["max_retries"].default == 1
    path = tmp_path / "s.db"
    with pytest.raises(ValueError, match="^max_retries must be >= 0"):
        gb.minimize(f, ordinal3_categorical_ordinal3_space(), method="rs", budget=3, seed=0, storage=str(path),
                    max_retries=-1)
    with pytest.raises(TypeError, match="^max_retries must be an integer"):
        gb.minimize(f, ordinal3_categorical_ordinal3_space(), method="rs", budget=3, seed=0, storage=str(path),
                    max_retries="1")
    assert not path.exists()


def test_minimize_max_retries_decides_how_often_a_crashed_trial_runs_again(tmp_path):
    path, poison = str(tmp_path / "s.db"), tmp_path / "poison.json"
    code = f"""
        import json, os, sys
        sys.path.insert(0, {SRC!r})
        import graphbo as gb
        space = gb.Space({{"a": gb.Ordinal([0, 1, 2]), "b": gb.Categorical(["x", "y", "z"]),
                          "c": gb.Ordinal([0, 1, 2])}})
        calls = []
        def dies_on_the_poison(c):  # the third configuration of the first run, every time it is evaluated
            calls.append(c)
            if len(calls) == 3 and not os.path.exists({str(poison)!r}):
                open({str(poison)!r}, "w").write(json.dumps(c))
            if os.path.exists({str(poison)!r}) and c == json.load(open({str(poison)!r})):
                os._exit(7)
            return float(c["a"])
        gb.minimize(dies_on_the_poison, space, method="rs", budget=6, seed=0, storage={path!r}, n_initial=2, max_retries=2)
    """
    for _ in range(3):  # the first evaluation and 2 retries (the default, 1, would fail it at the third run)
        dead = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=ENV, capture_output=True,
                              text=True, timeout=120)
        assert dead.returncode == 7, dead.stderr
    result = gb.minimize(f, ordinal3_categorical_ordinal3_space(), method="rs", budget=6, seed=0, storage=path,
                         n_initial=2,
                         max_retries=2)
    failed = [t for t in result.trials if t.status == "failed"]
    assert len(failed) == 1 and failed[0].crashes == 3 and "max_retries=2" in failed[0].error
    assert failed[0].config == json.loads(poison.read_text())
    assert (result.n_complete, len(result.trials)) == (5, 6)


# -- c. Study: seed and values through graphbo._validation ------------------------------------------------------------
@pytest.mark.parametrize("seed, error, message", [("abc", TypeError, "^seed must be an integer"),
                                                  (-1, ValueError, "^seed must be >= 0"),
                                                  (1.5, TypeError, "^seed must be an integer"),
                                                  (True, TypeError, "^seed must be an integer")])
def test_study_names_a_wrong_seed(seed, error, message, tmp_path):
    with pytest.raises(error, match=message):
        Study(ordinal3_categorical_ordinal3_space(), "rs", storage=str(tmp_path / "s.db"), seed=seed)
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize("value", [np.bool_(True), complex(1, 0), np.complex128(2), "1.0", b"1", True, None,
                                   np.array([1.0, 2.0]), 10**400, float("nan")],
                         ids=["np.bool_", "complex", "np.complex128", "str", "bytes", "bool", "None", "array",
                              "10**400", "nan"])
def test_study_tell_and_fail_refuse_what_is_not_a_finite_real_number(value):
    with Study(ordinal3_categorical_ordinal3_space(), "rs", seed=0) as study:
        trial = study.ask()
        with pytest.raises(ValueError, match="^tell: value"):
            study.tell(trial, value)
        if value is not None:  # fail(value=None): no penalty
            with pytest.raises(ValueError, match="^fail: penalty value"):
                study.fail(trial, "boom", value=value)
        assert [t.status for t in study.trials] == ["running"] and study.optimizer.n_told == 0


@pytest.mark.parametrize("value, expected", [(np.float32(0.5), 0.5), (np.int64(3), 3.0), (np.array(2.5), 2.5),
                                             (7, 7.0)])
def test_study_tell_takes_real_numbers_of_any_kind(value, expected):
    with Study(ordinal3_categorical_ordinal3_space(), "rs", seed=0) as study:
        trial = study.tell(study.ask(), value)
        assert trial.value == expected and type(trial.value) is float


# -- d. graphbo resume: the budget checked before anything is printed -------------------------------------------------
def test_resume_with_a_budget_below_the_finished_trials_prints_one_error_line_only(tmp_path, capsys):
    path = str(tmp_path / "b.db")
    assert cli_main(["run", "branin", "--method", "rs", "--budget", "16", "--seed", "0", "--storage", path,
                     "--quiet"]) == 0
    capsys.readouterr()
    before = sha256(path)
    assert cli_main(["resume", path, "--budget", "12"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "16/12" not in err
    assert err.splitlines() == [f"graphbo resume: {path} already has 16 finished trials, more than the budget 12; "
                                "give --budget 16 or more"]
    assert sha256(path) == before


@pytest.mark.parametrize("flag, value", [("--budget", "0"), ("--budget", "2.5"), ("--workers", "0"),
                                         ("--timeout", "-1"), ("--timeout", "nan")])
def test_resume_refuses_a_wrong_count_or_timeout_in_argparse(flag, value, tmp_path, capsys):
    assert cli_main(["resume", str(tmp_path / "none.db"), flag, value]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith(f"graphbo resume: {flag}"), err


# -- e. the resume command printed after an interrupted run of a user's function ---------------------------------------
OBJECTIVE = '''
import os, signal
calls = []

def objective(config):
    calls.append(config)
    if len(calls) == 3 and not os.path.exists("interrupted"):
        open("interrupted", "w").close()
        os.kill(os.getpid(), signal.SIGINT)  # as Ctrl-C during the third evaluation
    return float(config["a"] + 2 * config["b"])
'''


def test_an_interrupted_run_of_a_users_function_prints_a_resume_command_that_works(tmp_path):
    (tmp_path / "gbt_followup_objective.py").write_text(OBJECTIVE)
    (tmp_path / "space.yaml").write_text("variables:\n  a: {type: ordinal, values: [0, 1, 2, 3]}\n"
                                         "  b: {type: ordinal, values: [0, 1]}\n")

    def graphbo(*argv):
        # SIGINT at its default in the child, even when the tests run in a background job (which ignores it)
        return subprocess.run([sys.executable, "-m", "graphbo", *argv], cwd=tmp_path, env=ENV, capture_output=True,
                              text=True, timeout=300, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    first = graphbo("run", "--space", "space.yaml", "--objective", "gbt_followup_objective:objective",
                    "--method", "rs", "--budget", "6", "--seed", "0", "--storage", "s.db", "--quiet")
    assert first.returncode == 130, first.stderr
    command = first.stderr.strip().splitlines()[-1].split("continue with: ")[1]
    assert command == "graphbo resume s.db --objective gbt_followup_objective:objective"
    argv = shlex.split(command)
    resumed = graphbo(*argv[1:], "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    info = read_study_info(str(tmp_path / "s.db"))
    assert (info["n_complete"], info["n_failed"], info["n_running"]) == (6, 0, 0)
