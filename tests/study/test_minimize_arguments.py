"""What an Optuna or scikit-learn user types into minimize: other libraries' words refused with graphbo's, budgets
that are not a number of evaluations refused, a budget inside the initial design warned about, and an objective
that fails the same way from the start stopped."""

from __future__ import annotations

import warnings

import pytest

import graphbo as gb
from graphbo.exceptions import ObjectiveFailingError
from graphbo.storage.info import read_study_info
from graphbo.study import Study

SPACE = gb.Space({"a": gb.Ordinal(list(range(12))), "b": gb.Categorical(["x", "y"])})


def f(c):
    return (c["a"] - 4) ** 2 + (c["b"] == "y")


@pytest.mark.parametrize("word, ours", [("n_trials", "budget"), ("n_jobs", "n_workers"),
                                        ("maximize", "direction='maximize'")])
def test_optunas_words_are_refused_with_graphbos(word, ours):
    with pytest.raises(TypeError, match=f"got {word}=.*graphbo's word is {ours}"):
        gb.minimize(f, SPACE, method="rs", **{word: 3})


@pytest.mark.parametrize("budget", [12.0, 2.5, float("nan"), True, "12"])
def test_a_budget_is_an_integer(budget):
    with pytest.raises((TypeError, ValueError), match="budget"):
        gb.minimize(f, SPACE, method="rs", budget=budget)


def test_a_budget_inside_the_initial_design_is_warned_about():
    with pytest.warns(UserWarning, match=r"budget=5 is not above the initial design \(n_initial=10\)"):
        gb.minimize(f, SPACE, method="combo", budget=5, seed=0, n_burn=5, n_samples=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gb.minimize(f, SPACE, method="rs", budget=5, seed=0)  # random search is random throughout: no warning


def test_an_objective_that_fails_the_same_way_from_the_start_stops_the_run(tmp_path):
    def wrong_signature(config, extra):
        return 0.0

    path = tmp_path / "s.db"
    with pytest.raises(ObjectiveFailingError, match="first 10 evaluations all failed with the same error, "
                                                    "TypeError: .*missing 1 required positional argument"):
        gb.minimize(wrong_signature, SPACE, method="rs", budget=40, seed=0, storage=str(path))
    assert read_study_info(path)["n_failed"] == 10
    with pytest.raises(ObjectiveFailingError, match="first 3 evaluations"):
        Study(SPACE, "rs", seed=0).optimize(wrong_signature, 40, stop_after_failures=3)


def test_failures_that_differ_or_follow_a_success_do_not_stop_the_run():
    calls = []

    def first_ok_then_fails(c):
        calls.append(c)
        if len(calls) > 1:
            raise RuntimeError("down")
        return 1.0

    result = gb.minimize(first_ok_then_fails, SPACE, method="rs", budget=12, seed=0)
    assert len(result.trials) == 12
    result = gb.minimize(lambda c: 1 / 0 if c["b"] == "x" else [][1], SPACE, method="rs", budget=12, seed=0,
                         stop_after_failures=None)
    assert len(result.trials) == 12


def test_different_errors_do_not_stop_the_run():
    def varied(c):
        raise ValueError(f"bad a={c['a']} b={c['b']}")

    study = Study(SPACE, "rs", seed=0).optimize(varied, 10)
    assert len(study.failed_trials) == 10
