"""A lost Dask cluster stops a parallel run with one clear error and leaves nothing false behind: the trials in
flight stay running, to be evaluated when the study is resumed, never failed for good."""

from __future__ import annotations

import sqlite3
import time

import pytest

import graphbo as gb
from graphbo.exceptions import ExecutorLostError

distributed = pytest.importorskip("distributed")

SPACE = gb.Space({"a": gb.Ordinal(list(range(50)))})


def slow(c):
    time.sleep(0.3)
    return float(c["a"])


def test_a_cluster_lost_mid_run_leaves_its_trials_running_for_the_resume(tmp_path):
    path = str(tmp_path / "s.db")
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0")
    client = distributed.Client(cluster)
    client.wait_for_workers(2)
    told = []

    def close_after_four(*args):
        told.append(args[0])
        if len(told) == 4:
            cluster.close()  # the scheduler and its workers go away while two evaluations are in flight

    try:
        with pytest.raises(ExecutorLostError, match="the executor (lost|refused).*resume it"):
            gb.minimize(slow, SPACE, method="rs", budget=20, seed=0, storage=path, n_workers=2,
                        executor=client.get_executor(), callback=close_after_four)
    finally:
        client.close()
        cluster.close()
    conn = sqlite3.connect(path)
    statuses = dict(conn.execute("SELECT status, COUNT(*) FROM trials GROUP BY status").fetchall())
    conn.close()
    assert statuses.get("failed", 0) == 0 and statuses["complete"] >= 4 and statuses.get("running", 0) >= 1
    result = gb.minimize(slow, SPACE, method="rs", budget=8, seed=0, storage=path)  # resumed in this process
    assert result.n_complete == 8 and result.n_failed == 0
