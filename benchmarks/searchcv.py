"""GraphboSearchCV against OptunaSearchCV, scikit-optimize's BayesSearchCV and RandomizedSearchCV.

Three tuning tasks on data sets scikit-learn ships, each with a mixed space (continuous, integer and
categorical hyper-parameters); every search gets the same budget of candidates, the same 3-fold
cross-validation and each library's defaults. The score is the best mean cross-validated accuracy
(``best_score_``). Resumable: finished searches are lines of ``OUT/runs.jsonl``.

    pip install optuna-integration scikit-optimize      # the two other searches
    python benchmarks/searchcv.py run --seeds 0-4 --out results/searchcv
    python benchmarks/searchcv.py pack results/searchcv      # -> data/searchcv.jsonl.xz, what the docs report
    python benchmarks/searchcv.py report data/searchcv.jsonl.xz
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np

import jsonl_runs

BUDGET = 30
CV = 3

#: each task: data set, estimator and its space as (name, kind, arguments); kinds: "log" (a real on a log
#: scale), "int" (an integer range), "cat" (categories)
TASKS = {
    "svc-digits": ("digits", "svc", [("C", "log", (1e-3, 1e3)), ("gamma", "log", (1e-5, 1e0)),
                                     ("kernel", "cat", ("rbf", "poly", "sigmoid"))]),
    "hgb-cancer": ("cancer", "hgb", [("learning_rate", "log", (1e-3, 1.0)), ("max_leaf_nodes", "int", (2, 64)),
                                     ("min_samples_leaf", "int", (1, 60)), ("l2_regularization", "log", (1e-6, 10.0)),
                                     ("max_features", "cat", (0.25, 0.5, 1.0))]),
    "et-digits": ("digits", "et", [("n_estimators", "int", (5, 200)), ("max_depth", "int", (1, 12)),
                               ("min_samples_split", "int", (2, 20)), ("criterion", "cat", ("gini", "entropy")),
                               ("max_features", "cat", ("sqrt", "log2", None))]),
}
SEARCHES = ("graphbo", "optuna", "skopt", "random")


def _data(name: str):
    from sklearn import datasets

    loader = {"digits": datasets.load_digits, "cancer": datasets.load_breast_cancer, "wine": datasets.load_wine}[name]
    return loader(return_X_y=True)


def _estimator(kind: str):
    from sklearn.ensemble import ExtraTreesClassifier, HistGradientBoostingClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    if kind == "svc":
        return make_pipeline(StandardScaler(), SVC()), "svc__"
    if kind == "hgb":
        return HistGradientBoostingClassifier(random_state=0), ""
    return ExtraTreesClassifier(random_state=0), ""


def _space(search: str, spec, prefix: str):
    """The space in the search's own terms."""
    out = {}
    for name, kind, args in spec:
        key = prefix + name
        if search == "graphbo":
            import graphbo as gb
            out[key] = (gb.Continuous(*args, log=True) if kind == "log" else gb.Integer(*args) if kind == "int"
                        else gb.Categorical(list(args)))
        elif search == "optuna":
            from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
            out[key] = (FloatDistribution(*args, log=True) if kind == "log" else IntDistribution(*args)
                        if kind == "int" else CategoricalDistribution(list(args)))
        elif search == "skopt":
            from skopt.space import Categorical, Integer, Real
            out[key] = (Real(*args, prior="log-uniform") if kind == "log" else Integer(*args) if kind == "int"
                        else Categorical(list(args)))
        else:
            from scipy.stats import loguniform, randint
            out[key] = (loguniform(*args) if kind == "log" else randint(args[0], args[1] + 1) if kind == "int"
                        else list(args))
    return out


def run_one(task: str, search: str, seed: int) -> dict:
    from sklearn.model_selection import RandomizedSearchCV, StratifiedKFold

    data, kind, spec = TASKS[task]
    X, y = _data(data)
    estimator, prefix = _estimator(kind)
    space = _space(search, spec, prefix)
    cv = StratifiedKFold(CV, shuffle=True, random_state=seed)
    if search == "graphbo":
        from graphbo.sklearn import GraphboSearchCV
        est = GraphboSearchCV(estimator, space, budget=BUDGET, cv=cv, seed=seed, refit=False)
    elif search == "optuna":
        import optuna
        from optuna_integration import OptunaSearchCV
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        est = OptunaSearchCV(estimator, space, n_trials=BUDGET, cv=cv, random_state=seed, refit=False, verbose=0)
    elif search == "skopt":
        from skopt import BayesSearchCV
        est = BayesSearchCV(estimator, space, n_iter=BUDGET, cv=cv, random_state=seed, refit=False)
    else:
        est = RandomizedSearchCV(estimator, space, n_iter=BUDGET, cv=cv, random_state=seed, refit=False)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    return {"task": task, "search": search, "seed": seed, "best_score": float(est.best_score_),
            "seconds": time.perf_counter() - t0, "budget": BUDGET, "cv": CV}


def report(rows: list[dict]) -> None:
    searches = [s for s in SEARCHES if any(d["search"] == s for d in rows)]
    print("| task | " + " | ".join(searches) + " |")
    print("|---" * (len(searches) + 1) + "|")
    ranks: dict[str, list[float]] = {s: [] for s in searches}
    for task in TASKS:
        cells = []
        for s in searches:
            v = np.array([d["best_score"] for d in rows if d["task"] == task and d["search"] == s])
            se = v.std(ddof=1) / np.sqrt(v.size) if v.size > 1 else float("nan")
            cells.append(f"{v.mean():.4f} ± {se:.4f} ({v.size})" if v.size else "-")
        print(f"| {task} | " + " | ".join(cells) + " |")
        for seed in sorted({d["seed"] for d in rows if d["task"] == task}):
            got = {d["search"]: d["best_score"] for d in rows if d["task"] == task and d["seed"] == seed}
            if set(got) != set(searches):
                continue
            from scipy.stats import rankdata
            r = rankdata([-got[s] for s in searches])
            for s, v in zip(searches, r):
                ranks[s].append(float(v))
    print("| mean rank (per task and seed) | " + " | ".join(f"{np.mean(ranks[s]):.2f}" if ranks[s] else "-"
                                                          for s in searches) + " |")


def main(argv: list[str] | None = None) -> int:
    return jsonl_runs.main(
        argv, __doc__.splitlines()[0], "data/searchcv.jsonl.xz", ("task", "search", "seed"),
        lambda args: [(task, search, seed) for seed in jsonl_runs.seeds(args.seeds) for task in TASKS
                      for search in args.searches.split(",")],
        run_one,
        lambda row: (f"{row['task']} {row['search']} seed {row['seed']}: best CV accuracy {row['best_score']:.4f} "
                     f"in {row['seconds']:.0f} s"),
        report,
        add_run_arguments=lambda r: r.add_argument("--searches", default=",".join(SEARCHES)))


if __name__ == "__main__":
    sys.exit(main())
