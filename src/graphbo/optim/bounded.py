"""Acquisition values computed exactly only where they can change the optimiser's choice.

Branch and bound over a finite set of candidates: the acquisition's upper bound
``u(x) >= a(x)`` (:meth:`graphbo.acquisition.AcquisitionFunction.upper_bound`) is cheap
for every candidate, the exact value is computed in decreasing order of ``u``, and a
candidate whose bound lies below a value already known cannot be among the best. For
EI under a GP the bound is EI at the prior variance: ``O(S m n)`` per batch of ``m``
candidates and ``S`` posterior samples against ``O(S m n^2)`` for the exact posterior
variance, the dominant cost of COMBO's acquisition step at large ``n``. The choices made
with pruning are the choices made without it (tested), up to rounding within
:data:`TOLERANCE`.

An acquisition may also offer a second, tighter and costlier bound, ``refined_bound(rows)``
(``a(x) <= refined(x) <= u(x)``). :meth:`BoundedScores.top` then takes the rows in decreasing
order of ``u`` block by block, refines each block's bounds, and scores exactly only the rows
whose refined bound can still reach the ``k``-th best value: the cheap bound decides which rows
are looked at, the refined one which of them are scored.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .utils import as_scores

__all__ = ["BoundedScores", "best_fresh", "fresh_masks", "not_in", "TOLERANCE"]

#: relative slack on comparisons of a bound with an exact value (the two are computed in different batches)
TOLERANCE = 1e-8


def _slack(value: float) -> float:
    return TOLERANCE * (1.0 + abs(value)) if np.isfinite(value) else 0.0


def _nan_as(values: np.ndarray, fill: float) -> np.ndarray:
    return np.where(np.isnan(values), fill, values)


def _unscorable(rows: np.ndarray) -> Any:
    raise RuntimeError("these scores were given, not computed")


class BoundedScores:
    """Scores of candidate index ``rows``: an upper bound for each, exact values on demand.

    Parameters
    ----------
    acquisition : callable
        Maps rows ``(m, d)`` to ``m`` scores; its ``upper_bound`` method, if any, to ``m`` bounds.
    rows : ndarray (m, d)
    prune : bool, default True
        If False (or the acquisition has no ``upper_bound``), every row is scored exactly at once.
    block : int
        Rows scored exactly per batch while pruning.
    """

    def __init__(self, acquisition: Callable[[np.ndarray], Any], rows: np.ndarray, *, prune: bool = True,
                 block: int = 256) -> None:
        self.acquisition = acquisition
        self.rows = rows
        self.block = max(int(block), 1)
        self.exact = np.full(rows.shape[0], -np.inf)
        self.scored = np.zeros(rows.shape[0], dtype=bool)
        bound = getattr(acquisition, "upper_bound", None)
        if prune and bound is not None and getattr(acquisition, "has_upper_bound", True) \
                and rows.shape[0] > self.block:
            # a NaN bound says nothing: such a row is scored before any pruning decision
            self.bound = _nan_as(as_scores(bound(rows)), np.inf)
        else:
            self._score(np.arange(rows.shape[0]))
            self.bound = self.exact.copy()

    @classmethod
    def from_exact(cls, rows: np.ndarray, values: np.ndarray) -> "BoundedScores":
        """Rows whose exact scores are already known."""
        out = cls.__new__(cls)
        out.acquisition, out.rows, out.block = _unscorable, rows, 1
        out.exact = _nan_as(np.asarray(values, dtype=float), -np.inf)
        out.scored = np.ones(out.exact.shape[0], dtype=bool)
        out.bound = out.exact.copy()
        return out

    @property
    def known(self) -> np.ndarray:
        """Which rows have an exact score."""
        return self.scored

    def _score(self, idx: np.ndarray) -> None:
        """Score rows ``idx`` exactly (those not scored yet); a NaN score counts as ``-inf``."""
        idx = idx[~self.scored[idx]]
        if idx.size:
            self.exact[idx] = _nan_as(as_scores(self.acquisition(self.rows[idx])), -np.inf)
            self.scored[idx] = True

    def top(self, k: int, distinct: bool = True) -> np.ndarray:
        """Positions of the ``k`` best rows by exact score, best first (ties: first position);
        distinct rows only, or (``distinct=False``) repeated rows counted each time, as a stable
        sort of all the exact scores would take them.

        Every row that could be among them is scored exactly; the others keep their bound.
        """
        best = self._best_distinct if distinct else self._best_any
        kth_of = self._kth_distinct if distinct else self._kth_any
        refine = getattr(self.acquisition, "refined_bound", None)
        order = np.argsort(-self.bound, kind="stable")
        pos, step = 0, max(self.block, 2 * k)
        while pos < order.size:
            block = order[pos:pos + step]
            pos += step
            if refine is None:
                self._score(block)
            else:
                self._score_refined(block, refine, k, kth_of)
            kth = kth_of(k)
            if pos < order.size and self.bound[order[pos]] < kth - _slack(kth):
                break
        return best(k)

    def _score_refined(self, block: np.ndarray, refine: Callable[[np.ndarray], Any], k: int,
                       kth_of: Callable[[int], float]) -> None:
        """Refine the bounds of ``block`` (positions) and score exactly, best refined bound first, every
        row of it whose refined bound reaches the current ``k``-th best exact value. A row left unscored
        has an exact value below that value, which only grows, so it is not among the best ``k``."""
        todo = block[~self.scored[block]]
        if todo.size == 0:
            return
        self.bound[todo] = np.minimum(self.bound[todo], _nan_as(as_scores(refine(self.rows[todo])), np.inf))
        todo = todo[np.argsort(-self.bound[todo], kind="stable")]
        sub = max(2 * k, 64)
        while todo.size:
            kth = kth_of(k)
            todo = todo[self.bound[todo] >= kth - _slack(kth)]
            self._score(todo[:sub])
            todo = todo[sub:]

    def _kth_any(self, k: int) -> float:
        best = self._best_any(k)
        return float(self.exact[best[-1]]) if best.size == k else -np.inf

    def _best_any(self, k: int) -> np.ndarray:
        known = np.flatnonzero(self.scored)
        return known[np.argsort(-self.exact[known], kind="stable")[:k]].astype(np.int64)

    def score_above(self, thresholds: np.ndarray) -> np.ndarray:
        """Exact scores of the rows whose bound reaches ``thresholds`` (one per row); ``-inf`` for the others.

        A row left at ``-inf`` has a score below its threshold, so it cannot beat it.
        """
        thresholds = np.asarray(thresholds, dtype=float)
        slack = np.where(np.isfinite(thresholds), TOLERANCE * (1.0 + np.abs(thresholds)), 0.0)
        need = np.flatnonzero(self.bound >= thresholds - slack)
        self._score(need)
        return np.where(self.scored, self.exact, -np.inf)

    def _best_distinct(self, k: int) -> np.ndarray:
        known = np.flatnonzero(self.scored)  # ascending positions: a stable sort keeps ties in position order
        out: list[int] = []
        taken: set[bytes] = set()
        for i in known[np.argsort(-self.exact[known], kind="stable")]:
            key = self.rows[i].tobytes()
            if key not in taken:
                taken.add(key)
                out.append(int(i))
                if len(out) == k:
                    break
        return np.asarray(out, dtype=np.int64)

    def _kth_distinct(self, k: int) -> float:
        best = self._best_distinct(k)
        return float(self.exact[best[-1]]) if best.size == k else -np.inf


def best_fresh(parts: list[BoundedScores], fresh: list[np.ndarray]) -> tuple[np.ndarray, float] | None:
    """The best-scoring row over ``parts`` whose ``fresh`` mask is set, with its exact score, or None.

    Ties go to the first row in the order of ``parts`` and positions. Rows are scored exactly
    in decreasing order of their bounds until no unscored fresh row can beat the best one scored.
    """
    while True:
        best_val, best_at = -np.inf, None
        top_bound, top_at = -np.inf, None
        for p, (part, ok) in enumerate(zip(parts, fresh)):
            known = part.known & ok
            if known.any():
                i = int(np.flatnonzero(known)[np.argmax(part.exact[known])])
                if best_at is None or part.exact[i] > best_val:
                    best_val, best_at = float(part.exact[i]), (p, i)
            unknown = ok & ~part.known
            if unknown.any():
                j = int(np.flatnonzero(unknown)[np.argmax(part.bound[unknown])])
                if part.bound[j] > top_bound:
                    top_bound, top_at = float(part.bound[j]), (p, j)
        if top_at is None or (best_at is not None and top_bound < best_val - _slack(best_val)):
            if best_at is None:
                return None
            part = parts[best_at[0]]
            return part.rows[best_at[1]].copy(), best_val
        part = parts[top_at[0]]
        unknown = np.flatnonzero(fresh[top_at[0]] & ~part.known)
        part._score(unknown[np.argsort(-part.bound[unknown], kind="stable")[:part.block]])


def not_in(rows: np.ndarray, keys: set[bytes] | frozenset[bytes]) -> np.ndarray:
    """Which ``rows`` are not in ``keys`` (raw bytes of rows, as the optimizers keep their evaluated ones)."""
    if not keys:
        return np.ones(rows.shape[0], dtype=bool)
    rows = np.ascontiguousarray(rows)
    return np.fromiter((r.tobytes() not in keys for r in rows), dtype=bool, count=rows.shape[0])


def fresh_masks(parts: list[BoundedScores], exclude: set[bytes],
                *, fresh: Callable[[np.ndarray, set[bytes]], np.ndarray] = not_in) -> list[np.ndarray]:
    """The ``fresh`` masks of :func:`best_fresh` for ``parts``, looked up
    only where a row could be chosen.

    Testing 100,000 pool rows against ``exclude`` one by one costs about 0.1 s. The rows with an
    exact score are taken best first until one is fresh; it scores ``floor``. A row whose bound lies
    below ``floor`` can never be chosen, so it is left marked fresh without a look-up, and
    ``best_fresh`` returns the same row as with every row tested. ``fresh(rows, keys)`` tests rows
    against the plain set ``keys`` (``exclude`` may be a view whose membership test is a Python call: it
    is copied into a set once).
    """
    keys = exclude if type(exclude) in (set, frozenset) else set(exclude)
    values = np.concatenate([part.exact[part.known] for part in parts])
    owner = np.concatenate([np.full(int(part.known.sum()), p) for p, part in enumerate(parts)])
    position = np.concatenate([np.flatnonzero(part.known) for part in parts])
    floor = -np.inf
    for k in np.argsort(-values, kind="stable"):
        if parts[owner[k]].rows[position[k]].tobytes() not in keys:
            floor = float(values[k])
            break
    masks = []
    for part in parts:
        mask = np.ones(part.rows.shape[0], dtype=bool)
        # a scored row by its exact value too: were its bound ever below it, it is still looked up
        reach = np.where(part.known, np.maximum(part.exact, part.bound), part.bound)
        need = np.flatnonzero(reach >= floor - _slack(floor))
        mask[need] = fresh(part.rows[need], keys)
        masks.append(mask)
    return masks
