"""Acquisition optimisation on a mixed space (BO-FM supplement D.1).

The search scores ``n_random`` uniformly random points and ``n_spray`` spray
points near the best evaluation and starts from the best ``n_starts`` (D.1's
"50 spray points and 100000 randomly sampled points ... the highest 40"). Every
start then alternates on its own a hill-climbing step on the discrete part (move
to the best graph neighbour) with one ``scipy.optimize.minimize(method=
"L-BFGS-B", maxiter=1)`` call on the continuous part (gradients by autograd,
discrete part fixed), until convergence: the round changed its acquisition value
by at most ``rel_tol`` relatively (the stopping rule of the authors' code, 1e-6),
or its hill-climbing step found no better neighbour. At that point the continuous
part is polished by L-BFGS-B run to its own convergence and the discrete
neighbours are checked again; the start stops only when none is better, so its
result is a local maximum for one-variable discrete moves whose continuous part
is a stationary point (or at a bound).

A start whose discrete step stalls is treated as converged at once because,
where the acquisition is flat in the continuous part, D.1's one-iteration calls
(each restarted without curvature) creep for hundreds of rounds while the
discrete part no longer moves; the polish reaches a stationary point in a few
iterations (not necessarily the one the creep would reach).

Neighbour scores are batched over the starts; each start has its own L-BFGS-B
run, whose objective calls are batched over the starts too
(:class:`~graphbo.optim.lockstep.Lockstep`). A converged start waits for its
polish until no start is still moving, so one lockstep run polishes many; its
own steps are the same whenever it is polished (up to the rounding of the
batched acquisition calls, which depends on the batch).

Rows stay NumPy (on the CPU) here; a model on another torch device moves them
there itself (:meth:`graphbo.models.mixed_gp.MixedGP.split`), and the scores and
gradients come back with ``.cpu()`` (:func:`~graphbo.optim.utils.as_scores`), so
the same code serves every device.

Two alternatives were measured and removed: D.1's literal one-iteration
L-BFGS-B rounds (a start converged only by the ``rel_tol`` rule), and a batched
variant (all starts moved together, one L-BFGS-B on the sum of their objectives
per round, no local-maximum guarantee). In all 32 measured cases the three
returned the same log-EI to 1e-11; this procedure took 1.1-8.6x less CPU than
D.1's literal one and keeps its guarantee (docs/bofm_benchmarks.md,
"Acquisition optimiser").
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable

import numpy as np
import torch

from ..acquisition.ei import LogExpectedImprovement, log_mean_expected_improvement
from ..models.base import Screening
from ..spaces.space import Space
from .bounded import BoundedScores, best_fresh, fresh_masks
from .lockstep import Lockstep
from .utils import as_scores, best_per_owner

if TYPE_CHECKING:
    from .trust_region import Region

__all__ = ["optimize_acquisition_mixed", "SCREEN_MARGIN"]

logger = logging.getLogger(__name__)


def optimize_acquisition_mixed(
    acquisition: Callable[[torch.Tensor], torch.Tensor],
    space: Space,
    *,
    rng: np.random.Generator,
    incumbent: np.ndarray,
    exclude: set[bytes],
    n_random: int = 100_000,
    n_spray: int = 50,
    n_starts: int = 40,
    spray_sd: float = 0.05,
    max_rounds: int | None = None,
    chunk: int = 2000,
    rel_tol: float = 1e-6,
    region: "Region | None" = None,
) -> tuple[np.ndarray, float]:
    """Maximise ``acquisition`` over the mixed rows of ``space``.

    ``acquisition`` is any acquisition function (:class:`graphbo.acquisition.AcquisitionFunction`)
    or callable mapping a float64 tensor of rows ``(m, d)`` (discrete columns hold indices,
    continuous columns lie in [0, 1]) to ``m`` scores, differentiable in the continuous columns.
    Returns the best row not in ``exclude`` and its acquisition value. ``max_rounds`` caps each
    start's alternation rounds (default 1000; a start out of rounds is left as it is, unpolished);
    ``rel_tol`` is the relative change of a start's value below which it has converged (module
    docstring).

    ``region`` (a :class:`graphbo.optim.trust_region.Region`) confines the search to a trust
    region: random points are drawn in it, spray points are clipped to its box and dropped
    outside its ball, hill-climbing moves leave neither, and L-BFGS-B is bounded by its box.
    ``None``: the whole space, exactly as without the argument.
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
        return rows if region is None else region.clamp(rows)

    # 1. random + spray starting pool
    spray = space.random_walk_index(incumbent, 1, n=n_spray, seed=rng).astype(float) if disc.size else \
        np.repeat(np.asarray(incumbent, dtype=float)[None], n_spray, 0)
    lower, upper = (0.0, 1.0) if region is None else (region.lower, region.upper)
    if cont.size:
        spray[:, cont] = np.clip(spray[:, cont] + rng.normal(0, spray_sd, (n_spray, cont.size)), lower, upper)
    if region is not None:
        spray = spray[region.contains(spray)]
    randoms = space.sample_index(n_random, rng) if region is None else region.sample(n_random, rng)
    pool = snap(np.concatenate([spray, randoms.astype(float, copy=False)]))
    scored = _pool_scores(acquisition, pool, score_rows, chunk, n_starts)
    top = scored.top(n_starts, distinct=False)
    cur, cur_val = pool[top].copy(), scored.exact[top].copy()

    cur, cur_val = _alternate_per_start(acquisition, space, cur, cur_val, score_rows,
                                        1000 if max_rounds is None else max_rounds, rel_tol, region=region)
    cur = snap(cur)  # integer-valued continuous variables: the nearest integers, rescored
    cur_val = score_rows(cur)

    parts = [BoundedScores.from_exact(cur, cur_val), scored]
    found = best_fresh(parts, fresh_masks(parts, exclude))
    if found is None:
        raise RuntimeError("no unevaluated point among the acquisition candidates")
    return found


