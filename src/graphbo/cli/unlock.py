"""``graphbo unlock STUDY.db``: clear the writer lock that a process which is gone left in a study file."""

from __future__ import annotations

import argparse
import sys


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """Register ``graphbo unlock`` and its options."""
    p = subparsers.add_parser(
        "unlock", help="clear a study file's writer lock left by a process that is gone",
        description="A study file has one writer at a time. A lock left by a process that died on this host is "
                    "taken over on its own; one from another host (a shared folder) cannot be checked from "
                    "here: clear it with this command once that process has stopped. A writer alive on this "
                    "host is not unlocked.")
    p.add_argument("path", help="the study file (.db)")
    p.add_argument("--force", action="store_true",
                   help="clear the lock even if its process id is alive on this host (it is not graphbo)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Clear the lock; returns the exit code (2 if the file is not a study or its writer is alive)."""
    from ..storage import SQLiteStorage, StorageError
    from ..storage.lock import describe_writer

    try:
        cleared = SQLiteStorage(args.path).unlock(force=args.force)
    except StorageError as exc:
        print(f"graphbo unlock: {exc}", file=sys.stderr)
        return 2
    if cleared is None:
        print(f"graphbo unlock: {args.path} has no writer lock; nothing to do")
    else:
        print(f"graphbo unlock: cleared the lock of {describe_writer(cleared)} from {args.path}")
    return 0
