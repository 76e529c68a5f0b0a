"""A learned log scale for ordinal variables: each long, positive, numeric ordinal's path graph is
either the evenly spaced path or a log-spaced one, and the GP's posterior chooses.

Practitioners declare integers such as a batch size, a layer's width or a number of trees on a
linear grid although their effect is close to logarithmic: a step from 8 to 16 matters as much as
one from 512 to 1024. A stationary kernel on the evenly spaced path must then be rough everywhere
to fit the steep low end, or smooth everywhere and miss it. Input warping (Snoek, Swersky, Zemel,
Adams, "Input warping for Bayesian optimization of non-stationary functions", ICML 2014) learns a
monotone map of each input; on a path graph the analogue of a warp is the edge weights, since the
diffusion kernel's correlation between neighbours falls with the edge's length. graphbo offers the
two warps that matter in practice, the identity and the logarithm, and samples the choice with
the other hyper-parameters (a Gibbs step on a binary variable per ordinal, uniform prior).

The log-spaced path (:func:`log_path_adjacency`) has edge ``i`` of length proportional to
``log(v_{i+1} / v_i)``, scaled so that the whole path has the same length as the default evenly
spaced one: on the continuum limit of the path (:func:`graphbo.spaces.variables.path_edge_weight`)
an edge of weight ``w`` has length ``1 / sqrt(w)``, so with ``T = (k - 1) / sqrt(w_0)`` the default
path's length and ``l_i = T log(v_{i+1} / v_i) / log(v_{k-1} / v_0)``, the edge weights are
``w_i = 1 / l_i^2``. The same ``beta`` then means the same smoothness over the whole range under
either warp, which keeps the Horseshoe prior on ``beta`` comparable between them.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Sequence

import numpy as np

from ..spaces.variables import SMOOTH_STEPS, GraphSpectrum, Ordinal, path_edge_weight

__all__ = ["LOG_WARP_MIN_RATIO", "log_path_adjacency", "log_warp_candidates", "log_path_spectrum"]

#: a log-spaced path is offered only for values spanning at least this ratio (one decade): below it
#: the two spacings differ by less than a factor of 10 ** 0.5 ~ 3 in any edge's length
LOG_WARP_MIN_RATIO = 10.0


def _positive_increasing(values: Sequence[Any]) -> np.ndarray | None:
    """The values as floats when they are real numbers (not booleans), positive and strictly increasing."""
    if not all(isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)) for v in values):
        return None
    v = np.asarray(values, dtype=float)
    if not (np.all(np.isfinite(v)) and v[0] > 0 and np.all(np.diff(v) > 0)):
        return None
    return v


def log_path_adjacency(values: Sequence[Any]) -> np.ndarray | None:
    """Adjacency of the log-spaced path over ``values`` (module docstring), or ``None`` when the
    values are not positive increasing numbers spanning :data:`LOG_WARP_MIN_RATIO`, or are at most
    ``SMOOTH_STEPS + 1`` (short paths keep unit edges and gain nothing from a warp)."""
    k = len(values)
    if k <= SMOOTH_STEPS + 1:
        return None
    v = _positive_increasing(values)
    if v is None or v[-1] / v[0] < LOG_WARP_MIN_RATIO:
        return None
    gaps = np.diff(np.log(v))
    total = (k - 1) / math.sqrt(path_edge_weight(k))
    lengths = total * gaps / gaps.sum()
    weights = 1.0 / lengths ** 2
    adj = np.zeros((k, k))
    i = np.arange(k - 1)
    adj[i, i + 1] = weights
    adj[i + 1, i] = weights
    return adj


def log_path_spectrum(values: Sequence[Any]) -> GraphSpectrum | None:
    """The Laplacian eigensystem of :func:`log_path_adjacency`, or ``None`` where it has none."""
    adj = log_path_adjacency(values)
    if adj is None:
        return None
    lam, u = np.linalg.eigh(np.diag(adj.sum(axis=1)) - adj)
    return GraphSpectrum(eigenvalues=np.clip(lam, 0.0, None), eigenvectors=u)


def log_warp_candidates(variables: Sequence[Any]) -> list[int]:
    """Positions of the :class:`~graphbo.Ordinal` variables with the default (evenly spaced) path that
    can take a log-spaced one (:func:`log_path_adjacency`). An ordinal given its own ``edge_weight``
    keeps its graph."""
    return [j for j, var in enumerate(variables)
            if isinstance(var, Ordinal) and var.has_default_weight and log_path_adjacency(var.values) is not None]
