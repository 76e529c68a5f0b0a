"""Seconds per OTMANN pair for random CNNs of about 12, 60 and 110 layers.

    OMP_NUM_THREADS=1 python benchmarks/otmann_speed.py [--networks 6] [--repeats 7] [--out FILE]

For each size, ``--networks`` random valid CNNs are generated
(:func:`graphbo.nas.domain.generate.random_cnn`: a backbone with duplicated branches,
skip connections and extra softmax layers). Their per-network features
(masses, path lengths) are computed once, as the kernel does, and timed
separately. Then every pair is timed ``--repeats`` times, for one structural
weight (``d`` and ``d_bar`` for one ``nu_str``) and for the kernel's four
(``nu_str`` in 0.1, 0.2, 0.4, 0.8: one cost matrix, four transport solves);
the table shows the median over repeats, then the median over pairs. The last
two columns time the batched path NASBOT uses (:class:`BatchOTMANN`, one
network against the others, four weights; POT's solver and the compiled one
of ``graphbo[fast]``), per pair.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import numpy as np

from graphbo.nas.domain.generate import random_cnn
from graphbo.nas.distance import transport_jit
from graphbo.nas.distance.otmann import DEFAULT_NU_STRS, OTMANN
from graphbo.nas.distance.otmann_batch import BatchOTMANN


def _median_time(fn, repeats: int) -> float:
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def bench_size(n_layers: int, n_networks: int, repeats: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed + n_layers)
    nets = [random_cnn(rng, n_layers=n_layers) for _ in range(n_networks)]
    otm = OTMANN("cnn")
    t = time.perf_counter()
    for a in nets:
        otm.features(a)
    feat = (time.perf_counter() - t) / n_networks
    pairs = [(i, j) for i in range(n_networks) for j in range(i + 1, n_networks)]
    otm.distances(nets[0], nets[1])  # warm-up (imports, solver probe)
    one = [_median_time(lambda: otm.distance(nets[i], nets[j], nu_str=0.4), repeats) for i, j in pairs]
    four = [_median_time(lambda: otm.distances(nets[i], nets[j], nu_strs=DEFAULT_NU_STRS), repeats)
            for i, j in pairs]
    edges = statistics.median(a.n_edges for a in nets)
    # the batched path NASBOT uses: one network against the others, all four nu_str, per pair
    batched = {}
    for solver in ("pot", "numba"):
        if solver == "numba" and not transport_jit.AVAILABLE:
            continue
        batch = BatchOTMANN(otm, nu_strs=DEFAULT_NU_STRS, n_jobs=1, solver=solver)
        batch.cross(nets[:1], nets[1:])  # warm-up (compilation or cache load, per-network splits)
        t = [_median_time(lambda: batch.cross([nets[i]], nets[:i] + nets[i + 1:]), repeats) / (n_networks - 1)
             for i in range(n_networks)]
        batched[solver] = statistics.median(t)
    return {"layers": n_layers, "median_edges": edges, "pairs": len(pairs),
            "features_s_per_network": feat, "s_per_pair_1nu": statistics.median(one),
            "s_per_pair_4nu": statistics.median(four),
            "s_per_pair_4nu_batched_pot": batched.get("pot"), "s_per_pair_4nu_batched_numba": batched.get("numba")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="12,60,110")
    ap.add_argument("--networks", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default=None, help="write the results as JSON here")
    args = ap.parse_args()
    rows = [bench_size(int(n), args.networks, args.repeats) for n in args.sizes.split(",")]
    print(f"OTMANN seconds per pair of random CNNs ({platform.processor() or platform.machine()}; "
          f"median of {args.repeats} repeats, then over pairs)")
    print(f"{'layers':>6} {'edges':>6} {'pairs':>5} {'features/net':>13} {'1 nu_str':>10} {'4 nu_str':>10} "
          f"{'4, batch POT':>13} {'4, batch numba':>15}")
    for r in rows:
        numba = r["s_per_pair_4nu_batched_numba"]
        print(f"{r['layers']:>6} {r['median_edges']:>6.0f} {r['pairs']:>5} {r['features_s_per_network']:>13.2e} "
              f"{r['s_per_pair_1nu']:>10.2e} {r['s_per_pair_4nu']:>10.2e} "
              f"{r['s_per_pair_4nu_batched_pot']:>13.2e} {numba if numba is None else format(numba, '.2e'):>15}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
