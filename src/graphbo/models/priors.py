"""Priors on COMBO's GP hyper-parameters (supplement Sec. 2.2).

All densities are unnormalised log densities of the sampled coordinate.
The sampler works on ``m``, ``log sigma_f^2``, ``log sigma_n^2`` and
``log beta_i``; as in the authors' reference implementation, the Horseshoe
proxy is evaluated at ``x = exp(log x)`` without a Jacobian term.
"""

from __future__ import annotations

import math

__all__ = [
    "LOG_LOWER",
    "LOG_BETA_UPPER",
    "LOG_NOISE_UPPER",
    "log_prior_mean",
    "log_prior_log_signal_variance",
    "log_signal_variance_support",
    "log_horseshoe_upper",
    "log_horseshoe_upper_of_log",
]

# Numerical-stability bounds on log-scale parameters, from the reference code.
LOG_LOWER = -12.0
LOG_BETA_UPPER = math.log(100.0)
LOG_NOISE_UPPER = math.log(10000.0)


def log_prior_mean(m: float, *, y_mean: float, y_min: float, y_max: float) -> float:
    """Truncated normal on the constant mean, supplement Eq. (9).

    ``N(mean(y), ((y_max - y_min) / 4)^2)`` restricted to ``[y_min, y_max]``.
    """
    if m < y_min or m > y_max:
        return -math.inf
    sd = max(y_max - y_min, 1e-12) / 4.0
    return -0.5 * ((m - y_mean) / sd) ** 2


def log_signal_variance_support(y_var: float, *, k_min: float, k_max: float) -> tuple[float, float]:
    """The support ``[log(sigma_y^2 / K_max), log(sigma_y^2 / K_min)]`` of Eq. (10) on ``log sigma_f^2``.

    A (numerically) constant Gram matrix gives an empty interval; it is widened by one unit
    either side.
    """
    y_var = max(y_var, 1e-12)
    lo = math.log(y_var) - math.log(max(k_max, 1e-100))
    hi = math.log(y_var) - math.log(max(k_min, 1e-100))
    if hi - lo < 1e-8:
        lo, hi = lo - 1.0, hi + 1.0
    return lo, hi


def log_prior_log_signal_variance(log_amp: float, *, y_var: float, k_min: float, k_max: float) -> float:
    """Truncated log-normal on the signal variance, supplement Eq. (10).

    The support is ``sigma_y^2 / K_max <= sigma_f^2 <= sigma_y^2 / K_min``
    (``K`` the unit-variance Gram matrix of the training inputs). The normal
    on ``log sigma_f^2`` is centred in that interval with a standard deviation
    of a quarter of its width, so that ~95 % of the untruncated mass lies inside.
    """
    lo, hi = log_signal_variance_support(y_var, k_min=k_min, k_max=k_max)
    if log_amp < lo or log_amp > hi:
        return -math.inf
    mid, sd = 0.5 * (lo + hi), 0.25 * (hi - lo)
    return -0.5 * ((log_amp - mid) / sd) ** 2


def log_horseshoe_upper(log_x: float, *, tau: float, upper: float) -> float:
    """Log of the Horseshoe density's closed-form upper bound, supplement Eq. (11).

    ``p(x) ~ log(1 + 2 tau^2 / x^2)`` (constant ``K`` dropped), on
    ``LOG_LOWER <= log x <= upper``.
    """
    if log_x < LOG_LOWER or log_x > upper:
        return -math.inf
    return math.log(math.log1p(2.0 * tau * tau * math.exp(-2.0 * log_x)))


def log_horseshoe_upper_of_log(log_x: float, *, tau: float, upper: float) -> float:
    """The log density of ``log x`` when ``x`` has the Horseshoe proxy density of Eq. (11).

    A density ``p(x)`` on ``x > 0`` is, on ``u = log x``, ``p(e^u) e^u`` (the Jacobian
    ``dx/du = x``): :func:`log_horseshoe_upper` plus ``log x``. The reference code samples ``log x``
    with ``p(e^u)`` alone, a density that grows without bound as ``u`` falls (``-2u`` for small
    ``x``) and so piles the samples at the lower bound whatever the data; with the Jacobian the
    density of ``u`` falls off on both sides of ``x ~ tau`` (as ``x log(1/x)`` below it and as
    ``2 tau^2 / x`` above it). Same support as :func:`log_horseshoe_upper`.
    """
    value = log_horseshoe_upper(log_x, tau=tau, upper=upper)
    return value + log_x if math.isfinite(value) else value
