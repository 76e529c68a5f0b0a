"""The ``graphbo`` command's argument parser and entry point.

Each subcommand lives in a module of its own (``benchmarks``, ``run``,
``resume``, ``compare``, ``report``, ``export``, ``unlock``) with ``add_parser(subparsers)``, which
registers its options and sets ``func``, and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from typing import NoReturn, Sequence

from . import benchmarks, compare, export, report, resume, run, unlock

#: the subcommands, in the order ``graphbo --help`` lists them
SUBCOMMANDS = (benchmarks, run, resume, compare, report, export, unlock)


DESCRIPTION = ("Bayesian optimisation over discrete, mixed and neural-architecture spaces: COMBO (graph "
               "diffusion kernels), BO-FM (frequency-modulated kernels, mixed variables) and NASBOT (OTMANN "
               "distance between architectures), with the papers' baselines and benchmarks.")


class _Parser(argparse.ArgumentParser):
    """A usage error is one line naming the option (``graphbo run: --budget must be >= 1, got 0``), exit code 2."""

    def error(self, message: str) -> NoReturn:
        message = re.sub(r"^argument ([^:]+): (must)", r"\1 \2", message)
        message = re.sub(r"^argument ([^:]+): ", r"\1: ", message)
        self.exit(2, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``graphbo`` and all its subcommands."""
    from .. import __version__

    parser = _Parser(prog="graphbo", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"graphbo {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in SUBCOMMANDS:
        command.add_parser(subparsers)
    for sub in subparsers.choices.values():  # `graphbo run ... --debug` works too
        sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``graphbo`` with ``argv`` (default: ``sys.argv[1:]``); returns the exit code.

    Errors end in one line on stderr and a non-zero exit code (2 a usage error, 1 an error while running,
    130 Ctrl-C), without a traceback unless ``--debug``.
    """
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # --help, --version (0) or a usage error (2), already printed
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 2
    return run_command(args)


def run_command(args: argparse.Namespace) -> int:
    """``args.func(args)``, with an error or Ctrl-C as one line (the traceback too with ``args.debug``)."""
    from .._lazy import missing_extra_message

    prog = f"graphbo {args.command}"
    handler = _log_handler()
    try:
        return args.func(args)
    except KeyboardInterrupt:
        if args.debug:
            raise
        print(("\n" if sys.stderr.isatty() else "") + f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if args.debug:
            raise
        line = missing_extra_message(exc)
        if line is None:
            text = next((t.strip() for t in str(exc).splitlines() if t.strip()), "")
            line = f"{type(exc).__name__}: {text} (run `graphbo --debug {args.command} ...` for the traceback)"
        print(f"{prog}: {line}", file=sys.stderr)
        return 1
    finally:
        if handler is not None:
            logging.getLogger("graphbo").removeHandler(handler)


def _log_handler() -> logging.Handler | None:
    """The command's printing of graphbo's warnings, ``graphbo: MESSAGE`` on standard error (the library adds
    no handler of its own); none where the process has configured logging itself (its root logger has a handler)."""
    if logging.getLogger().handlers:
        return None
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("graphbo: %(message)s"))
    logging.getLogger("graphbo").addHandler(handler)
    return handler
