"""Expected improvement, computed in log space, averaged over posterior samples.

For minimisation with incumbent ``y*``, posterior mean ``mu`` and standard
deviation ``s``: ``EI = s * h(z)`` with ``z = (y* - mu) / s`` and
``h(z) = phi(z) + z Phi(z)`` (Jones et al., 1998). COMBO averages EI over the
posterior samples of its hyper-parameters (Alg. 1, line 9).

``log h`` is evaluated without cancellation: for ``z > -1`` directly; below,
through the scaled complementary error function,
``h(z) = phi(z) (1 - |z| sqrt(pi/2) erfcx(|z| / sqrt 2))``, and for very
negative ``z`` through the asymptote ``log phi(z) - 2 log |z|``.

Precision: the erfcx branch loses ``eps * z**2`` relative accuracy to cancellation
(``1 - r`` is about ``1 / z**2``), which float32 (``eps ~ 1e-7``) cannot afford for
``|z|`` beyond a few hundred, and a float32 variance floor of ``1e-300`` is 0. So
log-EI is always evaluated in float64 and returned in the inputs' dtype.
"""

from __future__ import annotations

import math
from typing import Any

import torch

from ..models.base import Surrogate
from .base import AcquisitionFunction, mean_and_variance_bound

__all__ = ["log_h", "log_expected_improvement", "log_mean_expected_improvement", "LogExpectedImprovement"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def log_h(z: torch.Tensor) -> torch.Tensor:
    """``log(phi(z) + z Phi(z))``, accurate for all ``z`` (evaluated in float64, returned in ``z``'s dtype)."""
    if z.dtype != torch.float64:
        return log_h(z.to(torch.float64)).to(z.dtype)
    out = torch.empty_like(z)
    log_phi = -0.5 * z * z - _LOG_SQRT_2PI
    upper = z > -1.0
    zu = z[upper]
    out[upper] = torch.log(torch.exp(log_phi[upper]) + zu * torch.special.ndtr(zu))
    mid = (~upper) & (z > -1e4)
    a = -z[mid]
    r = a * math.sqrt(math.pi / 2) * torch.special.erfcx(a / math.sqrt(2))  # a * Phi(-a) / phi(a) < 1
    out[mid] = log_phi[mid] + torch.log1p(-r)
    far = z <= -1e4
    out[far] = log_phi[far] - 2 * torch.log(-z[far])
    return out


def log_expected_improvement(mean: torch.Tensor, var: torch.Tensor, *, best: float) -> torch.Tensor:
    """Elementwise ``log EI`` for minimisation below ``best`` (in float64, returned in ``mean``'s dtype)."""
    dtype = mean.dtype
    mean, var = mean.to(torch.float64), var.to(torch.float64)
    sd = var.clamp_min(1e-300).sqrt()
    return (torch.log(sd) + log_h((best - mean) / sd)).to(dtype)


def log_mean_expected_improvement(mean: torch.Tensor, var: torch.Tensor, *, best: float) -> torch.Tensor:
    """``log`` of EI averaged over posterior samples (the leading dimension)."""
    lei = log_expected_improvement(mean, var, best=best)
    return torch.logsumexp(lei, dim=0) - math.log(lei.shape[0])


class LogExpectedImprovement(AcquisitionFunction):
    """``log`` of EI averaged over the model's hyper-parameter samples (COMBO Alg. 1, line 9).

    With one sample (a type-II maximum-likelihood model) this is plain log-EI.

    Parameters
    ----------
    model : Surrogate
    best_f : float, optional
        The incumbent on the posterior's scale; default the model's best real observation
        (:meth:`Surrogate.best_observed`), fantasies excluded.
    """

    def __init__(self, model: Surrogate, best_f: float | None = None):
        super().__init__(model)
        self.best_f = float(model.best_observed() if best_f is None else best_f)

    def __call__(self, X: Any) -> torch.Tensor:
        post = self.model.posterior(X)
        return log_mean_expected_improvement(post.mean, post.variance, best=self.best_f)

    def upper_bound(self, X: Any) -> torch.Tensor:
        """log mean EI at the model's mean and variance bounds: EI falls with the mean (``dEI/dmu = -Phi(z) < 0``)
        and grows with the standard deviation (``dEI/ds = phi(z) > 0``), so this bounds :meth:`__call__` from above."""
        mean, var = mean_and_variance_bound(self.model, X)
        return log_mean_expected_improvement(mean, var, best=self.best_f)
