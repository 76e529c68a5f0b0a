"""``graphbo benchmarks``: list the built-in benchmarks and the options they need."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``graphbo benchmarks``."""
    p = subparsers.add_parser("benchmarks", help="list the built-in benchmarks")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Print one line per benchmark; returns the exit code."""
    from ..benchmarks import REGISTRY

    width = max(len(n) for n in REGISTRY)
    for name, info in REGISTRY.items():
        needs = " ".join(f"--{'wcnf' if k == 'path' else k} PATH" for k in info.needs)
        print(f"{name:<{width}}  {info.summary}" + (f"  [needs {needs}]" if needs else ""))
    return 0
