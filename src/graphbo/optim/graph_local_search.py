"""Acquisition optimisation on a graph Cartesian product (COMBO supplement Sec. 3).

1. Score ``n_random`` uniformly random vertices and ``n_spray`` spray vertices
   within graph distance 2 of the best evaluation.
2. The best ``n_starts`` start a breadth-first local search: at each vertex,
   score all graph neighbours and move to the best while it improves.
3. Return the best local optimum that has not been evaluated (or is not
   pending); failing that, the best scored vertex that is new, then a random
   new vertex.

All starts climb together, so each round is one batched acquisition call. Only the
candidates that can change a choice are scored exactly (branch and bound on the
acquisition's upper bound, :mod:`graphbo.optim.bounded`): the same choices at a
fraction of the cost once the model has hundreds of data points.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ..exceptions import SpaceExhaustedError
from ..spaces.space import Space
from .bounded import BoundedScores, best_fresh, fresh_masks
from .utils import as_scores, best_per_owner

if TYPE_CHECKING:
    from .trust_region import Region

__all__ = ["optimize_acquisition_on_graph"]

def _distinct(rows: np.ndarray, space: Space) -> np.ndarray:
    """Drop repeated rows, keeping first occurrences in order.

    In a small space most of 20,000 uniform draws repeat a vertex (Branin's
    grid has 2,601); scoring each distinct vertex once gives the same
    candidates at a fraction of the cost. Rows are keyed by their mixed-radix
    number when the space has fewer than 2**62 vertices; in larger spaces a
    repeat is too unlikely to matter and the rows are kept as drawn.
    """
    if space.size >= 2**62:
        return rows
    radix = np.concatenate([np.cumprod(space.n_values[::-1])[::-1][1:], [1]]).astype(np.int64)
    _, first = np.unique(rows @ radix, return_index=True)
    return rows[np.sort(first)]


def optimize_acquisition_on_graph(
    acquisition: Callable[[np.ndarray], Any],
    space: Space,
    *,
    rng: np.random.Generator,
    incumbent: np.ndarray,
    exclude: set[bytes],
    n_random: int = 20000,
    n_spray: int = 20,
    spray_distance: int = 2,
    n_starts: int = 20,
    prune: bool = True,
    region: "Region | None" = None,
) -> tuple[np.ndarray, float]:
    """Maximise ``acquisition`` over the vertices of ``space``'s product graph.

    Parameters
    ----------
    acquisition : callable
        Any acquisition function (:class:`graphbo.acquisition.AcquisitionFunction`) or
        callable mapping index rows ``(m, d)`` to ``m`` scores (tensor or array); larger is better.
    space : Space
    rng : numpy Generator
    incumbent : ndarray (d,)
        Index row of the best evaluation (centre of the spray vertices).
    exclude : set of bytes
        ``row.tobytes()`` of evaluated and pending rows; never returned.
    prune : bool, default True
        Score exactly only the candidates that can change a choice, using the acquisition's
        ``upper_bound`` (:mod:`graphbo.optim.bounded`); the result is the same as without.
    region : Region, optional
        A trust region (:class:`graphbo.optim.trust_region.Region`): random vertices are drawn
        in it, spray vertices and local-search moves outside it are dropped, and the result
        lies in it (``SpaceExhaustedError`` if no new vertex of it is found). ``None``: the
        whole space, exactly as without the argument.

    Returns
    -------
    (row, score) : the chosen index row and its acquisition value.
    """
    def score(rows: np.ndarray) -> np.ndarray:
        return as_scores(acquisition(rows))

    if space.size <= len(exclude):
        raise SpaceExhaustedError(f"all {space.size} configurations of the space have been evaluated")
    random_rows = space.sample_index(n_random, rng) if region is None else region.sample(n_random, rng)
    spray = space.random_walk_index(incumbent, spray_distance, n=n_spray, seed=rng) if n_spray > 0 else random_rows[:0]
    if region is not None:
        spray = spray[region.contains(spray)]
    pool = BoundedScores(acquisition, _distinct(np.concatenate([spray, random_rows]), space), prune=prune)

    # the best n_starts distinct vertices start the local search
    starts = pool.top(n_starts)
    cur = pool.rows[starts].copy()
    cur_val = pool.exact[starts].copy()
    seen = [pool]
    active = np.ones(cur.shape[0], dtype=bool)
    while active.any():
        idx = np.flatnonzero(active)
        nbrs, owner = space.neighbor_index_batch(cur[idx])
        if region is not None:
            keep = region.contains(nbrs)
            nbrs, owner = nbrs[keep], owner[keep]
        if nbrs.shape[0] == 0:
            break
        scored = BoundedScores(acquisition, nbrs, prune=prune)
        seen.append(scored)
        # a neighbour whose bound is below its start's value cannot be the start's improving move
        vals = scored.score_above(cur_val[idx[owner]])
        best_pos = best_per_owner(vals, owner)
        best_owner = owner[best_pos]
        improve = vals[best_pos] > cur_val[idx[best_owner]]
        moved = idx[best_owner[improve]]
        cur[moved] = nbrs[best_pos[improve]]
        cur_val[moved] = vals[best_pos[improve]]
        active[:] = False
        active[moved] = True

    # local optima first, then everything scored, best first
    parts = [BoundedScores.from_exact(cur, cur_val)] + seen
    found = best_fresh(parts, fresh_masks(parts, exclude))
    if found is not None:
        return found
    # everything scored was already evaluated: fall back to a random new vertex
    for _ in range(100):
        row = space.sample_index(1, rng)[0] if region is None else region.sample(1, rng)[0]
        if row.tobytes() not in exclude:
            return row, float(score(row[None, :])[0])
    if space.size <= 10**6:
        grids = np.stack(np.meshgrid(*[np.arange(k) for k in space.n_values], indexing="ij"), -1).reshape(-1, len(space))
        if region is not None:
            grids = grids[region.contains(grids)]
        fresh = [r for r in grids if r.tobytes() not in exclude]
        if fresh:
            row = fresh[rng.integers(len(fresh))]
            return row, float(score(row[None, :])[0])
    raise SpaceExhaustedError("no unevaluated configuration could be found")
