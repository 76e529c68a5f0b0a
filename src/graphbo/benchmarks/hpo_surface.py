"""An integer-heavy hyper-parameter surface: four integers with 200 to 1017 levels, two categoricals, a bit.

**A synthetic stand-in**, not measured data: the shape imitates a validation loss of a neural network
over its training hyper-parameters, with effects practitioners know, chosen by hand:

* the best learning rate grows with the batch size (the linear scaling rule of Goyal et al., "Accurate,
  large minibatch SGD", 2017: ``lr* ~ batch``, i.e. ``log10 lr*`` moves by ``log10 2`` per doubling),
  depends on the optimiser, and is larger with batch normalisation; too large a rate diverges (a steep
  wall above ``lr*``), too small a one is only slowly worse;
* larger batches generalise a little worse;
* too few epochs underfit (faster with adaptive optimisers), wide networks overfit with more epochs.

Variables (index rows hold the value positions; every integer is an :class:`~graphbo.Ordinal`):

=============== ====================================== =====================================
name            values                                 meaning
=============== ====================================== =====================================
``lr_step``     0 .. 300 (301 levels)                  ``log10 lr = -5 + lr_step / 60``
``batch_size``  16 .. 512 (497 levels)                 ``ub = log2 batch_size`` in [4, 9]
``width``       8 .. 1024 (1017 levels)                ``uw = log2 width`` in [3, 10]
``epochs``      1 .. 200 (200 levels)                  ``e``
``optimizer``   sgd, momentum, adam, rmsprop           index ``o``
``activation``  relu, tanh, sigmoid                    index ``a``
``batch_norm``  False, True                            ``bn`` in {0, 1}
=============== ====================================== =====================================

The value is ``f = B(o, a, bn) + L(lr, ub; o, bn) + C(uw, e; o)`` with

.. math::

    B &= \\beta_o + \\alpha_a + bn\\,\\nu_a,\\\\
    L &= 0.06\\,(u - u^*)^2 + 0.5 \\max(0,\\ u - u^* - 0.8)^2 + 0.004\\,(ub - 5.5)^2,
    \\quad u = \\log_{10} lr,\\ u^* = \\lambda_o + \\log_{10} 2\\,(ub - 7) + 0.3\\,bn,\\\\
    C &= 0.4\\,e^{-e/\\tau_o} + 0.015\\,(uw - 7.5)^2 + 0.00025\\, e \\max(0,\\ uw - 6),

and the per-choice constants of :data:`OPTIMIZERS` (``beta_o``, ``lambda_o``, ``tau_o``) and
:data:`ACTIVATIONS` (``alpha_a``, ``nu_a``). The surface is deterministic. Since ``L`` and ``C`` share
no integer variable, the minimum is found exactly by brute force: for each of the 24 choices of
``(o, a, bn)``, ``B`` plus the minimum of ``L`` over its ``301 x 497`` grid plus the minimum of ``C``
over its ``1017 x 200`` grid (:attr:`HPOSurface.optimum`, :attr:`HPOSurface.optimal_config`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..spaces import Binary, Categorical, Ordinal, Space
from .base import Benchmark

__all__ = ["HPOSurface", "OPTIMIZERS", "ACTIVATIONS"]

#: optimiser -> (beta: base loss, lambda: log10 of the best rate at batch 128, tau: epochs scale)
OPTIMIZERS: dict[str, tuple[float, float, float]] = {
    "sgd": (0.30, -1.0, 40.0),
    "momentum": (0.22, -1.7, 25.0),
    "adam": (0.20, -3.0, 15.0),
    "rmsprop": (0.24, -2.8, 18.0),
}
#: activation -> (alpha: base loss, nu: change with batch normalisation)
ACTIVATIONS: dict[str, tuple[float, float]] = {
    "relu": (0.0, -0.04),
    "tanh": (0.03, -0.02),
    "sigmoid": (0.10, 0.01),
}
LR_STEPS = 301  # lr_step 0 .. 300
BATCH_SIZES = (16, 512)
WIDTHS = (8, 1024)
EPOCHS = (1, 200)


def _lr_term(u: np.ndarray, ub: np.ndarray, lam: float, bn: float) -> np.ndarray:
    """``L`` of the module docstring."""
    best = lam + math.log10(2.0) * (ub - 7.0) + 0.3 * bn
    d = u - best
    return 0.06 * d * d + 0.5 * np.maximum(0.0, d - 0.8) ** 2 + 0.004 * (ub - 5.5) ** 2


def _capacity_term(uw: np.ndarray, e: np.ndarray, tau: float) -> np.ndarray:
    """``C`` of the module docstring."""
    return 0.4 * np.exp(-e / tau) + 0.015 * (uw - 7.5) ** 2 + 0.00025 * e * np.maximum(0.0, uw - 6.0)


class HPOSurface(Benchmark):
    """The synthetic hyper-parameter surface of the module docstring (a stand-in, not measured data)."""

    name = "hpo-surface"
    default_budget = 150
    default_n_initial = 10

    def __init__(self) -> None:
        self.space = Space({
            "lr_step": Ordinal(list(range(LR_STEPS))),
            "batch_size": Ordinal(list(range(BATCH_SIZES[0], BATCH_SIZES[1] + 1))),
            "width": Ordinal(list(range(WIDTHS[0], WIDTHS[1] + 1))),
            "epochs": Ordinal(list(range(EPOCHS[0], EPOCHS[1] + 1))),
            "optimizer": Categorical(list(OPTIMIZERS)),
            "activation": Categorical(list(ACTIVATIONS)),
            "batch_norm": Binary(),
        })
        self._optimum: tuple[float, dict[str, Any]] | None = None

    @staticmethod
    def value(*, lr_step: Any, batch_size: Any, width: Any, epochs: Any, optimizer: str, activation: str,
              batch_norm: Any) -> np.ndarray:
        """``f`` at native values (arrays broadcast over the four integers)."""
        beta, lam, tau = OPTIMIZERS[optimizer]
        alpha, nu = ACTIVATIONS[activation]
        bn = float(bool(batch_norm))
        u = -5.0 + np.asarray(lr_step, dtype=float) / 60.0
        ub = np.log2(np.asarray(batch_size, dtype=float))
        uw = np.log2(np.asarray(width, dtype=float))
        e = np.asarray(epochs, dtype=float)
        return beta + alpha + bn * nu + _lr_term(u, ub, lam, bn) + _capacity_term(uw, e, tau)

    def evaluate_index(self, row: Any) -> float:
        config = self.space.from_index(np.asarray(row, dtype=np.int64).reshape(-1))
        return float(self.value(**config))

    def _solve(self) -> tuple[float, dict[str, Any]]:
        """Exact minimum and a minimiser, by brute force over the separable blocks (module docstring)."""
        lr_steps = np.arange(LR_STEPS)
        batches = np.arange(BATCH_SIZES[0], BATCH_SIZES[1] + 1)
        widths = np.arange(WIDTHS[0], WIDTHS[1] + 1)
        epochs = np.arange(EPOCHS[0], EPOCHS[1] + 1)
        u = -5.0 + lr_steps[:, None] / 60.0
        ub = np.log2(batches.astype(float))[None, :]
        uw = np.log2(widths.astype(float))[:, None]
        e = epochs.astype(float)[None, :]
        best: tuple[float, dict[str, Any]] | None = None
        for opt, (beta, lam, tau) in OPTIMIZERS.items():
            cap = _capacity_term(uw, e, tau)
            iw, ie = np.unravel_index(int(np.argmin(cap)), cap.shape)
            for bn in (False, True):
                lr = _lr_term(u, ub, lam, float(bn))
                il, ibs = np.unravel_index(int(np.argmin(lr)), lr.shape)
                for act, (alpha, nu) in ACTIVATIONS.items():
                    total = beta + alpha + float(bn) * nu + float(lr[il, ibs]) + float(cap[iw, ie])
                    if best is None or total < best[0]:
                        best = (total, {"lr_step": int(lr_steps[il]), "batch_size": int(batches[ibs]),
                                        "width": int(widths[iw]), "epochs": int(epochs[ie]), "optimizer": opt,
                                        "activation": act, "batch_norm": bn})
        assert best is not None
        return best

    @property
    def optimum(self) -> float:  # type: ignore[override]  # computed by brute force, not a class constant
        """The exact minimum (brute force over the separable blocks, once)."""
        if self._optimum is None:
            self._optimum = self._solve()
        return self._optimum[0]

    @property
    def optimal_config(self) -> dict[str, Any]:
        """A configuration attaining :attr:`optimum`."""
        if self._optimum is None:
            self._optimum = self._solve()
        return dict(self._optimum[1])
