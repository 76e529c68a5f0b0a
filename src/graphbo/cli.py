"""Command line: ``graphbo run``, ``graphbo resume``, ``graphbo benchmarks``, ...

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
    if args.storage:
        return _run_study(args, bench, budget, n_initial)
    if args.workers != 1 or args.timeout is not None:
        print("graphbo run: --workers and --timeout need --storage PATH (a study file)", file=sys.stderr)
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


def _progress(quiet: bool, best: float | None = None):
    """A ``minimize`` callback printing one line per complete evaluation (a header before the first)."""
    best = [float("inf") if best is None else best, True]

    def callback(number, config, value, optimizer, seconds):
        best[0] = min(best[0], value)
        if not quiet:
            if best[1]:
                print(f"{'trial':>6} {'value':>12} {'best':>12} {'seconds':>8}")
                best[1] = False
            print(f"{number + 1:>6} {value:>12.5g} {best[0]:>12.5g} {seconds:>8.2f}", flush=True)

    return callback


def _minimize_study(prog: str, bench, path: str, method: str, budget: int, seed: int, method_options: dict,
                    args: argparse.Namespace) -> int:
    """Run (or continue) the study in ``path`` on a benchmark; Ctrl-C leaves it resumable."""
    from .loop import minimize
    from .optimizers.combo import torch_threads
    from .study import StorageError, read_study_info

    if args.workers < 1 or (args.timeout is not None and args.timeout <= 0):
        print(f"{prog}: --workers must be >= 1 and --timeout > 0", file=sys.stderr)
        return 2
    try:
        best = read_study_info(path).get("best_value") if os.path.exists(path) else None
        with torch_threads(args.threads):
            result = minimize(bench, bench.space, method, budget=budget, seed=seed,
                              callback=_progress(args.quiet, best),
                              storage=path, n_workers=args.workers, timeout=args.timeout, **method_options)
    except StorageError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted; the finished trials are saved in {path}; continue with "
              f"`graphbo resume {path}`", file=sys.stderr)
        return 130
    if result.best is None:
        print(f"every evaluation failed ({result.n_failed}); see the trials in {path}")
        return 1
    print(f"best value {result.best.value:.6g} at {json.dumps(result.best.config, default=str)}"
          + (f" ({result.n_failed} failed evaluations)" if result.n_failed else ""))
    print(f"study saved in {path}")
    return 0


def _run_study(args: argparse.Namespace, bench, budget: int, n_initial: int) -> int:
    """``graphbo run --storage PATH``: a study file that ``graphbo resume`` can continue."""
    from .study import StorageError, Study, read_study_info

    path = args.storage
    bench_options = _benchmark_options(args, args.seed)
    attrs = {"benchmark": args.benchmark, "benchmark_options": bench_options, "budget": budget}
    method_options = {"n_initial": n_initial}
    try:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            info = read_study_info(path)
            stored = info["user_attrs"]
            if stored.get("benchmark") != args.benchmark or stored.get("benchmark_options") != json.loads(
                    json.dumps(bench_options)):
                print(f"graphbo run: {path} is a study of {stored.get('benchmark') or 'another objective'} "
                      f"{stored.get('benchmark_options', '')}, not of {args.benchmark} {bench_options}; "
                      "choose another --storage (nothing is overwritten)", file=sys.stderr)
                return 2
            with Study(bench.space, args.method, storage=path, seed=args.seed, **method_options) as study:
                if stored.get("budget") != budget:
                    study.set_user_attr("budget", budget)  # what `graphbo resume` continues to
            print(f"graphbo: continuing {path} ({info['n_complete'] + info['n_failed']} finished trials)")
        else:
            with Study(bench.space, args.method, storage=path, seed=args.seed, **method_options) as study:
                for key, value in attrs.items():
                    study.set_user_attr(key, value)
    except (StorageError, ValueError) as exc:
        print(f"graphbo run: {exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        print(f"graphbo: {args.method} on {bench.name}, budget {budget} ({n_initial} initial), seed {args.seed}, "
              f"{args.workers} worker(s), study {path}")
    return _minimize_study("graphbo run", bench, path, args.method, budget, args.seed, method_options, args)


def _cmd_resume(args: argparse.Namespace) -> int:
    from .benchmarks import REGISTRY, load_benchmark
    from .study import StorageError, read_study_info

    try:
        info = read_study_info(args.path)
    except StorageError as exc:
        print(f"graphbo resume: {exc}", file=sys.stderr)
        return 2
    attrs = info.get("user_attrs") or {}
    name = attrs.get("benchmark")
    if name not in REGISTRY:
        print(f"graphbo resume: {args.path} was not created by `graphbo run ... --storage` (it names no built-in "
              f"benchmark{'' if name is None else f'; it names {name!r}'}), and a study does not store its "
              "objective; continue it from Python with graphbo.minimize(objective, space, method=..., seed=..., "
              f"storage={args.path!r}) and the same space, method ({info['method']}), seed ({info['seed']}) and "
              f"options ({info['method_options']})", file=sys.stderr)
        return 2
    try:
        bench = load_benchmark(name, **attrs.get("benchmark_options", {}))
    except (ValueError, FileNotFoundError, TypeError) as exc:
        print(f"graphbo resume: cannot rebuild benchmark {name!r} of {args.path}: {exc}", file=sys.stderr)
        return 2
    budget = args.budget if args.budget is not None else int(attrs.get("budget", bench.default_budget))
    if budget < 1:
        print("graphbo resume: --budget must be >= 1", file=sys.stderr)
        return 2
    finished = info["n_complete"] + info["n_failed"]
    if not args.quiet:
        print(f"graphbo: resuming {args.path}: {info['method']} on {name}, seed {info['seed']}, "
              f"{finished}/{budget} finished, {info['n_running']} interrupted")
    return _minimize_study("graphbo resume", bench, args.path, info["method"], budget, info["seed"],
                           info["method_options"], args)


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
    p.add_argument("--storage", default=None,
                   help="SQLite study file instead of a trace: crash-safe, continued by `graphbo resume PATH`")
    p.add_argument("--workers", type=int, default=1, help="parallel evaluations (processes; needs --storage)")
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds per evaluation; longer ones are recorded as failed (needs --storage)")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("resume", help="continue a study file written by `graphbo run --storage`")
    p.add_argument("path", help="the study's SQLite file")
    p.add_argument("--budget", type=int, default=None, help="total evaluations (default: the study's budget)")
    p.add_argument("--workers", type=int, default=1, help="parallel evaluations (processes)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per evaluation; longer ones fail")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    p.add_argument("--quiet", action="store_true", help="print only the result")
    p.set_defaults(func=_cmd_resume)

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
