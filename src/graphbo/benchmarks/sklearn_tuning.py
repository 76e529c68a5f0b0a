"""Real tuning tasks: scikit-learn models on data sets scikit-learn ships, scored by cross-validation.

Each task is a model, a data set bundled with scikit-learn (no download) and a space of its hyper-parameters;
the value is the cross-validated error (3 folds, shuffled with a fixed seed, the model's own ``random_state``
fixed), so an evaluation is deterministic and takes about a second on one core.

* ``rf-wine``: a random forest (30 trees) on the wine data (178 samples, 3 classes); six categorical choices
  (split criterion, features per split, depth limit, leaf size, bootstrap, class weights); value
  ``1 - accuracy``.
* ``hgb-cancer``: a histogram gradient-boosting classifier on the breast-cancer data (569 samples); five
  integer hyper-parameters over 29-100 levels each (iterations, leaves, leaf size, depth, bins), as ordinals;
  value ``1 - accuracy``.
* ``svc-digits``: a support-vector classifier on the digits (1,797 8x8 images, 10 classes): kernel
  (categorical), ``C`` and ``gamma`` (continuous, log scale), polynomial degree (ordinal), shrinking (binary);
  value ``1 - accuracy``.
* ``svc-digits-conditional``: the same classifier on a conditional space, as scikit-learn's parameters apply:
  ``gamma`` for the rbf, poly and sigmoid kernels, ``degree`` for poly, ``coef0`` for poly and sigmoid, and
  ``C`` and ``shrinking`` always (:mod:`graphbo.spaces.conditions`); value ``1 - accuracy``.
* ``hgb-diabetes``: a histogram gradient-boosting regressor on the diabetes data (442 samples): learning rate
  and L2 penalty (continuous, log scale), leaves and leaf size (ordinal), loss (categorical); value
  ``1 - R^2``.

``pip install "graphbo[benchmarks]"`` installs scikit-learn.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

import numpy as np

from .._lazy import require
from ..spaces import Binary, Categorical, Continuous, Ordinal, Space
from .base import Benchmark

__all__ = ["SklearnTuning", "TASKS"]


def _rf_wine() -> tuple[Space, Callable[[Mapping[str, Any]], Any], str, str]:
    space = Space({
        "criterion": Categorical(["gini", "entropy", "log_loss"]),
        "max_features": Categorical(["sqrt", "log2", "all"]),
        "max_depth": Categorical(["2", "4", "8", "16", "none"]),
        "min_samples_leaf": Categorical(["1", "2", "4", "8", "16"]),
        "bootstrap": Binary(),
        "class_weight": Categorical(["none", "balanced"]),
    })

    def model(c: Mapping[str, Any]) -> Any:
        ensemble = require("sklearn.ensemble", "the rf-wine task", "benchmarks")
        return ensemble.RandomForestClassifier(
            n_estimators=30, criterion=c["criterion"],
            max_features=None if c["max_features"] == "all" else c["max_features"],
            max_depth=None if c["max_depth"] == "none" else int(c["max_depth"]),
            min_samples_leaf=int(c["min_samples_leaf"]), bootstrap=bool(c["bootstrap"]),
            class_weight=None if c["class_weight"] == "none" else "balanced", random_state=0, n_jobs=1)

    return space, model, "load_wine", "accuracy"


def _hgb_cancer() -> tuple[Space, Callable[[Mapping[str, Any]], Any], str, str]:
    space = Space({
        "max_iter": Ordinal(list(range(10, 201, 5))),
        "max_leaf_nodes": Ordinal(list(range(2, 101))),
        "min_samples_leaf": Ordinal(list(range(1, 101))),
        "max_depth": Ordinal(list(range(2, 31))),
        "max_bins": Ordinal(list(range(16, 256, 8))),
    })

    def model(c: Mapping[str, Any]) -> Any:
        ensemble = require("sklearn.ensemble", "the hgb-cancer task", "benchmarks")
        return ensemble.HistGradientBoostingClassifier(
            max_iter=int(c["max_iter"]), max_leaf_nodes=int(c["max_leaf_nodes"]),
            min_samples_leaf=int(c["min_samples_leaf"]), max_depth=int(c["max_depth"]), max_bins=int(c["max_bins"]),
            early_stopping=False, random_state=0)

    return space, model, "load_breast_cancer", "accuracy"


def _svc_digits() -> tuple[Space, Callable[[Mapping[str, Any]], Any], str, str]:
    variables: dict[str, Any] = {
        "kernel": Categorical(["rbf", "poly", "sigmoid"]),
        "C": Continuous(1e-3, 1e3, log=True),
        "gamma": Continuous(1e-5, 1.0, log=True),
        "degree": Ordinal([2, 3, 4, 5]),
        "shrinking": Binary(),
    }
    space = Space(variables)

    def model(c: Mapping[str, Any]) -> Any:
        svm = require("sklearn.svm", "the svc-digits task", "benchmarks")
        return svm.SVC(kernel=c["kernel"], C=float(c["C"]), gamma=float(c["gamma"]), degree=int(c["degree"]),
                       shrinking=bool(c["shrinking"]), random_state=0)

    return space, model, "load_digits", "accuracy"


def _svc_digits_conditional() -> tuple[Space, Callable[[Mapping[str, Any]], Any], str, str]:
    variables: dict[str, Any] = {
        "kernel": Categorical(["linear", "rbf", "poly", "sigmoid"]),
        "C": Continuous(1e-3, 1e3, log=True),
        "gamma": Continuous(1e-5, 1.0, log=True),
        "degree": Ordinal([2, 3, 4, 5]),
        "coef0": Continuous(-1.0, 1.0),
        "shrinking": Binary(),
    }
    space = Space(variables, conditions={"gamma": {"kernel": ["rbf", "poly", "sigmoid"]},
                                         "degree": {"kernel": "poly"}, "coef0": {"kernel": ["poly", "sigmoid"]}})

    def model(c: Mapping[str, Any]) -> Any:
        svm = require("sklearn.svm", "the svc-digits-conditional task", "benchmarks")
        options = {k: c[k] for k in ("gamma", "degree", "coef0") if k in c}  # the active ones only
        return svm.SVC(kernel=c["kernel"], C=float(c["C"]), shrinking=bool(c["shrinking"]), random_state=0,
                       **options)

    return space, model, "load_digits", "accuracy"


def _hgb_diabetes() -> tuple[Space, Callable[[Mapping[str, Any]], Any], str, str]:
    variables: dict[str, Any] = {
        "learning_rate": Continuous(1e-2, 1.0, log=True),
        "l2_regularization": Continuous(1e-6, 10.0, log=True),
        "max_leaf_nodes": Ordinal(list(range(2, 65))),
        "min_samples_leaf": Ordinal(list(range(1, 51))),
        "loss": Categorical(["squared_error", "absolute_error", "poisson"]),
    }
    space = Space(variables)

    def model(c: Mapping[str, Any]) -> Any:
        ensemble = require("sklearn.ensemble", "the hgb-diabetes task", "benchmarks")
        return ensemble.HistGradientBoostingRegressor(
            learning_rate=float(c["learning_rate"]), l2_regularization=float(c["l2_regularization"]),
            max_leaf_nodes=int(c["max_leaf_nodes"]), min_samples_leaf=int(c["min_samples_leaf"]), loss=c["loss"],
            max_iter=100, early_stopping=False, random_state=0)

    return space, model, "load_diabetes", "r2"


#: task name -> builder of (space, model from a configuration, scikit-learn loader, CV score)
TASKS: dict[str, Callable[[], tuple[Space, Callable[[Mapping[str, Any]], Any], str, str]]] = {
    "rf-wine": _rf_wine,
    "hgb-cancer": _hgb_cancer,
    "svc-digits": _svc_digits,
    "svc-digits-conditional": _svc_digits_conditional,
    "hgb-diabetes": _hgb_diabetes,
}


class SklearnTuning(Benchmark):
    """The tuning task ``task`` (one of :data:`TASKS`): ``1 -`` its 3-fold cross-validated score."""

    name = "sklearn-tuning"
    default_budget = 100
    default_n_initial = 10

    def __init__(self, task: str = "svc-digits") -> None:
        if task not in TASKS:
            raise ValueError(f"task must be one of {sorted(TASKS)}, got {task!r}")
        self.task = task
        self.space, self._model, self._loader, self._score = TASKS[task]()
        self._data: tuple[np.ndarray, np.ndarray] | None = None

    def __getstate__(self) -> dict[str, Any]:  # the model builder is a closure: rebuilt from the task
        return {"task": self.task}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["task"])  # type: ignore[misc]

    def __call__(self, config: Mapping[str, Any]) -> float:
        self.space.validate(config)
        selection = require("sklearn.model_selection", f"the {self.task} task", "benchmarks")
        if self._data is None:
            datasets = require("sklearn.datasets", f"the {self.task} task", "benchmarks")
            self._data = getattr(datasets, self._loader)(return_X_y=True)
        X, y = self._data
        folds = selection.KFold(n_splits=3, shuffle=True, random_state=0)
        scores = selection.cross_val_score(self._model(config), X, y, cv=folds, scoring=self._score)
        return float(1.0 - np.mean(scores))
