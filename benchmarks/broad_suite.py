"""The broad suite: 24 problems in four families, split into a development half and a test half.

    python benchmarks/broad_suite.py list                       # the problems, their family and half
    python benchmarks/broad_suite.py split --seed 20261129      # writes benchmarks/broad_suite_split.json
    python benchmarks/broad_suite.py run dev [--seeds 0-4] [--methods auto,gp-optuna,tpe,rs] [--budget 100]
    python benchmarks/broad_suite.py run dev --methods combo --option 'beta_prior="reference"' --tag ref  # a candidate
    graphbo report results/broad/dev --suite --auto --out results/broad/dev/report.md

Families (6 problems each), mostly from public suites so that results compare with published ones:

- binary: IOH's pseudo-Boolean problems (PBO, Doerr et al. 2020), 30-40 bits;
- categorical: classic functions with nominal levels (the synthetic families of CASMOPOLITAN and MCBO, here
  with a random permutation of the levels) and a random-forest tuning task;
- integer/ordinal: the same functions on ordinal grids of 20-200 levels, smooth and rugged, and a boosting
  task with five integer hyper-parameters;
- mixed: COCO's bbob-mixint (ordinal 2-16 values with continuous) and two tuning tasks with continuous,
  ordinal and categorical hyper-parameters.

The split is drawn once, family by family, with the seed given to ``split`` and committed before any run;
only the development half is used to choose methods and defaults. ``run`` runs every (problem, method, seed)
of a half with ``graphbo.experiments.runner.compare`` under ``results/broad/HALF/PROBLEM`` (one study file a
run: resumable, the same command continues whatever is unfinished), seeds as the outer loop, one process.
The initial design (``--n-initial``, 10) is shared by all methods of a seed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

SPLIT_FILE = Path(__file__).with_name("broad_suite_split.json")

#: problem id -> (family, registered benchmark, its options)
PROBLEMS: dict[str, tuple[str, str, dict]] = {
    # binary: IOH PBO, instance 1
    "pbo-onemax-epistasis-40": ("binary", "pbo-7", {"dimension": 40}),
    "pbo-onemax-rugged-40": ("binary", "pbo-10", {"dimension": 40}),
    "pbo-labs-30": ("binary", "pbo-18", {"dimension": 30}),
    "pbo-ising-torus-36": ("binary", "pbo-20", {"dimension": 36}),
    "pbo-mis-40": ("binary", "pbo-22", {"dimension": 40}),
    "pbo-nk-30": ("binary", "pbo-25", {"dimension": 30}),
    # categorical: nominal levels
    "cat-ackley-12x11": ("categorical", "grid-categorical", {"function": "ackley", "dims": 12, "levels": 11}),
    "cat-levy-10x8": ("categorical", "grid-categorical", {"function": "levy", "dims": 10, "levels": 8}),
    "cat-rastrigin-8x20": ("categorical", "grid-categorical", {"function": "rastrigin", "dims": 8, "levels": 20}),
    "cat-griewank-15x5": ("categorical", "grid-categorical", {"function": "griewank", "dims": 15, "levels": 5}),
    "cat-styblinski-16x3": ("categorical", "grid-categorical", {"function": "styblinski", "dims": 16,
                                                                  "levels": 3}),
    "tune-rf-wine": ("categorical", "sklearn-tuning", {"task": "rf-wine"}),
    # integer / ordinal
    "ord-rosenbrock-6x50": ("ordinal", "grid-ordinal", {"function": "rosenbrock", "dims": 6, "levels": 50}),
    "ord-rastrigin-8x41": ("ordinal", "grid-ordinal", {"function": "rastrigin", "dims": 8, "levels": 41}),
    "ord-schwefel-6x101": ("ordinal", "grid-ordinal", {"function": "schwefel", "dims": 6, "levels": 101}),
    "ord-zakharov-8x200": ("ordinal", "grid-ordinal", {"function": "zakharov", "dims": 8, "levels": 200}),
    "ord-michalewicz-10x20": ("ordinal", "grid-ordinal", {"function": "michalewicz", "dims": 10, "levels": 20}),
    "tune-hgb-cancer": ("ordinal", "sklearn-tuning", {"task": "hgb-cancer"}),
    # mixed: bbob-mixint, dimension 10 (8 integer + 2 continuous), instance 1
    "mixint-rastrigin-f3": ("mixed", "bbob-mixint", {"function": 3, "dimension": 10}),
    "mixint-rosenbrock-f8": ("mixed", "bbob-mixint", {"function": 8, "dimension": 10}),
    "mixint-ellipsoid-f10": ("mixed", "bbob-mixint", {"function": 10, "dimension": 10}),
    "mixint-gallagher-f21": ("mixed", "bbob-mixint", {"function": 21, "dimension": 10}),
    "tune-svc-digits": ("mixed", "sklearn-tuning", {"task": "svc-digits"}),
    "tune-hgb-diabetes": ("mixed", "sklearn-tuning", {"task": "hgb-diabetes"}),
}
FAMILIES = ("binary", "categorical", "ordinal", "mixed")


def draw_split(seed: int) -> dict[str, list[str]]:
    """Half of each family's problems (sorted by id, then permuted with ``seed``) to ``dev``, the rest to
    ``test``."""
    rng = np.random.default_rng(seed)
    split: dict[str, list[str]] = {"dev": [], "test": []}
    for family in FAMILIES:
        ids = sorted(p for p, (f, _, _) in PROBLEMS.items() if f == family)
        order = rng.permutation(len(ids))
        half = len(ids) // 2
        split["dev"] += sorted(ids[i] for i in order[:half])
        split["test"] += sorted(ids[i] for i in order[half:])
    return split


def load_split() -> dict[str, list[str]]:
    with open(SPLIT_FILE, encoding="utf-8") as fh:
        stored = json.load(fh)
    if draw_split(stored["seed"]) != stored["halves"]:
        raise SystemExit(f"{SPLIT_FILE}: its halves are not the split its seed draws from PROBLEMS (was a "
                         "problem added or renamed after the split?)")
    return stored["halves"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("list")
    sp = sub.add_parser("split")
    sp.add_argument("--seed", type=int, required=True)
    rp = sub.add_parser("run")
    rp.add_argument("half", choices=["dev", "test"])
    rp.add_argument("--seeds", default="0-4")
    rp.add_argument("--methods", default="auto,gp-optuna,tpe,rs")
    rp.add_argument("--budget", type=int, default=100)
    rp.add_argument("--n-initial", type=int, default=10)
    rp.add_argument("--only", nargs="*", help="these problems of the half only")
    rp.add_argument("--out", default="results/broad")
    rp.add_argument("--option", action="append", default=[], metavar="KEY=JSON",
                    help="a method option for every method of the run (repeatable); give such runs a --tag")
    rp.add_argument("--tag", default=None,
                    help="runs go to OUT-TAG instead of OUT, beside the defaults' runs (e.g. a candidate default)")
    args = ap.parse_args(argv)

    if args.command == "split":
        if SPLIT_FILE.exists():
            raise SystemExit(f"{SPLIT_FILE} exists: the split is drawn once, before any run")
        halves = draw_split(args.seed)
        SPLIT_FILE.write_text(json.dumps({"seed": args.seed, "halves": halves}, indent=1) + "\n")
        print(json.dumps(halves, indent=1))
        return 0
    halves = load_split() if SPLIT_FILE.exists() else {"dev": [], "test": []}
    if args.command == "list":
        for pid, (family, bench, options) in PROBLEMS.items():
            half = next((h for h, ids in halves.items() if pid in ids), "-")
            print(f"{half:4} {family:12} {pid:28} {bench} {json.dumps(options)}")
        return 0

    from graphbo.experiments.runner import RunSpec, compare, parse_seeds
    from graphbo.threads import limit_threads

    problems = [p for p in halves[args.half] if not args.only or p in args.only]
    methods = args.methods.split(",")
    method_options = {k: json.loads(v) for k, v in (o.split("=", 1) for o in args.option)}
    if method_options and not args.tag:
        raise SystemExit("--option needs a --tag: runs with other options go beside the defaults' runs, not over them")
    out = f"{args.out}-{args.tag}" if args.tag else args.out
    for seed in parse_seeds(args.seeds):
        for pid in problems:
            _, bench, options = PROBLEMS[pid]
            specs = [RunSpec(benchmark=bench, method=m, seed=seed, budget=args.budget, n_initial=args.n_initial,
                             benchmark_options=options, method_options=method_options) for m in methods]
            start = time.monotonic()
            with limit_threads(1):
                results = compare(specs, os.path.join(out, args.half, pid), log=lambda _: None)
            print(f"[{time.strftime('%H:%M:%S')}] seed {seed} {pid}: {len(results)} runs done in "
                  f"{time.monotonic() - start:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
