"""The hyper-parameter priors (graphbo.models.priors): COMBO's supplement Eqs. 9-11 and their supports, and the
Horseshoe proxy on ``log beta`` with and without the Jacobian of ``beta = exp(log beta)`` (COMBO's
``beta_prior="horseshoe"`` and ``"reference"``, tests/optimizers/test_combo_beta_prior.py)."""

import math

import numpy as np
import pytest
from scipy import integrate

from graphbo.models.priors import (LOG_BETA_UPPER, LOG_LOWER, log_horseshoe_upper, log_horseshoe_upper_of_log,
                                   log_prior_log_signal_variance, log_prior_mean)
from graphbo.models.slice_sampling import slice_sample

TAU = 5.0


def test_priors_have_the_supplement_supports():
    assert log_prior_mean(0.5, y_mean=0.4, y_min=0.0, y_max=1.0) > log_prior_mean(0.9, y_mean=0.4, y_min=0.0, y_max=1.0)
    assert log_prior_mean(1.1, y_mean=0.4, y_min=0.0, y_max=1.0) == -math.inf
    # signal variance between var(y)/K_max and var(y)/K_min
    assert log_prior_log_signal_variance(math.log(2.0), y_var=2.0, k_min=0.1, k_max=1.0) > -math.inf
    assert log_prior_log_signal_variance(math.log(2.0 / 1.5), y_var=2.0, k_min=0.1, k_max=1.0) == -math.inf
    assert log_prior_log_signal_variance(math.log(25.0), y_var=2.0, k_min=0.1, k_max=1.0) == -math.inf
    # Horseshoe proxy decreases in x, with tau controlling the scale
    vals = [log_horseshoe_upper(math.log(x), tau=5.0, upper=math.log(100)) for x in (0.01, 0.1, 1, 10, 99)]
    assert all(a > b for a, b in zip(vals, vals[1:]))
    assert log_horseshoe_upper(math.log(1.0), tau=5.0, upper=math.log(100)) == pytest.approx(math.log(math.log(1 + 50)))
    assert log_horseshoe_upper(math.log(200.0), tau=5.0, upper=math.log(100)) == -math.inf


def test_mean_prior_is_the_supplements_truncated_normal():
    # supplement Eq. 9: N(mean(y), ((y_max - y_min) / 4)^2) on [y_min, y_max], up to a constant
    y_mean, y_min, y_max = 1.5, -2.0, 6.0
    sd = (y_max - y_min) / 4.0
    for m in (-2.0, 0.0, 1.5, 4.0, 6.0):
        assert log_prior_mean(m, y_mean=y_mean, y_min=y_min,
                              y_max=y_max) == pytest.approx(-0.5 * ((m - y_mean) / sd) ** 2, abs=1e-12)
    assert log_prior_mean(-2.001, y_mean=y_mean, y_min=y_min, y_max=y_max) == -math.inf
    assert log_prior_mean(6.001, y_mean=y_mean, y_min=y_min, y_max=y_max) == -math.inf


def test_the_log_scale_density_is_the_proxy_times_the_jacobian():
    for u in (-11.5, -3.0, 0.0, 2.0, 4.5):
        assert log_horseshoe_upper_of_log(u, tau=TAU, upper=LOG_BETA_UPPER) == pytest.approx(
            log_horseshoe_upper(u, tau=TAU, upper=LOG_BETA_UPPER) + u)
    assert log_horseshoe_upper_of_log(LOG_LOWER - 0.1, tau=TAU, upper=LOG_BETA_UPPER) == -math.inf
    assert log_horseshoe_upper_of_log(LOG_BETA_UPPER + 0.1, tau=TAU, upper=LOG_BETA_UPPER) == -math.inf
    # the reference density of log beta grows without bound as beta falls; the paper's falls off
    assert log_horseshoe_upper(-11.0, tau=TAU, upper=LOG_BETA_UPPER) > log_horseshoe_upper(0.0, tau=TAU,
                                                                                           upper=LOG_BETA_UPPER)
    assert log_horseshoe_upper_of_log(-11.0, tau=TAU, upper=LOG_BETA_UPPER) < log_horseshoe_upper_of_log(0.0, tau=TAU,
                                                                                               upper=LOG_BETA_UPPER)


def test_sampling_log_beta_with_the_jacobian_draws_beta_from_the_horseshoe_proxy():
    """A slice-sampling chain on ``log beta`` under the log-scale density, without data, visits ``beta``
    below 1 with the probability the proxy on ``beta`` gives (numerical integral on the support)."""
    lo, hi = math.exp(LOG_LOWER), math.exp(LOG_BETA_UPPER)

    def proxy(x):
        return math.log1p(2 * TAU * TAU / (x * x))

    total = integrate.quad(proxy, lo, hi, points=[1e-3, 1.0, 10.0], limit=200)[0]
    below_one = integrate.quad(proxy, lo, 1.0, points=[1e-3], limit=200)[0] / total
    rng = np.random.default_rng(0)
    u, draws = 0.0, []
    for k in range(12000):
        u, _ = slice_sample(lambda v: log_horseshoe_upper_of_log(v, tau=TAU, upper=LOG_BETA_UPPER), u, rng=rng,
                            width=2.0)
        if k >= 1000:
            draws.append(u)
    frac = float(np.mean(np.exp(draws) < 1.0))
    assert frac == pytest.approx(below_one, abs=0.03), (frac, below_one)
    # the reference density instead piles the chain at the lower bound
    u, ref = 0.0, []
    for k in range(3000):
        u, _ = slice_sample(lambda v: log_horseshoe_upper(v, tau=TAU, upper=LOG_BETA_UPPER), u, rng=rng, width=2.0)
        ref.append(u)
    assert np.median(ref[1000:]) < -6.0 and np.median(draws) > -1.0, (np.median(ref[1000:]), np.median(draws))
