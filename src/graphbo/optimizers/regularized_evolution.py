"""Regularized (aging) evolution: the RE baseline of COMBO's NAS experiment.

Real, Aggarwal, Huang & Le, "Regularized evolution for image classifier
architecture search" (AAAI 2019), Algorithm 1, with the settings of the
COMBO supplement Sec. 4.4.4: population size ``P = 50``, sample size
``S = 15``, a mutation that changes one uniformly chosen variable (a bit
flip in the binary NAS space; no identity mutation) and, optionally, only
valid children.

On mixed spaces (BO-FM, Oh et al. UAI 2021, supplement D.2) a continuous
variable is mutated by adding Gaussian noise to its unit coordinate; the
BO-FM reference code uses a standard deviation of ``0.01`` of the
variable's (transformed) range, i.e. ``0.01`` in graphbo's unit
coordinates, and clips the result to the range.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable

import numpy as np

from .._validation import check_callable, check_choice, check_float, check_int
from ..exceptions import SpaceExhaustedError
from ..spaces.space import Space
from ..spaces.variables import Continuous, IntegerRange
from .base import Configs, Optimizer

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

    On a space with continuous variables (BO-FM supplement D.2) the mutation
    depends on ``mutation``:

    * ``"one"`` (default): one variable is chosen uniformly among all the
      mutable ones, discrete (as above) and continuous; a continuous one gets
      ``u' = clip(u + N(0, mutation_std^2), 0, 1)`` in its unit coordinate
      (then snapped, so an integer variable lands on an integer; if the
      noise leaves the integer unchanged it moves one step in the noise's
      direction). Exactly one variable changes.
    * ``"pair"``: the rule that BO-FM's supplement D.2 describes and its
      reference code implements for its NAS + SGD experiment: in every
      mutation one uniformly chosen continuous variable gets the Gaussian
      step *and* one uniformly chosen discrete variable a new value.

    On a purely discrete space both are the discrete rule above, with the
    same random draws as before continuous support existed.

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
    mutation : {"one", "pair"}, default "one"
        Mutation rule on mixed spaces (see above).
    mutation_std : float, default 0.01
        Standard deviation of the Gaussian step on a continuous variable's unit
        coordinate (the BO-FM reference code's ``0.01`` of the range).
    """

    name = "re"

    def __init__(self, space: Space, *, seed: int | None = None, n_initial: int = 10,
                 initial_configs: Configs | None = None, population_size: int = 50, sample_size: int = 15,
                 is_valid: Callable[[dict[str, Any]], bool] | None = None, mutation: str = "one",
                 mutation_std: float = 0.01):
        self.population_size = check_int("population_size", population_size, minimum=1)
        self.sample_size = check_int("sample_size", sample_size, minimum=1)
        if self.sample_size > self.population_size:
            raise ValueError(f"sample_size must be <= population_size ({self.population_size}), got {sample_size!r}")
        self.is_valid = check_callable("is_valid", is_valid, optional=True)
        self.mutation = check_choice("mutation", mutation, ("one", "pair"))
        self.mutation_std = check_float("mutation_std", mutation_std, minimum=0, strict_minimum=True)
        super().__init__(space, seed=seed, n_initial=n_initial, initial_configs=initial_configs)
        # (row, position in the told data): a value is read from ``self._y`` when it is used, so that with several
        # objectives or constraints (whose single modelled value changes with every tell) it is the current one
        self._population: deque[tuple[np.ndarray, int]] = deque()
        self._mutable = np.flatnonzero(space.n_values > 1)

    @property
    def population(self) -> list[tuple[dict[str, Any], float]]:
        """The current population as ``(config, value)`` pairs, oldest first."""
        return [(self.space.from_index(r), self._y[i]) for r, i in self._population]

    def _observe(self, row: np.ndarray, value: float) -> None:
        self._population.append((row.copy(), self.n_told))  # the position ``tell`` gives it next
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
            values = np.array([self._y[pop[i][1]] for i in sample])
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
        if not self.space.is_discrete:
            if self.mutation == "pair":
                return self._mutate_pair(parent, exclude)
            return self._mutate_mixed(parent, exclude)
        if self._mutable.size == 0:
            return None
        rows: list[np.ndarray] = []
        weights: list[float] = []
        p_var = 1.0 / self._mutable.size
        for j in self._mutable:
            k = int(self.space.n_values[j])
            for v in range(k):
                if v != parent[j]:
                    child = parent.copy()
                    child[j] = v
                    if child.tobytes() not in exclude:
                        rows.append(child)
                        weights.append(p_var / (k - 1))
        probs = np.asarray(weights, dtype=float)
        while rows:
            i = int(self.rng.choice(len(rows), p=probs / probs.sum()))
            if self._valid(rows[i]):
                return rows[i]
            del rows[i]
            probs = np.delete(probs, i)
        return None

    # -- mixed spaces (BO-FM supplement D.2) -------------------------------------------
    def _gaussian_step(self, parent: np.ndarray, j: int) -> float:
        """New unit coordinate of continuous variable ``j``: Gaussian step, clipped, snapped."""
        var = self.space.variables[j]
        assert isinstance(var, Continuous)  # j is one of the space's continuous_indices
        u = float(parent[j])
        noise = float(self.rng.normal(0.0, self.mutation_std))
        new = float(var.snap(np.array([min(max(u + noise, 0.0), 1.0)]))[0])
        if new == u and isinstance(var, IntegerRange) and noise != 0.0:
            # the step stayed within the same integer: move to the adjacent one in the noise's direction
            x = var.from_unit(u)
            step = 1 if noise > 0 else -1
            y = x + step if var.low <= x + step <= var.high else x - step
            if var.low <= y <= var.high:
                new = var.to_unit(y)
        return new

    def _mutate_mixed(self, parent: np.ndarray, exclude: set[bytes], max_tries: int = 20) -> np.ndarray | None:
        """``mutation="one"``: one uniformly chosen variable changes (Gaussian step if continuous).

        A variable none of whose children is new and valid (after ``max_tries``
        Gaussian draws for a continuous one) drops out and the choice is redrawn.
        """
        candidates = [int(j) for j in self._mutable] + [int(j) for j in self.space.continuous_indices]
        while candidates:
            j = candidates[int(self.rng.integers(len(candidates)))]
            if isinstance(self.space.variables[j], Continuous):
                for _ in range(max_tries):
                    child = parent.copy()
                    child[j] = self._gaussian_step(parent, j)
                    if child[j] != parent[j] and child.tobytes() not in exclude and self._valid(child):
                        return child
            else:
                values = [v for v in range(int(self.space.n_values[j])) if v != parent[j]]
                while values:
                    i = int(self.rng.integers(len(values)))
                    child = parent.copy()
                    child[j] = values.pop(i)
                    if child.tobytes() not in exclude and self._valid(child):
                        return child
            candidates.remove(j)
        return None

    def _mutate_pair(self, parent: np.ndarray, exclude: set[bytes], max_tries: int = 100) -> np.ndarray | None:
        """``mutation="pair"``: one continuous variable (Gaussian step) and one discrete variable change."""
        cont = self.space.continuous_indices
        disc = self._mutable
        for _ in range(max_tries):
            child = parent.copy()
            if cont.size:
                j = int(cont[int(self.rng.integers(cont.size))])
                child[j] = self._gaussian_step(parent, j)
            if disc.size:
                j = int(disc[int(self.rng.integers(disc.size))])
                k = int(self.space.n_values[j])
                v = int(self.rng.integers(k - 1))
                child[j] = v if v < parent[j] else v + 1
            if not np.array_equal(child, parent) and child.tobytes() not in exclude and self._valid(child):
                return child
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
