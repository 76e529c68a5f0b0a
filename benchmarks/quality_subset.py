"""COMBO's (or BO-FM's) best value at the budget on one benchmark over many seeds, this checkout against a git revision.

    python benchmarks/quality_subset.py --benchmark ising --seeds 0-19 --budget 80 --n-initial 20 \
        --baseline-ref 7aa962c --out benchmarks/results/quality_subset_ising.jsonl

The quality check of a speed change: it must leave the results within two standard
errors of the code before it, on the same seeds. Each (version, seed) is one ask/tell loop of
``graphbo.COMBO(space, seed=seed, n_initial=...)`` (``--method bofm``: ``graphbo.BOFM``, for the mixed
benchmarks func2c, func3c, ackley5c, ...); Ising's coupling instance is drawn from the
seed too (``load_benchmark("ising", seed=seed)``), as in the COMBO paper. With
``--baseline-ref`` the same seeds run on that revision, checked out in a temporary git worktree
and imported instead of this checkout, in a subprocess. Every finished run is appended to
``--out`` at once and skipped on a rerun (resumable); ``--only`` runs one version, so two
processes can share the seeds of a 2-core machine. The summary prints mean +- s.e., median and
the number of seeds below ``--solved`` for each version.
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


def seeds_of(text: str) -> list[int]:
    """``"0-19"`` or ``"0,3,5"`` as a list of seeds."""
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def one_run(benchmark: str, seed: int, budget: int, n_initial: int, method: str = "combo") -> dict:
    """Best value of COMBO or BO-FM after ``budget`` evaluations (in this interpreter's graphbo)."""
    import numpy as np
    import torch

    import graphbo as gb
    from graphbo.benchmarks import load_benchmark

    torch.set_num_threads(1)
    bench = load_benchmark(benchmark, seed=seed) if benchmark == "ising" else load_benchmark(benchmark)
    opt = (gb.BOFM if method == "bofm" else gb.COMBO)(bench.space, seed=seed, n_initial=n_initial)
    best, start = np.inf, time.process_time()
    for _ in range(budget):
        config = opt.ask()
        value = bench(config)
        opt.tell(config, value)
        best = min(best, value)
    return {"seed": seed, "best": float(best), "cpu_seconds": round(time.process_time() - start, 1)}


def summary(runs: list[dict], solved: float) -> str:
    best = [r["best"] for r in runs]
    se = statistics.stdev(best) / len(best) ** 0.5 if len(best) > 1 else float("nan")
    return (f"{len(best)} seeds: mean {statistics.mean(best):.4f} +- {se:.4f}, median {statistics.median(best):.4f}, "
            f"{sum(b < solved for b in best)} below {solved}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--benchmark", default="ising")
    ap.add_argument("--method", choices=["combo", "bofm"], default="combo")
    ap.add_argument("--seeds", default="0-19")
    ap.add_argument("--budget", type=int, default=80)
    ap.add_argument("--n-initial", type=int, default=20)
    ap.add_argument("--baseline-ref", default=None, help="git revision to run on the same seeds")
    ap.add_argument("--only", choices=["current", "baseline"], default=None)
    ap.add_argument("--solved", type=float, default=0.05, help="threshold for the 'below' count")
    ap.add_argument("--out", default="benchmarks/results/quality_subset.jsonl")
    ap.add_argument("--_child", default=None, help=argparse.SUPPRESS)  # VERSION:SEED, run in a subprocess
    args = ap.parse_args()
    if args._child:
        version, seed = args._child.split(":")
        print(json.dumps({"version": version, **one_run(args.benchmark, int(seed), args.budget, args.n_initial,
                                                                 args.method)}))
        return

    done = [json.loads(line) for line in open(args.out)] if os.path.exists(args.out) else []
    key = (args.benchmark, args.budget, args.n_initial, args.method)

    def key_of(r: dict) -> tuple:
        return r["benchmark"], r["budget"], r["n_initial"], r.get("method", "combo")

    have = {(r["version"], r["seed"]) for r in done if key_of(r) == key}
    versions = [("current", os.path.join(ROOT, "src"))]
    worktree = None
    if args.baseline_ref:
        worktree = tempfile.mkdtemp(prefix="graphbo-baseline-")
        subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", worktree, args.baseline_ref],
                       check=True, capture_output=True)
        versions.append((f"baseline {args.baseline_ref}", os.path.join(worktree, "src")))
    if args.only:
        versions = [v for v in versions if v[0].split()[0] == args.only]
    try:
        for seed in seeds_of(args.seeds):
            for version, src in versions:
                if (version, seed) in have:
                    continue
                env = {**os.environ, "PYTHONPATH": src, "OMP_NUM_THREADS": "1"}
                out = subprocess.run([sys.executable, os.path.abspath(__file__), "--benchmark", args.benchmark,
                                      "--budget", str(args.budget), "--n-initial", str(args.n_initial),
                                      "--method", args.method,
                                      "--_child", f"{version}:{seed}"],
                                     env=env, capture_output=True, text=True, check=True)
                run = {"benchmark": args.benchmark, "budget": args.budget, "n_initial": args.n_initial,
                       "method": args.method,
                       **json.loads(out.stdout.strip().splitlines()[-1])}
                with open(args.out, "a") as fh:
                    fh.write(json.dumps(run) + "\n")
                done.append(run)
                print(f"{version} seed {seed}: best {run['best']:.4f} ({run['cpu_seconds']} CPU s)", flush=True)
    finally:
        if worktree:
            subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force", worktree], capture_output=True)
    for version in sorted({r["version"] for r in done}):
        runs = [r for r in done if r["version"] == version and key_of(r) == key]
        if runs:
            print(f"{version:24s} {summary(runs, args.solved)}")


if __name__ == "__main__":
    main()