#: largest share of the trial rows whose bound reaches their best exact score for which pruning is used
_LOOSE = 0.25


class _BoundedEI:
    """log-EI with a cheap upper bound for :class:`~graphbo.optim.bounded.BoundedScores`: log-EI
    (Jones et al. 1998) falls with the posterior mean and grows with the standard deviation, so
    at a lower bound of the mean and an upper bound of the variance (the model's
    :meth:`Screening.mean_lower_bound <graphbo.models.base.Screening.mean_lower_bound>`) it bounds the
    exact value from above."""

    has_upper_bound = True

    def __init__(self, acquisition: LogExpectedImprovement, screening: Screening,
                 score_rows: Callable[[np.ndarray], np.ndarray]) -> None:
        self.acquisition, self.screening, self.score_rows = acquisition, screening, score_rows

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        return self.score_rows(rows)

    def upper_bound(self, rows: np.ndarray) -> torch.Tensor:
        mean, var = self.screening.mean_lower_bound(rows)
        return log_mean_expected_improvement(mean[None], var[None], best=self.acquisition.best_f)

    def refined_bound(self, rows: np.ndarray) -> torch.Tensor:
        """The same bound with the tight variance bound (``mean_lower_bound(tight_variance=True)``), for the
        rows that the cheap one could not rule out (:meth:`BoundedScores.top`)."""
        mean, var = self.screening.mean_lower_bound(rows, tight_variance=True)
        return log_mean_expected_improvement(mean[None], var[None], best=self.acquisition.best_f)


class _ScreenedEI:
    """log-EI with a float32 estimate plus :data:`SCREEN_MARGIN` as the "bound" of
    :class:`~graphbo.optim.bounded.BoundedScores` (the model's
    :meth:`Screening.screen_moments <graphbo.models.base.Screening.screen_moments>`): the exact values are
    computed, best estimate first, for every row whose estimate comes within the margin of the best
    exact values. Not a proven bound; :func:`_pool_scores` checks the estimates against the exact
    values it computed."""

    has_upper_bound = True

    def __init__(self, acquisition: LogExpectedImprovement, screening: Screening,
                 score_rows: Callable[[np.ndarray], np.ndarray], chunk: int) -> None:
        self.acquisition, self.screening, self.score_rows, self.chunk = acquisition, screening, score_rows, chunk

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        return self.score_rows(rows)

    def estimate(self, rows: np.ndarray) -> np.ndarray:
        out = []
        for s in range(0, rows.shape[0], self.chunk):
            mean, var = self.screening.screen_moments(rows[s:s + self.chunk])
            out.append(as_scores(log_mean_expected_improvement(mean[None], var[None], best=self.acquisition.best_f)))
        return np.concatenate(out) if out else np.empty(0)

    def upper_bound(self, rows: np.ndarray) -> np.ndarray:
        return self.estimate(rows) + SCREEN_MARGIN


