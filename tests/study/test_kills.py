"""SIGKILL of a run: during a parallel run with process workers or a Dask local cluster, and
inside a SQLite write transaction. At most the evaluations in flight are lost, no told one is lost, changed or
duplicated, the file stays sound, the workers end with the main process, and a resume finishes the run to its
budget (with the uninterrupted run's trace, where the run is sequential and so deterministic).

Each run is a real ``graphbo.minimize`` in a child process (its own session, so that its workers can be
counted as its process group), killed at the chosen moment, then resumed by the same script.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from graphbo.storage import StorageError
from graphbo.storage.info import read_study_info

#: a project-wide check: CI's second step (`python -m pytest -m "checks and not slow"`), not the default run
pytestmark = pytest.mark.checks

SRC = str(Path(__file__).resolve().parents[2] / "src")
BUDGET = 30

OBJECTIVE = """
import os, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))

def value(config):
    return float((config["a"] - 3) ** 2 + 2 * config["b"] + 0.5 * config["c"])

def objective(config):  # module level in a file: process and Dask workers import it
    # from the 10th evaluation on, each one holds (in whichever worker runs it) until the file "release"
    # exists: the run is then certainly killed with evaluations in flight and the earlier ones told
    calls = os.path.join(HERE, "calls")
    os.makedirs(calls, exist_ok=True)
    fd, _ = tempfile.mkstemp(dir=calls)
    os.close(fd)
    release = os.path.join(HERE, "release")
    if len(os.listdir(calls)) >= 10 and not os.path.exists(release):
        open(os.path.join(HERE, "in_flight"), "w").close()
        while not os.path.exists(release):
            time.sleep(0.02)
    time.sleep(0.04 + 0.01 * config["c"])
    return value(config)
"""

RUN = """
import json, sys
sys.path[:0] = [{src!r}, {work!r}]
import graphbo as gb
import kill_objective


def main(path, log_path, pool):
    space = gb.Space({{"a": gb.Ordinal(list(range(8))), "b": gb.Ordinal(list(range(6))), "c": gb.Binary()}})
    log = open(log_path, "a")

    def told(number, config, value, optimizer, seconds):  # called once the tell is stored
        log.write(json.dumps([number, value]) + "\\n")
        log.flush()

    kwargs = dict(budget={budget}, seed=0, storage=path, n_workers=2, callback=told, n_initial=5)
    if pool == "dask":
        import distributed
        with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                      dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
            client.wait_for_workers(2)
            result = gb.minimize(kill_objective.objective, space, method="rs", executor=client.get_executor(), **kwargs)
    else:
        result = gb.minimize(kill_objective.objective, space, method="rs", **kwargs)
    print("done", result.n_complete, result.n_failed, flush=True)

if __name__ == "__main__":
    main(*sys.argv[1:])
"""


def told_in_log(log: Path) -> dict[int, float]:
    out: dict[int, float] = {}
    if log.exists():
        for line in log.read_text().splitlines():
            try:
                number, value = json.loads(line)
            except ValueError:  # a line cut by the kill
                continue
            out[int(number)] = float(value)
    return out


def stored(path: Path) -> list[tuple[int, str, str, float | None]]:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        return conn.execute("SELECT number, status, config, value FROM trials ORDER BY number").fetchall()
    finally:
        conn.close()


def integrity(path: Path) -> str:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def n_running(path: Path) -> int:
    try:
        return read_study_info(str(path))["n_running"]
    except StorageError:  # not created yet
        return 0


def group_alive(pgid: int) -> bool:
    """Whether a process of the group ``pgid`` still runs (zombies, dead but not yet reaped by a parent that
    does not wait for them, do not count)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):  # the process ended while it was read
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":  # fields: state, ppid, pgrp, ...
            return True
    return False


@pytest.mark.parametrize("pool", ["process", "dask"])
def test_sigkill_during_a_parallel_run_loses_no_told_evaluation_and_leaves_no_worker(tmp_path, pool):
    if pool == "dask":
        pytest.importorskip("distributed")
    (tmp_path / "kill_objective.py").write_text(textwrap.dedent(OBJECTIVE))
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(RUN.format(src=SRC, work=str(tmp_path), budget=BUDGET)))
    path, log = tmp_path / "study.db", tmp_path / "told.log"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    argv = [sys.executable, str(script), str(path), str(log), pool]

    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:  # the workers hold the 10th evaluation on
        if (tmp_path / "in_flight").exists() and len(told_in_log(log)) >= 8 and n_running(path) > 0:
            break
        time.sleep(0.01)
    assert proc.poll() is None, f"the run ended before the kill: {proc.communicate()[1][-2000:]}"
    assert (tmp_path / "in_flight").exists(), "no evaluation was held"
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()

    # the workers end with the main process (PR_SET_PDEATHSIG for the own pool; Dask's nannies see their
    # parent die), within seconds
    deadline = time.monotonic() + 15
    while group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    orphaned = group_alive(proc.pid)
    if orphaned:
        os.killpg(proc.pid, signal.SIGKILL)
    assert not orphaned, f"{pool} workers outlived the killed main process"

    assert integrity(path) == "ok"
    after_kill = stored(path)
    told = told_in_log(log)
    told.update({n: v for n, s, _, v in after_kill if s == "complete"})
    assert len(told) >= 8

    (tmp_path / "release").touch()  # the resumed run's evaluations do not hold
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert integrity(path) == "ok"

    sys.path.insert(0, str(tmp_path))
    try:
        from kill_objective import value  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
    final = stored(path)
    complete = {n: (json.loads(c), v) for n, s, c, v in final if s == "complete"}
    assert len(complete) == BUDGET and len(final) == BUDGET  # nothing failed, nothing left running
    assert all(complete[n][1] == v for n, v in told.items())  # no told evaluation lost or changed
    assert all(v == value(c) for c, v in complete.values())  # no value altered
    configs = [json.dumps(c, sort_keys=True) for c, _ in complete.values()]
    assert len(set(configs)) == BUDGET  # none evaluated twice


