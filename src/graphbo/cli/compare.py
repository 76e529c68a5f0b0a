"""``graphbo compare``: several methods x seeds on a built-in benchmark, resumable and parallel,
one study file per run under ``--out`` (read by ``graphbo report``). Each run prints a progress line with its
best so far (``branin combo seed 1: 40/100 best 0.41``) every 10 evaluations, after an evaluation that ends 30 s
or more after its last line, and when done, in parallel too (from the worker processes, through
:func:`print_line`); the last line counts the runs that have used their budget."""

from __future__ import annotations

import argparse
import sys

from ._common import (METHODS_PLACEHOLDER, SEEDS_FORMS, MethodListFormatter, add_benchmark_arguments,
                      benchmark_options, non_negative_int, parse_method_options, positive_int,
                      seed_list)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``graphbo compare`` and its options."""
    p = subparsers.add_parser("compare", help="run several methods x seeds on a benchmark (resumable, parallel)",
                              formatter_class=MethodListFormatter)
    p.add_argument("benchmark")
    p.add_argument("--methods", default=None,
                   help="comma-separated methods (default: auto and random search, or for architecture benchmarks "
                        "nasbot,rand,ea,treebo); auto is graphbo's choice for the benchmark's space and budget "
                        "(combo, combo-tr, bofm, bofm-tr or nasbot; docs/auto.md), run and stored under the name "
                        f"it chose; from auto, {METHODS_PLACEHOLDER}")
    p.add_argument("--seeds", type=seed_list, default="0-4", help=f"run seeds: {SEEDS_FORMS} (default: 0-4)")
    p.add_argument("--budget", type=positive_int, default=None,
                   help="evaluations per run (default: the paper's for the benchmark)")
    p.add_argument("--n-initial", type=non_negative_int, default=None)
    p.add_argument("--out", required=True, help="folder for the runs (METHOD/seedS.db)")
    p.add_argument("--workers", type=positive_int, default=1, help="parallel processes")
    add_benchmark_arguments(p, "run seed")
    p.add_argument("--option", action="append", metavar="KEY=VALUE",
                   help="keyword argument for every method's constructor, value read as JSON "
                        "(e.g. --option ard=true); repeatable. Recorded in each trace: give such runs their own --out")
    p.set_defaults(func=run)


#: the baselines a method is compared with by default (random search unless listed)
BASELINES = {"nasbot": "rand,ea,treebo"}


def default_methods(space, budget: int | None = None) -> str:
    """``auto``'s method for a benchmark's space and budget (:func:`graphbo.optimizers.auto.choose_method`;
    with no budget, the space's natural method or its trust-region variant) and its baselines."""
    from ..optimizers.auto import choose_method

    method = choose_method(space, budget)
    return f"{method},{BASELINES.get(method, 'rs')}"


def resolve_methods(names: list[str], space, budget: int) -> list[str]:
    """``names`` with ``auto`` (any case) replaced by the method it chooses for ``space`` and ``budget``, each
    method once, in order (``auto,combo`` on a small discrete space is one run of ``combo``). Names that are
    not methods are kept, for the caller to report."""
    from ..optimizers.auto import AUTO, choose_method

    resolved: list[str] = []
    for name in names:
        method = choose_method(space, budget) if name.lower() == AUTO else name
        if method not in resolved:
            resolved.append(method)
    return resolved


def run(args: argparse.Namespace) -> int:
    """Run (or continue) the comparison; returns the exit code."""
    from ..benchmarks import REGISTRY
    from ..experiments.runner import RunSpec, TraceError, compare, make_run

    if args.benchmark not in REGISTRY:
        print(f"graphbo compare: unknown benchmark {args.benchmark!r}; see `graphbo benchmarks`", file=sys.stderr)
        return 2
    if args.benchmark == "maxsat" and not args.wcnf:
        print("graphbo compare maxsat: give the instance with --wcnf PATH "
              "(or run the shipped maxsat28, maxsat43, maxsat60)", file=sys.stderr)
        return 2
    from ..optimizers import METHODS

    seeds = args.seeds
    from ..benchmarks import load_benchmark

    try:
        probe = load_benchmark(args.benchmark, **benchmark_options(args, seeds[0]))
    except (ValueError, FileNotFoundError) as exc:
        print(f"graphbo compare: {exc}", file=sys.stderr)
        return 2
    budget = args.budget if args.budget is not None else probe.default_budget
    if args.methods is None:
        args.methods = default_methods(probe.space, budget)
    named = [m.strip() for m in args.methods.split(",") if m.strip()]
    methods = resolve_methods(named, probe.space, budget)
    unknown = [m for m in methods if m not in METHODS]
    if unknown or not methods:
        print(f"graphbo compare: unknown method(s) {unknown}; choose from {['auto'] + sorted(METHODS)}",
              file=sys.stderr)
        return 2
    if any(m.lower() == "auto" for m in named):
        print(f"graphbo compare: auto chose {resolve_methods(['auto'], probe.space, budget)[0]} for "
              f"{args.benchmark} with budget {budget} (docs/auto.md)", flush=True)
    n_initial = args.n_initial if args.n_initial is not None else probe.default_n_initial
    try:
        method_options = parse_method_options(args.option)
    except ValueError as exc:
        print(f"graphbo compare: {exc}", file=sys.stderr)
        return 2
    specs = [RunSpec(benchmark=args.benchmark, method=m, seed=s, budget=budget, n_initial=n_initial,
                     benchmark_options=benchmark_options(args, s), method_options=dict(method_options))
             for m in methods for s in seeds]
    if method_options:
        for spec in specs[:: len(seeds)]:  # one construction per method: a wrong option fails now, not in a worker
            try:
                make_run(spec)
            except (TypeError, ValueError) as exc:
                print(f"graphbo compare: method {spec.method!r} does not take {method_options}: {exc}", file=sys.stderr)
                return 2
    print(f"graphbo compare: {len(specs)} runs ({', '.join(methods)} x {len(seeds)} seeds), budget {budget}, "
          f"{args.workers} worker(s), runs under {args.out}", flush=True)
    try:
        compare(specs, args.out, n_workers=args.workers, log=print_line, worker_log=print_line)
    except TraceError as exc:
        print(f"graphbo compare: {exc}; give these runs another --out", file=sys.stderr)
        return 2
    unfinished = unfinished_runs(specs, args.out)
    print(f"graphbo compare: {len(specs) - len(unfinished)}/{len(specs)} runs finished under {args.out}"
          + (f"; not finished: {', '.join(unfinished)} (the same command continues them)" if unfinished else ""))
    return 1 if unfinished else 0


def print_line(message: str) -> None:
    """A progress line, flushed (module-level, so worker processes can be handed it). Line and newline go out
    in one write: parallel workers share the stream, and ``print`` writes the two apart."""
    sys.stdout.write(message + "\n")
    sys.stdout.flush()


def unfinished_runs(specs: list, out_dir: str) -> list[str]:
    """``METHOD seed S`` of each spec whose run under ``out_dir`` has not used its budget (read from its file,
    so a count can never exceed the number of runs)."""
    from ..experiments.runner import run_path, trace_finished
    from ..storage import find_run, read_run

    missing = []
    for spec in specs:
        found = find_run(run_path(out_dir, spec))
        data = read_run(found) if found is not None else None
        if data is None or not trace_finished(data.head, data.evals, budget=spec.budget):
            missing.append(f"{spec.method} seed {spec.seed}")
    return missing
