"""What an evaluation returns when it is more than one number: several objectives and black-box constraints.

Everything here minimises (a study turns a maximised objective into its negative before it gets here) and
works on plain arrays: ``Y`` is ``(n, k)``, one row per evaluation and one column per objective; ``C`` is
``(n, c)``, one column per constraint, *feasible when every constraint value is <= 0* (Optuna's
``constraints_func`` convention).

* :func:`pareto_mask`: the non-dominated rows (Deb 2001, Def. 2.5: ``a`` dominates ``b`` when it is no
  worse in every objective and better in at least one).
* :func:`hypervolume`: the Lebesgue measure of the region the rows dominate and that dominates the
  reference point (Zitzler & Thiele 1998); exact, by sweeping the last objective and recursing on the
  others (the HSO slicing of While et al. 2006), ``O(n^(k-1) log n)``.
* :func:`reference_point`: a default reference point from the observed ranges (the nadir of the
  observations moved out by a tenth of each range, as BoTorch's ``infer_reference_point`` does).
* :func:`parego_scalarize`: ParEGO's augmented Chebyshev scalarisation with weights drawn uniformly on the
  simplex (Knowles 2006, Eq. 2, ``rho = 0.05``, on objectives normalised to [0, 1]), the single number a
  single-objective surrogate models for one multi-objective suggestion.
* :func:`feasible`, :func:`violation`: Optuna's feasibility rule and the total violation ``sum max(c, 0)``.
"""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np

__all__ = ["OBJECTIVE_DIRECTIONS", "check_directions", "pareto_mask", "hypervolume", "reference_point",
           "check_reference_point", "hypervolume_trace", "simplex_weights", "parego_scalarize", "PAREGO_RHO", "feasible", "violation",
           "feasibility_first", "Outcome", "as_outcome"]

#: the two directions an objective may have
OBJECTIVE_DIRECTIONS = ("minimize", "maximize")
#: ParEGO's augmentation coefficient (Knowles 2006, Sec. III-B: "rho is a small positive value, set to 0.05")
PAREGO_RHO = 0.05


def check_directions(directions: Any, name: str = "directions") -> list[str]:
    """``directions`` as a list of at least one of ``"minimize"``/``"maximize"`` (``ValueError`` naming ``name``
    otherwise; ``TypeError`` for something that is not a list or tuple of strings)."""
    if isinstance(directions, (str, bytes)) or not isinstance(directions, (list, tuple)):
        raise TypeError(f"{name} must be a list of 'minimize'/'maximize', one per objective, got {directions!r}")
    if not directions:
        raise ValueError(f"{name} must name at least one objective, got {list(directions)!r}")
    bad = [d for d in directions if not (isinstance(d, str) and d in OBJECTIVE_DIRECTIONS)]
    if bad:
        raise ValueError(f"{name}: each must be 'minimize' or 'maximize', got {bad[0]!r}")
    return list(directions)


def _as_matrix(Y: Any, name: str = "Y") -> np.ndarray:
    Y = np.asarray(Y, dtype=float)
    if Y.ndim == 1:
        Y = Y[:, None]
    if Y.ndim != 2:
        raise ValueError(f"{name} must be an (n, k) array, got shape {Y.shape}")
    return Y


def pareto_mask(Y: Any) -> np.ndarray:
    """Boolean mask of the rows of ``Y`` (``(n, k)``, minimised) that no other row dominates.

    Rows equal to each other do not dominate one another, so duplicates of a Pareto-optimal row are all kept.
    """
    Y = _as_matrix(Y)
    n = Y.shape[0]
    keep = np.ones(n, dtype=bool)
    for i in range(n):
        if not keep[i]:
            continue
        # rows that row i dominates
        dominated = np.all(Y[i] <= Y, axis=1) & np.any(Y[i] < Y, axis=1)
        keep &= ~dominated
    return keep


def _hv2(P: np.ndarray, ref: np.ndarray) -> float:
    """Two objectives: sort by the first, add the rectangles of the staircase."""
    P = P[np.argsort(P[:, 0], kind="stable")]
    total, best_second = 0.0, ref[1]
    for a, b in P:
        if b < best_second:
            total += (ref[0] - a) * (best_second - b)
            best_second = b
    return total


