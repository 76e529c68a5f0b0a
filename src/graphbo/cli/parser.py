"""The ``graphbo`` command's argument parser and entry point.

Each subcommand lives in a module of its own (``benchmarks``, ``run``,
``resume``, ``compare``, ``report``) with ``add_parser(subparsers)``, which
registers its options and sets ``func``, and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
from typing import Sequence

from . import benchmarks, compare, report, resume, run

#: the subcommands, in the order ``graphbo --help`` lists them
SUBCOMMANDS = (benchmarks, run, resume, compare, report)


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``graphbo`` and all its subcommands."""
    parser = argparse.ArgumentParser(prog="graphbo", description="Bayesian optimisation on graphs (COMBO).")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in SUBCOMMANDS:
        command.add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``graphbo`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    args = build_parser().parse_args(argv)
    return args.func(args)
