"""Classic test functions with every variable discretised: ordinal grids and categorical (nominal) levels.

The synthetic families of the combinatorial and mixed BO literature (CASMOPOLITAN, MCBO: a continuous test
function whose variables each take ``levels`` evenly spaced points of its usual domain). Two kinds:

* ``grid-ordinal``: each variable an :class:`~graphbo.Ordinal` over ``0 .. levels - 1``, level ``k`` the point
  ``low + (high - low) k / (levels - 1)``: an optimiser may use the order.
* ``grid-categorical``: each variable a :class:`~graphbo.Categorical` of ``levels`` choices ``"c0" ..``, mapped
  to the same points through a random permutation per variable (drawn from ``permutation_seed``), so that the
  choices' names carry no order: an optimiser must learn which choices are alike.

Functions (``function``), each minimised, ``x`` in its domain, ``d`` variables (Surjanovic & Bingham's
Virtual Library of Simulation Experiments gives their definitions):

* ``ackley``: ``-20 exp(-0.2 sqrt(mean x^2)) - exp(mean cos(2 pi x)) + 20 + e`` on ``[-32.768, 32.768]``;
* ``rastrigin``: ``10 d + sum (x^2 - 10 cos(2 pi x))`` on ``[-5.12, 5.12]`` (rugged);
* ``levy``: Levy's function on ``[-10, 10]``;
* ``griewank``: ``sum x^2 / 4000 - prod cos(x_i / sqrt(i)) + 1`` on ``[-600, 600]``;
* ``michalewicz``: ``-sum sin(x_i) sin(i x_i^2 / pi)^20`` on ``[0, pi]`` (steep, rugged);
* ``rosenbrock``: ``sum 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2`` on ``[-2.048, 2.048]`` (smooth, a valley);
* ``styblinski``: ``sum (x^4 - 16 x^2 + 5 x) / 2`` on ``[-5, 5]``;
* ``schwefel``: ``418.9829 d - sum x sin(sqrt|x|)`` on ``[-500, 500]`` (rugged, far-apart basins);
* ``zakharov``: ``sum x^2 + (sum 0.5 i x_i)^2 + (sum 0.5 i x_i)^4`` on ``[-5, 10]`` (smooth).

A grid that does not contain the continuous optimum has a different, unknown optimum: ``optimum`` is None.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .._validation import check_int
from ..spaces import Categorical, Ordinal, Space
from .base import Benchmark

__all__ = ["FUNCTIONS", "GridOrdinal", "GridCategorical"]


def _ackley(x: np.ndarray) -> float:
    return float(-20.0 * np.exp(-0.2 * np.sqrt(np.mean(x ** 2))) - np.exp(np.mean(np.cos(2 * np.pi * x)))
                 + 20.0 + np.e)


def _rastrigin(x: np.ndarray) -> float:
    return float(10.0 * x.size + np.sum(x ** 2 - 10.0 * np.cos(2 * np.pi * x)))


def _levy(x: np.ndarray) -> float:
    w = 1.0 + (x - 1.0) / 4.0
    body = np.sum((w[:-1] - 1.0) ** 2 * (1.0 + 10.0 * np.sin(np.pi * w[:-1] + 1.0) ** 2))
    return float(np.sin(np.pi * w[0]) ** 2 + body + (w[-1] - 1.0) ** 2 * (1.0 + np.sin(2 * np.pi * w[-1]) ** 2))


def _griewank(x: np.ndarray) -> float:
    i = np.arange(1, x.size + 1)
    return float(np.sum(x ** 2) / 4000.0 - np.prod(np.cos(x / np.sqrt(i))) + 1.0)


def _michalewicz(x: np.ndarray) -> float:
    i = np.arange(1, x.size + 1)
    return float(-np.sum(np.sin(x) * np.sin(i * x ** 2 / np.pi) ** 20))


def _rosenbrock(x: np.ndarray) -> float:
    return float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2))


def _styblinski(x: np.ndarray) -> float:
    return float(np.sum(x ** 4 - 16.0 * x ** 2 + 5.0 * x) / 2.0)


def _schwefel(x: np.ndarray) -> float:
    return float(418.9829 * x.size - np.sum(x * np.sin(np.sqrt(np.abs(x)))))


def _zakharov(x: np.ndarray) -> float:
    s = np.sum(0.5 * np.arange(1, x.size + 1) * x)
    return float(np.sum(x ** 2) + s ** 2 + s ** 4)


#: name -> (function of a 1-D array, (low, high) of every variable)
FUNCTIONS: dict[str, tuple[Callable[[np.ndarray], float], tuple[float, float]]] = {
    "ackley": (_ackley, (-32.768, 32.768)),
    "rastrigin": (_rastrigin, (-5.12, 5.12)),
    "levy": (_levy, (-10.0, 10.0)),
    "griewank": (_griewank, (-600.0, 600.0)),
    "michalewicz": (_michalewicz, (0.0, np.pi)),
    "rosenbrock": (_rosenbrock, (-2.048, 2.048)),
    "styblinski": (_styblinski, (-5.0, 5.0)),
    "schwefel": (_schwefel, (-500.0, 500.0)),
    "zakharov": (_zakharov, (-5.0, 10.0)),
}


class _GridFunction(Benchmark):
    default_budget = 100
    default_n_initial = 10

    def __init__(self, function: str, dims: int, levels: int) -> None:
        if function not in FUNCTIONS:
            raise ValueError(f"function must be one of {sorted(FUNCTIONS)}, got {function!r}")
        self.function = function
        self.dims = check_int("dims", dims, minimum=2)
        self.levels = check_int("levels", levels, minimum=2)
        self._f, (low, high) = FUNCTIONS[function]
        self._points = low + (high - low) * np.arange(self.levels) / (self.levels - 1)

    def _value(self, levels: np.ndarray) -> float:
        """The function at the grid point whose per-variable levels (``0 .. levels - 1``) are ``levels``."""
        return self._f(self._points[levels])


class GridOrdinal(_GridFunction):
    """``function`` over ``dims`` ordinal variables ``x0 ..`` of ``levels`` evenly spaced points each."""

    name = "grid-ordinal"

    def __init__(self, function: str = "ackley", dims: int = 6, *, levels: int = 50) -> None:
        super().__init__(function, dims, levels)
        self.space = Space({f"x{i}": Ordinal(list(range(self.levels))) for i in range(self.dims)})

    def evaluate_index(self, row: Any) -> float:
        return self._value(np.asarray(row, dtype=int))


class GridCategorical(_GridFunction):
    """``function`` over ``dims`` categorical variables ``x0 ..`` of ``levels`` choices ``"c0" ..`` each, choice
    ``j`` of variable ``i`` the grid point ``perm_i[j]`` (a random permutation drawn from ``permutation_seed``)."""

    name = "grid-categorical"

    def __init__(self, function: str = "ackley", dims: int = 10, *, levels: int = 10,
                 permutation_seed: int = 0) -> None:
        super().__init__(function, dims, levels)
        self.permutation_seed = check_int("permutation_seed", permutation_seed, minimum=0)
        rng = np.random.default_rng(self.permutation_seed)
        self._perm = np.stack([rng.permutation(self.levels) for _ in range(self.dims)])
        self.space = Space({f"x{i}": Categorical([f"c{j}" for j in range(self.levels)]) for i in range(self.dims)})

    def evaluate_index(self, row: Any) -> float:
        row = np.asarray(row, dtype=int)
        return self._value(self._perm[np.arange(self.dims), row])
