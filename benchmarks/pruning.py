"""Pruning on tuning tasks trained epoch by epoch: best validation error and epochs used, with and without a pruner.

Each task trains a scikit-learn model with ``partial_fit`` for up to ``EPOCHS`` epochs on a data set scikit-learn
ships, reporting the validation error after each epoch (``graphbo.report``); ``nas-sgd-digits`` is the package's
multi-fidelity NAS benchmark (``nas-sgd`` on the bundled digits, 8 epochs), whose evaluation reports its own curve
(its value: validation error plus the FLOPs term). Every (task, pruner, seed) runs
``graphbo.minimize`` with its default method and the same budget of trials; a pruner saves epochs, and the
question is what it costs in best error. Resumable: finished runs are lines of ``OUT/runs.jsonl``.

    python benchmarks/pruning.py run --seeds 0-4 --out results/pruning
    python benchmarks/pruning.py pack results/pruning      # -> data/pruning.jsonl.xz, what the docs report
    python benchmarks/pruning.py report data/pruning.jsonl.xz
"""

from __future__ import annotations

import sys
import time

import numpy as np

import graphbo as gb

import jsonl_runs

EPOCHS = 20
BUDGET = 30
PRUNERS = {"none": lambda: None, "median": lambda: gb.MedianPruner(),
           "halving": lambda: gb.SuccessiveHalvingPruner(min_resource=1, reduction_factor=3)}


def _data(name: str):
    from sklearn import datasets
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    loader = {"digits": datasets.load_digits, "cancer": datasets.load_breast_cancer, "wine": datasets.load_wine}[name]
    X, y = loader(return_X_y=True)
    X_tr, X_va, y_tr, y_va = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    scaler = StandardScaler().fit(X_tr)
    return scaler.transform(X_tr), scaler.transform(X_va), y_tr, y_va, np.unique(y)


def _sgd(data: str):
    from sklearn.linear_model import SGDClassifier

    space = gb.Space({"alpha": gb.Continuous(1e-7, 1.0, log=True),
                      "loss": gb.Categorical(["hinge", "log_loss", "modified_huber", "perceptron"]),
                      "penalty": gb.Categorical(["l2", "l1", "elasticnet"]),
                      "eta0": gb.Continuous(1e-4, 1.0, log=True),
                      "learning_rate": gb.Categorical(["optimal", "constant", "invscaling", "adaptive"])})

    def make(config):
        return SGDClassifier(alpha=config["alpha"], loss=config["loss"], penalty=config["penalty"],
                             eta0=config["eta0"], learning_rate=config["learning_rate"], random_state=0)

    return space, make, data


def _mlp(data: str):
    from sklearn.neural_network import MLPClassifier

    space = gb.Space({"hidden": gb.Ordinal([8, 16, 32, 64, 128]), "layers": gb.Ordinal([1, 2, 3]),
                      "alpha": gb.Continuous(1e-6, 1.0, log=True),
                      "learning_rate_init": gb.Continuous(1e-4, 0.3, log=True),
                      "activation": gb.Categorical(["relu", "tanh", "logistic"])})

    def make(config):
        return MLPClassifier(hidden_layer_sizes=(config["hidden"],) * config["layers"], alpha=config["alpha"],
                             learning_rate_init=config["learning_rate_init"], activation=config["activation"],
                             random_state=0)

    return space, make, data


#: the package's multi-fidelity NAS benchmark on the bundled digits (8 epochs, one training per evaluation), which
#: reports its first training's curve itself (:class:`graphbo.benchmarks.nas_sgd.NASSGD`)
NAS_TASK = "nas-sgd-digits"
TASKS = {"sgd-digits": (_sgd, "digits"), "sgd-cancer": (_sgd, "cancer"), "mlp-wine": (_mlp, "wine"),
         NAS_TASK: (None, "digits")}


def _run_nas(pruner: str, seed: int) -> dict:
    from graphbo.benchmarks.nas_sgd import NASSGD

    bench = NASSGD(seed=0)
    t0 = time.perf_counter()
    result = gb.minimize(lambda c: bench.evaluate(c)["value"], bench.space, budget=BUDGET, seed=seed,
                         pruner=PRUNERS[pruner](), show_progress=False)
    epochs = sum(len(t.attrs.get("intermediate") or {}) for t in result.trials)
    return {"task": NAS_TASK, "pruner": pruner, "seed": seed, "best": result.best_value, "epochs": int(epochs),
            "pruned": sum("pruned" in t.attrs for t in result.trials), "seconds": time.perf_counter() - t0,
            "method": result.method, "budget": BUDGET, "max_epochs": bench.epochs}


def run_one(task: str, pruner: str, seed: int) -> dict:
    import warnings

    if task == NAS_TASK:
        return _run_nas(pruner, seed)
    build, data = TASKS[task]
    space, make, _ = build(data)
    X_tr, X_va, y_tr, y_va, classes = _data(data)
    epochs: list[int] = []

    def objective(config):
        model = make(config)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in range(1, EPOCHS + 1):
                model.partial_fit(X_tr, y_tr, classes=classes)
                error = 1.0 - model.score(X_va, y_va)
                gb.report(error, epoch)
                if gb.should_prune():
                    epochs.append(epoch)
                    raise gb.TrialPruned()
        epochs.append(EPOCHS)
        return error

    t0 = time.perf_counter()
    result = gb.minimize(objective, space, budget=BUDGET, seed=seed, pruner=PRUNERS[pruner](), show_progress=False)
    return {"task": task, "pruner": pruner, "seed": seed, "best": result.best_value, "epochs": int(sum(epochs)),
            "pruned": sum("pruned" in t.attrs for t in result.trials), "seconds": time.perf_counter() - t0,
            "method": result.method, "budget": BUDGET, "max_epochs": EPOCHS}


def report(rows: list[dict]) -> None:
    print(f"| task | pruner | seeds | best validation error (mean ± s.e.) | epochs used (of {BUDGET * EPOCHS}; "
          f"{NAS_TASK}: of {BUDGET * 8}) | pruned trials |")
    print("|---|---|---|---|---|---|")
    for task in TASKS:
        for pruner in PRUNERS:
            sel = [d for d in rows if d["task"] == task and d["pruner"] == pruner]
            if not sel:
                continue
            best = np.array([d["best"] for d in sel])
            se = best.std(ddof=1) / np.sqrt(best.size) if best.size > 1 else float("nan")
            print(f"| {task} | {pruner} | {len(sel)} | {best.mean():.4f} ± {se:.4f} | "
                  f"{np.mean([d['epochs'] for d in sel]):.0f} | {np.mean([d['pruned'] for d in sel]):.1f} |")


def main(argv: list[str] | None = None) -> int:
    return jsonl_runs.main(
        argv, __doc__.splitlines()[0], "data/pruning.jsonl.xz", ("task", "pruner", "seed"),
        lambda args: [(task, pruner, seed) for seed in jsonl_runs.seeds(args.seeds) for task in TASKS
                      for pruner in PRUNERS],
        run_one,
        lambda row: (f"{row['task']} {row['pruner']} seed {row['seed']}: best {row['best']:.4f}, {row['epochs']} "
                     f"epochs, {row['pruned']} pruned, {row['seconds']:.0f} s"),
        report)


if __name__ == "__main__":
    sys.exit(main())
