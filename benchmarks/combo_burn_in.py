"""COMBO's first fit on a told history: the paper's burn-in on all the data against a cheaper one.

    python benchmarks/combo_burn_in.py --n 400 --seeds 3-12 [--out benchmarks/results/combo_burn_in.json]
    python benchmarks/combo_burn_in.py --n 400 --seeds 3-12 --alternative short --short-burn 30

An optimiser told ``n`` random wMaxSAT28 evaluations it never asked for fits its first model at
``n``: 100 slice-sampling sweeps of ``O(n^3)`` each (about 28 s at ``n = 400`` on one core). The
alternative measured here starts the chain on a random quarter of the data (80 sweeps, 70 of
burn-in), moves it to a half (10 sweeps) and ends on all of it (20 sweeps, the last 10 kept), about
a third of the time (``--alternative subsets``, the default); ``--alternative short`` instead runs fewer
burn-in sweeps on all of it (``--short-burn``, default 30). Each fit is judged on 1,000 held-out random configurations: Spearman's rank
correlation of the posterior mean with the true values, and the log predictive density (a mixture
over the kept samples, with the sampled noise). Same seeds, same data for both; one thread.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import numpy as np
from scipy.stats import spearmanr

import graphbo as gb
from graphbo.benchmarks import load_benchmark
from graphbo.models import DiffusionGP
from graphbo.threads import limit_threads


class _Staged(DiffusionGP):
    """The first fit on nested random subsets: a quarter (80 sweeps), a half (10), then all (20)."""

    def fit(self, X, y, *, rng):
        if self.state is not None or X.shape[0] < 200:
            return super().fit(X, y, rng=rng)
        order = rng.permutation(X.shape[0])
        kept, burn = self.n_samples, self.n_burn
        try:
            for rows, n_burn, n_samples in ((order[:X.shape[0] // 4], 70, 10), (order[:X.shape[0] // 2], 0, 10),
                                            (None, 0, 10)):
                self.n_burn, self.n_samples = n_burn, n_samples
                if rows is None:
                    super().fit(X, y, rng=rng)  # a burn-in block on all the data, the kept sweeps after it
                    self.n_samples = kept
                    return super().fit(X, y, rng=rng)
                super().fit(X[np.sort(rows)], y[np.sort(rows)], rng=rng)
        finally:
            self.n_burn, self.n_samples = burn, kept
        return self


def _score(model, space, bench, test) -> tuple[float, float]:
    X = np.stack([space.to_index(c) for c in test])
    y = np.array([bench(c) for c in test])
    post = model.posterior(X)
    mu, var = post.mean.numpy(), post.variance.numpy()
    noise = np.array([math.exp(s.log_noise) for s in model.samples])[:, None]
    lp = -0.5 * np.log(2 * np.pi * (var + noise)) - 0.5 * (y[None] - mu) ** 2 / (var + noise)
    top = lp.max(0)
    lpd = float(np.mean(top + np.log(np.mean(np.exp(lp - top), 0))))
    return float(spearmanr(mu.mean(0), y)[0]), lpd


def run(n: int, seed: int, alternative: str | None, short_burn: int = 30) -> dict:
    bench = load_benchmark("maxsat", path="maxsat28")
    opt = gb.COMBO(bench.space, seed=seed, n_initial=0)
    if alternative == "subsets":
        opt.model.__class__ = _Staged
    elif alternative == "short":
        opt.model.n_burn = short_burn
    source = gb.RandomSearch(bench.space, seed=seed + 1)
    for config in source.ask(n):
        opt.tell(config, bench(config))
    t0 = time.perf_counter()
    opt.ask()
    seconds = time.perf_counter() - t0
    rho, lpd = _score(opt.model, bench.space, bench, source.ask(1000))
    label = "all data" if alternative is None else ("subsets" if alternative == "subsets" else f"{short_burn} sweeps")
    return {"n": n, "seed": seed, "burn_in": label, "spearman": rho, "lpd": lpd,
            "first_suggestion_s": seconds}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--seeds", default="3-12", help="first-last")
    ap.add_argument("--alternative", choices=("subsets", "short"), default="subsets")
    ap.add_argument("--short-burn", type=int, default=30, help="burn-in sweeps of --alternative short")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    first, last = (int(s) for s in args.seeds.split("-"))
    rows = []
    with limit_threads(1):
        for seed in range(first, last + 1):
            for alternative in (None, args.alternative):
                rows.append(run(args.n, seed, alternative, args.short_burn))
                r = rows[-1]
                print(f"seed {seed:>2} {r['burn_in']:<9} spearman {r['spearman']:.3f} lpd {r['lpd']:.3f} "
                      f"first suggestion {r['first_suggestion_s']:.1f} s", flush=True)
    for key in ("spearman", "lpd", "first_suggestion_s"):
        diff = [b[key] - a[key] for a, b in zip(rows[::2], rows[1::2])]
        se = statistics.stdev(diff) / math.sqrt(len(diff)) if len(diff) > 1 else float("nan")
        print(f"{key}: all data {statistics.mean(r[key] for r in rows[::2]):.3f}, {rows[1]['burn_in']} "
              f"{statistics.mean(r[key] for r in rows[1::2]):.3f}, paired difference {statistics.mean(diff):+.3f} "
              f"+- {se:.3f} (s.e.)")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"date": time.strftime("%Y-%m-%d"), "rows": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
