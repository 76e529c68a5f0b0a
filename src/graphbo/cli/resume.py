"""``graphbo resume``: continue a study file written by ``graphbo run`` (a built-in benchmark) or ``graphbo run
--space ... --objective ...`` (a user's function).

A study continues in the direction stored with it (``graphbo run --direction maximize`` for a function to
maximise). A study file is data, and may come from someone else: resuming it never imports what it names unless the
user says so. A study of a user's function needs the function named on the command line
(``--objective SPEC``; the stored spec is shown in the error), or ``--trust-stored-objective``, which imports
the stored spec with the stored working folder on ``sys.path`` and says so. A built-in benchmark is
graphbo's own code and is rebuilt from its stored name and options.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..objective_loading import ImportedObjective, ObjectiveError, load_objective, stored_spec
from ._common import add_threads_argument, minimize_study, positive_float, positive_int

DESCRIPTION = """Continue a study file written by `graphbo run`: the finished trials are kept, those an
interruption left running are evaluated first, and the run goes on to its budget. A study of a built-in
benchmark resumes as it is. A study of your own function resumes only with the function named again:
`--objective SPEC` (as given to `graphbo run`), or `--trust-stored-objective` to import the one the file
names, with the folder `graphbo run` was started from put on sys.path: use it only for a file you trust,
since a file can name any importable function."""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``graphbo resume`` and its options."""
    p = subparsers.add_parser("resume", help="continue a study file written by `graphbo run`",
                              description=DESCRIPTION)
    p.add_argument("path", help="the study's SQLite file")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--objective", default=None, metavar="SPEC",
                     help="the function to minimise, for a study of your own function: MODULE:FUNCTION or "
                          "path/to/file.py:FUNCTION, imported from the current folder (the file's spec is shown "
                          "when it is missing)")
    who.add_argument("--trust-stored-objective", action="store_true",
                     help="import the objective the file names, with the folder it was run from on sys.path: "
                          "only for a file you trust")
    p.add_argument("--budget", type=positive_int, default=None,
                   help="total evaluations (default: the study's budget)")
    p.add_argument("--workers", type=positive_int, default=1, help="parallel evaluations (processes)")
    p.add_argument("--timeout", type=positive_float, default=None, help="seconds per evaluation; longer ones fail")
    add_threads_argument(p)
    p.add_argument("--quiet", action="store_true", help="print only the result")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``graphbo resume``; returns the exit code."""
    from ..benchmarks import REGISTRY, load_benchmark
    from ..storage.base import StorageError
    from ..storage.info import read_study_info

    prog = "graphbo resume"
    try:
        info = read_study_info(args.path)
    except StorageError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    attrs = info.get("user_attrs")
    attrs = attrs if isinstance(attrs, dict) else {}
    if not isinstance(info.get("method_options"), dict):
        print(f"{prog}: {args.path}: corrupt graphbo study (its method options are not a mapping)", file=sys.stderr)
        return 2
    if "objective" in attrs:
        return _resume_user(args, info, attrs)
    name = attrs.get("benchmark")
    if args.objective is not None or args.trust_stored_objective:
        given = "--objective" if args.objective is not None else "--trust-stored-objective"
        print(f"{prog}: {given} applies to studies of your own function; {args.path} is "
              + (f"a study of the built-in benchmark {name!r}" if isinstance(name, str) and name in REGISTRY
                 else "not one"), file=sys.stderr)
        return 2
    if not isinstance(name, str) or name not in REGISTRY:
        print(f"{prog}: {args.path} was not created by `graphbo run` (it names no built-in "
              f"benchmark{'' if name is None else f'; it names {name!r}'} and no objective), and a study does not "
              "store its objective; continue it from Python with graphbo.minimize(objective, space, method=..., "
              "seed=..., "
              f"storage={args.path!r}) and the same space, method ({info['method']}), seed ({info['seed']}) and "
              f"options ({info['method_options']})", file=sys.stderr)
        return 2
    options = attrs.get("benchmark_options", {})
    if not isinstance(options, dict):
        print(f"{prog}: {args.path}: corrupt graphbo study (its benchmark options are not a mapping)",
              file=sys.stderr)
        return 2
    try:
        bench = load_benchmark(name, **options)
    except (ValueError, FileNotFoundError, TypeError) as exc:
        print(f"{prog}: cannot rebuild benchmark {name!r} of {args.path}: {exc}", file=sys.stderr)
        return 2
    budget = _budget(prog, args, attrs, bench.default_budget, info)
    if budget is None:
        return 2
    finished = info["n_complete"] + info["n_failed"]
    if not args.quiet:
        print(f"graphbo: resuming {args.path}: {info['method']} on {name}, seed {info['seed']}, "
              f"{finished}/{budget} finished, {info['n_running']} interrupted")
    return minimize_study(prog, bench, bench.space, args.path, info["method"], budget, info["seed"],
                          info["method_options"], args)


def _budget(prog: str, args: argparse.Namespace, attrs: dict, default: Any, info: dict) -> int | None:
    """``--budget``, else the stored budget (an integer >= 1), else ``default``; ``None`` after an error line,
    also when the study already has more finished trials than that (checked before anything is printed)."""
    if args.budget is not None:
        budget = int(args.budget)
    else:
        stored = attrs.get("budget", default)
        if isinstance(stored, bool) or not isinstance(stored, int) or stored < 1:
            print(f"{prog}: {args.path}: its stored budget {stored!r} is not a positive integer; give --budget N",
                  file=sys.stderr)
            return None
        budget = stored
    finished = info["n_complete"] + info["n_failed"]
    if finished > budget:
        print(f"{prog}: {args.path} already has {finished} finished trials, more than the budget {budget}; give "
              f"--budget {finished} or more", file=sys.stderr)
        return None
    return budget


def _resume_user(args: argparse.Namespace, info: dict, attrs: dict) -> int:
    """`graphbo resume` of a study written by `graphbo run --space ... --objective ...`: only with the objective
    named on the command line, or the stored one trusted explicitly."""
    from ..spaces.io import SpaceFileError, space_from_dict

    prog = "graphbo resume"
    stored = attrs["objective"]
    stored_cwd = attrs.get("objective_cwd")
    if args.objective is None and not args.trust_stored_objective:
        hint = f" (the study was run with --objective {stored})" if isinstance(stored, str) else ""
        print(f"{prog}: {args.path} is a study of your own function; name it: --objective MODULE:FUNCTION"
              f"{hint}, or pass --trust-stored-objective to import the one the file names (only for a file you "
              "trust: it runs whatever it names)", file=sys.stderr)
        return 2
    budget = _budget(prog, args, attrs, None, info)
    if budget is None:
        return 2
    try:
        space = space_from_dict(attrs.get("space"), source=f"{args.path} (its stored space)")
    except SpaceFileError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    cwd = os.getcwd()
    if args.objective is not None:
        spec, search = args.objective, [cwd]
        try:
            load_objective(spec, search)  # errors name the spec as given
        except ObjectiveError as exc:
            print(f"{prog}: {exc}", file=sys.stderr)
            return 2
        if isinstance(stored, str) and stored_spec(spec) != stored and not args.quiet:
            print(f"{prog}: note: {args.path} was run with --objective {stored}; continuing with {spec}",
                  file=sys.stderr)
    else:
        if not isinstance(stored, str):
            print(f"{prog}: {args.path}: corrupt graphbo study (its stored objective {stored!r} is not a "
                  "MODULE:FUNCTION spec)", file=sys.stderr)
            return 2
        spec = stored
        search = [cwd] + ([stored_cwd] if isinstance(stored_cwd, str) and stored_cwd != cwd else [])
        folder = f", with {stored_cwd} put on sys.path" if len(search) > 1 else ""
        print(f"{prog}: trusting {args.path}: importing its objective {spec}{folder}", file=sys.stderr)
    try:
        objective = ImportedObjective(spec, search)
        objective.resolve()
    except ObjectiveError as exc:
        print(f"{prog}: {args.path}: cannot re-import its objective: {exc}", file=sys.stderr)
        return 2
    if not args.quiet:
        finished = info["n_complete"] + info["n_failed"]
        verb = "maximising" if info.get("direction") == "maximize" else "minimising"  # the stored direction
        print(f"graphbo: resuming {args.path}: {info['method']} {verb} {spec}, seed {info['seed']}, "
              f"{finished}/{budget} finished, {info['n_running']} interrupted")
    return minimize_study(prog, objective, space, args.path, info["method"], budget, info["seed"],
                          info["method_options"], args)
