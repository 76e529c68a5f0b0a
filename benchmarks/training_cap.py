"""Seconds per COMBO suggestion with ``max_train`` (the cap on the GP's training set) against n told.

    OMP_NUM_THREADS=1 python benchmarks/training_cap.py --cases 500:500 500:2000 none:1000 \\
        [--suggestions 3] [--burn 10] [--out FILE.json]

A case ``CAP:N`` (``CAP`` an integer or ``none``) runs in a fresh process: COMBO on wMaxSAT28 (28 binary
variables, the shipped instance) is told ``N`` distinct random configurations with their values, fits once
(``--burn`` burn-in sweeps; untimed: the earlier session's work), hands its state to a new optimizer
told the same data (as ``graphbo resume`` does), and that one makes ``--suggestions`` suggestions,
each evaluated and told. Reported per case: the median wall and CPU seconds of those suggestions, the
size of the training set of each fit (``last_training_indices``) and the peak resident memory.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time


def run_case(cap: int | None, n: int, suggestions: int, burn: int, seed: int) -> dict:
    import numpy as np

    import graphbo as gb
    from graphbo.benchmarks import load_benchmark

    bench = load_benchmark("maxsat", path="maxsat28")
    space = bench.space
    rng = np.random.default_rng(seed)
    rows, seen = [], set()
    while len(rows) < n:
        for r in space.sample_index(n - len(rows), rng):
            if r.tobytes() not in seen:
                seen.add(r.tobytes())
                rows.append(r)
    told = [(space.from_index(r), None) for r in rows]
    told = [(c, bench(c)) for c, _ in told]

    def make():
        opt = gb.COMBO(space, seed=seed, n_initial=0, n_burn=burn, max_train=cap)
        for c, v in told:
            opt.tell(c, v)
        return opt

    first = make()
    t0 = time.perf_counter()
    first.mark_failed(first.ask())  # the earlier session's first fit (with burn-in)
    first_fit = time.perf_counter() - t0
    opt = make()
    opt.set_state(json.loads(json.dumps(first.get_state())))
    wall, cpu, sizes = [], [], []
    for _ in range(suggestions):
        t0, c0 = time.perf_counter(), time.process_time()
        c = opt.ask()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        sizes.append(len(opt.last_training_indices))
        opt.tell(c, bench(c))
    return {"max_train": cap, "n": n, "median_wall_s": statistics.median(wall), "median_cpu_s": statistics.median(cpu),
            "wall_s": wall, "cpu_s": cpu, "training_sizes": sizes, "first_fit_s": first_fit,
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", nargs="+", default=["500:500", "500:2000", "none:1000"],
                    help="CAP:N pairs (CAP an integer or 'none')")
    ap.add_argument("--suggestions", type=int, default=3)
    ap.add_argument("--burn", type=int, default=10, help="burn-in sweeps of the untimed first fit")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="write the rows to this JSON file")
    ap.add_argument("--case", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.case is not None:
        import torch

        torch.set_num_threads(1)
        cap_s, n_s = args.case.split(":")
        cap = None if cap_s == "none" else int(cap_s)
        print(json.dumps(run_case(cap, int(n_s), args.suggestions, args.burn, args.seed)))
        return
    rows = []
    print(f"{'max_train':>9} {'n':>6} {'train rows':>12} {'median wall s':>14} {'median CPU s':>13} {'peak MiB':>9}")
    for case in args.cases:
        cmd = [sys.executable, os.path.abspath(__file__), "--case", case, "--suggestions", str(args.suggestions),
               "--burn", str(args.burn), "--seed", str(args.seed)]
        env = dict(os.environ)
        env.setdefault("OMP_NUM_THREADS", "1")
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
        r = json.loads(out.stdout.strip().splitlines()[-1])
        r.update(date=time.strftime("%Y-%m-%d"), load_avg=os.getloadavg()[0])
        rows.append(r)
        sizes = f"{min(r['training_sizes'])}-{max(r['training_sizes'])}"
        print(f"{str(r['max_train']):>9} {r['n']:>6} {sizes:>12} {r['median_wall_s']:>14.2f} "
              f"{r['median_cpu_s']:>13.2f} {r['peak_mib']:>9.0f}", flush=True)
        if args.out:
            with open(args.out, "w") as fh:
                json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
