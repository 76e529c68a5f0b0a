"""Acquisition optimisation on a mixed space (BO-FM supplement D.1).

Score ``n_random`` uniformly random points and ``n_spray`` spray points near
the best evaluation; from the best ``n_starts``, alternate one hill-climbing
step on the discrete part (move to the best graph neighbour) and one
L-BFGS-B run on the continuous part (gradients by autograd, discrete part
fixed) until neither improves. All starts move together: the discrete step
scores every start's neighbours in one batch, and the continuous step runs
one L-BFGS-B on the sum of the starts' (independent) objectives.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.optimize
import torch

from ..spaces.space import Space
from .utils import as_scores, best_per_owner

__all__ = ["optimize_acquisition_mixed"]


def optimize_acquisition_mixed(
    acquisition: Callable[[torch.Tensor], torch.Tensor],
    space: Space,
    rng: np.random.Generator,
    incumbent: np.ndarray,
    exclude: set[bytes],
    n_random: int = 100_000,
    n_spray: int = 50,
    n_starts: int = 40,
    spray_sd: float = 0.05,
    max_rounds: int = 20,
    chunk: int = 2000,
) -> tuple[np.ndarray, float]:
    """Maximise ``acquisition`` over the mixed rows of ``space``.

    ``acquisition`` is any acquisition function (:class:`graphbo.acquisition.AcquisitionFunction`)
    or callable mapping a float64 tensor of rows ``(m, d)`` (discrete columns hold indices,
    continuous columns lie in [0, 1]) to ``m`` scores, differentiable in the continuous columns.
    Returns the best row not in ``exclude`` and its acquisition value.
    """
    disc, cont = space.discrete_indices, space.continuous_indices

    def score_rows(rows: np.ndarray) -> np.ndarray:
        out = []
        with torch.no_grad():
            for s in range(0, rows.shape[0], chunk):
                out.append(as_scores(acquisition(torch.as_tensor(rows[s:s + chunk], dtype=torch.float64))))
        return np.concatenate(out) if out else np.empty(0)

    def snap(rows: np.ndarray) -> np.ndarray:
        for j in cont:
            rows[:, j] = space.variables[j].snap(rows[:, j])
        return rows

    # 1. random + spray starting pool
    spray = space.random_walk_index(incumbent, 1, n_spray, rng).astype(float) if disc.size else \
        np.repeat(np.asarray(incumbent, dtype=float)[None], n_spray, 0)
    if cont.size:
        spray[:, cont] = np.clip(spray[:, cont] + rng.normal(0, spray_sd, (n_spray, cont.size)), 0.0, 1.0)
    pool = snap(np.concatenate([spray, space.sample_index(n_random, rng).astype(float)]))
    scores = score_rows(pool)
    top = np.argsort(-scores, kind="stable")[:n_starts]
    cur, cur_val = pool[top].copy(), scores[top].copy()

    for _ in range(max_rounds):
        improved = False
        # 2a. one hill-climbing step on the discrete part
        if disc.size:
            nbrs, owner = space.neighbor_index_batch(cur)
            if nbrs.shape[0]:
                vals = score_rows(nbrs.astype(float))
                best = best_per_owner(vals, owner)
                better = vals[best] > cur_val[owner[best]] + 1e-12
                cur[owner[best[better]]] = nbrs[best[better]]
                cur_val[owner[best[better]]] = vals[best[better]]
                improved |= bool(better.any())
        # 2b. L-BFGS-B on the continuous part, discrete fixed
        if cont.size:
            fixed = torch.as_tensor(cur, dtype=torch.float64)
            cont_t = torch.as_tensor(cont, dtype=torch.long)

            def fun(x: np.ndarray):
                C = torch.tensor(x.reshape(-1, cont.size), dtype=torch.float64, requires_grad=True)
                rows = fixed.clone()
                rows[:, cont_t] = C  # the discrete columns stay fixed; gradients flow to C only
                val = -acquisition(rows).sum()
                (g,) = torch.autograd.grad(val, C)
                return float(val.detach()), g.numpy().reshape(-1).astype(float)

            res = scipy.optimize.minimize(fun, cur[:, cont].reshape(-1), jac=True, method="L-BFGS-B",
                                          bounds=[(0.0, 1.0)] * cur[:, cont].size, options={"maxiter": 50})
            cand = cur.copy()
            cand[:, cont] = res.x.reshape(-1, cont.size)
            cand = snap(cand)
            vals = score_rows(cand)
            better = vals > cur_val + 1e-9
            cur[better], cur_val[better] = cand[better], vals[better]
            improved |= bool(better.any())
        if not improved:
            break

    rows = np.concatenate([cur, pool])
    vals = np.concatenate([cur_val, scores])
    for i in np.argsort(-vals, kind="stable"):
        if rows[i].tobytes() not in exclude:
            return rows[i].copy(), float(vals[i])
    raise RuntimeError("no unevaluated point among the acquisition candidates")
