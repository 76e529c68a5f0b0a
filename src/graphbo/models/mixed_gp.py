"""GP on a mixed space with an FM kernel, fitted by type-II maximum likelihood (BO-FM Sec. 5).

``y`` is standardised (optionally after a log transform, Sec. 5.3); the
hyper-parameters (kernel parameters, log signal variance, log noise variance,
constant mean) maximise the log marginal likelihood plus weak priors, by
L-BFGS-B with autograd gradients from ``n_restarts`` starting points (the
previous optimum and random draws), keeping the best. The kernel's
hyper-parameter-free look-ups (:meth:`FMKernel.pairs`) are made once per fit.
Pending points can be hallucinated at their posterior mean (kriging believer,
:meth:`MixedGP.add_fantasies`).
"""

from __future__ import annotations

import math
from typing import Callable, Protocol

import numpy as np
import scipy.optimize
import torch

from .._validation import check_bool, check_int
from ..kernels.frequency_modulated import FMKernel
from ..spaces.space import Space
from .base import Posterior, Surrogate
from .gp import robust_cholesky

__all__ = ["MixedGP", "MixedKernel"]


class MixedKernel(Protocol):
    """What :class:`MixedGP` needs of its kernel: :class:`~graphbo.kernels.FMKernel`, or any kernel with
    its interface (CoCaBO's): hyper-parameters in one unconstrained vector of ``size`` entries, and
    Gram matrices between (discrete index rows, unit continuous rows)."""

    dtype: torch.dtype
    size: int
    P: int  # number of discrete inputs
    Dc: int  # number of continuous inputs

    def __call__(self, params: torch.Tensor, V1: torch.Tensor, C1: torch.Tensor,
                 V2: torch.Tensor | None = None, C2: torch.Tensor | None = None) -> torch.Tensor: ...

    def diag(self, params: torch.Tensor, V: torch.Tensor, C: torch.Tensor) -> torch.Tensor: ...

    def default_params(self) -> torch.Tensor: ...

    def random_params(self, rng: np.random.Generator) -> torch.Tensor: ...

    def log_prior(self, params: torch.Tensor) -> torch.Tensor: ...


_KERNEL_ATTRIBUTES = ("dtype", "size", "P", "Dc", "diag", "default_params", "random_params", "log_prior")


