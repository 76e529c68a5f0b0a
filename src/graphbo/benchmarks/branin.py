"""Discretised Branin (COMBO supplement Sec. 4.2.1).

Two ordinal variables, each with 51 equally spaced values on ``[0, 1]``,
mapped linearly to Branin's domain ``x1 in [-5, 10]``, ``x2 in [0, 15]``.
Branin's continuous minimum is ``0.397887`` at three points; the best value
on the 51 x 51 grid is ``0.40377``.
"""

from __future__ import annotations

import math

import numpy as np

from ..spaces import Ordinal, Space
from .base import Benchmark

__all__ = ["Branin", "branin"]


def branin(x1, x2):
    """Branin-Hoo function on its native domain (vectorised)."""
    b = 5.1 / (4 * math.pi**2)
    c = 5.0 / math.pi
    t = 1.0 / (8 * math.pi)
    return (x2 - b * x1**2 + c * x1 - 6.0) ** 2 + 10.0 * (1 - t) * np.cos(x1) + 10.0


class Branin(Benchmark):
    """Branin on a 51 x 51 grid of two ordinal (path-graph) variables.

    Parameters
    ----------
    n_grid : int, default 51
        Values per variable.

    Notes
    -----
    The path edges carry weight ``n_grid - 1`` (50), as in the COMBO reference
    code; it sets the scale of the diffusion parameter ``beta``.
    """

    name = "branin"
    default_budget = 100
    default_n_initial = 2
    optimum = 0.397887

    def __init__(self, n_grid: int = 51):
        grid = np.linspace(0.0, 1.0, n_grid).tolist()
        self.space = Space(
            {
                "x1": Ordinal(grid, edge_weight=n_grid - 1.0),
                "x2": Ordinal(grid, edge_weight=n_grid - 1.0),
            }
        )
        self._grid = np.asarray(grid)

    def evaluate_index(self, row) -> float:
        u = self._grid[np.asarray(row)]
        return float(branin(-5.0 + 15.0 * u[0], 15.0 * u[1]))

    def native_config(self, config) -> dict[str, float]:
        """The configuration on Branin's own domain: ``x1 = -5 + 15 u1``, ``x2 = 15 u2``."""
        return {"x1": -5.0 + 15.0 * float(config["x1"]), "x2": 15.0 * float(config["x2"])}

    def grid_minimum(self) -> float:
        """Best value over the whole grid (0.40377 for 51 points)."""
        u1, u2 = np.meshgrid(self._grid, self._grid, indexing="ij")
        return float(branin(-5.0 + 15.0 * u1, 15.0 * u2).min())
