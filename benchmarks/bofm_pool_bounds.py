"""How many rows of BO-FM's starting pool each bound of log-EI leaves to score exactly.

    OMP_NUM_THREADS=1 python benchmarks/bofm_pool_bounds.py [--problem ackley53|nas-sgd] [--n 100] [--rows 20000]

Fits BO-FM (ModLap, the defaults) on ``n`` random evaluations of the problem (as
``benchmarks/bofm_speed.py`` does), draws ``rows`` random pool rows, scores them all exactly,
and counts the rows whose upper bound of log-EI reaches the 40th best exact score (the rows a
branch and bound must score) for:

* ``cheap``: the mean bound of :meth:`MixedGP.mean_lower_bound` (factor tables at ``r^2 = 0``
  and ``r^2 = R^2``) with the prior variance, the first pass of the pool's pruning;
* ``tight variance``: the same mean bound with ``tight_variance=True``, the refined pass;
* ``convex``: a probe, not used by graphbo: each ModLap factor entry is log-convex in ``r^2``,
  so with every pair's exact ``r^2`` the chord (above) and the tangent at ``R^2 / 2`` (below)
  bound it; mean and tight variance from those cross-covariance bounds.

Also printed: bound violations (rows whose bound is below the exact score; must be 0), the
median gap between the exact posterior mean and each mean bound, and the median ratio of the
posterior to the prior variance.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bofm_speed  # noqa: E402  (the problems and the synthetic NAS objective)

import graphbo as gb  # noqa: E402
from graphbo.acquisition.ei import LogExpectedImprovement, log_mean_expected_improvement  # noqa: E402
from graphbo.benchmarks.nas_sgd import NASSGD  # noqa: E402
from graphbo.optim.utils import as_scores  # noqa: E402


def fitted(problem: str, n: int, seed: int) -> gb.BOFM:
    if problem == "ackley53":
        space, objective = bofm_speed.ackley53()
    else:
        nas = NASSGD()
        space, objective = nas.space, (lambda c: bofm_speed.synthetic_nas_value(nas, c))
    opt = gb.BOFM(space, seed=seed, n_initial=n)
    for _ in range(n):
        c = opt.ask()
        opt.tell(c, objective(c))
    opt.mark_failed(opt.ask())  # fits the model
    return opt


def convex_bounds(model, V: torch.Tensor, C: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-covariance bounds ``(m, n)`` from the log-convexity of each ModLap factor entry in ``t = r^2``."""
    fm = model.kernel
    p = fm.unpack(model._kp)
    beta, alpha, theta = torch.exp(p["log_beta"]), torch.exp(p["log_alpha"]), torch.exp(p["log_theta"])
    norms = fm.spectrum_norms(p, beta)
    R2 = float((1.0 / theta.square()).sum())
    t0 = R2 / 2
    m, n = V.shape[0], model._V.shape[0]
    H0, Hs, L0, Ls = (torch.zeros(m, n, dtype=torch.float64) for _ in range(4))
    for q, groups in enumerate(fm.eigenspaces):
        lam = torch.tensor([g[0] for g in groups], dtype=torch.float64)
        T = fm.projector_tables[q]

        def table(t: float, power: int = 1) -> torch.Tensor:
            # sum_j P_j / (norm (1 + beta lambda_j + alpha t)^power)
            return ((1.0 / (norms[q] * (1.0 + beta[q] * lam + alpha[q] * t) ** power))[:, None, None] * T).sum(0)

        g0, gR, gt0 = table(0.0).log(), table(R2).log(), table(t0).log()
        slope = -alpha[q] * table(t0, 2) / table(t0)  # g'(t0) = A'(t0) / A(t0)
        ix = (V[:, q][:, None], model._V[:, q][None, :])
        H0 += g0[ix]
        Hs += ((gR - g0) / R2)[ix]
        L0 += (gt0 - slope * t0)[ix]
        Ls += slope[ix]
    t = ((C / theta)[:, None, :] - (model._C / theta)[None, :, :]).square().sum(-1)
    return model._amp * (L0 + t * Ls).exp(), model._amp * (H0 + t * Hs).exp()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problem", choices=["ackley53", "nas-sgd"], default="ackley53")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    opt = fitted(args.problem, args.n, args.seed)
    model, acq = opt.model, LogExpectedImprovement(opt.model)
    pool = opt.space.sample_index(args.rows, np.random.default_rng(args.seed + 1)).astype(float)
    with torch.no_grad():
        exact = np.concatenate([as_scores(acq(torch.as_tensor(pool[s:s + 2000])))
                                for s in range(0, len(pool), 2000)])
        kth = np.sort(exact)[-40]
        post = model.posterior(pool)
        pm, pv = post.mean[0], post.variance[0]
        V, C = model.split(pool)
        screening = model.screening()
        bounds = {"cheap": screening.mean_lower_bound(pool),
                  "tight variance": screening.mean_lower_bound(pool, tight_variance=True)}
        k_lo, k_hi = convex_bounds(model, V, C)
        w = model._alpha[:, 0]
        mean = model._mean + k_lo @ w.clamp_min(0.0) + k_hi @ w.clamp_max(0.0)
        mid, half = (k_lo + k_hi) / 2, (k_hi - k_lo) / 2
        Ak = torch.cholesky_solve(mid.T, model._L)
        explained = ((mid.T * Ak).sum(0) - 2 * (Ak.abs() * half.T).sum(0)).clamp_min(0.0)
        prior = model._amp * model.kernel.diag(model._kp, V, C=C)
        bounds["convex"] = (mean, (prior - explained).clamp_min(1e-12))
    print(f"{args.problem}, n = {args.n}, {args.rows} pool rows; posterior / prior variance, median "
          f"{float((pv / prior).median()):.3f}")
    for name, (mu, var) in bounds.items():
        ub = as_scores(log_mean_expected_improvement(mu[None], var[None], best=acq.best_f))
        print(f"{name:15s} rows to score {int((ub >= kth).sum()):6d}  violations {int((ub < exact - 1e-9).sum())}"
              f"  median mean gap {float((pm - mu).median()):.3g}")


if __name__ == "__main__":
    main()
