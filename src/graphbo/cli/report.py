"""``graphbo report``: a markdown table and plots from the traces of ``graphbo compare``; with ``--suite``,
a suite's ranks over problems, mean best-found per problem and method, and best-so-far curves; given one
study file (``graphbo report STUDY.db``), that study's report (:mod:`graphbo.experiments.study_report`)."""

from __future__ import annotations

import argparse
import os
import sys


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``graphbo report`` and its options."""
    p = subparsers.add_parser("report", help="markdown table and plots from comparison traces, or of one study")
    p.add_argument("dir", nargs="+", metavar="PATH",
                   help="folder(s) of comparison traces, or one study file (.db) for that study's report")
    p.add_argument("--out", default=None,
                   help="markdown file (default: report.md, or suite.md with --suite, in the first folder; "
                        "STUDY.md beside a study file); its PNGs go to img/ beside it")
    p.add_argument("--log", choices=("auto", "on", "off"), default="auto",
                   help="log y axis of the best-so-far plots: auto (positive values spanning more than two "
                        "decades; regret where a suite's benchmark knows its optimum), on (symmetric-log where "
                        "values are not all positive), off (default: auto)")
    p.add_argument("--suite", action="store_true",
                   help="a suite (problems x methods x seeds, e.g. one compare --out DIR/PROBLEM per problem): "
                        "each method's mean rank over the problems, mean best-found +- s.e., best-so-far curves "
                        "(median and quartiles over seeds)")
    p.add_argument("--auto", action="store_true",
                   help="with --suite: report graphbo's auto as one method, on each problem the runs of the method "
                        "auto chooses for its space and budget (compare stores them under that name; docs/auto.md)")
    p.add_argument("--at", type=int, action="append", default=[], metavar="N",
                   help="with --suite: also rank the methods after N evaluations of the same runs (repeatable)")
    p.add_argument("--title", default=None,
                   help='the report\'s title (default: "Results", "Suite" with --suite, "Study NAME" for a study)')
    p.add_argument("--notes", default=None, help="markdown file whose text goes under the report's header")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write the report; returns the exit code."""
    missing = [d for d in args.dir if not os.path.exists(d)]
    if missing:
        print(f"graphbo report: no such file or folder {', '.join(missing)}", file=sys.stderr)
        return 2
    files = [d for d in args.dir if not os.path.isdir(d)]
    if files and (len(args.dir) > 1 or args.suite):
        print(f"graphbo report: a study file ({files[0]}) is reported on its own: give it alone, without --suite",
              file=sys.stderr)
        return 2
    notes = None
    if args.notes is not None:
        try:
            with open(args.notes) as fh:
                notes = fh.read()
        except OSError as exc:
            print(f"graphbo report: cannot read --notes: {exc}", file=sys.stderr)
            return 2
    if (args.auto or args.at) and not args.suite:
        print(f"graphbo report: {'--auto' if args.auto else '--at'} needs --suite", file=sys.stderr)
        return 2
    if any(n < 1 for n in args.at):
        print(f"graphbo report: --at takes a positive number of evaluations, got {min(args.at)}", file=sys.stderr)
        return 2
    if files:
        return _study_report(files[0], args, notes)
    from ..experiments.report import write_report, write_suite_report  # after the checks: it imports the models

    if args.suite:
        path = write_suite_report(args.dir, out=args.out, title=args.title or "Suite", notes=notes, log=args.log,
                                  auto=args.auto, at=args.at)
    else:
        path = write_report(args.dir, out=args.out, title=args.title or "Results", notes=notes, log=args.log)
    print(f"report written to {path}")
    return 0


def _study_report(path: str, args: argparse.Namespace, notes: str | None) -> int:
    from ..storage import StorageError
    from ..storage.info import read_study_info

    try:
        read_study_info(path)  # a file that is no study is refused before the report's imports
    except StorageError as exc:
        print(f"graphbo report: {exc}", file=sys.stderr)
        return 1
    from ..experiments.study_report import write_study_report

    try:
        out = write_study_report(path, out=args.out, log=args.log, title=args.title, notes=notes)
    except StorageError as exc:
        print(f"graphbo report: {exc}", file=sys.stderr)
        return 1
    print(f"report written to {out}")
    return 0
