"""BOCS-SDP: BOCS with the semidefinite-relaxation acquisition (Baptista & Poloczek, ICML 2018).

The "BOCS-SDP" baseline of COMBO (Oh et al., NeurIPS 2019, Tables 1-3). The model and
Thompson sampling are BOCS-SA's (:class:`~graphbo.optimizers.bocs.BOCS`: second-order model,
horseshoe Gibbs sampler, one posterior sample per suggestion). Only the way the sampled model
plus ``lam * ||x||_1`` is minimised differs: the SDP relaxation of the {-1, 1} form, solved
by cvxpy, and the best of ``n_roundings`` random-hyperplane roundings
(:mod:`graphbo.optim.sdp_relaxation`).

Requires cvxpy (``pip install "graphbo[bocs]"``), imported when the optimizer is constructed.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_int
from ..optim.sdp_relaxation import SDPRelaxation, load_cvxpy, minimize_binary_quadratic_sdp
from ..spaces.space import Space
from .base import Configs
from .bocs import BOCS

__all__ = ["BOCSSDP"]


class BOCSSDP(BOCS):
    """BOCS-SDP with a second-order model (Baptista & Poloczek, 2018), for binary variables.

    Every suggestion draws one posterior sample of the model coefficients as
    :class:`~graphbo.optimizers.bocs.BOCS` does, solves the SDP relaxation of
    ``min a0 + a.x + sum_{i<j} a_ij x_i x_j + lam * ||x||_1`` and rounds it
    ``n_roundings`` times (BOCS's code: 100). It returns the rounded point of
    lowest model value that was not evaluated or asked yet. The BOCS code
    returns the best rounding even if it was evaluated before; graphbo's
    baselines never spend an evaluation twice, so when every rounding is
    taken the candidates go on with the one-bit-flip neighbours of the
    roundings (by model value), and failing those a uniformly random new
    configuration.

    Parameters
    ----------
    space : Space
        Every variable must be a :class:`~graphbo.Binary`.
    seed, n_initial, initial_configs, lam, n_burn, n_gibbs
        As for :class:`~graphbo.optimizers.bocs.BOCS`.
    n_roundings : int, default 100
        Random-hyperplane roundings of each relaxation.

    Attributes
    ----------
    relaxation : SDPRelaxation or None
        The last solved relaxation (its ``lower_bound`` bounds the sampled model's minimum).

    Raises
    ------
    ImportError
        If cvxpy is not installed (the message names ``pip install "graphbo[bocs]"``).
    ValueError
        If a variable of ``space`` is not Binary (the message names every such variable).
    """

    name = "bocs-sdp"

    def __init__(self, space: Space, *, seed: int | None = None, n_initial: int = 10,
                 initial_configs: Configs | None = None, lam: float = 0.0, n_burn: int = 1000, n_gibbs: int = 100,
                 n_roundings: int = 100):
        self.n_roundings = check_int("n_roundings", n_roundings, minimum=1)
        load_cvxpy()
        super().__init__(space, seed=seed, n_initial=n_initial, initial_configs=initial_configs, lam=lam,
                         n_burn=n_burn, n_gibbs=n_gibbs)
        self.relaxation: SDPRelaxation | None = None

    def _ranked_candidates(self, c: float, b: np.ndarray, Q: np.ndarray) -> np.ndarray:
        """The distinct roundings by model value, then their one-bit-flip neighbours by model value."""
        states, energies, self.relaxation = minimize_binary_quadratic_sdp(c, b, Q, rng=self.rng,
                                                                          n_roundings=self.n_roundings)
        rounded, first = np.unique(states, axis=0, return_index=True)
        rounded = rounded[np.argsort(energies[first], kind="stable")]
        d = rounded.shape[1]
        flips = np.repeat(rounded, d, axis=0)
        flips[np.arange(flips.shape[0]), np.tile(np.arange(d), rounded.shape[0])] ^= 1
        flips = np.unique(flips, axis=0)
        flip_values = c + flips @ b + 0.5 * np.einsum("ni,ij,nj->n", flips, Q, flips)
        flips = flips[np.argsort(flip_values, kind="stable")]
        return np.ascontiguousarray(np.concatenate([rounded, flips]), dtype=np.int64)
