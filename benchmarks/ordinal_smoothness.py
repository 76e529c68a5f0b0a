"""Long ordinal paths before and after the default edge weight.

    python benchmarks/ordinal_smoothness.py --out benchmarks/results/ordinal_smoothness.json

On the integer benchmarks ``int-rosenbrock`` and ``int-styblinski`` (3 variables, 200 levels
each), same seeds, same initial points:

* ``combo-0.1``: graphbo 0.1's model, unit path edges and supplement Eq. 8 as written (its runs are in
  ``benchmarks/results/ordinal_smoothness.json``; the option that selected it was removed in graphbo 1.0,
  and ``GraphDiffusionKernel(unit_diagonal=False)`` is Eq. 8);
* ``combo-unit-edges``: unit path edges, the unit-diagonal factors;
* ``combo``: today's defaults (:func:`graphbo.spaces.variables.path_edge_weight`, unit-diagonal
  factors on paths);
* ``rs``: random search. Each finished (problem, method, seed) is written at once and
skipped by a rerun, so a killed run resumes. Prints mean best value +/- standard error.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

import graphbo as gb
from graphbo.benchmarks import load_benchmark

# label -> (method, edge weight of the paths, method options)
METHODS = {"combo-unit-edges": ("combo", 1.0, {}),
           "combo": ("combo", None, {}), "rs": ("rs", None, {})}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="benchmarks/results/ordinal_smoothness.json")
    ap.add_argument("--problems", nargs="+", default=["int-rosenbrock", "int-styblinski"])
    ap.add_argument("--methods", nargs="+", default=["combo", "rs"], choices=list(METHODS))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--budget", type=int, default=50)
    ap.add_argument("--n-initial", type=int, default=10)
    args = ap.parse_args()

    done = json.load(open(args.out)) if os.path.exists(args.out) else {"runs": []}
    have = {(r["problem"], r["method"], r["seed"]) for r in done["runs"]}
    for problem in args.problems:
        for method in args.methods:
            for seed in range(args.seeds):
                if (problem, method, seed) in have:
                    continue
                algo, weight, options = METHODS[method]
                bench = load_benchmark(problem, edge_weight=weight)
                t0 = time.time()
                res = gb.minimize(bench, bench.space, method=algo, budget=args.budget, seed=seed,
                                  n_initial=args.n_initial, **options)
                ys = [h.value for h in res.history]
                done["runs"].append({"problem": problem, "method": method, "seed": seed, "budget": args.budget,
                                     "best": float(min(ys)), "optimum": bench.optimum,
                                     "best_so_far": np.minimum.accumulate(ys).tolist(),
                                     "wall_seconds": time.time() - t0})
                os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
                with open(args.out + ".tmp", "w") as fh:
                    json.dump(done, fh, indent=1)
                os.replace(args.out + ".tmp", args.out)
                print(f"{problem} {method} seed {seed}: best {min(ys):.4g} ({time.time() - t0:.0f} s)", flush=True)
    print(f"\n| problem | optimum | " + " | ".join(args.methods) + " |")
    print("|---|---|" + "---|" * len(args.methods))
    for problem in args.problems:
        runs = [r for r in done["runs"] if r["problem"] == problem]
        cells = []
        for method in args.methods:
            b = np.array([r["best"] for r in runs if r["method"] == method])
            se = b.std(ddof=1) / np.sqrt(b.size) if b.size > 1 else float("nan")
            cells.append(f"{b.mean():.4g} ± {se:.2g} (n={b.size})" if b.size else "-")
        print(f"| {problem} | {runs[0]['optimum']:.4g} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
