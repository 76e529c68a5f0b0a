"""BO-FM's acquisition optimisers on the same fitted models: the value each reaches and its time.

    OMP_NUM_THREADS=1 python benchmarks/bofm_ascent.py [--problems ackley53,func3c,ackley5c,nas-sgd]
        [--n 50 100] [--seeds 0-3] [--methods supplement,typewise,batched] [--priors auto]
        [--json benchmarks/results/bofm_ascent.json] [--summary]

For each (problem, n, seed, prior): ``n`` random evaluations, one BO-FM fit (as a suggestion
fits it), then every method of ``--methods`` maximises the same log-EI from the same starting
pool (the same random generator state: 100,000 random + 50 spray points, the best 40 start),
so the only difference is how the starts climb. Recorded: the log-EI of the point each returns
(higher is better; all return the best unevaluated point among their starts' ends and the pool)
and its CPU seconds, and the best value of the starting pool itself, with no climbing (``pool_log_ei``;
absent from the cases of the committed file, which ran before it was added). This isolates the optimiser from the rest of a BO run: a method that
reaches the same or higher values in less time is the better optimiser of the same
acquisition. Full-run quality is benchmarks/bofm_acquisition.py's job.

Methods (``optimize_acquisition_mixed``): ``supplement`` (BO-FM supplement D.1: one
hill-climbing step and one ``L-BFGS-B(maxiter=1)`` call per start and round),
``typewise`` (the same, but a start whose hill-climbing step finds no better neighbour has
its continuous part run to L-BFGS-B's convergence at once) and ``batched`` (all starts
together). A method written ``METHOD@N`` (e.g. ``typewise@20000``) runs from a pool of ``N`` random
rows instead of D.1's 100,000 (its pool is then another draw, so single cases differ by chance; the
counts over many cases say whether the smaller pool reaches the same values). The JSON file is
rewritten after every case; finished cases are skipped.

    OMP_NUM_THREADS=1 python benchmarks/bofm_ascent.py --methods typewise,typewise@20000 \
        --json benchmarks/results/bofm_ascent_pool.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

import graphbo as gb
from graphbo.acquisition import LogExpectedImprovement
from graphbo.benchmarks import load_benchmark
from graphbo.optim.mixed import optimize_acquisition_mixed

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bofm_speed import NASSGD, ackley53, synthetic_nas_value  # noqa: E402

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "bofm_ascent.json"


def problem(name: str):
    if name == "ackley53":
        return ackley53()
    if name == "nas-sgd":
        nas = NASSGD()
        return nas.space, lambda c: synthetic_nas_value(nas, c)
    bench = load_benchmark(name)
    return bench.space, bench


def seeds(text: str) -> list[int]:
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def run_case(name: str, n: int, seed: int, prior: str, methods: list[str]) -> dict[str, Any]:
    space, f = problem(name)
    opt = gb.BOFM(space, seed=seed, n_initial=n, prior=prior)
    for _ in range(n):
        c = opt.ask()
        opt.tell(c, f(c))
    X, y = opt.X, opt.y
    opt.model.fit(X, y, np.random.default_rng(seed))
    acq = LogExpectedImprovement(opt.model)
    out: dict[str, Any] = {"problem": name, "n": n, "seed": seed, "prior": prior}
    for m in methods:
        rng = np.random.default_rng(1000 + seed)  # the same pool and starts for every method
        c0 = time.process_time()
        method, _, pool = m.partition("@")  # "typewise@20000": that method from a pool of 20,000 random rows
        row, value = optimize_acquisition_mixed(acq, space, rng, incumbent=X[int(np.argmin(y))],
                                                exclude=opt._exclude, method=method,
                                                **({"n_random": int(pool)} if pool else {}))
        out[m] = {"log_ei": float(value), "cpu_s": time.process_time() - c0}
    # the starting pool's best, without any climbing: how much the climbs add
    _, value = optimize_acquisition_mixed(acq, space, np.random.default_rng(1000 + seed), incumbent=X[int(np.argmin(y))],
                                          exclude=opt._exclude, method="supplement", max_rounds=0)
    out["pool_log_ei"] = float(value)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problems", default="ackley53,func3c,ackley5c,nas-sgd")
    ap.add_argument("--n", type=int, nargs="+", default=[50, 100])
    ap.add_argument("--seeds", default="0-3")
    ap.add_argument("--methods", default="supplement,typewise,batched")
    ap.add_argument("--priors", default="auto")
    ap.add_argument("--json", default=str(DEFAULT_JSON))
    ap.add_argument("--summary", action="store_true", help="print the summary of the JSON file and stop")
    args = ap.parse_args()
    torch.set_num_threads(1)
    methods = args.methods.split(",")
    path = Path(args.json)
    data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    if args.summary:
        summarise(data, methods)
        return
    for name in args.problems.split(","):
        for n in args.n:
            for prior in args.priors.split(","):
                for seed in seeds(args.seeds):
                    key = f"{name}@n={n}@{prior}@seed={seed}"
                    if key in data and all(m in data[key] for m in methods):
                        continue
                    r = run_case(name, n, seed, prior, methods)
                    r["environment"] = {"python": platform.python_version(), "torch": torch.__version__,
                                        "date": time.strftime("%Y-%m-%d %H:%M")}
                    data[key] = r
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(json.dumps(data, indent=1) + "\n")
                    print(key, "  ".join(f"{m} {r[m]['log_ei']:.6g} ({r[m]['cpu_s']:.1f} s)" for m in methods),
                          f" pool {r['pool_log_ei']:.6g}", flush=True)
    summarise(data, methods)


def summarise(data: dict[str, Any], methods: list[str]) -> None:
    """Per problem and n: median CPU seconds per method, and how often each reaches the best value."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in data.values():
        if all(m in r for m in methods):
            groups.setdefault(f"{r['problem']} n={r['n']} {r['prior']}", []).append(r)
    for g, rows in sorted(groups.items()):
        parts = []
        for m in methods:
            best = sum(r[m]["log_ei"] >= max(r[k]["log_ei"] for k in methods) - 1e-9 * max(1.0, abs(r[m]["log_ei"]))
                       for r in rows)
            gap = statistics.median(max(r[k]["log_ei"] for k in methods) - r[m]["log_ei"] for r in rows)
            parts.append(f"{m}: {statistics.median(r[m]['cpu_s'] for r in rows):.2f} s, best {best}/{len(rows)}, "
                         f"median gap {gap:.2g}")
        print(f"{g:<26} " + " | ".join(parts))


if __name__ == "__main__":
    main()