# -- SIGKILL inside a SQLite write transaction --------------------------------------------------------------------
PAUSED_RUN = """
import json, os, sqlite3, sys, time
sys.path[:0] = [{src!r}, {work!r}]
import graphbo as gb
import kill_objective

path, log_path, pause_at, marker = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
state = {{"n": 0, "tell": False}}
connect = sqlite3.connect

def traced(*args, **kwargs):  # every connection of the store: stop inside the chosen write transaction
    conn = connect(*args, **kwargs)

    def hook(statement):  # called as each statement starts
        if pause_at == "none":
            return
        if statement == "BEGIN IMMEDIATE":
            state["tell"] = False
        elif statement.startswith("UPDATE trials SET status = 'complete'") and not state["tell"]:
            state["tell"] = True  # this transaction records a finished trial
            state["n"] += 1
        elif state["tell"] and state["n"] == 12 and (
                pause_at == "mid-write" and statement.startswith("UPDATE trials SET checksum")
                or pause_at == "before-commit" and statement == "COMMIT"):
            open(marker, "w").close()
            time.sleep(600)  # killed here, inside the open transaction

    conn.set_trace_callback(hook)
    return conn

sqlite3.connect = traced
space = gb.Space({{"a": gb.Ordinal(list(range(8))), "b": gb.Ordinal(list(range(6))), "c": gb.Binary()}})
log = open(log_path, "a")

def told(number, config, value, optimizer, seconds):
    log.write(json.dumps([number, value]) + "\\n")
    log.flush()

result = gb.minimize(kill_objective.objective, space, method="rs", budget={budget}, seed=0, storage=path, callback=told,
                     n_initial=5)
print("done", result.n_complete, flush=True)
"""


@pytest.mark.parametrize("pause_at", ["mid-write", "before-commit"])
def test_sigkill_inside_a_sqlite_write_keeps_every_told_evaluation_and_resumes_to_the_same_trace(tmp_path, pause_at):
    """The child stops inside the write transaction that records its 12th finished trial (after the trial's
    row was updated, as its checksum is written, or just before its COMMIT) and is SIGKILLed there: the file passes SQLite's integrity
    check, the transaction is rolled back (that trial was not yet told: its tell had not returned), every
    earlier told value is kept, and the resumed run ends with exactly the trace of an uninterrupted run."""
    (tmp_path / "kill_objective.py").write_text(textwrap.dedent(OBJECTIVE))
    (tmp_path / "release").touch()  # this test stops the run inside SQLite, not in an evaluation
    script = tmp_path / "paused.py"
    script.write_text(textwrap.dedent(PAUSED_RUN.format(src=SRC, work=str(tmp_path), budget=BUDGET)))
    env = dict(os.environ, OMP_NUM_THREADS="1")
    path, log, marker = tmp_path / "study.db", tmp_path / "told.log", tmp_path / "paused"

    proc = subprocess.Popen([sys.executable, str(script), str(path), str(log), pause_at, str(marker)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 120
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert marker.exists(), f"the child never paused: {proc.communicate()[1][-2000:]}"
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()

    assert integrity(path) == "ok"
    told = told_in_log(log)
    assert len(told) == 11  # the 12th trial's write was in progress: not told
    after_kill = {n: (s, v) for n, s, _, v in stored(path)}
    assert all(after_kill[n] == ("complete", v) for n, v in told.items())
    assert after_kill[11][0] == "running"  # rolled back to its state before the write

    done = subprocess.run([sys.executable, str(script), str(path), str(log), "none", str(marker)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    reference = tmp_path / "reference.db"
    clean = subprocess.run([sys.executable, str(script), str(reference), str(tmp_path / "ref.log"), "none",
                            str(marker)], env=env, capture_output=True, text=True, timeout=300)
    assert clean.returncode == 0, clean.stderr[-2000:]
    final = stored(path)
    assert [(n, s, c, v) for n, s, c, v in final] == [(n, s, c, v) for n, s, c, v in stored(reference)]
    values = {n: v for n, _, _, v in final}
    assert all(values[n] == v for n, v in told.items())  # every told value kept
