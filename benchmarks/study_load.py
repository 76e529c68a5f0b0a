"""Cost of a large study: ask, tell and the SQLite write per 1,000 trials, re-opening time, file size.

    python benchmarks/study_load.py                       # 10,000 trials, random search, in blocks of 1,000
    python benchmarks/study_load.py --trials 2000 --block 500 --mode tell   # direct tells, a quick check
    python benchmarks/study_load.py --file s.db      # fill s.db (kept); run again: time re-opening it only
    python benchmarks/study_load.py --out benchmarks/results/study_load.json   # also write the figures as JSON

``--mode ask`` runs the loop of :func:`graphbo.minimize` by hand on a random-search
study in an SQLite file: ``ask`` (the optimizer's suggestion and the ``running``
row written) then ``tell`` (the ``complete`` row and the optimizer state written),
timed separately; the part of both spent in the SQLite store's writes (its
``add_trials``, ``finish_trial``, ``restart_trial``, ``save_state`` and
``set_user_attr``: the transaction, the checksums and the ``synchronous = FULL``
commit) is also reported on its own as ``write``. ``--mode tell`` tells configurations that were never asked
(``Study.tell(config, value)``: one new ``complete`` row each; a configuration is
told once, so repeats of the random draw are skipped). The objective is a
cheap sum, so the times are graphbo's own. For each block it prints the mean
milliseconds per trial of ask and tell and the file's size after it; then the time
to re-open the study (``Study(...)``: read, check, replay into the optimizer) and to
read it with :func:`graphbo.storage.info.read_study_info`, the best of ``--repeats``.
Flat columns mean no growth with the number of trials.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time

import numpy as np

import graphbo as gb
from graphbo.storage.sqlite import SQLiteStorage
from graphbo.storage.info import read_study_info
from graphbo.study import Study

#: the SQLite store's methods that write (each one transaction)
WRITES = ("add_trials", "finish_trial", "restart_trial", "save_state", "set_user_attr")


class WriteClock:
    """Seconds spent inside the store's writing methods, while installed (a context manager)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._saved: dict[str, object] = {}

    def __enter__(self) -> "WriteClock":
        for name in WRITES:
            original = getattr(SQLiteStorage, name)
            self._saved[name] = original

            def timed(store, *args, _original=original, **kwargs):
                t0 = time.perf_counter()
                try:
                    return _original(store, *args, **kwargs)
                finally:
                    self.seconds += time.perf_counter() - t0

            setattr(SQLiteStorage, name, timed)
        return self

    def __exit__(self, *exc: object) -> None:
        for name, original in self._saved.items():
            setattr(SQLiteStorage, name, original)


def make_space(n_vars: int) -> gb.Space:
    """``n_vars`` ordinal variables of 10 values each (10**n_vars configurations)."""
    return gb.Space({f"x{i}": gb.Ordinal(list(range(10))) for i in range(n_vars)})


def objective(config: dict) -> float:
    return float(sum((v - 4.5) ** 2 for v in config.values()))


def file_bytes(path: str) -> int:
    """The study's size on disk: the file plus its WAL, if any."""
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


def fill(path: str, space: gb.Space, trials: int, block: int, mode: str, seed: int) -> list[dict]:
    rows = []
    rng = np.random.default_rng(seed)
    seen: set[bytes] = set()
    with Study(space, "rs", storage=path, seed=seed, n_initial=0) as study, WriteClock() as clock:
        for start in range(0, trials, block):
            t_ask = t_tell = 0.0
            written = clock.seconds
            for _ in range(block):
                if mode == "ask":
                    t0 = time.perf_counter()
                    trial = study.ask()
                    t1 = time.perf_counter()
                    study.tell(trial, objective(trial.config))
                    t_ask += t1 - t0
                    t_tell += time.perf_counter() - t1
                else:
                    row = space.sample_index(1, rng)[0]
                    while row.tobytes() in seen:
                        row = space.sample_index(1, rng)[0]
                    seen.add(row.tobytes())
                    config = space.from_index(row)
                    t0 = time.perf_counter()
                    study.tell(config, objective(config))
                    t_tell += time.perf_counter() - t0
            rows.append({"trials": f"{start}-{start + block}", "ask_ms": 1e3 * t_ask / block,
                         "tell_ms": 1e3 * t_tell / block, "write_ms": 1e3 * (clock.seconds - written) / block,
                         "total_s": t_ask + t_tell, "file_kb": file_bytes(path) / 1024})
    return rows


def best_of(repeats: int, fn) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=10_000)
    ap.add_argument("--block", type=int, default=1_000, help="trials per row of the table")
    ap.add_argument("--mode", choices=["ask", "tell"], default="ask",
                    help="ask: ask then tell (random search); tell: tell configurations never asked")
    ap.add_argument("--vars", type=int, default=8, help="ordinal variables of 10 values")
    ap.add_argument("--repeats", type=int, default=3, help="re-openings timed (the best is shown)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="write the figures as JSON here")
    ap.add_argument("--file", default=None,
                    help="study file to fill and keep (default: a temporary one); if it exists, only re-open it")
    args = ap.parse_args()

    space = make_space(args.vars)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file or os.path.join(tmp, "load.db")
        if not os.path.exists(path):
            rows = fill(path, space, args.trials, args.block, args.mode, args.seed)
            print(f"study_load: mode={args.mode}, {args.trials} trials, {args.vars} ordinal variables of 10 values, "
                  f"graphbo {gb.__version__}")
            print(f"{'trials':>13} {'ask ms':>8} {'tell ms':>8} {'write ms':>8} {'block s':>8} {'file KiB':>9}")
            for r in rows:
                print(f"{r['trials']:>13} {r['ask_ms']:8.3f} {r['tell_ms']:8.3f} {r['write_ms']:8.3f} "
                      f"{r['total_s']:8.3f} {r['file_kb']:9.0f}")

        def reopen():
            Study(space, "rs", storage=path, n_initial=0).close()

        t_open = best_of(args.repeats, reopen)
        t_info = best_of(args.repeats, lambda: read_study_info(path))
        n = read_study_info(path)["n_trials"]
        size = file_bytes(path)
        print(f"re-open Study ({n} trials): {t_open:.3f} s; read_study_info: {t_info:.3f} s; "
              f"file {size / 1024:.0f} KiB ({size / max(n, 1):.0f} bytes per trial)")
        if args.out:
            with open(args.out, "w") as fh:
                json.dump({"date": time.strftime("%Y-%m-%d"), "machine": platform.platform(),
                           "cpus": os.cpu_count(), "python": platform.python_version(),
                           "command": "python benchmarks/study_load.py " + " ".join(sys.argv[1:]),
                           "mode": args.mode, "trials": n, "blocks": rows, "reopen_s": t_open,
                           "read_study_info_s": t_info, "file_bytes": size, "bytes_per_trial": size / max(n, 1)},
                          fh, indent=1)


if __name__ == "__main__":
    main()
