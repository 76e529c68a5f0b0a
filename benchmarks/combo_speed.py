"""Seconds per COMBO suggestion (fit + acquisition), at the paper's settings.

    python benchmarks/combo_speed.py --maxsat-dir ../shared/data/maxsat [--problem all] [--threads 1] [--repeats 5]

For each problem, ``n`` distinct random configurations are evaluated and
told, the first fit's burn-in is run once and not timed, then ``--repeats``
suggestions are timed (each: 10 warm-started slice-sampling sweeps, EI over
10 posterior samples on 20,000 random + 20 spray vertices, local search from
the best 20). Each timed suggestion is withdrawn (``mark_failed``) before the
next, so all see the same ``n`` told points and none pending. Medians of the
wall seconds and of the process's CPU seconds are printed.

The comparison with the authors' COMBO code, timed in the same process, is
``benchmarks/combo_original_speed.py``, which imports :func:`prepare` and
:func:`time_suggestion` from here.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import torch

import graphbo as gb
from graphbo.benchmarks import REGISTRY, load_benchmark

PROBLEMS = ("branin", "maxsat28", "pestcontrol")


def cases(problem: str, maxsat_dir: str | None) -> list[tuple[str, object, int]]:
    """``(name, benchmark, n)`` of the timed cases: Branin n = 40, wMaxSAT28 n = 60 and 250, pest control n = 50."""
    out = []
    if problem in ("branin", "all"):
        out.append(("branin", load_benchmark("branin"), 40))
    if problem in ("maxsat28", "all") and maxsat_dir:
        path = os.path.join(maxsat_dir, "maxcut-johnson8-2-4.clq.wcnf")
        if os.path.isfile(path):
            ms = load_benchmark("maxsat", path=path)
            out += [("maxsat28", ms, 60), ("maxsat28", ms, 250)]
    if problem in ("pestcontrol", "all") and "pestcontrol" in REGISTRY:
        out.append(("pestcontrol", load_benchmark("pestcontrol"), 50))
    return out


def prepare(bench, n: int, seed: int = 0) -> gb.COMBO:
    """A COMBO optimiser told ``n`` distinct random configurations, with its first fit (the burn-in) done, untimed."""
    opt = gb.COMBO(bench.space, seed=seed, n_initial=n)
    for _ in range(n):
        c = opt.ask()
        opt.tell(c, bench(c))
    opt.mark_failed(opt.ask())  # first fit: burn-in, not timed
    return opt


def time_suggestion(opt: gb.COMBO) -> dict:
    """Seconds of one suggestion: wall ``fit``, ``acquisition``, ``total`` and the process's ``cpu``.

    The suggestion is withdrawn afterwards, so the next one sees the same data.
    """
    c0 = time.process_time()
    config = opt.ask()
    cpu = time.process_time() - c0
    opt.mark_failed(config)
    fit, acq = opt.last_timing["fit"], opt.last_timing["acquisition"]
    return {"fit": fit, "acquisition": acq, "total": fit + acq, "cpu": cpu}


def medians(runs: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in runs) for k in runs[0]}


def time_suggestions(bench, n: int, repeats: int, seed: int = 0) -> dict:
    opt = prepare(bench, n, seed)
    return {"n": n, **medians([time_suggestion(opt) for _ in range(repeats)])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--maxsat-dir", default=None, help="folder with maxcut-johnson8-2-4.clq.wcnf")
    ap.add_argument("--problem", choices=PROBLEMS + ("all",), default="all")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = []
    print(f"torch threads: {torch.get_num_threads()}, repeats: {args.repeats}")
    print(f"{'problem':<12} {'n':>4} {'fit s':>8} {'acq s':>8} {'total s':>8} {'CPU s':>8}")
    for name, bench, n in cases(args.problem, args.maxsat_dir):
        r = time_suggestions(bench, n, args.repeats)
        r.update(problem=name, threads=torch.get_num_threads(), repeats=args.repeats,
                 date=time.strftime("%Y-%m-%d"), load_avg=os.getloadavg()[0])
        rows.append(r)
        print(f"{name:<12} {n:>4} {r['fit']:>8.3f} {r['acquisition']:>8.3f} {r['total']:>8.3f} {r['cpu']:>8.3f}",
              flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
