"""graphbo.threads: one thread by default, the user's choice (argument or environment) otherwise."""

import pytest
import torch
from threadpoolctl import threadpool_info

from graphbo.threads import (AUTO, DEFAULT_THREADS, ENVIRONMENT_VARIABLES, check_threads, limit_threads,
                             resolve_threads)


@pytest.fixture
def no_thread_variables(monkeypatch):
    for name in ENVIRONMENT_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def two_torch_threads():
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(old)


def blas_threads():
    return sorted({pool["num_threads"] for pool in threadpool_info()})


def test_auto_is_one_thread_when_the_environment_does_not_choose(no_thread_variables, monkeypatch):
    assert DEFAULT_THREADS == 1
    assert resolve_threads(AUTO) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", " ")  # set but blank chooses nothing
    assert resolve_threads("auto") == 1


@pytest.mark.parametrize("variable", ENVIRONMENT_VARIABLES)
def test_auto_leaves_the_settings_alone_when_the_environment_chooses(no_thread_variables, monkeypatch, variable):
    monkeypatch.setenv(variable, "4")
    assert resolve_threads(AUTO) is None


def test_an_explicit_count_or_none_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    assert resolve_threads(1) == 1 and resolve_threads(3) == 3 and resolve_threads(None) is None


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "many", "1"])
def test_bad_counts_are_refused_naming_the_argument(bad):
    with pytest.raises(ValueError, match=r"^n_threads must be a positive integer, None or 'auto'"):
        check_threads(bad)
    with pytest.raises(ValueError, match=r"^--threads must be"):
        check_threads(bad, "--threads")
    with pytest.raises(ValueError, match="n_threads"):
        with limit_threads(bad):
            pass


def test_limit_threads_auto_sets_one_thread_and_restores(no_thread_variables, two_torch_threads):
    with limit_threads(AUTO):
        assert torch.get_num_threads() == 1
        assert blas_threads() in ([], [1])
    assert torch.get_num_threads() == 2


def test_limit_threads_auto_under_omp_num_threads_changes_nothing(no_thread_variables, monkeypatch,
                                                                  two_torch_threads):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    before = blas_threads()
    with limit_threads(AUTO):
        assert torch.get_num_threads() == 2
        assert blas_threads() == before
    assert torch.get_num_threads() == 2


def test_limit_threads_restores_after_an_error(two_torch_threads):
    with pytest.raises(RuntimeError):
        with limit_threads(1):
            assert torch.get_num_threads() == 1
            raise RuntimeError("inside")
    assert torch.get_num_threads() == 2