#: log-EI margin of the float32 screening (:class:`_ScreenedEI`): a row is scored exactly where its estimate
#: plus this reaches the ``n_starts``-th best exact value; the estimates of the scored rows must lie within
#: half of it of their exact values near the cut (:func:`_screening_holds`), else every row is scored exactly
SCREEN_MARGIN = 1e-2


def _pool_scores(acquisition: Callable[[torch.Tensor], torch.Tensor], pool: np.ndarray,
                 score_rows: Callable[[np.ndarray], np.ndarray], chunk: int, n_starts: int) -> BoundedScores:
    """The starting pool's scores, of which the ``n_starts`` best are taken. For log-EI of a model whose
    :meth:`~graphbo.models.base.Surrogate.screening` offers a cheap mean lower bound
    (:meth:`~graphbo.models.base.Screening.mean_lower_bound`), with branch and bound
    (:mod:`graphbo.optim.bounded`); where that bound is loose and the screening offers float32 moments
    (:meth:`~graphbo.models.base.Screening.screen_moments`), the rows are ranked by the float32 estimate and
    scored exactly from the best down, until the estimates (plus :data:`SCREEN_MARGIN`) fall below the
    ``n_starts``-th best exact value, and the estimates are checked (:func:`_screening_holds`; every row is
    scored exactly where they miss); else every row exactly. The rows taken are those exact scoring takes wherever the
    estimates are within the margin of the exact values: proven for the bound, checked near the cut for
    the screening."""
    if type(acquisition) is not LogExpectedImprovement or pool.shape[0] <= 4 * chunk:
        return BoundedScores.from_exact(pool, score_rows(pool))
    screening = acquisition.model.screening()
    head = None
    if screening is not None and screening.offers_mean_lower_bound:
        # a trial on the first ``chunk`` rows: where the bound is loose (most of them reach the best
        # exact score among them), pruning would skip few rows and only add the bounds' cost
        bounded = _BoundedEI(acquisition, screening, score_rows)
        head = score_rows(pool[:chunk])
        if np.mean(as_scores(bounded.upper_bound(pool[:chunk])) >= head.max()) <= _LOOSE:
            scores = BoundedScores(bounded, pool, block=chunk)
            scores.exact[:chunk], scores.scored[:chunk] = np.where(np.isnan(head), -np.inf, head), True
            return scores
    if screening is not None and screening.offers_screen_moments:
        screened = _ScreenedEI(acquisition, screening, score_rows, chunk)
        scores = BoundedScores(screened, pool, block=256)
        if head is not None:
            scores.exact[:chunk], scores.scored[:chunk] = np.where(np.isnan(head), -np.inf, head), True
        kth = scores.exact[scores.top(n_starts, distinct=False)[-1]]
        if _screening_holds(scores, kth, score_rows):
            return scores
        logger.debug("float32 screening of the pool off by more than %g; scoring every row", 0.5 * SCREEN_MARGIN)
        exact = scores.exact.copy()
        rest = np.flatnonzero(~scores.scored)
        exact[rest] = score_rows(pool[rest])
        return BoundedScores.from_exact(pool, exact)
    if head is not None:
        return BoundedScores.from_exact(pool, np.concatenate([head, score_rows(pool[chunk:])]))
    return BoundedScores.from_exact(pool, score_rows(pool))


#: rows just below the cut, scored exactly to check the float32 estimates (:func:`_screening_holds`)
_PROBES = 64


