"""``Study.optimize`` is the one optimisation loop: in this process, in a process pool (``n_workers``) or in
an executor, as ``minimize`` (its thin wrapper) runs it."""

import concurrent.futures as cf
import os

import pytest

import graphbo as gb
from graphbo.storage.info import read_study_info
from graphbo.study import Study

SPACE = gb.Space({"a": gb.Ordinal(list(range(6))), "b": gb.Categorical(["x", "y", "z"])})


def pid_value(config):
    """A module-level (picklable) objective whose value says which process evaluated it."""
    return float(os.getpid()) + config["a"] / 10


def test_a_study_evaluates_in_worker_processes_with_n_workers(tmp_path):
    with Study(SPACE, "rs", storage=tmp_path / "s.db", seed=0) as study:
        returned = study.optimize(pid_value, 8, n_workers=2)
        assert returned is study and study.n_finished == 8
        pids = {int(t.value) for t in study.complete_trials}
    assert pids and os.getpid() not in pids  # none evaluated here
    info = read_study_info(tmp_path / "s.db")
    assert info["n_complete"] == 8


def test_a_study_evaluates_in_a_given_executor_and_refuses_what_cannot_travel():
    with cf.ThreadPoolExecutor(2) as pool, Study(SPACE, "rs", seed=1) as study:
        study.optimize(pid_value, 5, executor=pool, n_workers=2)
        assert {int(t.value) for t in study.complete_trials} == {os.getpid()}  # threads: this process
        with pytest.raises(TypeError, match="picklable"):
            study.optimize(lambda c: 1.0, 7, n_workers=2)
        with pytest.raises(ValueError, match="n_workers"):
            study.optimize(pid_value, 7, n_workers=0)
    with Study(SPACE, "rs", seed=2, pruner=gb.MedianPruner()) as pruned:
        with pytest.raises(ValueError, match="pruner"):
            pruned.optimize(pid_value, 3, n_workers=2)
