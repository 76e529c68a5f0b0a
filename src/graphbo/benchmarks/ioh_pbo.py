"""IOHprofiler's pseudo-Boolean optimisation (PBO) suite through the ``ioh`` package (an optional family).

The 25 problems of Doerr, Ye, Horesh, Wang, Shir, Bäck, "Benchmarking discrete optimization
heuristics with IOHprofiler", Applied Soft Computing 88, 2020 (Sec. 3, problems F1-F25), as
implemented by ``ioh`` (de Nobel et al., "IOHexperimenter: benchmarking platform for iterative
optimization heuristics", Evolutionary Computation, 2024): OneMax, LeadingOnes and their W-model
variants, Linear, LABS, the Ising models on a ring, a torus and a triangular lattice, maximum
independent set, N-Queens, concatenated trap and NK landscapes (:data:`PBO_PROBLEMS`).

Each is registered as ``pbo-<id>`` (``pbo-18`` is ioh's LABS, ``pbo-22`` MIS, ...), with ``dimension``
binary variables ``x0 ..`` (``False``/``True`` are ioh's bits 0/1) and ioh's ``instance``. ioh
**maximises**; the benchmark's value is ioh's value **negated**, so that it is minimised, and its
``optimum`` is minus ioh's reported optimum where ioh reports a finite one (ioh's value, taken as
is), else None: LABS and NK landscapes, whose optimum ioh does not know (:class:`~graphbo.benchmarks.
labs.LABS` has the proven LABS optima), and concatenated trap when the dimension is not a multiple of
its block size 5, where ioh's reported value is beaten by the all-zero string. Instance 1 leaves the problem as defined; instances 2-50 XOR the bits with a random mask and
scale and shift the value, 51-100 permute the bits (ioh's instance transformations, Doerr et al.
Sec. 3.2). The default dimension, 64, is one of the paper's (16, 64, 100, 625) and a perfect square,
which the torus and triangular Ising models and N-Queens need.

``pip install "graphbo[ioh]"`` installs ``ioh``; without it, constructing a problem ends in that
one-line message (listing the registry needs no ``ioh``).
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np

from .._lazy import require
from .._validation import check_int
from ..spaces import Binary, Space
from .base import Benchmark

__all__ = ["PBO", "PBO_PROBLEMS", "DEFAULT_DIMENSION"]

#: ioh's PBO problem ids and names (``ioh.problem.PBO.problems``)
PBO_PROBLEMS: dict[int, str] = {
    1: "OneMax", 2: "LeadingOnes", 3: "Linear", 4: "OneMaxDummy1", 5: "OneMaxDummy2", 6: "OneMaxNeutrality",
    7: "OneMaxEpistasis", 8: "OneMaxRuggedness1", 9: "OneMaxRuggedness2", 10: "OneMaxRuggedness3",
    11: "LeadingOnesDummy1", 12: "LeadingOnesDummy2", 13: "LeadingOnesNeutrality", 14: "LeadingOnesEpistasis",
    15: "LeadingOnesRuggedness1", 16: "LeadingOnesRuggedness2", 17: "LeadingOnesRuggedness3", 18: "LABS",
    19: "IsingRing", 20: "IsingTorus", 21: "IsingTriangular", 22: "MIS", 23: "NQueens", 24: "ConcatenatedTrap",
    25: "NKLandscapes",
}
DEFAULT_DIMENSION = 64
_TRAP, _TRAP_BLOCK = 24, 5


def _ioh() -> Any:
    return require("ioh", "IOH's PBO problems", extra="ioh")


class PBO(Benchmark):
    """One of ioh's PBO problems, negated for minimisation (see the module docstring).

    Parameters
    ----------
    problem : int
        ioh's problem id, 1 .. 25 (:data:`PBO_PROBLEMS`).
    dimension : int, default 64
        Number of bits (ioh's own limits apply: a perfect square for ids 20, 21 and 23).
    instance : int, default 1
        ioh's instance (1 = untransformed).
    """

    default_budget = 200
    default_n_initial = 20

    def __init__(self, problem: int, dimension: int = DEFAULT_DIMENSION, *, instance: int = 1) -> None:
        self.problem_id = check_int("problem", problem, minimum=1, maximum=len(PBO_PROBLEMS))
        self.dimension = check_int("dimension", dimension, minimum=1)
        self.instance = check_int("instance", instance, minimum=1)
        self.name = f"pbo-{self.problem_id}"
        self.problem_name = PBO_PROBLEMS[self.problem_id]
        self._lock = threading.Lock()
        self._problem: Any = None
        problem_ = self._ioh_problem()  # raises the missing-extra line, or ioh's error for a bad dimension
        self.space = Space({f"x{i}": Binary() for i in range(self.dimension)})
        best = float(problem_.optimum.y)
        trap_off_grid = self.problem_id == _TRAP and self.dimension % _TRAP_BLOCK != 0
        self.optimum = -best if math.isfinite(best) and not trap_off_grid else None

    def _ioh_problem(self) -> Any:
        if self._problem is None:
            ioh = _ioh()
            try:
                self._problem = ioh.get_problem(self.problem_id, instance=self.instance, dimension=self.dimension,
                                                problem_class=ioh.ProblemClass.PBO)
            except (RuntimeError, ValueError) as exc:  # ioh's message, e.g. "the dimension needs to be a perfect square"
                raise ValueError(f"{self.name} ({self.problem_name}): dimension={self.dimension}, "
                                 f"instance={self.instance}: {exc}") from None
        return self._problem

    def __getstate__(self) -> dict[str, Any]:  # the ioh object and the lock do not pickle; rebuilt on use
        state = dict(self.__dict__)
        state["_problem"] = None
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def evaluate_index(self, row: Any) -> float:
        x = np.asarray(row, dtype=np.int64).reshape(-1)
        if x.shape[0] != self.dimension or np.any((x != 0) & (x != 1)):
            raise ValueError(f"{self.name}: row must hold {self.dimension} values in {{0, 1}}, got {x.tolist()!r}")
        with self._lock:  # ioh's problem object keeps state (evaluation counts)
            return 0.0 - float(self._ioh_problem()(x.tolist()))  # 0.0 - v: no -0.0


def _problem_class(pid: int) -> type[PBO]:
    """``PBO`` with the problem id fixed, for the registry (``load_benchmark("pbo-18")``)."""

    def __init__(self: PBO, dimension: int = DEFAULT_DIMENSION, instance: int = 1) -> None:
        PBO.__init__(self, pid, dimension=dimension, instance=instance)

    doc = f"ioh's PBO F{pid}, {PBO_PROBLEMS[pid]}, negated for minimisation (see :class:`PBO`)."
    return type(f"PBO{pid}", (PBO,), {"__init__": __init__, "__doc__": doc, "__module__": __name__})


for _pid in PBO_PROBLEMS:
    globals()[f"PBO{_pid}"] = _problem_class(_pid)
del _pid
