"""The kernels in float32 and float64 (log-EI's float32 tests are in tests/acquisition/test_ei.py).

Before the fix the diffusion kernel's table floor (1e-300) rounded to 0 in float32, so
``log 0 = -inf`` met a one-hot zero and the Gram matrix had NaNs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from graphbo import Categorical, Ordinal
from graphbo.kernels.diffusion import GraphDiffusionKernel, log_floor

VARIABLES = [Ordinal(list(range(40))), Categorical(list("abcde")), Ordinal(list(range(40)))]


def _kernel(dtype):
    return GraphDiffusionKernel([v.spectrum for v in VARIABLES], dtype=dtype)


@pytest.mark.parametrize("log_beta", [math.log(1e-3), math.log(0.3), math.log(50.0)])
def test_diffusion_gram_float32_is_finite_and_matches_float64(log_beta):
    rng = np.random.default_rng(0)
    X = torch.as_tensor(np.stack([rng.integers(0, v.n_values, 30) for v in VARIABLES], axis=1))
    lb = torch.full((2, len(VARIABLES)), log_beta)
    K64 = _kernel(torch.float64).gram(lb.double(), X)
    K32 = _kernel(torch.float32).gram(lb.float(), X)
    assert K32.dtype == torch.float32
    assert torch.isfinite(K32).all()
    # entries agree to float32 precision relative to the largest entry (the diagonal)
    assert torch.allclose(K32.double(), K64, rtol=1e-4, atol=1e-5 * float(K64.abs().max()))


def test_log_floor_is_representable_and_keeps_float64_unchanged():
    assert log_floor(torch.float64) == 1e-300
    f32 = log_floor(torch.float32)
    assert torch.tensor(f32, dtype=torch.float32) > 0 and math.isfinite(math.log(f32))


def test_fm_general_kernel_float32_gradients_are_finite():
    """The general FM family raised ``alpha r^2`` to ``tau / 2`` from a floor of 1e-300, which is 0 in
    float32: the gradient at pairs with equal continuous parts was NaN."""
    from graphbo.kernels.frequency_modulated import FMKernel

    spectra = [v.spectrum for v in VARIABLES[:2]]
    rng = np.random.default_rng(1)
    V = torch.as_tensor(np.stack([rng.integers(0, v.n_values, 12) for v in VARIABLES[:2]], axis=1))
    C = torch.as_tensor(rng.random((12, 2)))
    C[1] = C[0]  # a pair at continuous distance 0
    grams = {}
    for dtype in (torch.float32, torch.float64):
        kernel = FMKernel("general", spectra, n_continuous=2, dtype=dtype)
        params = torch.as_tensor(np.random.default_rng(2).normal(0, 0.5, kernel.size), dtype=dtype)
        params.requires_grad_(True)
        K = kernel(params, V, C.to(dtype))
        K.sum().backward()
        assert torch.isfinite(K).all() and torch.isfinite(params.grad).all(), dtype
        grams[dtype] = K.detach().double()
    assert torch.allclose(grams[torch.float32], grams[torch.float64], rtol=1e-4, atol=1e-5)
