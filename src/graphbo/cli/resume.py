"""``graphbo resume``: continue a study file written by ``graphbo run --storage`` (a built-in
benchmark) or ``graphbo run --space ... --objective ...`` (a user's function, re-imported)."""

from __future__ import annotations

import argparse
import os
import sys

from ..objective_loading import ImportedObjective, ObjectiveError
from ._common import add_threads_argument, minimize_study


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``graphbo resume`` and its options."""
    p = subparsers.add_parser("resume", help="continue a study file written by `graphbo run --storage`")
    p.add_argument("path", help="the study's SQLite file")
    p.add_argument("--budget", type=int, default=None, help="total evaluations (default: the study's budget)")
    p.add_argument("--workers", type=int, default=1, help="parallel evaluations (processes)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per evaluation; longer ones fail")
    add_threads_argument(p)
    p.add_argument("--quiet", action="store_true", help="print only the result")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``graphbo resume``; returns the exit code."""
    from ..benchmarks import REGISTRY, load_benchmark
    from ..study import StorageError, read_study_info

    try:
        info = read_study_info(args.path)
    except StorageError as exc:
        print(f"graphbo resume: {exc}", file=sys.stderr)
        return 2
    attrs = info.get("user_attrs") or {}
    if "objective" in attrs:
        return _resume_user(args, info, attrs)
    name = attrs.get("benchmark")
    if name not in REGISTRY:
        print(f"graphbo resume: {args.path} was not created by `graphbo run ... --storage` (it names no built-in "
              f"benchmark{'' if name is None else f'; it names {name!r}'} and no objective), and a study does not "
              "store its objective; continue it from Python with graphbo.minimize(objective, space, method=..., "
              "seed=..., "
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
    return minimize_study("graphbo resume", bench, bench.space, args.path, info["method"], budget, info["seed"],
                          info["method_options"], args)


def _resume_user(args: argparse.Namespace, info: dict, attrs: dict) -> int:
    """`graphbo resume` of a study written by `graphbo run --space ... --objective ...`."""
    from ..spaces.io import SpaceFileError, space_from_dict

    prog = "graphbo resume"
    spec = attrs["objective"]
    try:
        space = space_from_dict(attrs.get("space"), source=f"{args.path} (its stored space)")
    except SpaceFileError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    search = [os.getcwd()] + [d for d in [attrs.get("objective_cwd")] if isinstance(d, str) and d != os.getcwd()]
    try:
        objective = ImportedObjective(spec, search)
        objective.resolve()
    except ObjectiveError as exc:
        print(f"{prog}: {args.path}: cannot re-import its objective: {exc}", file=sys.stderr)
        return 2
    budget = args.budget if args.budget is not None else int(attrs.get("budget", 0))
    if budget < 1:
        print(f"{prog}: --budget must be >= 1", file=sys.stderr)
        return 2
    if not args.quiet:
        finished = info["n_complete"] + info["n_failed"]
        print(f"graphbo: resuming {args.path}: {info['method']} minimising {spec}, seed {info['seed']}, "
              f"{finished}/{budget} finished, {info['n_running']} interrupted")
    return minimize_study(prog, objective, space, args.path, info["method"], budget, info["seed"],
                          info["method_options"], args)
