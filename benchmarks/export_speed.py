"""Seconds to export a study to an Optuna SQLite storage: graphbo's one-transaction writer against Optuna's own
``add_trials`` (what ``graphbo export`` used before), on the same study file, one after the other.

    python benchmarks/export_speed.py --sizes 1000 4000 [--fast-only 50000] [--out FILE.json]

Each study is random search told ``n`` configurations of 8 ordinal variables (``benchmarks/study_load.py
--mode tell``), made once in a temporary folder. ``export_to_optuna`` is timed into a new SQLite file per
export (imports excluded: one export runs first, untimed). The "Optuna add_trials" row is the same function
with the one-transaction writer turned off (``KNOWN_RDB_SCHEMA = None``, so every storage takes Optuna's path).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _study(folder: str, n: int) -> str:
    path = os.path.join(folder, f"s{n}.db")
    subprocess.run([sys.executable, os.path.join(HERE, "study_load.py"), "--trials", str(n), "--block",
                    str(min(n, 10000)), "--mode", "tell", "--file", path, "--repeats", "1"],
                   check=True, capture_output=True)
    return path


def _time_export(path: str, folder: str, fast: bool) -> float:
    import optuna

    from graphbo.experiments import optuna_export

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    saved = optuna_export.KNOWN_RDB_SCHEMA
    optuna_export.KNOWN_RDB_SCHEMA = saved if fast else None
    try:
        target = os.path.join(folder, f"optuna-{os.path.basename(path)}-{'fast' if fast else 'optuna'}.db")
        t0 = time.perf_counter()
        optuna_export.export_to_optuna(path, f"sqlite:///{target}")
        return time.perf_counter() - t0
    finally:
        optuna_export.KNOWN_RDB_SCHEMA = saved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 4000], help="both writers")
    ap.add_argument("--fast-only", type=int, nargs="*", default=[], help="the one-transaction writer only")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        _time_export(_study(folder, 20), folder, True)  # imports and first-call caches, untimed
        for n in args.sizes + args.fast_only:
            path = _study(folder, n)
            for fast in (True, False) if n in args.sizes else (True,):
                seconds = _time_export(path, folder, fast)
                rows.append({"trials": n, "writer": "one transaction" if fast else "Optuna add_trials",
                             "seconds": seconds, "ms_per_trial": 1000 * seconds / n})
                r = rows[-1]
                print(f"{n:>7} trials  {r['writer']:<18} {seconds:8.2f} s  {r['ms_per_trial']:7.2f} ms per trial",
                      flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"date": time.strftime("%Y-%m-%d"), "load_avg": os.getloadavg()[0], "rows": rows}, fh,
                      indent=1)


if __name__ == "__main__":
    main()
