"""What COMBO's GP learns from a few random points under its two priors on ``beta`` (docs/combo_prior.md).

For each problem and seed: ``n`` uniformly random configurations are evaluated and told to a COMBO
optimizer, whose first suggestion fits the GP (100 burn-in sweeps, 10 samples, as the paper); the GP's
posterior mean (averaged over the samples) then predicts 300 other random configurations. Reported: the
Spearman rank correlation of prediction and truth on those 300 (a GP that predicts its mean everywhere
has none: shown as 0), and the quantiles of the sampled ``beta_i``. ``beta_prior="reference"`` is the
authors' sampler (no Jacobian), ``"horseshoe"`` the paper's prior on ``beta`` carried to ``log beta``.

Usage::

    OMP_NUM_THREADS=1 python benchmarks/combo_beta_prior.py [--problems maxsat60 contamination ...]
        [--n 50] [--seeds 0 1] [--out benchmarks/results/combo_beta_prior.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np
import torch
from scipy.stats import spearmanr

import graphbo as gb
from graphbo.benchmarks import load_benchmark


def held_out(problem: str, n: int, seed: int, beta_prior: str) -> dict:
    bench = load_benchmark(problem, seed=seed) if problem in ("contamination", "ising", "pestcontrol") \
        else load_benchmark(problem)
    space = bench.space
    rows = space.sample_index(n + 300, np.random.default_rng(seed))
    y = np.array([bench.evaluate_index(r) for r in rows])
    opt = gb.COMBO(space, seed=seed, n_initial=n, beta_prior=beta_prior)
    for r, v in zip(rows[:n], y[:n]):
        opt.tell(space.from_index(r), float(v))
    t0 = time.process_time()
    opt.ask()
    fit_s = time.process_time() - t0
    mean = opt.model.posterior(rows[n:]).mean.mean(0).detach().numpy()
    rho = 0.0 if np.std(mean) < 1e-12 * max(1.0, float(np.abs(mean).max())) else float(spearmanr(mean, y[n:]).correlation)
    beta = np.exp(np.stack([s.log_beta for s in opt.model.samples]))
    return {"problem": problem, "n": n, "seed": seed, "beta_prior": beta_prior, "spearman": rho,
            "beta_q10": float(np.quantile(beta, 0.1)), "beta_median": float(np.median(beta)),
            "beta_q90": float(np.quantile(beta, 0.9)), "cpu_s": fit_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", nargs="+", default=["maxsat60", "contamination", "pestcontrol", "labs", "ising"])
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = []
    for problem in args.problems:
        for seed in args.seeds:
            for prior in ("reference", "horseshoe"):
                r = held_out(problem, args.n, seed, prior)
                rows.append(r)
                print(f"{problem:14s} seed {seed} {prior:9s}  spearman {r['spearman']:6.3f}  beta q10/median/q90 "
                      f"{r['beta_q10']:.3g} / {r['beta_median']:.3g} / {r['beta_q90']:.3g}", flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"date": time.strftime("%Y-%m-%d"), "machine": platform.platform(), "n": args.n,
                       "command": "python benchmarks/combo_beta_prior.py " + " ".join(
                           f"--{k} {' '.join(map(str, v)) if isinstance(v, list) else v}"
                           for k, v in vars(args).items() if v is not None),
                       "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
