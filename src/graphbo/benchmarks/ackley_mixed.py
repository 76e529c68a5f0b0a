"""The 53-dimensional mixed Ackley: 50 binary and 3 continuous variables.

Introduced as a mixed benchmark by MVRSM (Bliek, Verwer, de Weerdt, "Black-box mixed-variable
optimisation using a surrogate model that satisfies integer constraints", GECCO 2021) and used by
CASMOPOLITAN (Wan et al., ICML 2021, "Ackley-53"), MCBO (Dreczkowski et al., NeurIPS 2023) and
Bounce (Papenmeier et al., NeurIPS 2023). Facts from the reference code (``xingchenwan/Casmopolitan``,
package ``mixed_test_func``, class ``Ackley53``; ``LeoIV/bounce``, ``bounce/benchmarks.py``, class ``Ackley53``):

* the binary variables take the values ``0`` and ``1`` themselves (not ``+-1``, not a shifted grid);
* the continuous variables range over ``[-1, 1]`` (Bounce optimises ``[0, 1]`` and maps it there);
* the value is Ackley's function of the 53-vector ``z = (b_1, ..., b_50, x_1, x_2, x_3)``,

.. math::

    f(z) = -a \\exp\\Big(-b \\sqrt{\\tfrac{1}{53} \\sum_i z_i^2}\\Big)
           - \\exp\\Big(\\tfrac{1}{53} \\sum_i \\cos(c z_i)\\Big) + a + e ,
    \\qquad a = 20,\\ b = 0.2,\\ c = 2\\pi .

Its minimum is ``0`` at ``z = 0`` (every bit ``0``, every ``x_j = 0``). Unlike the reference code,
no ``1e-6 U(0, 1)`` noise is added (the objective here is deterministic). Each binary variable is a
:class:`~graphbo.Binary` (``False`` is ``0``, ``True`` is ``1``).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..spaces import Binary, Continuous, Space
from .base import Benchmark
from .mixed_synthetic import ackley

__all__ = ["Ackley53"]


class Ackley53(Benchmark):
    """Ackley over 50 binary variables ``b0 .. b49`` (values 0/1) and 3 continuous ``x0 .. x2`` in ``[-1, 1]``.

    See the module docstring for the definition and its sources. ``optimum = 0`` at
    :attr:`optimal_config`.
    """

    name = "ackley53"
    default_budget = 200
    default_n_initial = 20
    optimum = 0.0
    n_binary = 50
    n_continuous = 3

    def __init__(self) -> None:
        bits = [f"b{i}" for i in range(self.n_binary)]
        cont = [f"x{j}" for j in range(self.n_continuous)]
        self.space = Space([(n, Binary()) for n in bits] + [(n, Continuous(-1.0, 1.0)) for n in cont])
        self._bit_names = tuple(bits)
        self._cont_names = tuple(cont)
        #: a configuration attaining :attr:`optimum`
        self.optimal_config: dict[str, Any] = {**{n: False for n in bits}, **{n: 0.0 for n in cont}}

    def __call__(self, config: Mapping[str, Any]) -> float:
        self.space.validate(config)
        z = [float(bool(config[n])) for n in self._bit_names] + [float(config[n]) for n in self._cont_names]
        return float(ackley(np.array(z)))

    def evaluate_batch(self, rows: Any) -> np.ndarray:
        """Values at many rows of :attr:`space` (0/1 for the bits, unit coordinates for ``x``), shape ``(m,)``."""
        rows = np.atleast_2d(np.asarray(rows, dtype=float))
        if rows.shape[1] != self.n_binary + self.n_continuous:
            raise ValueError(f"ackley53: rows must have {self.n_binary + self.n_continuous} columns, "
                             f"got {rows.shape[1]}")
        bits = np.rint(rows[:, : self.n_binary])
        if np.any((bits != 0) & (bits != 1)):
            raise ValueError("ackley53: the binary columns must hold 0 or 1")
        x = -1.0 + 2.0 * np.clip(rows[:, self.n_binary:], 0.0, 1.0)
        return np.asarray(ackley(np.concatenate([bits, x], axis=1)))

    def evaluate_index(self, row: Any) -> float:
        return float(self.evaluate_batch(np.asarray(row, dtype=float).reshape(1, -1))[0])