class MixedGP(Surrogate):
    """Exact GP with constant mean on (discrete rows, unit continuous rows).

    Parameters
    ----------
    kernel : FMKernel (or a kernel with its interface, :class:`MixedKernel`)
        With one discrete input per discrete variable of ``space`` and one continuous input
        per continuous variable.
    space : Space (for the discrete/continuous column split)
    n_restarts : int, default 10
        ML-II starting points (``>= 1``).
    log_y : bool
        Fit on ``log(y - min(y) + 1e-3 * range)``, for objectives spanning orders of magnitude.
    maxiter : int
        L-BFGS-B iterations per restart (``>= 1``).
    """

    def __init__(self, kernel: MixedKernel, space: Space, n_restarts: int = 10, log_y: bool = False,
                 maxiter: int = 100) -> None:
        missing = [a for a in _KERNEL_ATTRIBUTES if not hasattr(kernel, a)] + ([] if callable(kernel) else ["__call__"])
        if missing:
            raise TypeError(f"kernel must be a graphbo.FMKernel or a kernel with its interface (missing {missing}), "
                            f"got {type(kernel).__name__}")
        if not isinstance(space, Space):
            raise TypeError(f"space must be a graphbo.Space, got {type(space).__name__}")
        n_disc, n_cont = len(space.discrete_indices), len(space.continuous_indices)
        if (kernel.P, kernel.Dc) != (n_disc, n_cont):
            raise ValueError(f"kernel has {kernel.P} discrete and {kernel.Dc} continuous inputs, but space has "
                             f"{n_disc} discrete and {n_cont} continuous variables; build the kernel from this space")
        self.kernel, self.space = kernel, space
        self.n_restarts = check_int("n_restarts", n_restarts, minimum=1)
        self.log_y = check_bool("log_y", log_y)
        self.maxiter = check_int("maxiter", maxiter, minimum=1)
        self.params: torch.Tensor | None = None  # [kernel params, log_amp, log_noise, mean]
        self.dtype = kernel.dtype
        self._y_train = np.zeros(0)

    # -- data transforms ------------------------------------------------------------
    def split(self, rows: np.ndarray | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Discrete index columns (long) and unit continuous columns of mixed rows ``(m, d)``;
        the continuous part keeps the autograd graph of a tensor input."""
        if not isinstance(rows, torch.Tensor):
            rows = torch.as_tensor(np.asarray(rows, dtype=float), dtype=self.dtype)
        rows = rows.to(self.dtype).reshape(-1, len(self.space))
        return rows[:, self.space.discrete_indices].long(), rows[:, self.space.continuous_indices]

    def transform_y(self, y: np.ndarray) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        if self.log_y:
            span = max(float(y.max() - y.min()), 1e-12)
            self._shift = float(y.min()) - 1e-3 * span
            y = np.log(y - self._shift)
        self._mu, self._sd = float(y.mean()), float(y.std()) if y.size > 1 and y.std() > 0 else 1.0
        return (y - self._mu) / self._sd

    def transform_outcome(self, v: float) -> float:
        """A raw objective value on the model's standardised scale."""
        if self.log_y:
            v = math.log(max(v - self._shift, 1e-300))
        return (v - self._mu) / self._sd

    # -- likelihood -------------------------------------------------------------------
    def _neg_log_posterior(self, theta: torch.Tensor, gram: Callable[[torch.Tensor], torch.Tensor], y) -> torch.Tensor:
        kp, log_amp, log_noise, mean = theta[:-3], theta[-3], theta[-2], theta[-1]
        K = gram(kp)
        n = y.shape[0]
        Cov = torch.exp(log_amp) * K + (torch.exp(log_noise) + 1e-6) * torch.eye(n, dtype=self.dtype)
        L = robust_cholesky(Cov)
        r = (y - mean)[:, None]
        z = torch.linalg.solve_triangular(L, r, upper=False)
        nll = 0.5 * z.square().sum() + torch.log(torch.diagonal(L)).sum() + 0.5 * n * math.log(2 * math.pi)
        # weak priors: kernel N(0, 3^2) in its unconstrained coordinates, log amp N(0, 2^2),
        # log noise N(-4, 3^2) (standardised y), mean N(0, 1)
        prior = (self.kernel.log_prior(kp) - 0.5 * (log_amp / 2.0) ** 2 - 0.5 * ((log_noise + 4.0) / 3.0) ** 2
                 - 0.5 * mean**2)
        return nll - prior

    @property
    def train_targets(self) -> np.ndarray:
        return self._y_train

    def fit(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> "MixedGP":
        self._y_train = np.asarray(y, dtype=float)
        V, C = self.split(X)
        ys = torch.as_tensor(self.transform_y(y), dtype=self.dtype)
        fm = self.kernel
        if isinstance(fm, FMKernel):  # the hyper-parameter-free look-ups, once for all evaluations
            pairs = fm.pairs(V, C)

            def gram(kp: torch.Tensor) -> torch.Tensor:
                return fm.gram(kp, pairs)
        else:  # any kernel with FMKernel's call signature (e.g. CoCaBO's)

            def gram(kp: torch.Tensor) -> torch.Tensor:
                return self.kernel(kp, V, C)

        def fun(x: np.ndarray):
            t = torch.tensor(x, dtype=self.dtype, requires_grad=True)
            try:
                val = self._neg_log_posterior(t, gram, ys)
            except RuntimeError:  # non-PD covariance even with jitter
                return 1e10, np.zeros_like(x)
            (g,) = torch.autograd.grad(val, t)
            if not torch.isfinite(val) or not torch.isfinite(g).all():
                return 1e10, np.zeros_like(x)
            return float(val.detach()), g.numpy()

        extra = np.array([0.0, -4.0, 0.0])
        starts = []
        if self.params is not None:
            starts.append(self.params.numpy())
        else:
            starts.append(np.concatenate([self.kernel.default_params().numpy(), extra]))
        while len(starts) < self.n_restarts:
            starts.append(np.concatenate([self.kernel.random_params(rng).numpy(),
                                          extra + rng.normal(0, [1.0, 1.0, 0.3])]))
        bounds = [(-8.0, 8.0)] * self.kernel.size + [(-6.0, 6.0), (-14.0, 2.0), (-3.0, 3.0)]
        best_x, best_f = None, math.inf
        for x0 in starts:
            res = scipy.optimize.minimize(fun, np.clip(x0, [b[0] for b in bounds], [b[1] for b in bounds]),
                                          jac=True, method="L-BFGS-B", bounds=bounds,
                                          options={"maxiter": self.maxiter})
            if res.fun < best_f:
                best_x, best_f = res.x, float(res.fun)
        self.params = torch.tensor(best_x, dtype=self.dtype)
        self._condition(V, C, ys)
        return self

    def condition(self, X: np.ndarray, y: np.ndarray) -> "MixedGP":
        """Condition on data ``(X, y)`` under the current hyper-parameters, without refitting them."""
        self._y_train = np.asarray(y, dtype=float)
        V, C = self.split(X)
        self._condition(V, C, torch.as_tensor(self.transform_y(y), dtype=self.dtype))
        return self

    def _condition(self, V, C, ys) -> None:
        theta = self.params
        assert theta is not None, "condition needs fitted hyper-parameters (fit first)"
        kp, amp, noise, mean = theta[:-3], torch.exp(theta[-3]), torch.exp(theta[-2]) + 1e-6, theta[-1]
        n = ys.shape[0]
        K = amp * self.kernel(kp, V, C) + noise * torch.eye(n, dtype=self.dtype)
        self._L = robust_cholesky(K)
        self._alpha = torch.cholesky_solve((ys - mean)[:, None], self._L)
        self._V, self._C, self._ys, self._amp, self._mean, self._kp = V, C, ys, amp, mean, kp
        #: how many of the conditioning rows (the last ones) are fantasies (:meth:`add_fantasies`)
        self.n_fantasies = 0

    def add_fantasies(self, X: np.ndarray) -> None:
        """Kriging believer (:meth:`Surrogate.add_fantasies`) at the mixed rows ``X``: they join
        the conditioning set with their posterior mean (standardised scale) as value."""
        V, C = self.split(X)
        with torch.no_grad():
            fantasy, _ = self._predict(V, C)
            n_before = self.n_fantasies
            self._condition(torch.cat([self._V, V]), torch.cat([self._C, C]), torch.cat([self._ys, fantasy]))
        self.n_fantasies = n_before + int(V.shape[0])

    def posterior(self, X: np.ndarray | torch.Tensor) -> Posterior:
        """Posterior (standardised scale, one hyper-parameter sample: shape ``(1, m)``) of the latent
        function at mixed rows ``X``; differentiable in the continuous columns of a tensor ``X``."""
        V, C = self.split(X)
        mean, var = self._predict(V, C)

        def covariance() -> torch.Tensor:
            Kx = self._amp * self.kernel(self._kp, V, C, self._V, self._C)
            w = torch.linalg.solve_triangular(self._L, Kx.T, upper=False)
            return (self._amp * self.kernel(self._kp, V, C, V, C) - w.T @ w)[None]

        return Posterior(mean[None], var[None], covariance)

    def _predict(self, V: torch.Tensor, C: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Posterior mean and variance ``(m,)`` (standardised scale) of the latent function."""
        Kx = self._amp * self.kernel(self._kp, V, C, self._V, self._C)  # (m, n)
        mean = (Kx @ self._alpha)[:, 0] + self._mean
        w = torch.linalg.solve_triangular(self._L, Kx.T, upper=False)
        prior = self._amp * self.kernel.diag(self._kp, V, C)
        var = (prior - w.square().sum(0)).clamp_min(1e-12)
        return mean, var
