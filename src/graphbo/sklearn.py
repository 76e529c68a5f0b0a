"""``GraphboSearchCV``: hyper-parameter search for scikit-learn estimators by graphbo, as a scikit-learn estimator.

A drop-in for ``RandomizedSearchCV`` (and Optuna's ``OptunaSearchCV``, scikit-optimize's ``BayesSearchCV``): the
candidates are asked one at a time from a graphbo study over the space of hyper-parameters and scored by
scikit-learn's cross-validation (``BaseSearchCV``: ``cv_results_``, ``best_params_``, ``best_score_``,
``best_estimator_``, ``refit``, ``scoring``, ``n_jobs`` over folds, ``error_score`` all behave as in scikit-learn's
own searches). The mean test score is maximised. A candidate that no fold could fit is a failed trial, which the
model learns as the worst score so far, and is left out of ``cv_results_`` (scikit-learn refuses a batch of
candidates whose every fit failed, and the candidates here come one at a time); one that failed on some folds
only is scored as scikit-learn scores it (``error_score``). Needs scikit-learn (``pip install "graphbo[benchmarks]"``).
"""

from __future__ import annotations

import copy
import math
from typing import Any, Mapping

from ._lazy import require
from ._validation import check_budget, check_seed
from .spaces import Continuous, Space, Variable

__all__ = ["GraphboSearchCV"]

#: scikit-learn's base of its searches (GridSearchCV, RandomizedSearchCV): fit, refit, cv_results_, ...
_BaseSearchCV: Any = require("sklearn.model_selection._search", "GraphboSearchCV", "benchmarks").BaseSearchCV


class GraphboSearchCV(_BaseSearchCV):
    """Search ``param_space`` for the hyper-parameters of ``estimator`` with the graphbo method ``method``.

    Parameters
    ----------
    estimator : scikit-learn estimator
    param_space : dict of name -> graphbo variable, or a graphbo Space
        E.g. ``{"C": gb.Continuous(1e-3, 1e3, log=True), "kernel": gb.Categorical(["rbf", "poly"])}``;
        the names are the estimator's parameters (``step__param`` for a pipeline).
    budget : int, default 30
        Candidates evaluated (each with every fold of ``cv``), the random initial design included.
    method : str, default "auto"
        Any graphbo method (``"auto"``: COMBO for a discrete space, BO-FM for a mixed one, ...).
    seed : int, optional
        The study's seed: the same seed, data and estimator give the same candidates.
    scoring, n_jobs, refit, cv, verbose, pre_dispatch, error_score, return_train_score
        As in :class:`sklearn.model_selection.RandomizedSearchCV`.
    method_options : dict, optional
        Passed to the optimizer (``n_initial``, ...).
    """

    def __init__(self, estimator: Any, param_space: Mapping[str, Any] | Space, *, budget: int = 30,
                 method: str = "auto", seed: int | None = None, scoring: Any = None, n_jobs: int | None = None,
                 refit: Any = True, cv: Any = None, verbose: int = 0, pre_dispatch: Any = "2*n_jobs",
                 error_score: Any = math.nan, return_train_score: bool = False,
                 method_options: Mapping[str, Any] | None = None) -> None:
        super().__init__(estimator=estimator, scoring=scoring, n_jobs=n_jobs, refit=refit, cv=cv, verbose=verbose,
                         pre_dispatch=pre_dispatch, error_score=error_score, return_train_score=return_train_score)
        self.param_space = param_space
        self.budget = budget
        self.method = method
        self.seed = seed
        self.method_options = method_options

    def _space(self) -> Space:
        if isinstance(self.param_space, Space):
            return self.param_space
        if not isinstance(self.param_space, Mapping) or not self.param_space:
            raise ValueError("param_space must be a non-empty dict of name -> graphbo variable, or a graphbo Space")
        for name, var in self.param_space.items():
            if not isinstance(var, (Variable, Continuous)):
                raise TypeError(f"param_space[{name!r}] must be a graphbo variable (gb.Categorical, gb.Ordinal, "
                                f"gb.Integer, gb.Continuous, ...), got {type(var).__name__}")
        # copies: a Space names its variables, and a search must not change its parameters (scikit-learn's
        # check_estimators_overwrite_params)
        return Space({name: copy.deepcopy(var) for name, var in self.param_space.items()})

    def _run_search(self, evaluate_candidates: Any) -> None:
        """Ask a candidate, score it by cross-validation (``evaluate_candidates``), tell the score, ``budget``
        times."""
        from .study import Study

        budget = check_budget(self.budget)
        study = Study(self._space(), self.method, seed=check_seed(self.seed), direction="maximize",
                      auto_budget=budget, **dict(self.method_options or {}))
        scores: list[float] = []
        for _ in range(budget):
            trial = study.ask()
            try:
                results = evaluate_candidates([dict(trial.config)])
            except ValueError as exc:  # scikit-learn's "All the N fits failed": a candidate no fold could fit
                if "fits failed" not in str(exc):
                    raise
                study.fail(trial, "every fit of this candidate failed", value=min(scores) if scores else None)
                if not scores and len(study.trials) == budget:
                    raise  # no candidate could be fitted at all: the data, as RandomizedSearchCV says it
                continue
            score = float(results["mean_test_score"][-1])
            if math.isfinite(score):
                study.tell(trial, score)
                scores.append(score)
            else:
                study.fail(trial, "every fit of this candidate failed (see error_score)",
                           value=min(scores) if scores else None)
