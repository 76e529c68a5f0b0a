"""A small resumable runner for benchmarks whose runs are one JSON line each (``OUT/runs.jsonl``).

``python SCRIPT.py run --seeds 0-4 --out DIR`` runs every (seed, key) not yet in ``DIR/runs.jsonl`` and
appends its line; ``pack DIR --to data/NAME.jsonl.xz`` compresses the lines into the committed data set;
``report PATH`` reads a run folder or a packed file. Used by ``pruning.py`` and ``searchcv.py``.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import time
from typing import Any, Callable, Iterable, Sequence


def seeds(text: str) -> list[int]:
    """``"0-4"`` -> ``[0, 1, 2, 3, 4]``; ``"3"`` -> ``[3]``."""
    a, _, b = text.partition("-")
    return list(range(int(a), int(b or a) + 1))


def read(path: str) -> list[dict[str, Any]]:
    """The runs of a run folder (its ``runs.jsonl``) or of a packed ``.jsonl.xz`` file."""
    if os.path.isdir(path):
        path = os.path.join(path, "runs.jsonl")
    with (lzma.open(path, "rt") if path.endswith(".xz") else open(path)) as fh:
        return [json.loads(line) for line in fh if line.strip()]


def main(argv: Sequence[str] | None, description: str, default_pack: str, fields: Sequence[str],
         grid: Callable[[argparse.Namespace], Iterable[tuple[Any, ...]]], run_one: Callable[..., dict[str, Any]],
         describe: Callable[[dict[str, Any]], str], report: Callable[[list[dict[str, Any]]], None],
         add_run_arguments: Callable[[argparse.ArgumentParser], None] | None = None) -> int:
    """The command line: ``run`` (every key of ``grid(args)``, named by ``fields``, not yet done, in order),
    ``pack`` and ``report``."""
    parser = argparse.ArgumentParser(description=description)
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--seeds", default="0-4")
    r.add_argument("--out", required=True)
    if add_run_arguments is not None:
        add_run_arguments(r)
    k = sub.add_parser("pack")
    k.add_argument("out")
    k.add_argument("--to", default=default_pack)
    p = sub.add_parser("report")
    p.add_argument("runs", help="a folder of a run (its runs.jsonl) or a packed .jsonl.xz")
    args = parser.parse_args(argv)
    if args.command == "pack":
        with open(os.path.join(args.out, "runs.jsonl"), "rb") as src, lzma.open(args.to, "wb") as dst:
            dst.write(src.read())
        return 0
    if args.command == "report":
        report(read(args.runs))
        return 0
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "runs.jsonl")
    done = {tuple(d[f] for f in fields) for d in read(path)} if os.path.exists(path) else set()
    for key in grid(args):
        if tuple(key) in done:
            continue
        row = run_one(*key)
        with open(path, "a") as fh:
            fh.write(json.dumps(row) + "\n")
        print(f"[{time.strftime('%H:%M:%S')}] {describe(row)}", flush=True)
    return 0
