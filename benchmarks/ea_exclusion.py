"""Seconds per call of NASBOT's evolutionary acquisition against the number of excluded (told) networks.

Before the change NASBOT handed the EA every told network (``exclude=``), and the EA hashed each one
(:func:`graphbo.nas.domain.keys.architecture_key`) on every call, so an ask grew by about 0.2 ms per told
network however small the GP's training set (``max_train``). NASBOT now passes the keys it keeps on
``tell`` (``excluded_keys=``). This script times both forms of the same call, in one process, with the same
seeds: a cheap acquisition (so the EA's own bookkeeping is what is timed), the paper's EA budget at t = 100
(``n_EA = 250``), excluded sets of random valid networks of the MLP domain. Both forms return the same
networks (checked for every size).

Usage::

    OMP_NUM_THREADS=1 python benchmarks/ea_exclusion.py [--sizes 1000 5000 10000] [--repeats 5]
        [--out benchmarks/results/ea_exclusion.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import numpy as np

from graphbo.nas.domain.keys import architecture_key
from graphbo.nas.domain.space import ArchitectureSpace
from graphbo.optim.evolutionary import n_ea_evaluations, optimize_acquisition_ea


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 5000, 10000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    space = ArchitectureSpace("mlp-class")
    pool = space.initial_pool()
    target = 3000.0

    def phi(archs):  # cheap and deterministic: closeness of the total width to a target
        return np.array([-abs(sum(u or 0 for u in a.units) - target) for a in archs], dtype=float)

    told = space.sample_architectures(max(args.sizes), seed=0, max_steps=8)
    rows = []
    for size in args.sizes:
        excluded = told[:size]
        keys = frozenset(architecture_key(a) for a in excluded)  # what NASBOT keeps on tell
        timings: dict[str, list[float]] = {"exclude": [], "excluded_keys": []}
        for rep in range(args.repeats):
            results = {}
            for form in ("exclude", "excluded_keys"):  # alternating, so load changes hit both alike
                kwargs = {"exclude": excluded} if form == "exclude" else {"excluded_keys": keys}
                start = time.perf_counter()
                res = optimize_acquisition_ea(phi, pool, rng=np.random.default_rng(rep),
                                              n_evaluations=n_ea_evaluations(100), **kwargs)
                timings[form].append(time.perf_counter() - start)
                results[form] = [a.to_dict() for a in res.top]
            assert results["exclude"] == results["excluded_keys"], "the two forms chose differently"
        row = {"excluded": size, **{f"median_s_{k}": statistics.median(v) for k, v in timings.items()}}
        rows.append(row)
        print(f"excluded {size:6d}: exclude= {row['median_s_exclude']:.3f} s, "
              f"excluded_keys= {row['median_s_excluded_keys']:.3f} s (median of {args.repeats})", flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"machine": platform.processor() or platform.machine(), "python": platform.python_version(),
                       "date": time.strftime("%Y-%m-%d"), "repeats": args.repeats, "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
