"""``graphbo compare``: several methods x seeds on a built-in benchmark, resumable and parallel,
one trace per run under ``--out`` (read by ``graphbo report``)."""

from __future__ import annotations

import argparse
import sys

from ._common import add_benchmark_arguments, benchmark_options, parse_method_options


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``graphbo compare`` and its options."""
    p = subparsers.add_parser("compare", help="run several methods x seeds on a benchmark (resumable, parallel)")
    p.add_argument("benchmark")
    p.add_argument("--methods", default=None,
                   help="comma-separated methods (default: the paper's method and random search for the benchmark: "
                        "combo,rs for discrete, bofm,rs for mixed, nasbot,rand,ea,treebo for architecture benchmarks)")
    p.add_argument("--seeds", default="0-4", help="e.g. 0-24 or 0,3,5")
    p.add_argument("--budget", type=int, default=None)
    p.add_argument("--n-initial", type=int, default=None)
    p.add_argument("--out", required=True, help="folder for the traces (METHOD/seedS.jsonl)")
    p.add_argument("--workers", type=int, default=1, help="parallel processes")
    add_benchmark_arguments(p, "run seed")
    p.add_argument("--option", action="append", metavar="KEY=VALUE",
                   help="keyword argument for every method's constructor, value read as JSON "
                        "(e.g. --option ard=true); repeatable. Recorded in each trace: give such runs their own --out")
    p.set_defaults(func=run)


def default_methods(benchmark: str) -> str:
    """The method of the paper a benchmark comes from, and its random-search baseline."""
    from ..benchmarks import load_benchmark

    space = load_benchmark(benchmark).space if benchmark != "maxsat" else None
    if space is None:
        return "combo,rs"
    if type(space).__name__ == "ArchitectureSpace":
        return "nasbot,rand,ea,treebo"
    return "bofm,rs" if len(getattr(space, "continuous_indices", ())) else "combo,rs"


def run(args: argparse.Namespace) -> int:
    """Run (or continue) the comparison; returns the exit code."""
    from ..benchmarks import REGISTRY
    from ..experiments.runner import RunSpec, TraceError, compare, make_run, parse_seeds

    if args.benchmark not in REGISTRY:
        print(f"graphbo compare: unknown benchmark {args.benchmark!r}; see `graphbo benchmarks`", file=sys.stderr)
        return 2
    if args.benchmark == "maxsat" and not args.wcnf:
        print("graphbo compare maxsat: give the instance with --wcnf PATH", file=sys.stderr)
        return 2
    from ..optimizers import METHODS

    if args.methods is None:
        args.methods = default_methods(args.benchmark)
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
    from ..benchmarks import load_benchmark

    try:
        probe = load_benchmark(args.benchmark, **benchmark_options(args, seeds[0]))
    except (ValueError, FileNotFoundError) as exc:
        print(f"graphbo compare: {exc}", file=sys.stderr)
        return 2
    budget = args.budget or probe.default_budget
    n_initial = args.n_initial if args.n_initial is not None else probe.default_n_initial
    try:
        method_options = parse_method_options(args.option)
    except ValueError as exc:
        print(f"graphbo compare: {exc}", file=sys.stderr)
        return 2
    specs = [RunSpec(args.benchmark, m, s, budget, n_initial, benchmark_options(args, s), dict(method_options))
             for m in methods for s in seeds]
    if method_options:
        for spec in specs[:: len(seeds)]:  # one construction per method: a wrong option fails now, not in a worker
            try:
                make_run(spec)
            except (TypeError, ValueError) as exc:
                print(f"graphbo compare: method {spec.method!r} does not take {method_options}: {exc}", file=sys.stderr)
                return 2
    print(f"graphbo compare: {len(specs)} runs ({', '.join(methods)} x {len(seeds)} seeds), budget {budget}, "
          f"{args.workers} worker(s), traces under {args.out}", flush=True)
    try:
        compare(specs, args.out, n_workers=args.workers, log=lambda m: print(m, flush=True))
    except TraceError as exc:
        print(f"graphbo compare: {exc}; give these runs another --out", file=sys.stderr)
        return 2
    return 0
