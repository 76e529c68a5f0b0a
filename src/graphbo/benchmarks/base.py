"""What every benchmark provides: a space, a callable objective, run defaults."""

from __future__ import annotations

from typing import Any, Mapping

from ..spaces.space import Space

__all__ = ["Benchmark"]


class Benchmark:
    """A minimisation problem: ``benchmark(config) -> float`` over ``benchmark.space``.

    Attributes
    ----------
    name : str
    space : Space
    default_budget : int
        The paper's evaluation budget.
    default_n_initial : int
        The paper's number of initial random evaluations.
    optimum : float or None
        The best value, where known.
    """

    name = "benchmark"
    default_budget = 100
    default_n_initial = 10
    optimum: float | None = None
    space: Space

    def __call__(self, config: Mapping[str, Any]) -> float:
        return float(self.evaluate_index(self.space.to_index(config)))

    def evaluate_index(self, row) -> float:
        """The objective at an index row."""
        raise NotImplementedError
