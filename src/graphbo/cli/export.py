"""``graphbo export STUDY.db --optuna URL``: a graphbo study as an Optuna study, for optuna-dashboard."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``graphbo export`` and its options."""
    p = subparsers.add_parser(
        "export", help="copy a study's trials into an Optuna study (to look at in optuna-dashboard)",
        description="Writes a new Optuna study with the study's trials: configurations in the variables' own "
                    "values, values, states and direction (graphbo.experiments.optuna_export). Look at it with "
                    "`optuna-dashboard URL`. Needs the optuna extra.")
    p.add_argument("path", help="the graphbo study file (.db)")
    p.add_argument("--optuna", required=True, metavar="URL",
                   help="the Optuna storage to write to, e.g. sqlite:///optuna.db")
    p.add_argument("--study-name", default=None, help="the Optuna study's name (default: the file's stem)")
    p.add_argument("--if-exists", choices=["fail", "replace", "skip"], default="fail",
                   help="an Optuna study of that name exists already: refuse (default), replace it, or leave it "
                        "(one left unfinished by a killed export is always replaced)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Export; returns the exit code."""
    from ..experiments.optuna_export import _export

    study, n_written = _export(args.path, args.optuna, args.study_name, if_exists=args.if_exists)
    if n_written is None:
        print(f"graphbo export: Optuna study {study.study_name!r} in {args.optuna} exists already; left as it is "
              f"(--if-exists skip)")
        return 0
    print(f"graphbo export: {n_written} trials of {args.path} written to Optuna study "
          f"{study.study_name!r} in {args.optuna} (view: optuna-dashboard {args.optuna})")
    return 0
