"""COMBOSampler on a hyper-parameter surface written as an Optuna user writes it: log-scale integers.

    python benchmarks/optuna_log_integers.py [--seeds 0-2] [--trials 60] [--baseline-ref GITREF]
        [--out benchmarks/results/optuna_log_integers.jsonl]

The objective is graphbo's ``hpo-surface`` benchmark (its formula, docs/benchmarks), with the parameters
suggested through Optuna: ``lr_step`` 0..300, ``batch_size`` 16..512 and ``width`` 8..1024 as
``suggest_int(..., log=True)``, ``epochs`` 1..200, and the three categorical choices. Each run is one
Optuna study with ``COMBOSampler(seed=SEED)`` (10 startup trials) for ``--trials`` trials; the best
value and the CPU seconds are recorded. With ``--baseline-ref`` the same seeds also run on that git
revision (a temporary worktree imported instead of this checkout), alternating, so a change to the
sampler's mapping is measured before and after in one invocation. Finished (version, seed) runs in
``--out`` are skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def one_run(seed: int, trials: int) -> dict:
    import optuna
    import torch

    from graphbo.benchmarks.hpo_surface import ACTIVATIONS, OPTIMIZERS, HPOSurface
    from graphbo.integrations.optuna import COMBOSampler

    torch.set_num_threads(1)
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    def objective(trial) -> float:
        return float(HPOSurface.value(
            lr_step=trial.suggest_int("lr_step", 0, 300),
            batch_size=trial.suggest_int("batch_size", 16, 512, log=True),
            width=trial.suggest_int("width", 8, 1024, log=True),
            epochs=trial.suggest_int("epochs", 1, 200),
            optimizer=trial.suggest_categorical("optimizer", list(OPTIMIZERS)),
            activation=trial.suggest_categorical("activation", list(ACTIVATIONS)),
            batch_norm=trial.suggest_categorical("batch_norm", [False, True]),
        ))

    study = optuna.create_study(sampler=COMBOSampler(seed=seed, n_startup_trials=10))
    start = time.process_time()
    study.optimize(objective, n_trials=trials)
    return {"seed": seed, "best": float(study.best_value), "cpu_seconds": round(time.process_time() - start, 1),
            "best_params": study.best_params}


def seeds_of(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b or a) + 1))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0-2")
    ap.add_argument("--trials", type=int, default=60)
    ap.add_argument("--baseline-ref", default=None)
    ap.add_argument("--out", default="benchmarks/results/optuna_log_integers.jsonl")
    ap.add_argument("--_child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._child is not None:
        print(json.dumps(one_run(args._child, args.trials)))
        return
    done = [json.loads(line) for line in open(args.out)] if os.path.exists(args.out) else []
    have = {(r["version"], r["seed"]) for r in done if r["trials"] == args.trials}
    versions = [("current", os.path.join(ROOT, "src"))]
    worktree = None
    if args.baseline_ref:
        worktree = tempfile.mkdtemp(prefix="graphbo-baseline-")
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", worktree, args.baseline_ref],
                       check=True, capture_output=True)
        versions.append((f"baseline {args.baseline_ref}", os.path.join(worktree, "src")))
    try:
        for seed in seeds_of(args.seeds):
            for version, src in versions:
                if (version, seed) in have:
                    continue
                env = {**os.environ, "PYTHONPATH": src, "OMP_NUM_THREADS": "1"}
                out = subprocess.run([sys.executable, os.path.abspath(__file__), "--trials", str(args.trials),
                                      "--_child", str(seed)], env=env, capture_output=True, text=True, check=True)
                run = {"version": version, "trials": args.trials, **json.loads(out.stdout.strip().splitlines()[-1])}
                with open(args.out, "a") as fh:
                    fh.write(json.dumps(run) + "\n")
                done.append(run)
                print(f"{version} seed {seed}: best {run['best']:.4f} ({run['cpu_seconds']} CPU s)", flush=True)
    finally:
        if worktree:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", worktree], capture_output=True)
    for version in sorted({r["version"] for r in done}):
        best = [r["best"] for r in done if r["version"] == version and r["trials"] == args.trials]
        if len(best) > 1:
            se = statistics.stdev(best) / len(best) ** 0.5
            print(f"{version:24s} {len(best)} seeds: mean {statistics.mean(best):.4f} +- {se:.4f}")


if __name__ == "__main__":
    main()
