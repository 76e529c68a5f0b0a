"""Pack the run files under a folder into the compact data set the reports are made from.

    python benchmarks/pack_runs.py RUNS --out data/runs [--only GROUP ...]

Every run file under ``RUNS`` (``FOLDER/METHOD/seedS.db`` as ``graphbo compare --out RUNS/FOLDER`` writes them,
e.g. ``combo-paper/maxsat28/combo/seed0.db``) goes into
``OUT/FOLDER.runs.jsonl.xz``
(:mod:`graphbo.storage.packed`), and ``OUT/MANIFEST.json`` records each table's checksum, counts, commit and this
command. Tables of groups not packed this time are kept. Check a data set with ``--verify``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys

from graphbo.experiments.report import run_files_under
from graphbo.progress import progress_over
from graphbo.storage import TraceError, read_run
from graphbo.storage.packed import pack_runs, verify_manifest


def _commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="?", help="folder of run files (FOLDER/METHOD/seedS.db)")
    parser.add_argument("--out", required=True, help="the data set's folder (e.g. data/runs)")
    parser.add_argument("--only", nargs="*", help="pack only these groups (first-level folders of RUNS)")
    parser.add_argument("--verify", action="store_true", help="only check OUT against its manifest")
    args = parser.parse_args(argv)
    if args.verify:
        problems = verify_manifest(args.out)
        print("\n".join(problems) if problems else f"{args.out}: every table matches its manifest")
        return 1 if problems else 0
    if not args.runs:
        parser.error("give the folder of run files (or --verify)")
    groups = args.only or sorted(d for d in os.listdir(args.runs) if os.path.isdir(os.path.join(args.runs, d)))
    paths = [p for g in groups for p in run_files_under(os.path.join(args.runs, g))]
    runs = []
    for path in progress_over(paths, "reading runs", show=None):
        try:
            runs.append((os.path.relpath(path, args.runs), read_run(path)))
        except TraceError as exc:
            print(f"skipped: {exc}", file=sys.stderr)
    command = "python benchmarks/pack_runs.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    manifest = pack_runs(runs, args.out, commit=_commit(), command=command)
    n = sum(t["trials"] for t in manifest["tables"].values())
    print(f"{args.out}: {len(manifest['tables'])} tables, {n} trials")
    return 0


if __name__ == "__main__":
    sys.exit(main())
