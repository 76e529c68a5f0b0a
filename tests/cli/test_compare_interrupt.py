"""Ctrl-C and SIGKILL of `graphbo compare --workers 2`, on the real command line: nothing keeps running, no
queued run starts, and the runs continue at once when the command is given again."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from graphbo.storage import SQLiteStorage

SRC = str(Path(__file__).resolve().parents[2] / "src")
COMMAND = [sys.executable, "-m", "graphbo", "compare", "branin", "--methods", "combo", "--seeds", "0-7",
           "--budget", "80", "--workers", "2"]


def start(out: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([*COMMAND, "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env, start_new_session=True)


def wait_for_runs(out: Path, timeout: float = 60.0) -> None:
    """Until both workers have a run with a few evaluations."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if len(list(out.glob("combo/seed*.db"))) >= 2:
            time.sleep(1.5)
            return
        time.sleep(0.2)
    raise AssertionError("the runs did not start")


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def assert_runs_free(out: Path) -> None:
    """Every run's lock can be taken and no study file names a live writer."""
    for db in out.glob("combo/seed*.db"):
        with open(str(db) + ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if a process still runs it
            fcntl.flock(lock, fcntl.LOCK_UN)
        writer = SQLiteStorage(str(db)).writer()
        assert writer is None or not _alive(writer["pid"]), writer


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.skipif(sys.platform != "linux", reason="process groups and signals as on Linux")
def test_ctrl_c_stops_every_worker_within_seconds_and_starts_no_queued_run(tmp_path):
    out = tmp_path / "cmp"
    proc = start(out)
    wait_for_runs(out)
    sent = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal sends: the whole group
    output, _ = proc.communicate(timeout=30)
    stopped = time.monotonic() - sent
    assert stopped < 5.0, (stopped, output)
    assert "interrupted" in output
    time.sleep(0.5)
    assert not group_alive(proc.pid)
    assert len(list(out.glob("combo/seed*.db"))) <= 4  # the two in flight (and at most the two prefetched)
    assert_runs_free(out)


@pytest.mark.skipif(sys.platform != "linux", reason="process groups and signals as on Linux")
def test_a_killed_compare_leaves_no_worker_behind(tmp_path):
    out = tmp_path / "cmp"
    proc = start(out)
    wait_for_runs(out)
    workers = [int(p) for p in subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True,
                                                  text=True).stdout.split() if int(p) != proc.pid]
    assert workers
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    end = time.monotonic() + 5.0
    while any(_alive(w) for w in workers) and time.monotonic() < end:
        time.sleep(0.1)
    assert not [w for w in workers if _alive(w)]
    assert_runs_free(out)