def _screening_holds(scores: BoundedScores, kth: float, score_rows: Callable[[np.ndarray], np.ndarray]) -> bool:
    """Whether the float32 estimates of a screened pool (``scores.bound`` minus :data:`SCREEN_MARGIN`) lie
    within half the margin of the exact values where it matters: at every row scored exactly whose value
    comes within 1 (a factor ``e`` in EI) of the ``n_starts``-th best ``kth``, and at up to
    :data:`_PROBES` rows left unscored whose estimates lie in ``[kth - 1, kth - margin)`` (evenly spread
    over them by estimate, so the rows an estimate too low would hide are sampled too; they are scored
    here). Far below the cut, at rows with a tiny posterior variance, float32's error in the variance can
    be large relative to it, and so in log-EI; such rows are not taken either way."""
    estimate = scores.bound - SCREEN_MARGIN
    below = np.flatnonzero(~scores.scored & (estimate >= kth - 1.0) & (estimate < kth - SCREEN_MARGIN))
    if below.size:
        below = below[np.argsort(estimate[below], kind="stable")]
        probes = below[np.unique(np.linspace(0, below.size - 1, min(_PROBES, below.size)).astype(int))]
        values = score_rows(scores.rows[probes])
        scores.exact[probes] = np.where(np.isnan(values), -np.inf, values)
        scores.scored[probes] = True
    known = scores.scored & (scores.exact >= kth - 1.0) & np.isfinite(estimate)
    return bool(known.any()) and bool(np.all(np.abs(estimate[known] - scores.exact[known]) <= 0.5 * SCREEN_MARGIN))


