"""GraphboSearchCV: a scikit-learn search estimator whose candidates come from a graphbo study."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import graphbo as gb

pytest.importorskip("sklearn")
from sklearn.datasets import load_breast_cancer, load_iris  # noqa: E402
from sklearn.exceptions import FitFailedWarning  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

from graphbo.sklearn import GraphboSearchCV  # noqa: E402

SPACE = {"C": gb.Continuous(1e-3, 1e3, log=True), "kernel": gb.Categorical(["rbf", "poly", "sigmoid"]),
         "degree": gb.Ordinal([2, 3, 4])}


def test_a_search_scores_budget_candidates_and_refits_the_best():
    X, y = load_iris(return_X_y=True)
    search = GraphboSearchCV(SVC(), SPACE, budget=10, cv=3, seed=0).fit(X, y)
    results = search.cv_results_
    assert len(results["params"]) == 10
    best = int(np.argmax(results["mean_test_score"]))
    assert search.best_index_ == best and search.best_params_ == results["params"][best]
    assert search.best_score_ == results["mean_test_score"][best]
    assert search.best_estimator_.get_params()["C"] == search.best_params_["C"]
    assert search.score(X, y) == search.best_estimator_.score(X, y)
    assert all(p["kernel"] in ("rbf", "poly", "sigmoid") and 1e-3 <= p["C"] <= 1e3 for p in results["params"])


def test_the_same_seed_gives_the_same_candidates():
    X, y = load_iris(return_X_y=True)
    runs = [GraphboSearchCV(SVC(), SPACE, budget=8, cv=3, seed=s).fit(X, y).cv_results_["params"] for s in (3, 3, 4)]
    assert runs[0] == runs[1] and runs[0] != runs[2]


def test_a_pipeline_and_candidates_whose_fits_fail():
    X, y = load_breast_cancer(return_X_y=True)
    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=200))
    space = {"logisticregression__C": gb.Continuous(1e-2, 1e2, log=True),
             "logisticregression__penalty": gb.Categorical(["l2", "l1"])}  # l1 with lbfgs: every fit fails
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        warnings.simplefilter("ignore", UserWarning)
        search = GraphboSearchCV(pipe, space, budget=10, cv=3, seed=1, error_score=np.nan).fit(X, y)
    # the l1 candidates cannot be fitted: failed trials, left out of cv_results_; the search goes on
    assert {p["logisticregression__penalty"] for p in search.cv_results_["params"]} == {"l2"}
    assert 0 < len(search.cv_results_["params"]) < 10
    assert np.isfinite(search.cv_results_["mean_test_score"]).all() and search.best_score_ > 0.9


def test_a_wrong_space_is_one_clear_error():
    X, y = load_iris(return_X_y=True)
    with pytest.raises(TypeError, match=r"param_space\['C'\] must be a graphbo variable"):
        GraphboSearchCV(SVC(), {"C": [0.1, 1.0]}, budget=3).fit(X, y)
    with pytest.raises((TypeError, ValueError), match="budget"):
        GraphboSearchCV(SVC(), SPACE, budget=2.5).fit(X, y)


def test_fit_leaves_the_parameters_unchanged():
    space = {"C": gb.Continuous(1e-2, 10.0, log=True)}
    search = GraphboSearchCV(LogisticRegression(), space, budget=3, cv=2, seed=0)
    X, y = load_iris(return_X_y=True)
    search.fit(X, y)
    assert space["C"].name is None  # a Space names its variables: the search names copies
    search.fit(X, y)  # and the same parameters fit again
    assert search.get_params()["param_space"] is space


def test_data_no_candidate_can_fit_raises_scikit_learns_error():
    X, y = load_iris(return_X_y=True)
    search = GraphboSearchCV(LogisticRegression(), {"C": gb.Continuous(1e-2, 10.0, log=True)}, budget=3, cv=2,
                             seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitFailedWarning)
        with pytest.raises(ValueError, match="fits failed"):
            search.fit(X, np.zeros_like(y))  # one class: every fit of every candidate fails


@pytest.mark.slow
def test_scikit_learns_estimator_checks_pass():
    from sklearn.utils.estimator_checks import check_estimator

    search = GraphboSearchCV(LogisticRegression(), {"C": gb.Continuous(1e-2, 10.0, log=True)}, budget=3, cv=2,
                             seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(search, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert len(results) > 50 and not failed, failed
