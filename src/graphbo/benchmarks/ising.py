"""Ising sparsification (COMBO supplement Sec. 4.1.1).

A zero-field Ising model ``p(z) = exp(z^T J^p z) / Z_p`` on a 4 x 4 grid of
spins ``z in {-1, 1}^16`` is approximated by ``q(z)`` with interactions
``J^q_ij = x_ij J^p_ij``, one binary decision ``x_ij`` per grid edge (24 edges).
The objective is ``D_KL(p || q) + lambda * ||x||_1`` (supplement Eq. (12)),
computed exactly by enumerating the spin states.
"""

from __future__ import annotations

import math

import numpy as np

from ..spaces import Binary, Space
from .base import Benchmark

__all__ = ["Ising", "grid_edges", "spin_states"]

INTERACTION_RANGE = (0.05, 5.0)  # magnitude of J^p_ij (supplement Sec. 4.1.1)


def grid_edges(height: int, width: int) -> list[tuple[int, int]]:
    """Edges ``(i, j)``, ``i < j``, of a ``height x width`` grid with row-major spin numbers.

    Ordered by ``i``, then ``j`` (right neighbour before lower neighbour): the
    BOCS / COMBO ordering of the decision variables.
    """
    edges = []
    for i in range(height * width):
        r, c = divmod(i, width)
        if c + 1 < width:
            edges.append((i, i + 1))
        if r + 1 < height:
            edges.append((i, i + width))
    return edges


def spin_states(n: int) -> np.ndarray:
    """All ``2^n`` spin states in ``{-1, +1}^n``, shape ``(2^n, n)``."""
    bits = (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1
    return (1 - 2 * bits).astype(np.int8)


def _logsumexp(a: np.ndarray) -> float:
    m = float(np.max(a))
    return m + math.log(float(np.sum(np.exp(a - m))))


class Ising(Benchmark):
    """Ising sparsification on a 4 x 4 grid: 24 binary edge variables (COMBO supplement Sec. 4.1.1).

    With edge energies ``E(z) = z^T J z = 2 sum_{(i,j) in edges} J_ij z_i z_j``,

    .. math::

        D_{KL}(p \\| q) = 2 \\sum_{(i,j)} (J^p_{ij} - J^q_{ij}) \\, E_p[z_i z_j]
                          + \\log Z_q - \\log Z_p ,

    exact, with the moments ``E_p[z_i z_j]`` and ``log Z_p`` computed once and
    ``log Z_q`` by enumerating the spin states at each evaluation. Since
    ``E(z) = E(-z)`` without a field, only the ``2^15`` states with the last
    spin up are enumerated (a ``32768 x 24`` matrix-vector product).

    Parameters
    ----------
    lamda : float, default 0.0
        Sparsity coefficient ``lambda >= 0`` of ``lambda * ||x||_1``; the paper
        uses 0, 1e-4 and 1e-2.
    seed : int, default 0
        Seed of the random interactions.

    Notes
    -----
    The interactions are drawn once, at construction, from
    ``numpy.random.default_rng(seed)``: as in the COMBO reference code, each
    edge gets a magnitude from ``U[0.05, 5]`` (the paper's range) and a random
    sign ``+1`` or ``-1`` with equal probability. The objective is then
    deterministic. Variable ``edge_i_j`` keeps (``True``) or drops the edge
    between spins ``i`` and ``j`` (row-major numbering); the variables are
    in the BOCS order of :func:`grid_edges`. Keeping every edge gives
    ``D_KL = 0``.
    """

    name = "ising"
    default_budget = 170
    default_n_initial = 20
    grid_shape = (4, 4)

    def __init__(self, lamda: float = 0.0, seed: int = 0):
        lamda = float(lamda)
        if not (math.isfinite(lamda) and lamda >= 0):
            raise ValueError(f"Ising: lamda must be a finite number >= 0, got {lamda!r}")
        self.lamda = lamda
        self.seed = seed
        h, w = self.grid_shape
        self.edges = grid_edges(h, w)
        n_edges = len(self.edges)
        rng = np.random.default_rng(seed)
        signs = 2.0 * rng.integers(0, 2, size=n_edges) - 1.0
        self.interactions = signs * rng.uniform(*INTERACTION_RANGE, size=n_edges)  # J^p per edge
        # Zero field: E(z) = E(-z), so half of the states (last spin fixed to +1)
        # give the moments exactly and the partition function up to a factor 2.
        states = spin_states(h * w)[: 2 ** (h * w - 1)]
        ei = np.array([e[0] for e in self.edges])
        ej = np.array([e[1] for e in self.edges])
        # z_i z_j of every edge in every kept spin state, shape (2^15, 24)
        self._edge_products = (states[:, ei] * states[:, ej]).astype(float)
        energy_p = self._edge_products @ (2.0 * self.interactions)
        log_half_p = _logsumexp(energy_p)
        self.log_partition_p = math.log(2.0) + log_half_p
        prob_p = np.exp(energy_p - log_half_p)  # p(z) + p(-z) = 2 p(z)
        self.edge_moments = prob_p @ self._edge_products  # E_p[z_i z_j] per edge
        self.space = Space({f"edge_{i}_{j}": Binary() for i, j in self.edges})

    def kl_divergence(self, row) -> float:
        """Exact ``D_KL(p || q)`` for the kept edges ``row`` (0/1 per edge)."""
        x = np.asarray(row, dtype=float)
        jq = x * self.interactions
        log_partition_q = math.log(2.0) + _logsumexp(self._edge_products @ (2.0 * jq))
        return float(2.0 * np.dot(self.interactions - jq, self.edge_moments) + log_partition_q - self.log_partition_p)

    def evaluate_index(self, row) -> float:
        x = np.asarray(row, dtype=float)
        return self.kl_divergence(x) + self.lamda * float(np.sum(x))
