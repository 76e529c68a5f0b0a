"""Low-autocorrelation binary sequences (LABS), the binary benchmark of CASMOPOLITAN, MCBO and Bounce.

A sequence ``s = (s_1, ..., s_n)`` with ``s_i in {-1, +1}`` has the aperiodic autocorrelations and
the energy (Packebusch and Mertens, "Low autocorrelation binary sequences", J. Phys. A 49, 2016,
Eqs. (1)-(3))

.. math::

    C_k(s) = \\sum_{i=1}^{n-k} s_i s_{i+k},  \\qquad  E(s) = \\sum_{k=1}^{n-1} C_k(s)^2,
    \\qquad  F(s) = \\frac{n^2}{2 E(s)} ,

``F`` the merit factor. The benchmark **minimises** ``-F(s)``, as the LABS of Bounce (Papenmeier,
Nardi, Poloczek, NeurIPS 2023) and MCBO (Dreczkowski, Grosnit, Bou-Ammar, NeurIPS 2023) do.
Convention: binary variable ``x_i`` (``False``/``True``) stands for ``s_i = -1``/``+1``; since
``E`` is invariant under negating every ``s_i`` and under reversing the sequence, so is the value.
For ``n >= 2``, ``C_{n-1} = s_1 s_n = +-1``, so ``E >= 1`` and the value is finite.

The known optima: :data:`OPTIMAL_ENERGY` lists the proven minimal energies for ``n = 3 .. 66``
(Packebusch and Mertens 2016, Table 1, found by exhaustive branch and bound; OEIS A102780).
For ``n = 50`` it is ``E = 153``, i.e. the best value is ``-2500 / 306 = -8.1699``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_int
from ..spaces import Binary, Space
from .base import Benchmark

__all__ = ["LABS", "OPTIMAL_ENERGY", "autocorrelations", "energy", "merit_factor"]

#: proven minimal energies ``E*(n)`` for ``n = 3 .. 66`` (Packebusch and Mertens 2016, Table 1; OEIS A102780)
OPTIMAL_ENERGY: dict[int, int] = dict(zip(range(3, 67), (
    1, 2, 2, 7, 3, 8, 12, 13, 5, 10, 6, 19, 15, 24, 32, 25, 29, 26, 26, 39, 47, 36, 36, 45, 37, 50, 62, 59,
    67, 64, 64, 65, 73, 82, 86, 87, 99, 108, 108, 101, 109, 122, 118, 131, 135, 140, 136, 153, 153, 166,
    170, 175, 171, 192, 188, 197, 205, 218, 226, 235, 207, 208, 240, 257,
)))


def _spins(bits: Any) -> np.ndarray:
    """``{0, 1}`` (or booleans) over the last axis -> ``{-1, +1}`` as integers."""
    return 2 * np.asarray(bits, dtype=np.int64) - 1


def autocorrelations(bits: Any) -> np.ndarray:
    """``C_1 .. C_{n-1}`` (Packebusch and Mertens Eq. (1)) of the spins ``2 x - 1``, over the last axis."""
    s = _spins(bits)
    n = s.shape[-1]
    return np.stack([np.sum(s[..., : n - k] * s[..., k:], axis=-1) for k in range(1, n)], axis=-1)


def energy(bits: Any) -> np.ndarray:
    """``E = sum_k C_k^2`` (Eq. (2)) over the last axis (integers)."""
    c = autocorrelations(bits)
    return np.sum(c * c, axis=-1)


def merit_factor(bits: Any) -> np.ndarray:
    """``F = n^2 / (2 E)`` (Eq. (3)) over the last axis."""
    bits = np.asarray(bits)
    n = bits.shape[-1]
    return n * n / (2.0 * energy(bits))


class LABS(Benchmark):
    """LABS with ``n`` binary variables: minimise ``-F(s) = -n^2 / (2 E(s))`` (see the module docstring).

    Parameters
    ----------
    n : int, default 50
        Sequence length (>= 3); 50 as in CASMOPOLITAN's successors (MCBO, Bounce).

    Attributes
    ----------
    optimum : float or None
        ``-n^2 / (2 E*(n))`` for ``n <= 66`` (:data:`OPTIMAL_ENERGY`), else ``None``.
    """

    name = "labs"
    default_budget = 200
    default_n_initial = 20

    def __init__(self, n: int = 50) -> None:
        self.n = check_int("n", n, minimum=3)
        self.space = Space({f"x{i}": Binary() for i in range(self.n)})
        best = OPTIMAL_ENERGY.get(self.n)
        self.optimum = None if best is None else -self.n ** 2 / (2.0 * best)

    def evaluate_index(self, row: Any) -> float:
        x = np.asarray(row, dtype=np.int64).reshape(-1)
        if x.shape[0] != self.n or np.any((x != 0) & (x != 1)):
            raise ValueError(f"LABS: row must hold {self.n} values in {{0, 1}}, got {x.tolist()!r}")
        return -float(merit_factor(x))

    def evaluate_batch(self, rows: Any) -> np.ndarray:
        """``-F`` of many rows of 0/1 at once, shape ``(m,)``."""
        return -merit_factor(np.atleast_2d(np.asarray(rows, dtype=np.int64)))
