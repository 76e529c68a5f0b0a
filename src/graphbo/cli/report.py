"""``graphbo report``: a markdown table and plots from the traces of ``graphbo compare``; with ``--suite``,
a suite's ranks over problems, mean best-found per problem and method, and best-so-far curves."""

from __future__ import annotations

import argparse
import os
import sys


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``graphbo report`` and its options."""
    p = subparsers.add_parser("report", help="markdown table and plots from comparison traces")
    p.add_argument("dir", nargs="+", help="folder(s) of comparison traces")
    p.add_argument("--out", default=None,
                   help="markdown file (default: report.md, or suite.md with --suite, in the first DIR); "
                        "its PNGs go to img/ beside it")
    p.add_argument("--suite", action="store_true",
                   help="a suite (problems x methods x seeds, e.g. one compare --out DIR/PROBLEM per problem): "
                        "each method's mean rank over the problems, mean best-found +- s.e., best-so-far curves "
                        "(median and quartiles over seeds)")
    p.add_argument("--title", default=None, help='the report\'s title (default: "Results", "Suite" with --suite)')
    p.add_argument("--notes", default=None, help="markdown file whose text goes under the report's header")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write the report; returns the exit code."""
    from ..experiments.report import write_report, write_suite_report

    missing = [d for d in args.dir if not os.path.isdir(d)]
    if missing:
        print(f"graphbo report: no such folder {', '.join(missing)}", file=sys.stderr)
        return 2
    notes = None
    if args.notes is not None:
        try:
            with open(args.notes) as fh:
                notes = fh.read()
        except OSError as exc:
            print(f"graphbo report: cannot read --notes: {exc}", file=sys.stderr)
            return 2
    if args.suite:
        path = write_suite_report(args.dir, out=args.out, title=args.title or "Suite", notes=notes)
    else:
        path = write_report(args.dir, out=args.out, title=args.title or "Results", notes=notes)
    print(f"report written to {path}")
    return 0
