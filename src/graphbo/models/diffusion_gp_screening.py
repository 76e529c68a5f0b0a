"""The screening of a conditioned :class:`~graphbo.models.diffusion_gp.DiffusionGP` (a :class:`~graphbo.models.base.Screening`).

What COMBO's acquisition optimiser (:mod:`graphbo.optim.bounded`, through the acquisition functions'
``upper_bound``) may ask of the model besides its posterior: :meth:`DiffusionGPScreening.mean_and_variance_bound`,
a lower bound of the posterior mean and an upper bound of its variance for every hyper-parameter sample, at
``O(S m n)`` instead of the posterior's ``O(S m n^2)``, with a proof that rounding cannot break them
(:class:`_MeanRounding`).

A :class:`DiffusionGP` offers a screening (:meth:`DiffusionGP.screening`) where its kernel has the diffusion form
(:meth:`DiffusionGPScreening.supports`); the object reads the model through its public members only (the
candidates' encoding, the conditioned log factors, the weights ``alpha``, the signal and noise variances, the
constant mean, the prior variance) and answers for the conditioning it was made for: the model makes a new one
after each conditioning, and an object kept past it raises.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ..kernels.diffusion import GraphDiffusionKernel
from .base import Screening

if TYPE_CHECKING:
    from .diffusion_gp import DiffusionGP

__all__ = ["DiffusionGPScreening"]


class DiffusionGPScreening(Screening):
    """The :class:`~graphbo.models.base.Screening` of a conditioned :class:`DiffusionGP` whose kernel has the
    diffusion form (:meth:`supports`); made by :meth:`DiffusionGP.screening`, once per conditioning. It offers
    :meth:`mean_and_variance_bound` only, for every hyper-parameter sample, on the model's scale."""

    def __init__(self, model: "DiffusionGP") -> None:
        if not self.supports(model.kernel):
            raise ValueError("a DiffusionGP screening needs a kernel of the diffusion form")
        self._model = model
        #: the mean bound's rounding analysis (of ``exp``)
        self._rounding = _MeanRounding(model.kernel, model.log_tables, model.alpha[..., 0])
        #: :attr:`DiffusionGP.log_cross_factors` in float32, for a float64 model
        self._B32 = model.log_cross_factors.to(torch.float32) if model.kernel.dtype == torch.float64 else None

    @staticmethod
    def supports(kernel: GraphDiffusionKernel) -> bool:
        """Whether a :class:`DiffusionGP` with ``kernel`` has a screening: the diffusion form, whose ``exp``
        the rounding analysis is of (with the ``"matern52"`` form the bounds would be the exact posterior's)."""
        return kernel.form == "diffusion"

    def _check_current(self) -> None:
        """Raise unless the model is still conditioned as when this object was made."""
        if self._model.screening() is not self:
            raise RuntimeError("the model was conditioned again since this screening was made; "
                               "ask model.screening() for the current one")

    @property
    def offers_mean_and_variance_bound(self) -> bool:
        """Always: the bounds cost ``O(S m n)`` against the posterior's ``O(S m n^2)``."""
        return True

    def mean_and_variance_bound(self, X: np.ndarray | torch.Tensor, chunk: int | None = None
                                ) -> tuple[torch.Tensor, torch.Tensor]:
        """A lower bound on the posterior mean ``(S, m)`` and an upper bound on the posterior variance ``(S, m)``.

        Scores that grow as the mean falls and as the variance grows (EI, the lower confidence bound)
        are bounded above at them. Two bounds, each ``O(S m n)`` instead of the ``O(S m n^2)`` of the
        exact variance, which lets acquisition optimisers skip candidates that cannot matter
        (:mod:`graphbo.optim.bounded`):

        * **variance**: conditioning never increases a GP's variance, so the variance given one
          training point ``x_i`` alone bounds that given all of them,
          ``amp k(x, x) - (amp k(x, x_i))^2 / C_ii`` with ``C = amp K + noise I`` the factored matrix;
          with ``C_ii <= max_j C_jj`` and the ``x_i`` of the largest ``k(x, x_i)``, this is the bound.
          The nearest data point makes it tight beside the data, where local search moves. Against
          rounding the explained part shrinks by ``1e-9`` plus ``(n + 2) n u C_max / noise`` (the
          exact variance's quadratic form errs in proportion to ``C``'s condition number, at most
          ``n C_max / noise``), so an ill-conditioned model falls back to the prior variance;
        * **mean**: the mean ``m + amp sum_i alpha_i k(x, x_i)`` lowered by a bound on the rounding
          error of this pass and of :meth:`DiffusionGP.posterior`'s (:class:`_MeanRounding`). In a float64 model
          the kernel values here are formed in float32 (half the cost of the one-hot product and its
          ``exp``) where float32 products are IEEE (:func:`_ieee_float32_products`).

        The rounding analysis is that of ``exp``: with the kernel's ``"matern52"`` form the model offers no
        screening (:meth:`supports`), and bounds are the exact posterior's mean and variance.
        """
        self._check_current()
        model = self._model
        Xt, chunk = model.candidates(X, chunk)
        S, n, m = len(model.samples), model.n_conditioned, Xt.shape[0]
        model_dtype = model.kernel.dtype
        # float32 kernel values where float32 products are IEEE (the rounding bound assumes them)
        dtype = torch.float32 if self._B32 is not None and _ieee_float32_products(Xt.device) else model_dtype
        mean = torch.empty(S, m, dtype=dtype, device=Xt.device)
        mass = torch.empty(S, m, dtype=dtype, device=Xt.device)  # sum_i |alpha_i| k(x, x_i)
        peak = torch.empty(S, m, dtype=dtype, device=Xt.device)
        bound = torch.empty(S, m, dtype=model_dtype, device=model.kernel.device)
        # one work buffer for every chunk's (chunk, S * n) kernel values: allocating a fresh block per
        # chunk fragments the C heap (glibc's adaptive mmap threshold), which grew the peak memory
        # by ~250 MiB at n = 200 over 20,000 candidates
        work = torch.empty(min(chunk, m), S * n, dtype=dtype, device=Xt.device)
        B = self._B32 if self._B32 is not None and dtype != model_dtype else model.log_cross_factors
        alpha = model.alpha[..., 0].to(dtype)  # (S, n)
        abs_alpha = alpha.abs()
        for start in range(0, m, chunk):
            Oc = model.kernel.one_hot(Xt[start:start + chunk])
            k = Oc.shape[0]
            K = torch.matmul(Oc.to(dtype), B, out=work[:k]).exp_().view(k, S, n)  # k(x, x_i) per sample
            for s in range(S):
                torch.mv(K[:, s, :], alpha[s], out=mean[s, start:start + k])
                torch.mv(K[:, s, :], abs_alpha[s], out=mass[s, start:start + k])
            torch.amax(K, dim=-1, out=peak[:, start:start + k].T)
            bound[:, start:start + k] = model.prior_variance(Oc)
        # rounding of this pass and of posterior()'s, together (_MeanRounding): in the model's dtype from here
        u = _unit_roundoff(dtype) + _unit_roundoff(model_dtype)
        mean_lo, mass_t = mean.to(model_dtype), mass.to(model_dtype)
        rounding = self._rounding
        amp, constant_mean, c_max = model.signal_variance, model.constant_mean, model.max_conditioned_diagonal
        relative, absolute = rounding.kernel_error(u)
        mean_lo -= rounding.error(u, mass_t, (relative, absolute))
        mean_lo.mul_(amp[:, None])
        mean_lo -= 2 * u * (mean_lo.abs() + constant_mean.abs()[:, None])  # the products by amp, the sum with m
        mean_lo.add_(constant_mean[:, None])
        peak_lo = (peak.to(model_dtype) - absolute[:, None]).clamp_min_(0.0) / (1.0 + relative[:, None])
        # (amp k(x, x_i))^2 / max_j C_jj, shrunk by the relative error of posterior()'s quadratic form, which
        # grows with C's condition number (at most n C_max / noise); the prior variance where that is 1 or more
        u_model = _unit_roundoff(model_dtype)
        shrink = (1.0 - 1e-9 - (n + 2) * n * u_model * c_max / model.noise_variance).clamp_min_(0.0)
        explained = peak_lo.square_().mul_((amp.square() / c_max * shrink)[:, None])
        bound.add_(bound.abs() * (2 * u_model)).sub_(explained)  # ... and the rounding of the subtraction
        return mean_lo, bound.clamp_min_(model.variance_floor)


