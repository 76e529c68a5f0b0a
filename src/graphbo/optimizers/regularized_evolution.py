"""Regularized (aging) evolution: the RE baseline of COMBO's NAS experiment.

Real, Aggarwal, Huang & Le, "Regularized evolution for image classifier
architecture search" (AAAI 2019), Algorithm 1, with the settings of the
COMBO supplement Sec. 4.4.4: population size ``P = 50``, sample size
``S = 15``, a mutation that changes one uniformly chosen variable (a bit
flip in the binary NAS space; no identity mutation) and, optionally, only
valid children.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Mapping

import numpy as np

from ..acquisition.graph_local_search import SpaceExhaustedError
from ..spaces.space import Space
from .base import Optimizer

__all__ = ["RegularizedEvolution"]


class RegularizedEvolution(Optimizer):
    """Aging evolution with tournament selection (Real et al., 2019; COMBO supp. 4.4.4).

    The population is a queue of told evaluations in the order they were
    told, the initial design first. Once it exceeds ``population_size`` the
    oldest member is removed (aging), whatever its value. Each suggestion
    after the initial design draws ``sample_size`` distinct members uniformly
    at random (all of them while the population is smaller), takes the best
    (lowest value) as parent and returns a child that differs from the
    parent in exactly one variable: the variable is chosen uniformly among
    those with more than one value, and its new value uniformly among the
    other values. Children that were already evaluated or asked, or that
    fail ``is_valid``, are discarded and the parent is mutated again (the
    draw is made from the mutation distribution restricted to the children
    still allowed, which is the same as re-mutating until one is accepted).
    If no child of the parent is allowed, the other sampled members are
    tried best first, then the rest of the population, then a uniformly
    random new (valid) configuration.

    Parameters
    ----------
    space : Space
    seed : int or None
        Seed of every random choice.
    n_initial : int, default 10
        Uniformly random configurations asked before the evolution starts
        (the same initial design as every graphbo optimizer; it is not
        filtered by ``is_valid``).
    initial_configs : list of dict, optional
        Configurations to ask first (they count towards ``n_initial``).
    population_size : int, default 50
        ``P`` (COMBO supplement Sec. 4.4.4; Real et al. used 100).
    sample_size : int, default 15
        ``S``, the tournament size (COMBO supplement Sec. 4.4.4; Real et al. used 25).
    is_valid : callable, optional
        ``is_valid(config) -> bool``. Children for which it is false are
        never suggested (COMBO supplement Sec. 4.4.4: only valid
        architectures in mutation steps).
    """

    name = "re"

    def __init__(
        self,
        space: Space,
        seed: int | None = None,
        n_initial: int = 10,
        initial_configs: list[Mapping[str, Any]] | None = None,
        population_size: int = 50,
        sample_size: int = 15,
        is_valid: Callable[[dict[str, Any]], bool] | None = None,
    ):
        super().__init__(space, seed=seed, n_initial=n_initial, initial_configs=initial_configs)
        if int(population_size) != population_size or population_size < 1:
            raise ValueError(f"population_size must be a positive integer, got {population_size!r}")
        if int(sample_size) != sample_size or not 1 <= sample_size <= population_size:
            raise ValueError(
                f"sample_size must be an integer in [1, population_size={population_size}], got {sample_size!r}"
            )
        if is_valid is not None and not callable(is_valid):
            raise TypeError(f"is_valid must be callable (config -> bool), got {is_valid!r}")
        self.population_size = int(population_size)
        self.sample_size = int(sample_size)
        self.is_valid = is_valid
        self._population: deque[tuple[np.ndarray, float]] = deque()
        self._mutable = np.flatnonzero(space.n_values > 1)

    @property
    def population(self) -> list[tuple[dict[str, Any], float]]:
        """The current population as ``(config, value)`` pairs, oldest first."""
        return [(self.space.from_index(r), v) for r, v in self._population]

    def _observe(self, row: np.ndarray, value: float) -> None:
        self._population.append((row.copy(), value))
        while len(self._population) > self.population_size:
            self._population.popleft()

    def _valid(self, row: np.ndarray) -> bool:
        return self.is_valid is None or bool(self.is_valid(self.space.from_index(row)))

    def _suggest(self) -> np.ndarray:
        exclude = self._exclude
        if len(exclude) >= self.space.size:
            raise SpaceExhaustedError(f"all {self.space.size} configurations have been evaluated")
        pop = list(self._population)
        if pop:
            k = min(self.sample_size, len(pop))
            sample = self.rng.choice(len(pop), size=k, replace=False)
            values = np.array([pop[i][1] for i in sample])
            order = [int(sample[i]) for i in np.argsort(values, kind="stable")]
            in_sample = set(order)
            rest = [int(i) for i in np.argsort([v for _, v in pop], kind="stable") if int(i) not in in_sample]
            for i in order + rest:
                child = self._mutate(pop[i][0], exclude)
                if child is not None:
                    return child
        return self._random_new_row(exclude)

    def _mutate(self, parent: np.ndarray, exclude: set[bytes]) -> np.ndarray | None:
        """A child one variable away from ``parent``, new and valid, or ``None`` if there is none."""
        if self._mutable.size == 0:
            return None
        rows, probs = [], []
        p_var = 1.0 / self._mutable.size
        for j in self._mutable:
            k = int(self.space.n_values[j])
            for v in range(k):
                if v != parent[j]:
                    child = parent.copy()
                    child[j] = v
                    if child.tobytes() not in exclude:
                        rows.append(child)
                        probs.append(p_var / (k - 1))
        probs = np.asarray(probs, dtype=float)
        while rows:
            i = int(self.rng.choice(len(rows), p=probs / probs.sum()))
            if self._valid(rows[i]):
                return rows[i]
            del rows[i]
            probs = np.delete(probs, i)
        return None

    def _random_new_row(self, exclude: set[bytes], max_tries: int = 10000) -> np.ndarray:
        taken = set(exclude)
        for _ in range(max_tries):
            if len(taken) >= self.space.size:
                break
            row = self._distinct_random_rows(1, taken)[0]
            if self._valid(row):
                return row
            taken.add(row.tobytes())
        raise SpaceExhaustedError("no valid configuration that has not been evaluated could be found")
