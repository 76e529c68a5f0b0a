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

    from .benchmarks import REGISTRY

    if args.benchmark not in REGISTRY:
        print(f"graphbo run: unknown benchmark {args.benchmark!r}; available: {sorted(REGISTRY)}", file=sys.stderr)
        return 2
    if args.benchmark == "maxsat" and not args.wcnf:
        print("graphbo run maxsat: give the instance with --wcnf PATH", file=sys.stderr)
        return 2
    try:
        bench = load_benchmark(args.benchmark, **_benchmark_options(args, args.seed))
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


def _benchmark_options(args: argparse.Namespace, seed: int) -> dict:
    """Constructor options of the benchmark for one run seed."""
    import inspect

    from .benchmarks import REGISTRY

    info = REGISTRY[args.benchmark]
    module, cls = info.target.split(":")
    import importlib

    params = inspect.signature(getattr(importlib.import_module(module), cls)).parameters
    opts: dict = {}
    if "path" in params:
        opts["path"] = args.wcnf
    if "lamda" in params and args.lamda is not None:
        opts["lamda"] = args.lamda
    if "seed" in params:
        # 5 random problem instances, crossed with the run seeds (the paper's 25 = 5 x 5 design)
        opts["seed"] = seed % 5 if args.instance_seed is None else args.instance_seed
    return opts


def _cmd_compare(args: argparse.Namespace) -> int:
    from .benchmarks import REGISTRY
    from .experiments.runner import RunSpec, compare, parse_seeds

    if args.benchmark not in REGISTRY:
        print(f"graphbo compare: unknown benchmark {args.benchmark!r}; see `graphbo benchmarks`", file=sys.stderr)
        return 2
    if args.benchmark == "maxsat" and not args.wcnf:
        print("graphbo compare maxsat: give the instance with --wcnf PATH", file=sys.stderr)
        return 2
    from .optimizers import METHODS

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        print(f"graphbo compare: unknown method(s) {unknown}; choose from {sorted(METHODS)}", file=sys.stderr)
        return 2
    try:
        seeds = parse_seeds(args.seeds)
    except ValueError as exc:
        print(f"graphbo compare: {exc}", file=sys.stderr)
        return 2
    from .benchmarks import load_benchmark

    probe = load_benchmark(args.benchmark, **_benchmark_options(args, seeds[0]))
    budget = args.budget or probe.default_budget
    n_initial = args.n_initial if args.n_initial is not None else probe.default_n_initial
    specs = [RunSpec(args.benchmark, m, s, budget, n_initial, _benchmark_options(args, s)) for m in methods for s in seeds]
    print(f"graphbo compare: {len(specs)} runs ({', '.join(methods)} x {len(seeds)} seeds), budget {budget}, "
          f"{args.workers} worker(s), traces under {args.out}", flush=True)
    compare(specs, args.out, n_workers=args.workers, log=lambda m: print(m, flush=True))
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from .experiments.report import write_report

    if not os.path.isdir(args.dir):
        print(f"graphbo report: no such folder {args.dir}", file=sys.stderr)
        return 2
    path = write_report(args.dir, out=args.out, title=args.title)
    print(f"report written to {path}")
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
    p.add_argument("--lamda", type=float, default=None, help="regularisation (ising, contamination)")
    p.add_argument("--instance-seed", type=int, default=None,
                   help="problem-instance seed of random benchmarks (default: seed mod 5)")
    p.add_argument("--trace", default=None, help="JSON-lines trace file (default: runs/NAME-METHOD-seedS-TIME.jsonl)")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    p.add_argument("--quiet", action="store_true", help="print only the result")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("compare", help="run several methods x seeds on a benchmark (resumable, parallel)")
    p.add_argument("benchmark")
    p.add_argument("--methods", default="combo,rs", help="comma-separated methods")
    p.add_argument("--seeds", default="0-4", help="e.g. 0-24 or 0,3,5")
    p.add_argument("--budget", type=int, default=None)
    p.add_argument("--n-initial", type=int, default=None)
    p.add_argument("--out", required=True, help="folder for the traces (METHOD/seedS.jsonl)")
    p.add_argument("--workers", type=int, default=1, help="parallel processes")
    p.add_argument("--wcnf", default=None, help="path of a .wcnf instance (maxsat)")
    p.add_argument("--lamda", type=float, default=None, help="regularisation (ising, contamination)")
    p.add_argument("--instance-seed", type=int, default=None,
                   help="problem-instance seed of random benchmarks (default: run seed mod 5)")
    p.set_defaults(func=_cmd_compare)

    p = sub.add_parser("report", help="markdown table and plots from comparison traces")
    p.add_argument("dir")
    p.add_argument("--out", default=None, help="markdown file (default DIR/report.md)")
    p.add_argument("--title", default="Results")
    p.set_defaults(func=_cmd_report)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
