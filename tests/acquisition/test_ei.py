"""Log expected improvement (graphbo.acquisition.ei): ``log h``, log-EI and its mean over hyper-parameter
samples, in float64 and float32.

In float32, log-EI once floored the variance at 1e-300 (0 in float32) and lost its erfcx branch to
cancellation; the float32 tests check it against float64.
"""

import math

import pytest
import torch

from graphbo.acquisition.ei import log_expected_improvement, log_h, log_mean_expected_improvement


def test_log_h_matches_the_direct_formula():
    z = torch.linspace(-3, 8, 101, dtype=torch.float64)
    direct = torch.exp(-0.5 * z**2) / math.sqrt(2 * math.pi) + z * torch.special.ndtr(z)
    assert torch.allclose(log_h(z), torch.log(direct), rtol=1e-9, atol=1e-12)
    # where the direct formula cancels, compare with the asymptotic series phi(z)/z^2 (1 - 3/z^2 + 15/z^4 - 105/z^6)
    z = torch.linspace(-40, -8, 50, dtype=torch.float64)
    series = -0.5 * z**2 - 0.5 * math.log(2 * math.pi) - 2 * torch.log(-z) + torch.log(1 - 3 / z**2 + 15 / z**4 - 105 / z**6)
    assert torch.allclose(log_h(z), series, atol=1e-4)
    far = log_h(torch.tensor([-50.0, -1e5], dtype=torch.float64))
    assert torch.isfinite(far).all() and far[0] > far[1]


def test_expected_improvement_orders_candidates():
    mean = torch.tensor([[0.0, 1.0, 2.0]], dtype=torch.float64)
    var = torch.ones_like(mean)
    lei = log_expected_improvement(mean, var, best=0.5)[0]
    assert lei[0] > lei[1] > lei[2]
    # averaging over samples equals log of the mean EI
    mean2 = torch.tensor([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0]], dtype=torch.float64)
    var2 = torch.ones_like(mean2)
    avg = log_mean_expected_improvement(mean2, var2, best=0.5)
    direct = torch.log(torch.exp(log_expected_improvement(mean2, var2, best=0.5)).mean(0))
    assert torch.allclose(avg, direct)


@pytest.mark.parametrize("z", [3.0, 0.0, -0.9, -2.0, -30.0, -300.0, -3000.0, -5e4])
def test_log_h_float32_matches_float64(z):
    want = float(log_h(torch.tensor([z], dtype=torch.float64)))
    got = log_h(torch.tensor([z], dtype=torch.float32))
    assert got.dtype == torch.float32
    assert math.isfinite(float(got))
    assert float(got) == pytest.approx(want, rel=1e-6, abs=1e-5)


def test_log_ei_float32_tiny_variance_and_far_incumbent():
    mean = torch.tensor([0.0, 0.0, 5.0, 1.0], dtype=torch.float32)
    var = torch.tensor([1e-40, 0.0, 1e-6, 1.0], dtype=torch.float32)  # below float32's normal range, zero
    got = log_expected_improvement(mean, var, best=-0.5)
    want = log_expected_improvement(mean.double(), var.double(), best=-0.5)
    assert got.dtype == torch.float32 and not torch.isnan(got).any()
    # where log EI is representable in float32 the values agree; below float32's range it is -inf
    finite = want.abs() < torch.finfo(torch.float32).max
    assert torch.allclose(got.double()[finite], want[finite], rtol=1e-6)
    assert torch.equal(torch.isfinite(got), finite)
