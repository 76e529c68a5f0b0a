"""Pruning on tuning tasks trained epoch by epoch: best validation error and epochs used, with and without a pruner.

Each task trains a scikit-learn model with ``partial_fit`` for up to ``EPOCHS`` epochs on a data set scikit-learn
ships, reporting the validation error after each epoch (``graphbo.report``). Every (task, pruner, seed) runs
``graphbo.minimize`` with its default method and the same budget of trials; a pruner saves epochs, and the
question is what it costs in best error. Resumable: finished runs are lines of ``OUT/runs.jsonl``.

    python benchmarks/pruning.py run --seeds 0-4 --out results/pruning
    python benchmarks/pruning.py pack results/pruning      # -> data/pruning.jsonl.xz, what the docs report
    python benchmarks/pruning.py report data/pruning.jsonl.xz
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

import graphbo as gb

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


TASKS = {"sgd-digits": (_sgd, "digits"), "sgd-cancer": (_sgd, "cancer"), "mlp-wine": (_mlp, "wine")}


def run_one(task: str, pruner: str, seed: int) -> dict:
    import warnings

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


def _read(path: str) -> list[dict]:
    """The runs of a run folder (``runs.jsonl``) or of a packed ``.jsonl.xz`` file."""
    import lzma

    if os.path.isdir(path):
        path = os.path.join(path, "runs.jsonl")
    with (lzma.open(path, "rt") if path.endswith(".xz") else open(path)) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _seeds(text: str) -> list[int]:
    a, _, b = text.partition("-")
    return list(range(int(a), int(b or a) + 1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--seeds", default="0-4")
    r.add_argument("--out", required=True)
    k = sub.add_parser("pack")
    k.add_argument("out")
    k.add_argument("--to", default="data/pruning.jsonl.xz")
    p = sub.add_parser("report")
    p.add_argument("runs", help="a folder of a run (its runs.jsonl) or a packed .jsonl.xz")
    args = parser.parse_args(argv)
    if args.command == "pack":
        import lzma

        with open(os.path.join(args.out, "runs.jsonl"), "rb") as src, lzma.open(args.to, "wb") as dst:
            dst.write(src.read())
        return 0
    if args.command == "report":
        rows = _read(args.runs)
    path = os.path.join(getattr(args, "out", ""), "runs.jsonl")
    if args.command == "run":
        os.makedirs(args.out, exist_ok=True)
        done = set()
        if os.path.exists(path):
            with open(path) as fh:
                done = {(d["task"], d["pruner"], d["seed"]) for d in map(json.loads, fh)}
        for seed in _seeds(args.seeds):
            for task in TASKS:
                for pruner in PRUNERS:
                    if (task, pruner, seed) in done:
                        continue
                    row = run_one(task, pruner, seed)
                    with open(path, "a") as fh:
                        fh.write(json.dumps(row) + "\n")
                    print(f"[{time.strftime('%H:%M:%S')}] {task} {pruner} seed {seed}: best {row['best']:.4f}, "
                          f"{row['epochs']} epochs, {row['pruned']} pruned, {row['seconds']:.0f} s", flush=True)
        return 0
    print(f"| task | pruner | seeds | best validation error (mean ± s.e.) | epochs used (of {BUDGET * EPOCHS}) | "
          "pruned trials |")
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
