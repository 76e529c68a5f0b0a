"""Smooth functions on integer grids with many levels per variable.

Each variable is an :class:`~graphbo.Ordinal` over ``0 .. levels - 1`` (200 by default),
mapped linearly onto the function's usual domain. These are the problems where the
ordinal path graph's length matters: a kernel that cannot be smooth over more than a
few steps treats them as rough. Not from the papers; used to measure
:func:`graphbo.spaces.variables.path_edge_weight`.

* ``int-rosenbrock``: Rosenbrock, ``sum 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2`` on ``[-2, 2]^d``
  (a curved valley: the variables interact).
* ``int-styblinski``: Styblinski-Tang, ``sum (x_i^4 - 16 x_i^2 + 5 x_i) / 2`` on ``[-5, 5]^d``
  (separable, two basins per variable).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .._validation import check_int
from ..spaces import Ordinal, Space
from .base import Benchmark

__all__ = ["IntegerSynthetic", "IntRosenbrock", "IntStyblinskiTang", "rosenbrock", "styblinski_tang"]


def rosenbrock(x: np.ndarray) -> np.ndarray:
    """Rosenbrock's function over the last axis of ``x``."""
    return np.sum(100.0 * (x[..., 1:] - x[..., :-1] ** 2) ** 2 + (1.0 - x[..., :-1]) ** 2, axis=-1)


def styblinski_tang(x: np.ndarray) -> np.ndarray:
    """Styblinski-Tang's function over the last axis of ``x``."""
    return np.sum(x ** 4 - 16.0 * x ** 2 + 5.0 * x, axis=-1) / 2.0


class IntegerSynthetic(Benchmark):
    """A function of ``dims`` integer variables with ``levels`` values each.

    Parameters
    ----------
    dims : int, default 3
    levels : int, default 200
        Values per variable, ``0 .. levels - 1``.
    edge_weight : float, optional
        Edge weight of the ordinal paths; by default the path's default
        (:func:`~graphbo.spaces.variables.path_edge_weight`). ``1.0`` gives graphbo 0.1's
        unit-weight paths, for comparison.
    """

    default_budget = 100
    default_n_initial = 10
    function: Callable[[np.ndarray], np.ndarray]
    domain: tuple[float, float]

    def __init__(self, dims: int = 3, levels: int = 200, *, edge_weight: float | None = None) -> None:
        self.dims = check_int("dims", dims, minimum=2)
        self.levels = check_int("levels", levels, minimum=2)
        self.space = Space({f"x{i}": Ordinal(list(range(self.levels)), edge_weight=edge_weight)
                            for i in range(self.dims)})
        self._optimum: float | None = None

    def _points(self, index: np.ndarray) -> np.ndarray:
        low, high = self.domain
        return low + (high - low) * np.asarray(index, dtype=float) / (self.levels - 1)

    def evaluate_index(self, row: Any) -> float:
        return float(type(self).function(self._points(np.asarray(row))))

    @property
    def optimum(self) -> float:  # type: ignore[override]  # computed on the grid, not a class constant
        """The best value on the grid (brute force over ``levels^dims`` points, once)."""
        if self._optimum is None:
            axis = self._points(np.arange(self.levels))
            best = np.inf
            rest = np.stack(np.meshgrid(*[axis] * (self.dims - 1), indexing="ij"), axis=-1)
            for a in axis:  # one slab at a time keeps memory at levels^(dims-1)
                x = np.concatenate([np.full(rest.shape[:-1] + (1,), a), rest], axis=-1)
                best = min(best, float(type(self).function(x).min()))
            self._optimum = best
        return self._optimum


class IntRosenbrock(IntegerSynthetic):
    """Rosenbrock on ``[-2, 2]^d`` over an integer grid."""

    name = "int-rosenbrock"
    function = staticmethod(rosenbrock)
    domain = (-2.0, 2.0)


class IntStyblinskiTang(IntegerSynthetic):
    """Styblinski-Tang on ``[-5, 5]^d`` over an integer grid."""

    name = "int-styblinski"
    function = staticmethod(styblinski_tang)
    domain = (-5.0, 5.0)
