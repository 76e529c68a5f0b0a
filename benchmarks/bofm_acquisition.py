"""BO-FM's acquisition optimisers (batched vs supplement D.1) and its fit priors, compared.

    OMP_NUM_THREADS=1 python benchmarks/bofm_acquisition.py [--problems func2c,func3c,ackley5c,svm]
        [--variants batched,supplement,batched-noprior] [--seeds 0-2] [--budget 50]
        [--json benchmarks/results/bofm_acquisition.json]
    python benchmarks/bofm_acquisition.py --summary [--paired typewise,typewise-noprior] [--json ...]

Every (problem, variant, seed) run is BO-FM (MODLAP kernel, 10 initial points) at
modest settings so that the whole comparison fits in about 25 CPU minutes on one
core: 5 ML-II restarts and 20,000 random + 50 spray points scored for the 40
acquisition starts (the paper: 10 restarts, 100,000 points). Variants:

* ``batched``: ``acq_optimizer="batched"``, ``prior="weak"`` (the earlier defaults);
* ``supplement``: ``acq_optimizer="supplement"`` (supplement D.1's per-start alternation);
* ``typewise``: ``acq_optimizer="typewise"`` (D.1, a start polished as soon as its discrete part stays);
* ``batched-noprior`` / ``supplement-noprior`` / ``typewise-noprior``: the same with ``prior="none"``
  (marginal likelihood alone, as BO-FM Sec. 5 states the fit).

Recorded per run: the best value, the best-so-far trace, and the CPU seconds of every
suggestion (fit and acquisition). The JSON file is rewritten after every run and
finished runs are skipped, so an interrupted benchmark resumes where it stopped.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

import graphbo as gb
from graphbo.benchmarks import load_benchmark

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "bofm_acquisition.json"
VARIANTS: dict[str, dict[str, str]] = {
    "batched": {"acq_optimizer": "batched", "prior": "weak"},
    "supplement": {"acq_optimizer": "supplement", "prior": "weak"},
    "typewise": {"acq_optimizer": "typewise", "prior": "weak"},
    "batched-noprior": {"acq_optimizer": "batched", "prior": "none"},
    "supplement-noprior": {"acq_optimizer": "supplement", "prior": "none"},
    "typewise-noprior": {"acq_optimizer": "typewise", "prior": "none"},
}
SETTINGS = {"kernel": "modlap", "n_initial": 10, "n_restarts": 5, "n_random": 20_000, "n_spray": 50, "n_starts": 40}


def seeds(text: str) -> list[int]:
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def run_one(problem: str, variant: str, seed: int, budget: int) -> dict[str, Any]:
    bench = load_benchmark(problem)
    opt = gb.BOFM(bench.space, seed=seed, **SETTINGS, **VARIANTS[variant])
    trace, fit_s, acq_s = [], [], []
    c0 = time.process_time()
    for _ in range(budget):
        config = opt.ask()
        if opt.last_timing:
            fit_s.append(opt.last_timing["fit_cpu"])
            acq_s.append(opt.last_timing["acquisition_cpu"])
            opt.last_timing = {}
        opt.tell(config, float(bench(config)))
        trace.append(float(opt.best.value))
    return {"problem": problem, "variant": variant, "seed": seed, "budget": budget, "best": trace[-1],
            "trace": trace, "fit_cpu_s": fit_s, "acq_cpu_s": acq_s,
            "suggestion_cpu_s": statistics.fmean(f + a for f, a in zip(fit_s, acq_s)),
            "acq_cpu_s_mean": statistics.fmean(acq_s), "run_cpu_s": time.process_time() - c0}


def summary(results: dict[str, Any]) -> list[str]:
    """Mean +- standard error of the best value and mean CPU seconds per suggestion, per problem and variant."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in results.values():
        groups.setdefault((r["problem"], r["variant"]), []).append(r)
    lines = ["| problem | variant | runs | best (mean +- s.e.) | s / suggestion | acquisition s |",
             "|---|---|---|---|---|---|"]
    for (p, v), rs in sorted(groups.items()):
        best = [r["best"] for r in rs]
        se = statistics.stdev(best) / math.sqrt(len(best)) if len(best) > 1 else float("nan")
        lines.append(f"| {p} | {v} | {len(rs)} | {statistics.fmean(best):.4f} +- {se:.4f} | "
                     f"{statistics.fmean(r['suggestion_cpu_s'] for r in rs):.2f} | "
                     f"{statistics.fmean(r['acq_cpu_s_mean'] for r in rs):.2f} |")
    return lines


def paired(results: dict[str, Any], first: str, second: str) -> list[str]:
    """Per problem, ``second`` minus ``first`` on the runs with the same seed and budget: mean +- s.e., wins."""
    lines = [f"| problem | seeds | {second} - {first} (mean +- s.e.) | {first} better | {second} better | ties |",
             "|---|---|---|---|---|---|"]
    by_key = {(r["problem"], r["variant"], r["seed"], r["budget"]): r["best"] for r in results.values()}
    for problem in sorted({p for p, _, _, _ in by_key}):
        diffs = [by_key[(p, second, s, b)] - v for (p, var, s, b), v in sorted(by_key.items())
                 if p == problem and var == first and (p, second, s, b) in by_key]
        if not diffs:
            continue
        se = statistics.stdev(diffs) / math.sqrt(len(diffs)) if len(diffs) > 1 else float("nan")
        lines.append(f"| {problem} | {len(diffs)} | {statistics.fmean(diffs):+.4f} +- {se:.4f} | "
                     f"{sum(d > 0 for d in diffs)} | {sum(d < 0 for d in diffs)} | {sum(d == 0 for d in diffs)} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problems", default="func2c,func3c,ackley5c,svm")
    ap.add_argument("--variants", default="batched,supplement")
    ap.add_argument("--seeds", default="0-2")
    ap.add_argument("--budget", type=int, default=50)
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    ap.add_argument("--summary", action="store_true", help="print the table of the JSON file and exit")
    ap.add_argument("--paired", metavar="A,B", help="with --summary: also B minus A per problem, seed by seed")
    args = ap.parse_args()
    data: dict[str, Any] = json.loads(args.json.read_text()) if args.json.exists() else {}
    results: dict[str, Any] = data.setdefault("runs", {})
    if args.summary:
        print("\n".join(summary(results)))
        if args.paired:
            first, second = args.paired.split(",")
            print("\n".join(paired(results, first, second)))
        return
    data["settings"] = SETTINGS
    data["environment"] = {"python": platform.python_version(), "numpy": np.__version__,
                           "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"), "cpus": os.cpu_count()}
    for seed in seeds(args.seeds):
        for problem in args.problems.split(","):
            for variant in args.variants.split(","):
                key = f"{problem}|{variant}|{seed}|{args.budget}"
                if key in results:
                    continue
                results[key] = run_one(problem, variant, seed, args.budget)
                r = results[key]
                print(f"{key}: best {r['best']:.5f}, {r['suggestion_cpu_s']:.2f} s/suggestion "
                      f"(acquisition {r['acq_cpu_s_mean']:.2f} s), run {r['run_cpu_s']:.0f} s", flush=True)
                args.json.parent.mkdir(parents=True, exist_ok=True)
                tmp = args.json.with_suffix(".tmp")
                tmp.write_text(json.dumps(data, indent=1))
                tmp.replace(args.json)
    print("\n".join(summary(results)))


if __name__ == "__main__":
    main()
