"""COCO's ``bbob-mixint`` suite: the 24 BBOB functions with most variables made integer (an optional family).

Tušar, Brockhoff, Hansen, "Mixed-integer benchmark problems for single- and bi-objective optimization",
GECCO 2019, through the ``coco-experiment`` package (``cocoex``). In dimension ``d`` the first ``4/5 d``
variables are integers, a fifth each with 2, 4, 8 and 16 values (``0 .. k - 1``), and the last ``d / 5`` are
continuous in ``[-5, 5]``. Here each integer variable is an :class:`~graphbo.Ordinal` over its values and
each continuous one a :class:`~graphbo.Continuous`; the value is COCO's ``f(x)`` as COCO reports it, its
instance's offset included (minimised; the optimum on the integer lattice is not known, ``optimum`` is None).

``pip install "graphbo[coco]"`` installs ``coco-experiment``; without it, constructing a problem ends in that
one-line message.
"""

from __future__ import annotations

import threading
from typing import Any, Mapping

import numpy as np

from .._lazy import require
from .._validation import check_int
from ..spaces import Continuous, Ordinal, Space
from .base import Benchmark

__all__ = ["MixInt"]


class MixInt(Benchmark):
    """``bbob-mixint`` function ``function`` (1-24) in ``dimension`` (5, 10, 20, 40, 80 or 160), ``instance``
    (COCO's instance number, 1-15)."""

    name = "bbob-mixint"
    default_budget = 100
    default_n_initial = 10

    def __init__(self, function: int = 1, dimension: int = 10, *, instance: int = 1) -> None:
        self.function = check_int("function", function, minimum=1)
        if self.function > 24:
            raise ValueError(f"function must be in 1..24, got {function}")
        self.dimension = check_int("dimension", dimension, minimum=5)
        if self.dimension not in (5, 10, 20, 40, 80, 160):
            raise ValueError(f"dimension must be one of 5, 10, 20, 40, 80, 160, got {dimension}")
        self.instance = check_int("instance", instance, minimum=1)
        self._lock = threading.Lock()
        problem = self._problem()
        lower, upper = np.asarray(problem.lower_bounds), np.asarray(problem.upper_bounds)
        n_int = int(problem.number_of_integer_variables)
        variables: list[tuple[str, Any]] = []
        for i in range(self.dimension):
            if i < n_int:
                variables.append((f"z{i}", Ordinal(list(range(int(lower[i]), int(upper[i]) + 1)))))
            else:
                variables.append((f"x{i}", Continuous(float(lower[i]), float(upper[i]))))
        self.space = Space(variables)
        self._names = [name for name, _ in variables]

    def _problem(self) -> Any:
        cocoex = require("cocoex", "the bbob-mixint benchmarks", "coco")
        suite = cocoex.Suite("bbob-mixint", "", f"dimensions:{self.dimension} function_indices:{self.function} "
                             f"instance_indices:{self.instance}")
        problem = next(iter(suite))
        self._suite = suite  # the problem lives as long as its suite
        return problem

    def __getstate__(self) -> dict[str, Any]:  # COCO's objects and the lock do not pickle; rebuilt on use
        return {k: v for k, v in self.__dict__.items() if k not in ("_lock", "_suite", "_coco")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __call__(self, config: Mapping[str, Any]) -> float:
        self.space.validate(config)
        x = np.array([float(config[n]) for n in self._names])
        with self._lock:
            if getattr(self, "_coco", None) is None:
                self._coco = self._problem()
            return float(self._coco(x))
