"""``graphbo run``: optimise a built-in benchmark, or a user's own function over a space file
(``--space FILE --objective SPEC``). Every run is a study file (``--storage PATH``, default
``runs/NAME-METHOD-seedS-TIME.db``, printed first) that ``graphbo resume`` continues; Ctrl-C saves it and
prints the resume command. ``--direction maximize`` maximises a user's function (stored with the study, so ``graphbo
resume`` keeps it). Progress lines number the trials from 0, as the study file does; the best configuration is
printed in the variables' own values (:func:`~graphbo.cli._common.config_text`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Callable

from ..objective_loading import ImportedObjective, ObjectiveError, load_objective, stored_spec
from ._common import (METHODS_PLACEHOLDER, MethodListFormatter, add_benchmark_arguments, add_threads_argument,
                      benchmark_options, default_path, minimize_study, non_negative_int,
                      positive_float, positive_int, run_method, unused_path)

#: random initial evaluations of `graphbo run --space` when --n-initial is not given (the optimizers' default)
_USER_N_INITIAL = 10


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``graphbo run`` and its options."""
    p = subparsers.add_parser(
        "run", help="optimise a built-in benchmark, or your own function over a space file",
        formatter_class=MethodListFormatter,
        description="Optimise a built-in benchmark (`graphbo run BENCHMARK`), or your own function over a space "
                    "file (`graphbo run --space space.yaml --objective package.module:function --budget N`; see "
                    "docs/spaces.md). The function takes a configuration dict and returns the value to minimise "
                    "(or to maximise, with --direction maximize). "
                    "Every run is a study file (its path is printed first): Ctrl-C saves it, and "
                    "`graphbo resume PATH` continues it.")
    p.add_argument("benchmark", nargs="?", default=None,
                   help="benchmark name (see `graphbo benchmarks`); omit it with --space")
    p.add_argument("--space", default=None,
                   help="YAML or JSON space file (instead of a benchmark; needs --objective and --budget)")
    p.add_argument("--objective", default=None,
                   help="the function to minimise, MODULE:FUNCTION (importable from the current directory or "
                        "PYTHONPATH) or path/to/file.py:FUNCTION")
    p.add_argument("--method", default=None,
                   help="default: auto, graphbo's choice for the space and the budget (combo, combo-tr, bofm, "
                        "bofm-tr or nasbot; docs/auto.md), or an existing --storage file's own method; "
                        f"one of {METHODS_PLACEHOLDER}")
    p.add_argument("--budget", type=positive_int, default=None,
                   help="evaluations, initial ones included (default: the paper's; required with --space)")
    p.add_argument("--n-initial", type=non_negative_int, default=None,
                   help=f"random initial evaluations (default: the paper's; {_USER_N_INITIAL} with --space)")
    p.add_argument("--direction", choices=("minimize", "maximize"), default=None,
                   help="with --space: whether your function's best value is its lowest (default) or highest; "
                        "stored with the study (benchmarks are minimised)")
    p.add_argument("--directions", nargs="+", choices=("minimize", "maximize"), default=None, metavar="DIRECTION",
                   help="with --space: several objectives, one direction each (your function returns a list); "
                        "or `directions:` in the space file")
    p.add_argument("--n-constraints", type=non_negative_int, default=None,
                   help="with --space: black-box constraint values your function returns with its values "
                        "(a dict {values, constraints}; feasible when <= 0); or `n_constraints:` in the space file")
    p.add_argument("--seed", type=int, default=0)
    add_benchmark_arguments(p, "seed")
    add_threads_argument(p)
    p.add_argument("--quiet", action="store_true", help="print only the result")
    p.add_argument("--storage", default=None,
                   help="the SQLite study file: crash-safe, continued by `graphbo resume PATH` (default "
                        "runs/NAME-METHOD-seedS-TIME.db, NAME the benchmark or the space file's name)")
    p.add_argument("--workers", type=positive_int, default=1, help="parallel evaluations (processes)")
    p.add_argument("--timeout", type=positive_float, default=None,
                   help="seconds per evaluation; longer ones are recorded as failed")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``graphbo run``; returns the exit code."""
    from ..method_names import check_method_name

    if args.method is not None:  # before anything heavy is imported
        try:
            check_method_name(args.method)
        except ValueError as exc:
            print(f"graphbo run: {exc}", file=sys.stderr)
            return 2
    if args.space is not None or args.objective is not None:
        if args.benchmark is not None:
            print(f"graphbo run: give either a benchmark ({args.benchmark!r}) or --space FILE --objective "
                  "MODULE:FUNCTION, not both", file=sys.stderr)
            return 2
        return _run_user(args)
    if args.directions is not None or args.n_constraints is not None:
        print("graphbo run: --directions and --n-constraints apply to your own function (--space FILE --objective "
              "MODULE:FUNCTION); benchmarks have one objective", file=sys.stderr)
        return 2
    if args.direction is not None and args.direction != "minimize":
        print("graphbo run: --direction maximize applies to your own function (--space FILE --objective "
              "MODULE:FUNCTION); benchmarks are minimised", file=sys.stderr)
        return 2
    if args.benchmark is None:
        print("graphbo run: give a benchmark (see `graphbo benchmarks`) or your own problem with "
              "--space FILE --objective MODULE:FUNCTION", file=sys.stderr)
        return 2
    from ..benchmarks import REGISTRY, load_benchmark

    if args.benchmark not in REGISTRY:
        print(f"graphbo run: unknown benchmark {args.benchmark!r}; available: {sorted(REGISTRY)}", file=sys.stderr)
        return 2
    if args.benchmark == "maxsat" and not args.wcnf:
        print("graphbo run maxsat: give the instance with --wcnf PATH "
              "(or run the shipped maxsat28, maxsat43, maxsat60)", file=sys.stderr)
        return 2
    try:
        bench = load_benchmark(args.benchmark, **benchmark_options(args, args.seed))
    except (ValueError, FileNotFoundError) as exc:
        print(f"graphbo run: {exc}", file=sys.stderr)
        return 2
    budget = args.budget if args.budget is not None else bench.default_budget
    args.method = run_method(args.method, bench.space, budget, args.storage)
    n_initial = args.n_initial if args.n_initial is not None else bench.default_n_initial
    return _run_study(args, bench, budget, n_initial)


def _run_study(args: argparse.Namespace, bench: Any, budget: int, n_initial: int) -> int:
    """``graphbo run``: a study file (``--storage PATH``, or a new one under ``runs/``) that ``graphbo resume``
    can continue."""
    path = args.storage or unused_path(default_path(bench.name, args.method, args.seed, "db"))
    bench_options = benchmark_options(args, args.seed)
    attrs = {"benchmark": args.benchmark, "benchmark_options": bench_options, "budget": budget}
    method_options = {"n_initial": n_initial}

    def mismatch(stored: dict[str, Any]) -> str | None:
        if stored.get("benchmark") == args.benchmark and stored.get("benchmark_options") == json.loads(
                json.dumps(bench_options)):
            return None
        other = (f"{stored['benchmark']} {stored.get('benchmark_options', '')}" if "benchmark" in stored
                 else f"objective {stored['objective']}" if "objective" in stored else "another objective")
        return f"{path} is a study of {other}, not of {args.benchmark} {bench_options}"

    failed = _open_study("graphbo run", bench.space, args, path, method_options, attrs, budget, mismatch)
    if failed is not None:
        return failed
    print(f"graphbo: study {path}" if args.quiet else
          f"graphbo: {args.method} on {bench.name}, budget {budget} ({n_initial} initial), seed {args.seed}, "
          f"{args.workers} worker(s), study {path}", flush=True)
    return minimize_study("graphbo run", bench, bench.space, path, args.method, budget, args.seed, method_options,
                          args)


def _open_study(prog: str, space: Any, args: argparse.Namespace, path: str, method_options: dict[str, Any],
                attrs: dict[str, Any], budget: int, mismatch: Callable[[dict[str, Any]], str | None]) -> int | None:
    """Create the study file ``path`` with ``attrs`` (and ``args.direction``), or check that an existing one
    holds the same problem (``mismatch(stored attrs)`` says why not; another direction than ``args.direction``
    is refused) and record the new ``budget``; an exit code on failure."""
    from ..storage.info import read_study_info
    from ..study import StorageError, Study

    try:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            info = read_study_info(path)
            stored = info["user_attrs"]
            problem = mismatch(stored)
            if problem is not None:
                print(f"{prog}: {problem}; choose another --storage (nothing is overwritten)", file=sys.stderr)
                return 2
            finished = info["n_complete"] + info["n_failed"]
            if finished > budget:
                print(f"{prog}: {path} already has {finished} finished trials, more than --budget {budget}; give "
                      f"--budget {finished} or more (nothing is changed)", file=sys.stderr)
                return 2
            with Study(space, args.method, storage=path, seed=args.seed, direction=args.direction,
                       directions=getattr(args, "directions", None), n_constraints=getattr(args, "n_constraints", None),
                       **method_options) as study:
                if stored.get("budget") != budget:
                    study.set_user_attr("budget", budget)  # what `graphbo resume` continues to
            print(f"graphbo: continuing {path} ({finished}/{budget} trials finished)")
        else:
            with Study(space, args.method, storage=path, seed=args.seed, direction=args.direction,
                       directions=getattr(args, "directions", None), n_constraints=getattr(args, "n_constraints", None),
                       **method_options) as study:
                for key, value in attrs.items():
                    study.set_user_attr(key, value)
    except (StorageError, ValueError, TypeError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    return None


def _run_user(args: argparse.Namespace) -> int:
    """``graphbo run --space FILE --objective SPEC``: a study of the user's own function."""
    prog = "graphbo run"
    if args.space is None or args.objective is None:
        missing = "--objective MODULE:FUNCTION" if args.space is not None else "--space FILE"
        print(f"{prog}: --space and --objective go together; give {missing} too", file=sys.stderr)
        return 2
    benchmark_only = [flag for flag, value in (("--wcnf", args.wcnf), ("--lamda", args.lamda), ("--epochs", args.epochs),
                                               ("--instance-seed", args.instance_seed),
                                               ("--benchmark-option", args.benchmark_option))
                      if value is not None]
    if benchmark_only:
        print(f"{prog}: {', '.join(benchmark_only)} apply to benchmarks only; with --space the run is a study file "
              "(--storage PATH)", file=sys.stderr)
        return 2
    if args.budget is None:
        print(f"{prog}: give the number of evaluations with --budget N", file=sys.stderr)
        return 2
    n_initial = args.n_initial if args.n_initial is not None else _USER_N_INITIAL
    from ..spaces.io import SpaceFileError, load_problem, space_to_dict

    try:
        space, settings = load_problem(args.space)
    except SpaceFileError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    for key in ("directions", "n_constraints"):  # the command line's, else the space file's
        if getattr(args, key) is None:
            setattr(args, key, settings.get(key))
    if args.directions is not None and args.direction is not None:
        print(f"{prog}: give --direction (one objective) or --directions (several), not both", file=sys.stderr)
        return 2
    cwd = os.getcwd()
    try:
        load_objective(args.objective, [cwd])  # errors name the spec as given
        spec = stored_spec(args.objective)
        objective = ImportedObjective(spec, [cwd])
        objective.resolve()
    except ObjectiveError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    args.method = run_method(args.method, space, args.budget, args.storage, args)
    name = os.path.splitext(os.path.basename(args.space))[0]
    path = args.storage or unused_path(default_path(name, args.method, args.seed, "db"))
    space_dict = space_to_dict(space)
    attrs = {"objective": spec, "objective_cwd": cwd, "space": space_dict,
             "space_file": os.path.abspath(args.space), "budget": args.budget}
    method_options = {"n_initial": n_initial}

    def mismatch(stored: dict[str, Any]) -> str | None:
        if stored.get("objective") == spec and stored.get("space") == space_dict:
            return None
        if stored.get("objective") == spec:
            what = f"{spec} on another space"
        elif "objective" in stored:
            what = f"objective {stored['objective']}"
        elif "benchmark" in stored:
            what = f"benchmark {stored['benchmark']}"
        else:
            what = "another objective"
        return f"{path} is a study of {what}, not of {spec} on {args.space}"

    failed = _open_study(prog, space, args, path, method_options, attrs, args.budget, mismatch)
    if failed is not None:
        return failed
    print(f"graphbo: study {path}" if args.quiet else
          f"graphbo: {args.method} on {args.space} "
          f"{'maximising' if args.direction == 'maximize' else 'minimising'} {args.objective}, budget {args.budget} "
          f"({n_initial} initial), seed {args.seed}, {args.workers} worker(s), study {path}", flush=True)
    return minimize_study(prog, objective, space, path, args.method, args.budget, args.seed, method_options, args)
