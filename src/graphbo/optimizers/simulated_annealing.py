"""Simulated annealing on the combinatorial graph: the SA baseline of COMBO.

COMBO (Oh et al., NeurIPS 2019, Sec. 4 and supplement Sec. 4) compares
against simulated annealing [Spears, 1993] as run in the BOCS experiments
(Baptista & Poloczek, ICML 2018): a single sequential chain whose every step
evaluates the objective once. Here a step proposes a uniformly random
neighbour of the current state on the product graph (one variable moved
along one edge of its sub-graph; for binary variables, one bit flip as in
BOCS) and accepts it with the Metropolis rule under a geometric cooling
schedule.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from .._validation import check_float
from ..exceptions import SpaceExhaustedError
from ..spaces.space import Space
from .base import Configs, Optimizer

__all__ = ["SimulatedAnnealing"]


class SimulatedAnnealing(Optimizer):
    """Sequential simulated annealing over graph neighbours (the COMBO/BOCS SA baseline).

    The current state is the last accepted evaluation. Each :meth:`ask`
    after the initial design proposes a uniformly chosen graph neighbour of
    the current state that has not been evaluated or asked yet; each
    :meth:`tell` of such a proposal first cools the temperature,
    ``T <- cooling * T``, then accepts the proposal as the new state if its
    value is not worse than the current one, or otherwise with probability
    ``exp(-(value - current) / T)`` (Metropolis rule).

    The default constants are those of the SA baseline in the BOCS code
    (``algorithms/simulated_annealing.m`` of github.com/baptistar/BOCS, the
    binary-problem SA results that the COMBO paper reports): initial
    temperature ``1.0`` and cooling factor ``0.8`` applied once per step,
    before the acceptance test. Note that this schedule is fast: after about
    30 steps the chain is practically a randomised descent.

    The initial design (shared with the other optimizers) is not part of the
    chain: the chain starts at its best point (ties: the first told), and
    any evaluation told that was not proposed by the chain (the initial
    design, or configurations asked elsewhere) replaces the current state
    only if it is strictly better. When every neighbour of the current state
    has been evaluated or is pending, a uniformly random new configuration
    is proposed instead (and is then accepted or rejected like any proposal).

    Parameters
    ----------
    space : Space
    seed : int or None
        Seed of every random choice (proposals and acceptance tests).
    n_initial : int, default 10
        Uniformly random configurations asked before the chain starts.
    initial_configs : list of dict, optional
        Configurations to ask first (they count towards ``n_initial``).
    initial_temperature : float, default 1.0
        ``T`` before the first step (BOCS SA baseline).
    cooling : float, default 0.8
        Geometric cooling factor per step, ``0 < cooling <= 1`` (BOCS SA baseline).

    Attributes
    ----------
    temperature : float
        The temperature used by the last acceptance test (the initial
        temperature before the first step).
    """

    name = "sa"

    def __init__(self, space: Space, *, seed: int | None = None, n_initial: int = 10,
                 initial_configs: Configs | None = None, initial_temperature: float = 1.0, cooling: float = 0.8):
        self.initial_temperature = check_float("initial_temperature", initial_temperature, minimum=0,
                                               strict_minimum=True)
        self.cooling = check_float("cooling", cooling, minimum=0, strict_minimum=True, maximum=1)
        super().__init__(space, seed=seed, n_initial=n_initial, initial_configs=initial_configs)
        self.temperature = self.initial_temperature
        self._current_row: np.ndarray | None = None
        self._current_value: float | None = None
        self._proposed: set[bytes] = set()

    @property
    def current(self) -> tuple[dict[str, Any], float] | None:
        """The chain's current state as ``(config, value)``, or ``None`` before the first tell."""
        if self._current_row is None:
            return None
        assert self._current_value is not None  # set with the row
        return self.space.from_index(self._current_row), float(self._current_value)

    def _suggest(self) -> np.ndarray:
        exclude = self._exclude
        if len(exclude) >= self.space.size:
            raise SpaceExhaustedError(f"all {self.space.size} configurations have been evaluated")
        if self._current_row is not None:
            nbrs = self.space.neighbor_index(self._current_row)
            fresh = [r for r in nbrs if r.tobytes() not in exclude]
            row = fresh[int(self.rng.integers(len(fresh)))] if fresh else None
        else:
            row = None
        if row is None:
            row = self._distinct_random_rows(1, exclude)[0]
        row = np.asarray(row, dtype=np.int64)
        self._proposed.add(row.tobytes())
        return row

    def _observe(self, row: np.ndarray, value: float) -> None:
        key = row.tobytes()
        if self._current_row is None:
            self._proposed.discard(key)
            self._current_row, self._current_value = row.copy(), value
            return
        current_value = self._current_value
        assert current_value is not None  # set with the row
        if self._outcome_mode:  # the current state's value under the latest scalarisation or feasibility ranks
            at = self._told_position.get(self._current_row.tobytes())
            current_value = self._y[at] if at is not None else current_value
        if key in self._proposed:
            self._proposed.discard(key)
            self.temperature *= self.cooling
            delta = value - current_value
            if delta <= 0:
                accept = True
            else:
                # a draw is made for every uphill proposal, so the random stream does not depend on T
                u = self.rng.random()
                accept = self.temperature > 0 and u < math.exp(-delta / self.temperature)
        else:
            accept = value < current_value
        if accept:
            self._current_row, self._current_value = row.copy(), value

    def _method_state(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "current_row": None if self._current_row is None else self._current_row.tolist(),
            "current_value": self._current_value,
        }

    def _load_method_state(self, state: Mapping[str, Any]) -> None:
        if not state:
            return
        self.temperature = float(state["temperature"])
        row = state.get("current_row")
        self._current_row = None if row is None else np.asarray(row, dtype=np.int64)
        self._current_value = state.get("current_value")
        self._proposed.clear()