def _unit_roundoff(dtype: torch.dtype) -> float:
    """``u``: half the distance from 1 to the next float of ``dtype``."""
    return float(torch.finfo(dtype).eps) / 2


def _ieee_float32_products(device: torch.device) -> bool:
    """Whether float32 matrix products on ``device`` are IEEE (not TF32 or bfloat16), as the rounding bound of
    :class:`_MeanRounding` assumes; ``False`` where it cannot tell (other devices, mixed precision settings)."""
    if device.type not in ("cpu", "cuda"):
        return False
    backend: Any = (torch.backends.cuda.matmul if device.type == "cuda"
                    else getattr(torch.backends.mkldnn, "matmul", None))
    try:
        for setting in (getattr(backend, "fp32_precision", "none"), getattr(torch.backends, "fp32_precision", "none")):
            if setting not in (None, "none"):
                return bool(setting == "ieee")
        return torch.get_float32_matmul_precision() == "highest"
    except RuntimeError:  # torch refuses to read a mix of the legacy and the new precision settings
        return False


class _MeanRounding:
    """A bound on the rounding error of the posterior mean ``m + amp sum_i alpha_i k(x, x_i)``, in any dtype.

    ``log k(x, x_i)`` is a sum of ``d`` entries of the log factor tables ``W`` (one per variable),
    formed by a one-hot product with ``D`` terms. With unit roundoff ``u``, each entry is rounded once
    (``|dW| <= u |W|``) and the sum errs by at most ``gamma_{D+1}`` times the sum of the terms'
    magnitudes (Higham, *Accuracy and Stability of Numerical Algorithms*, Eq. 3.5, for any order of
    summation), so ``log k`` errs by at most ``g (2 P + t)`` with ``g = gamma_{D+1} + u``,
    ``t = -log k`` and ``P`` the sum over variables of each table's largest positive entry (the terms'
    magnitudes sum to ``2 * positive part - log k``); ``exp`` adds at most ``4 u``. Since
    ``k t = k log(1/k) <= 1/e`` for ``k <= 1`` (and ``k t < 0`` above 1), with
    ``E = exp(g (2 P + T)) (1 + 4 u)`` and ``T`` the sum of the tables' largest negative magnitudes,

        |k_computed - k| <= r k + a,   r = 2 g P E + 6 u,   a = g E / e     (:meth:`kernel_error`),

    uniformly in ``k``: tiny values, whose logs err most, count least. The products with ``alpha``
    (rounded: ``u``) add ``gamma_{n+2}`` times the computed ``sum_i |alpha_i| k_i`` (``mass``), and
    ``sum_i |alpha_i| k_i <= (mass (1 + gamma_{n+2}) (1 + u) + a ||alpha||_1) / (1 - r)``, which gives
    :meth:`error`, with 1 % to spare for its own arithmetic. :meth:`DiffusionGPScreening.mean_and_variance_bound`
    passes the sum of the two passes' unit roundoffs (its own, float32 or the model's, and
    :meth:`DiffusionGP.posterior`'s): each bound is convex in ``u`` and 0 at 0, so the sum of the two
    errors is at most the error at the summed ``u``.
    """

    def __init__(self, kernel: GraphDiffusionKernel, W: torch.Tensor, alpha: torch.Tensor):
        Wn = W.detach().cpu().to(torch.float64).numpy()
        # per variable (block of rows of W): its largest positive entry and its largest negative magnitude
        self.top = np.maximum.reduceat(np.maximum(Wn.max(axis=-1), 0.0), kernel.offsets, axis=1).sum(axis=1)
        self.low = np.maximum.reduceat(np.maximum(-Wn.min(axis=-1), 0.0), kernel.offsets, axis=1).sum(axis=1)
        self.D, self.n = int(kernel.D), int(alpha.shape[-1])
        self.alpha_l1 = alpha.detach().abs().sum(-1).cpu().to(torch.float64).numpy()
        self._dtype, self._device = alpha.dtype, alpha.device

    @staticmethod
    def _gamma(k: int, u: float) -> float:
        return k * u / (1 - k * u)

    def kernel_error(self, u: float) -> tuple[torch.Tensor, torch.Tensor]:
        """``(r, a)`` per sample: ``|k_computed - k| <= r k + a`` for every kernel value."""
        g = self._gamma(self.D + 1, u) + u
        E = np.exp(g * (2 * self.top + self.low)) * (1 + 4 * u)
        r, a = 2 * g * self.top * E + 6 * u, g * E / math.e
        return self._tensor(r), self._tensor(a)

    def _tensor(self, values: np.ndarray) -> torch.Tensor:
        return torch.as_tensor(values, dtype=self._dtype, device=self._device)

    def error(self, u: float, mass: torch.Tensor,
              kernel_error: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        """Bound ``(S, m)`` on the error of ``sum_i alpha_i k(x, x_i)``, given the computed ``mass``
        (``kernel_error``: :meth:`kernel_error` of ``u``, where the caller has it already)."""
        r, a = self.kernel_error(u) if kernel_error is None else kernel_error
        gam = self._gamma(self.n + 2, u)
        a_l1 = (a * self._tensor(self.alpha_l1))[:, None]
        room = (1.0 - r)[:, None]
        true_mass = (mass * ((1 + gam) * (1 + u)) + a_l1) / room.clamp_min(1e-300)
        err = 1.01 * (r[:, None] * true_mass + a_l1 + (gam + u) * (1 + u) * mass)
        return torch.where(room > 0, err, torch.full_like(err, math.inf))