def _neighbour_scores(acquisition: Callable[[torch.Tensor], torch.Tensor], space: Space, starts: np.ndarray,
                      nbrs: np.ndarray, owner: np.ndarray,
                      score_rows: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """The acquisition at the graph neighbours ``nbrs`` of ``starts`` (``owner[i]``: the start of
    ``nbrs[i]``). For log-EI of a model whose :meth:`~graphbo.models.base.Surrogate.screening` offers
    :meth:`~graphbo.models.base.Screening.neighbour_moments` (a :class:`~graphbo.models.mixed_gp.MixedGP`
    with an FM kernel: each neighbour's cross-covariance is its start's with one factor of Eq. 5 replaced),
    which is far cheaper than scoring the rows afresh (``score_rows``, used otherwise, and where the
    screening says it would not pay: :meth:`~graphbo.models.base.Screening.neighbour_moments_pay`); the
    values agree up to rounding."""
    if type(acquisition) is LogExpectedImprovement and nbrs.shape[0]:
        screening = acquisition.model.screening()
        if screening is not None and screening.offers_neighbour_moments \
                and screening.neighbour_moments_pay(starts.shape[0], nbrs.shape[0]):
            disc = space.discrete_indices
            changed = nbrs[:, disc] != starts[owner][:, disc]
            if bool((changed.sum(1) == 1).all()):  # graph neighbours: one discrete variable changed
                var = changed.argmax(1)
                value = nbrs[np.arange(nbrs.shape[0]), disc[var]].astype(np.int64)
                mean, variance = screening.neighbour_moments(starts, owner, var=var, value=value)
                return as_scores(log_mean_expected_improvement(mean[None], variance[None], best=acquisition.best_f))
    return score_rows(nbrs.astype(float))


def _neighbours(space: Space, rows: np.ndarray, region: "Region | None") -> tuple[np.ndarray, np.ndarray]:
    """``space.neighbor_index_batch(rows)``, without the neighbours outside ``region`` (if any)."""
    nbrs, owner = space.neighbor_index_batch(rows)
    if region is not None:
        keep = region.contains(nbrs)
        nbrs, owner = nbrs[keep], owner[keep]
    return nbrs, owner


def _alternate_per_start(acquisition: Callable[[torch.Tensor], torch.Tensor], space: Space, cur: np.ndarray,
                         cur_val: np.ndarray, score_rows: Callable[[np.ndarray], np.ndarray], max_rounds: int,
                         rel_tol: float, region: "Region | None" = None) -> tuple[np.ndarray, np.ndarray]:
    """BO-FM supplement D.1: per start, one hill-climbing step then one L-BFGS-B iteration
    (``maxiter=1``), until a round changes the value by at most ``rel_tol`` relatively or the
    hill-climbing step finds no better neighbour; then the continuous part is polished to
    L-BFGS-B's convergence and the start stops unless a discrete neighbour is better (module
    docstring)."""
    cont = space.continuous_indices
    cur, cur_val = cur.copy(), cur_val.copy()
    lockstep = Lockstep(acquisition, cont, region=region) if cont.size else None

    def score_neighbours(starts: np.ndarray, nbrs: np.ndarray, owner: np.ndarray) -> np.ndarray:
        return _neighbour_scores(acquisition, space, starts, nbrs, owner, score_rows)

    try:
        return _alternate(lockstep, space, cur, cur_val, score_neighbours, max_rounds, rel_tol, region)
    finally:
        if lockstep is not None:
            lockstep.close()


def _alternate(lockstep: "Lockstep | None", space: Space, cur: np.ndarray, cur_val: np.ndarray,
               score_neighbours: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray], max_rounds: int,
               rel_tol: float, region: "Region | None") -> tuple[np.ndarray, np.ndarray]:
    """The rounds of :func:`_alternate_per_start` (``lockstep`` is None for a purely discrete space;
    ``score_neighbours(starts, nbrs, owner)`` scores graph neighbours)."""
    disc, cont = space.discrete_indices, space.continuous_indices
    active = np.ones(cur.shape[0], dtype=bool)
    # converged starts wait for their polish until no start is still moving, so that one L-BFGS-B run in
    # lockstep polishes them all; a start's own steps do not depend on when it is polished (each start
    # is alone in its L-BFGS-B run, the batches only share the acquisition calls), so every start ends
    # where an immediate polish would leave it (up to the rounding of batched acquisition calls), at a
    # fraction of the acquisition calls
    waiting = np.zeros(cur.shape[0], dtype=bool)
    rounds = np.zeros(cur.shape[0], dtype=np.int64)  # each start's own rounds, capped at max_rounds
    while True:
        idx = np.flatnonzero(active & ~waiting & (rounds < max_rounds))
        if idx.size:
            rounds[idx] += 1
            before = cur_val[idx].copy()
            moved = np.zeros(idx.size, dtype=bool)
            if disc.size:  # one hill-climbing step, neighbours of every active start in one batch
                nbrs, owner = _neighbours(space, cur[idx], region)
                if nbrs.shape[0]:
                    vals = score_neighbours(cur[idx], nbrs, owner)
                    best = best_per_owner(vals, owner)
                    better = vals[best] > cur_val[idx[owner[best]]]
                    who = owner[best[better]]
                    cur[idx[who]], cur_val[idx[who]] = nbrs[best[better]], vals[best[better]]
                    moved[who] = True
            if lockstep is None:  # purely discrete: plain hill climbing
                active[idx[~moved]] = False
                continue
            # a start whose discrete step stayed goes straight to the polish below instead of creeping by
            # one L-BFGS-B iteration per round (hundreds of rounds where the EI surface is flat)
            if moved.any():
                x, v = lockstep.run(cur[idx[moved]], maxiter=1)  # one L-BFGS-B iteration per start
                up = v >= cur_val[idx[moved]]
                cur[np.ix_(idx[moved][up], cont)], cur_val[idx[moved][up]] = x[up], v[up]
            done = np.abs(cur_val[idx] - before) <= rel_tol * np.maximum(np.abs(cur_val[idx]), 1.0)
            waiting[idx[done | ~moved]] = True
            if (active & ~waiting & (rounds < max_rounds)).any():
                continue
        conv = np.flatnonzero(waiting)
        if conv.size == 0:  # nothing to step, nothing to polish (a start out of rounds is left as it is)
            break
        waiting[conv] = False
        assert lockstep is not None  # a purely discrete space has no waiting starts
        _polish(lockstep, space, cur, cur_val, conv, active, score_neighbours, region)
    return cur, cur_val


def _polish(lockstep: Lockstep, space: Space, cur: np.ndarray, cur_val: np.ndarray, conv: np.ndarray,
            active: np.ndarray, score_neighbours: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
            region: "Region | None") -> None:
    """Converged starts ``conv`` of :func:`_alternate`: polish their continuous parts (L-BFGS-B to its own
    convergence), then stop each one (``active`` False) unless a discrete neighbour is better. In place."""
    cont = space.continuous_indices
    x, v = lockstep.run(cur[conv], maxiter=15000)
    up = v >= cur_val[conv]
    cur[np.ix_(conv[up], cont)], cur_val[conv[up]] = x[up], v[up]
    stop = np.ones(conv.size, dtype=bool)
    if space.discrete_indices.size:
        nbrs, owner = _neighbours(space, cur[conv], region)
        if nbrs.shape[0]:
            vals = score_neighbours(cur[conv], nbrs, owner)
            best = best_per_owner(vals, owner)
            stop[owner[best[vals[best] > cur_val[conv[owner[best]]]]]] = False
    active[conv[stop]] = False