def _hv(P: np.ndarray, ref: np.ndarray) -> float:
    k = P.shape[1]
    if P.shape[0] == 0:
        return 0.0
    if k == 1:
        return float(ref[0] - P[:, 0].min())
    if k == 2:
        return _hv2(P, ref)
    # sweep the last objective: between consecutive values, the slice is the (k-1)-volume of the points at or
    # below it, times the slice's depth
    order = np.argsort(P[:, -1], kind="stable")
    P = P[order]
    total = 0.0
    for i in range(P.shape[0]):
        upper = P[i + 1, -1] if i + 1 < P.shape[0] else ref[-1]
        depth = upper - P[i, -1]
        if depth > 0:
            front = P[: i + 1, :-1]
            total += depth * _hv(front[pareto_mask(front)], ref[:-1])
    return total


def hypervolume(Y: Any, ref: Any) -> float:
    """The hypervolume that the rows of ``Y`` (``(n, k)``, minimised) dominate, bounded by ``ref`` (``(k,)``).

    Rows that do not strictly dominate ``ref`` in every objective add nothing. 0 for no rows.
    """
    Y = _as_matrix(Y)
    ref = np.asarray(ref, dtype=float).reshape(-1)
    if ref.shape[0] != Y.shape[1]:
        raise ValueError(f"the reference point has {ref.shape[0]} values for {Y.shape[1]} objectives")
    inside = np.all(Y < ref, axis=1)
    P = Y[inside]
    if P.shape[0] == 0:
        return 0.0
    P = np.unique(P[pareto_mask(P)], axis=0)
    return float(_hv(P, ref))


def reference_point(Y: Any, margin: float = 0.1) -> np.ndarray:
    """A reference point for ``Y`` (``(n, k)``, minimised): each objective's largest value plus ``margin`` times
    its range (plus ``margin`` times ``max(1, |largest|)`` when the range is 0), so every observed row adds
    hypervolume."""
    Y = _as_matrix(Y)
    if Y.shape[0] == 0:
        raise ValueError("a reference point needs at least one evaluation")
    hi, lo = Y.max(axis=0), Y.min(axis=0)
    span = hi - lo
    span = np.where(span > 0, span, np.maximum(1.0, np.abs(hi)))
    return hi + margin * span


def hypervolume_trace(Y: Any, ok: Any, *, ref: Any) -> np.ndarray:
    """The hypervolume of the feasible rows of ``Y`` (``(n, k)``, minimised; ``ok`` their feasibility) among the
    first ``i + 1`` rows, for each ``i``: the hypervolume-over-evaluations curve of a run."""
    Y = _as_matrix(Y)
    ok = np.asarray(ok, dtype=bool).reshape(-1)
    out = np.zeros(Y.shape[0])
    front = np.zeros((0, Y.shape[1]))
    for i in range(Y.shape[0]):
        if ok[i]:
            front = np.vstack([front, Y[i]])
            front = front[pareto_mask(front)]
        out[i] = hypervolume(front, ref) if front.shape[0] else 0.0
    return out


def check_reference_point(ref: Any, n_objectives: int, *, name: str = "reference_point") -> list[float]:
    """``ref`` as a list of ``n_objectives`` finite floats (``ValueError`` naming ``name`` otherwise)."""
    try:
        values = [float(v) for v in ref]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a list of {n_objectives} numbers, got {ref!r}") from None
    if len(values) != n_objectives or not all(np.isfinite(values)):
        raise ValueError(f"{name} must be {n_objectives} finite numbers (one per objective), got {ref!r}")
    return values


