"""Best values and seconds per suggestion of graphbo's three model families on three small problems: a check
that a change which should not move results (a refactoring) does not, and that its speed is unchanged.

    PYTHONPATH=<tree>/src python benchmarks/speed_quality_check.py OUT.json [--paper-combo]

Run it on the tree before and the tree after (a ``git worktree`` of the earlier commit), alternating, in one
session: the best values must be equal; the median seconds per suggestion (after the initial design) are
compared as pairs, since a shared machine moves single numbers by 20 %. ``--paper-combo`` runs COMBO with the
paper's acquisition optimiser (``trim_proposals=False``), which commits before that default also ran.
Cases: COMBO on wMaxSAT28 (25 evaluations), BO-FM on Func2C (22), COMBO on a 6 x 101 ordinal Schwefel grid (25);
seeds 0 and 1; one torch thread.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

import graphbo as gb
from graphbo.benchmarks import load_benchmark
from graphbo.threads import limit_threads

CASES = [("maxsat28", {}, "combo", 25), ("func2c", {}, "bofm", 22),
         ("grid-ordinal", {"function": "schwefel", "dims": 6, "levels": 101}, "combo", 25)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--paper-combo", action="store_true", help="COMBO with trim_proposals=False")
    args = parser.parse_args()
    out = {}
    with limit_threads(1):
        for name, options, method, budget in CASES:
            for seed in (0, 1):
                bench = load_benchmark(name, **options)
                kw = {"trim_proposals": False} if method == "combo" and args.paper_combo else {}
                result = gb.minimize(bench, bench.space, method=method, budget=budget, seed=seed, **kw)
                seconds = [t.suggest_seconds for t in result.trials][10:]
                out[f"{name}-{method}-seed{seed}"] = {"best": float(result.best_value),
                                                      "median_suggest_s": float(np.median(seconds))}
                print(name, method, seed, out[f"{name}-{method}-seed{seed}"], flush=True)
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
