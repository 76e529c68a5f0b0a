"""Command line: ``graphbo run``, ``graphbo benchmarks``.

Heavy modules (torch) are imported only by the commands that need them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Sequence

__all__ = ["main"]


def _cmd_benchmarks(args: argparse.Namespace) -> int:
    from .benchmarks import REGISTRY

    width = max(len(n) for n in REGISTRY)
    for name, info in REGISTRY.items():
        needs = " ".join(f"--{'wcnf' if k == 'path' else k} PATH" for k in info.needs)
        print(f"{name:<{width}}  {info.summary}" + (f"  [needs {needs}]" if needs else ""))
    return 0


def _default_trace(name: str, method: str, seed: int) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return os.path.join("runs", f"{name}-{method}-seed{seed}-{stamp}.jsonl")


def _cmd_run(args: argparse.Namespace) -> int:
    from .benchmarks import load_benchmark

    kwargs = {}
    if args.benchmark == "maxsat":
        if not args.wcnf:
            print("graphbo run maxsat: give the instance with --wcnf PATH", file=sys.stderr)
            return 2
        kwargs["path"] = args.wcnf
    try:
        bench = load_benchmark(args.benchmark, **kwargs)
    except (ValueError, FileNotFoundError) as exc:
        print(f"graphbo run: {exc}", file=sys.stderr)
        return 2
    budget = args.budget if args.budget is not None else bench.default_budget
    n_initial = args.n_initial if args.n_initial is not None else bench.default_n_initial
    if budget < 1 or n_initial < 0:
        print("graphbo run: --budget must be >= 1 and --n-initial >= 0", file=sys.stderr)
        return 2
    trace_path = args.trace or _default_trace(bench.name, args.method, args.seed)
    if os.path.exists(trace_path):
        print(f"graphbo run: {trace_path} exists; choose another --trace (nothing is overwritten)", file=sys.stderr)
        return 2

    from .loop import make_optimizer
    from .optimizers.combo import torch_threads

    try:
        opt = make_optimizer(args.method, bench.space, seed=args.seed, n_initial=n_initial)
    except ValueError as exc:
        print(f"graphbo run: {exc}", file=sys.stderr)
        return 2
    os.makedirs(os.path.dirname(trace_path) or ".", exist_ok=True)
    meta = {"type": "run", "benchmark": bench.name, "method": args.method, "seed": args.seed,
            "budget": budget, "n_initial": n_initial, "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
    if not args.quiet:
        print(f"graphbo: {args.method} on {bench.name}, budget {budget} ({n_initial} initial), seed {args.seed}")
        print(f"{'eval':>6} {'value':>12} {'best':>12} {'seconds':>8}")
    with open(trace_path, "x") as trace, torch_threads(args.threads):
        trace.write(json.dumps(meta) + "\n")
        trace.flush()
        for i in range(budget):
            t0 = time.perf_counter()
            config = opt.ask()
            t1 = time.perf_counter()
            value = float(bench(config))
            t2 = time.perf_counter()
            opt.tell(config, value)
            rec = {"type": "eval", "i": i, "config": config, "value": value, "best": opt.best.value,
                   "suggest_seconds": round(t1 - t0, 6), "evaluate_seconds": round(t2 - t1, 6)}
            trace.write(json.dumps(rec, default=str) + "\n")
            trace.flush()
            if not args.quiet:
                print(f"{i + 1:>6} {value:>12.5g} {opt.best.value:>12.5g} {t2 - t0:>8.2f}", flush=True)
    best = opt.best
    print(f"best value {best.value:.6g} at {json.dumps(best.config, default=str)}")
    print(f"trace written to {trace_path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="graphbo", description="Bayesian optimisation on graphs (COMBO).")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("benchmarks", help="list the built-in benchmarks")
    p.set_defaults(func=_cmd_benchmarks)

    p = sub.add_parser("run", help="optimise a built-in benchmark")
    p.add_argument("benchmark", help="benchmark name (see `graphbo benchmarks`)")
    p.add_argument("--method", default="combo", help="combo (default) or random")
    p.add_argument("--budget", type=int, default=None, help="evaluations, initial ones included (default: the paper's)")
    p.add_argument("--n-initial", type=int, default=None, help="random initial evaluations (default: the paper's)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--wcnf", default=None, help="path of a .wcnf instance (maxsat)")
    p.add_argument("--trace", default=None, help="JSON-lines trace file (default: runs/NAME-METHOD-seedS-TIME.jsonl)")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    p.add_argument("--quiet", action="store_true", help="print only the result")
    p.set_defaults(func=_cmd_run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