def simplex_weights(k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` non-negative weights summing to 1, uniform on the simplex (normalised exponentials)."""
    w = rng.exponential(size=k)
    return w / w.sum()


def parego_scalarize(Y: Any, weights: Any, *, rho: float = PAREGO_RHO) -> np.ndarray:
    """ParEGO's augmented Chebyshev scalarisation of each row of ``Y`` (Knowles 2006, Eq. 2)::

        f_w(y) = max_j w_j y'_j + rho * sum_j w_j y'_j

    with ``y'`` each objective normalised to [0, 1] over the rows of ``Y`` (a constant objective maps to 0).
    Smaller is better; a minimiser of ``f_w`` for some ``w > 0`` is Pareto-optimal, and every point of the front
    minimises it for some ``w``.
    """
    Y = _as_matrix(Y)
    w = np.asarray(weights, dtype=float).reshape(-1)
    lo, hi = Y.min(axis=0), Y.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    Z = (Y - lo) / span * w
    return Z.max(axis=1) + rho * Z.sum(axis=1)


def feasible(C: Any) -> np.ndarray:
    """Boolean mask of the rows of ``C`` (``(n, c)``) with every constraint value ``<= 0``; all True for ``c = 0``."""
    C = _as_matrix(C, "C")
    return np.all(C <= 0, axis=1)


def violation(C: Any) -> np.ndarray:
    """Each row's total violation ``sum_j max(c_j, 0)`` (0 exactly when feasible)."""
    C = _as_matrix(C, "C")
    return np.clip(C, 0, None).sum(axis=1)


def feasibility_first(y: Sequence[float] | np.ndarray, C: Any) -> np.ndarray:
    """``y`` with every infeasible row moved behind every feasible one: Deb's rule (Deb 2000, Sec. 3.1) as one
    number for a model that cannot take constraints. A feasible row keeps its value; an infeasible one gets the
    largest value of ``y`` plus its violation in units of ``y``'s range (so less violation ranks better)."""
    y = np.asarray(y, dtype=float).reshape(-1)
    C = _as_matrix(C, "C")
    if y.size == 0 or C.shape[1] == 0:
        return y.copy()
    ok = feasible(C)
    if ok.all():
        return y.copy()
    span = float(np.ptp(y)) or 1.0
    scale = np.abs(C).max(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    v = violation(C / scale)
    out = y.copy()
    out[~ok] = y.max() + span * (0.1 + v[~ok])
    return out


class Outcome(NamedTuple):
    """What one evaluation returned: its objective values and its black-box constraint values (feasible when
    every one is ``<= 0``), as the objective gave them (numbers not yet checked).

    An objective of :func:`graphbo.minimize` returns a number (one objective), a list or tuple of numbers (one
    per objective), or a dict ``{"values": [...], "constraints": [...]}`` (``"value"`` for one objective);
    :func:`as_outcome` reads each of these.
    """

    values: tuple[Any, ...]
    constraints: tuple[Any, ...] = ()


_OUTCOME_KEYS = {"value", "values", "constraints"}


def as_outcome(raw: Any) -> Outcome:
    """``raw`` (a sequence of values, a dict with ``"value"``/``"values"`` and ``"constraints"``, or an
    :class:`Outcome`) as an :class:`Outcome`; ``TypeError`` saying what ``raw`` is otherwise."""
    if isinstance(raw, Outcome):
        return Outcome(tuple(raw.values), tuple(raw.constraints))
    if isinstance(raw, Mapping):
        unknown = sorted(str(k) for k in raw if k not in _OUTCOME_KEYS)
        if unknown or ("value" in raw) == ("values" in raw):
            raise TypeError(f"a dict with 'values' (or 'value') and optionally 'constraints', got keys "
                            f"{sorted(map(str, raw))}")
        values = raw["values"] if "values" in raw else [raw["value"]]
        cons = raw.get("constraints", ())
        return Outcome(_items(values, "values"), _items(cons, "constraints"))
    return Outcome(_items(raw, "values"))


def _items(seq: Any, what: str) -> tuple[Any, ...]:
    if isinstance(seq, np.ndarray):
        return tuple(seq.reshape(-1).tolist()) if seq.ndim <= 1 else _bad(seq, what)
    if isinstance(seq, (list, tuple)):
        return tuple(seq)
    if what == "values" and not isinstance(seq, (str, bytes, Mapping)) and np.ndim(seq) == 0:
        return (seq,)
    return _bad(seq, what)


def _bad(seq: Any, what: str) -> tuple[Any, ...]:
    raise TypeError(f"{what} must be a list of numbers, got {type(seq).__name__} {seq!r:.80}")
