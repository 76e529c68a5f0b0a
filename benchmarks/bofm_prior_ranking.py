"""How well BO-FM's fitted GP ranks the neighbours of a run's incumbent, under each fit prior.

    OMP_NUM_THREADS=1 python benchmarks/bofm_prior_ranking.py BENCHMARK STUDY_FILE [STUDY_FILE ...]
        [--n 150] [--priors weak,scaled] [--kernel modlap] [--json OUT]

For each study file (a finished run of any method on the registered benchmark ``BENCHMARK``, e.g. a
``graphbo compare`` run under data/runs/beyond/ackley53/), the GP of :class:`graphbo.optimizers.BOFM` is
fitted by its ML-II (10 restarts, seed 0) on the first ``--n`` complete trials, once per prior
(``weak``: ``N(0, 3^2)`` on the kernel's log-scales; ``scaled``: the dimension-scaled priors of
:meth:`graphbo.kernels.FMKernel.scaled_centre`). Then, at the best of those trials (the incumbent):

* ``neighbours``: the incumbent's graph neighbours (every one-variable change of the discrete part),
  and their true values from the benchmark;
* ``spearman``: the rank correlation of the posterior means with the true values there (1: the
  model orders the moves a local search would try exactly as the objective does);
* ``better_first``: the share of (better, worse)-than-the-incumbent neighbour pairs that the posterior
  means order correctly (an AUC; ``None`` when every neighbour is on the same side).

It measures the model alone (no acquisition, no run), so it is cheap: one fit per file and prior.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import torch
from scipy.stats import spearmanr

import graphbo as gb
from graphbo.benchmarks import load_benchmark
from graphbo.kernels.frequency_modulated import FMKernel
from graphbo.models.mixed_gp import MixedGP
from graphbo.storage.info import load_study_file


def rank_neighbours(benchmark, rows: np.ndarray, values: np.ndarray, prior: str, kernel: str) -> dict:
    space = benchmark.space
    spectra = [space.variables[j].spectrum for j in space.discrete_indices]
    fm = FMKernel(kernel, spectra, n_continuous=len(space.continuous_indices), prior=prior)
    gp = MixedGP(fm, space, n_restarts=10).fit(rows, values, rng=np.random.default_rng(0))
    incumbent = rows[int(np.argmin(values))]
    nbrs, _ = space.neighbor_index_batch(incumbent[None])
    nbrs = nbrs.astype(float)
    truth = np.array([benchmark(space.from_index(r)) for r in nbrs])
    mean = gp.posterior(nbrs).mean.detach().numpy().ravel()
    best = float(values.min())
    better, worse = truth < best, truth >= best
    auc = (float(np.mean(mean[better][:, None] < mean[worse][None, :])) if better.any() and worse.any() else None)
    return {"prior": prior, "n": int(rows.shape[0]), "neighbours": int(nbrs.shape[0]),
            "better_neighbours": int(better.sum()), "spearman": float(spearmanr(mean, truth).correlation),
            "better_first": auc, "mean_parameter": float(gp.params[-1])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("benchmark")
    ap.add_argument("studies", nargs="+")
    ap.add_argument("--n", type=int, default=150, help="first N complete trials of each file (default 150)")
    ap.add_argument("--priors", default="weak,scaled")
    ap.add_argument("--kernel", default="modlap")
    ap.add_argument("--json", default=None, help="write the results here too")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    benchmark = load_benchmark(args.benchmark)
    if not isinstance(benchmark.space, gb.Space) or benchmark.space.discrete_indices.size == 0:
        ap.error(f"{args.benchmark}: needs a graphbo.Space with discrete variables")
    out = []
    for path in args.studies:
        trials = [t for t in load_study_file(path).trials if t.status == "complete"][: args.n]
        rows = np.stack([benchmark.space.to_index(t.config) for t in trials]).astype(float)
        values = np.array([t.value for t in trials], dtype=float)
        for prior in args.priors.split(","):
            r = {"file": os.path.relpath(path), **rank_neighbours(benchmark, rows, values, prior, args.kernel)}
            out.append(r)
            auc = "n/a" if r["better_first"] is None else f"{r['better_first']:.3f}"
            print(f"{r['file']}  n={r['n']}  prior={prior:6s}  spearman={r['spearman']:.3f}  "
                  f"better_first={auc} ({r['better_neighbours']}/{r['neighbours']} better)  "
                  f"mean={r['mean_parameter']:.2f}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"benchmark": args.benchmark, "kernel": args.kernel, "command": " ".join(sys.argv),
                       "results": out}, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
