"""How far from the incumbent each method's suggestions land on a discrete benchmark, and what COMBO's model
knows there.

    python benchmarks/binary_locality.py distances BENCHMARK METHOD_DIR [METHOD_DIR ...] [--skip 20]
    OMP_NUM_THREADS=1 python benchmarks/binary_locality.py model BENCHMARK STUDY_FILE [STUDY_FILE ...] [--n 60]
        [--per-distance 50] [--beta-prior horseshoe] [--benchmark-option KEY=VALUE ...]

``distances`` reads finished runs (e.g. data/runs/beyond/labs/combo-tr and data/runs/beyond/labs/gp-optuna):
for every trial after the first ``--skip`` (the shared initial design), the Hamming distance (number of
variables that differ) between it and the best trial before it. Printed per seed: the median distance
over the next 40 trials, the 40 after and the rest, and the distances at which the run improved on its
incumbent.

``model`` tells COMBO (default options, ``--beta-prior``) the first ``--n`` trials of each study file,
fits it once, and looks at ``d``-variable changes of the incumbent for d = 1, 2, 4, 8 (``--per-distance``
random ones each; for d = 1 every single-variable change when there are at most that many): the
posterior standard deviation (the square root of the variance averaged over the hyper-parameter
samples, averaged over the rows), the largest and median log-EI,
Spearman's correlation between the posterior mean and the true value, and how many of them truly
improve on the incumbent (the benchmark is evaluated there: use cheap benchmarks; ``--benchmark-option``
passes the benchmark's options, JSON values, e.g. ``lamda=0.01 seed=2`` for an Ising instance). A correlation near 0
with a larger log-EI further away says the model, not the acquisition optimiser, sends the search
away from where the true improvements are.
"""

from __future__ import annotations

import argparse
import json
import glob
import os
import sys

import numpy as np


def _rows(space, trials) -> tuple[np.ndarray, np.ndarray]:
    X = np.stack([space.to_index(t.config) for t in trials])
    y = np.array([t.value for t in trials], dtype=float)
    return X, y


def _seed_number(path: str) -> int:
    digits = "".join(ch for ch in os.path.basename(path) if ch.isdigit())
    return int(digits) if digits else -1


def distances(benchmark: str, dirs: list[str], skip: int) -> None:
    from graphbo.benchmarks import load_benchmark
    from graphbo.storage.info import load_study_file

    space = load_benchmark(benchmark).space
    for d in dirs:
        for path in sorted(glob.glob(os.path.join(d, "seed*.db")), key=_seed_number):
            trials = [t for t in load_study_file(path).trials if t.value is not None]
            X, y = _rows(space, trials)
            dist, improved_at = [], []
            for i in range(skip, len(y)):
                b = int(np.argmin(y[:i]))
                dist.append(int((X[i] != X[b]).sum()))
                if y[i] < y[:i].min():
                    improved_at.append(dist[-1])
            dd = np.array(dist)
            parts = [f"{np.median(dd[a:b]):.1f}" if dd[a:b].size else "-" for a, b in ((0, 40), (40, 80), (80, None))]
            print(f"{d} {os.path.basename(path)}: median distance {' / '.join(parts)}; improvements at {improved_at}")


def model(benchmark: str, paths: list[str], n: int, per_distance: int, beta_prior: str,
          options: dict | None = None) -> None:
    import torch
    from scipy.stats import spearmanr

    import graphbo as gb
    from graphbo.acquisition import LogExpectedImprovement
    from graphbo.benchmarks import load_benchmark
    from graphbo.storage.info import load_study_file

    torch.set_num_threads(1)
    bench = load_benchmark(benchmark, **(options or {}))
    space = bench.space
    sizes = np.array([len(v.values) for v in space.variables])
    for path in paths:
        trials = [t for t in load_study_file(path).trials if t.value is not None][:n]
        opt = gb.COMBO(space, seed=0, beta_prior=beta_prior)
        for t in trials:
            opt.tell(t.config, t.value)
        X, y = opt.X, opt.y
        opt.model.fit(X, y, rng=np.random.default_rng(0))
        acq = LogExpectedImprovement(opt.model)
        best = X[int(np.argmin(y))]
        rng = np.random.default_rng(1)
        parts = []
        for d in (k for k in (1, 2, 4, 8) if k <= len(sizes)):
            if d == 1 and int((sizes - 1).sum()) <= per_distance:
                rows = space.neighbor_index_batch(best[None])[0]
            else:
                rows = np.repeat(best[None], per_distance, 0)
                for r in rows:
                    for j in rng.choice(len(sizes), d, replace=False):
                        r[j] = (r[j] + rng.integers(1, sizes[j])) % sizes[j]  # another value of variable j
            post = opt.model.posterior(rows)
            sd = float(post.variance.mean(0).sqrt().mean())
            ei = acq(torch.as_tensor(rows)).numpy()
            true = np.array([bench(space.from_index(r)) for r in rows])
            rho = spearmanr(post.mean.mean(0).numpy(), true).correlation
            parts.append(f"d={d}: sd {sd:.3f}, log-EI max {ei.max():.2f} median {np.median(ei):.2f}, "
                         f"rho {rho:+.2f}, improve {int((true < y.min()).sum())}/{len(rows)}")
        print(f"{path} n={len(y)} best {y.min():.3f}\n  " + "\n  ".join(parts), flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    a = sub.add_parser("distances")
    a.add_argument("benchmark")
    a.add_argument("dirs", nargs="+")
    a.add_argument("--skip", type=int, default=20)
    b = sub.add_parser("model")
    b.add_argument("benchmark")
    b.add_argument("paths", nargs="+")
    b.add_argument("--n", type=int, default=60)
    b.add_argument("--per-distance", type=int, default=50)
    b.add_argument("--beta-prior", default="horseshoe")
    b.add_argument("--benchmark-option", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args(argv)
    if args.command == "distances":
        distances(args.benchmark, args.dirs, args.skip)
    else:
        options = {k: json.loads(v) for k, v in (o.split("=", 1) for o in args.benchmark_option)}
        model(args.benchmark, args.paths, args.n, args.per_distance, args.beta_prior, options)
    return 0


if __name__ == "__main__":
    sys.exit(main())
