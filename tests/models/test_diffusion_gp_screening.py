"""The screening of a conditioned DiffusionGP (graphbo.models.diffusion_gp_screening): its lower bound of the
posterior mean and upper bound of the variance hold for every hyper-parameter sample, in either dtype, however
the model is conditioned and whatever torch's float32 matrix-product settings, and the variance bound is tight
beside the data."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import graphbo as gb
from graphbo.acquisition.confidence_bound import NegativeLowerConfidenceBound
from graphbo.acquisition.ei import LogExpectedImprovement
from support import combo_bound_cases, fitted_combo


@pytest.mark.parametrize("case", [0, 1])
def test_variance_bound_holds_and_is_tight_beside_the_data(case):
    """The variance bound from the nearest data point never falls below the exact posterior variance and is
    far below the prior variance at the data's own rows; the float32 mean bound
    never exceeds the exact mean and stays within a thousandth of the data's spread of it."""
    space, f = combo_bound_cases()[case]
    opt = fitted_combo(space, f, 40, seed=case)
    model = opt.model
    rng = np.random.default_rng(5)
    nbrs, _ = space.neighbor_index_batch(opt.X[:10])
    rows = np.concatenate([opt.X, nbrs, space.sample_index(500, rng)])
    mean, bound = model.screening().mean_and_variance_bound(rows)
    post = model.posterior(rows)
    assert torch.all(mean <= post.mean)
    assert float((post.mean - mean).max()) < 1e-3 * float(np.ptp(opt.y))
    assert torch.all(bound >= post.variance)
    prior = model.prior_variance(model.kernel.one_hot(torch.as_tensor(opt.X)))
    noise = torch.tensor([np.exp(s.log_noise) for s in model.samples], dtype=prior.dtype)[:, None]
    at_data = bound[:, :opt.X.shape[0]]
    # prior * noise / (prior + noise) exactly, plus the float32 kernel values' relative error times the prior
    assert torch.all(at_data <= prior * noise / (prior + noise) + 1e-3 * prior)


@pytest.mark.parametrize("log_beta", [-12.0, -3.0, 0.0, 4.6])
def test_float32_mean_bound_holds_for_extreme_kernel_tables(log_beta):
    """Long ordinals (tables down to the 1e-300 floor for small beta), categoricals and binaries, a large
    amplitude and tiny noise: the float32 mean bound stays below the float64 mean, the variance bound above
    the variance."""
    from graphbo.models.diffusion_gp import DiffusionGP, HyperSample

    space = gb.Space({"o": gb.Ordinal(list(range(200))), "p": gb.Ordinal(list(range(60))),
                      "c": gb.Categorical(list("abcdefgh")), **{f"b{i}": gb.Binary() for i in range(20)}})
    rng = np.random.default_rng(0)
    X = space.sample_index(150, rng)
    y = np.sin(X[:, 0] / 9.0) * 40 + X[:, 3:].sum(1) + rng.normal(size=150)
    kernel = gb.GraphDiffusionKernel([v.spectrum for v in space.variables])
    samples = [HyperSample(mean=float(y.mean()), log_amp=math.log(1e4), log_noise=math.log(1e-6),
                           log_beta=np.full(23, log_beta) + rng.normal(size=23))
               for _ in range(3)]
    model = DiffusionGP(kernel).condition(X, y, samples=samples)
    rows = np.concatenate([X, space.sample_index(3000, rng)])
    mean, bound = model.screening().mean_and_variance_bound(rows)
    post = model.posterior(rows)
    assert torch.all(mean <= post.mean)
    assert torch.all(bound >= post.variance)


def _conditioned(dtype, log_amp, log_noise, log_beta, n=120, seed=0):
    from graphbo.models.diffusion_gp import DiffusionGP, HyperSample

    space = gb.Space({"o": gb.Ordinal(list(range(30))), "c": gb.Categorical(list("abcde")),
                      **{f"b{i}": gb.Binary() for i in range(6)}})
    rng = np.random.default_rng(seed)
    X = space.sample_index(n, rng)
    y = np.sin(X[:, 0] / 5.0) * 3 + X[:, 2:].sum(1) + 0.01 * rng.normal(size=n)
    kernel = gb.GraphDiffusionKernel([v.spectrum for v in space.variables], dtype=dtype)
    samples = [HyperSample(mean=float(y.mean()), log_amp=log_amp, log_noise=log_noise,
                           log_beta=np.full(8, log_beta) + rng.normal(size=8) * 0.5)
               for _ in range(3)]
    rows = np.concatenate([X, space.neighbor_index_batch(X[:20])[0], space.sample_index(500, rng)])
    return DiffusionGP(kernel).condition(X, y, samples=samples), rows


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("log_amp, log_noise, log_beta", [(0.0, -12.0, 0.0), (4.0, -12.0, -1.0), (8.0, -12.0, 1.0),
                                                         (2.0, -9.0, -3.0)])
def test_bounds_hold_in_either_dtype_however_conditioned(dtype, log_amp, log_noise, log_beta):
    """Tiny noise against large amplitudes (condition numbers up to ~1e9): in a float32 model the rounding of
    the subtraction and of the quadratic form, and in either dtype that of the mean, must not put a bound
    on the wrong side of the value posterior() computes, nor the acquisition's bound below its score."""
    model, rows = _conditioned(dtype, log_amp, log_noise, log_beta)
    mean, bound = model.screening().mean_and_variance_bound(rows)
    post = model.posterior(rows)
    assert torch.all(mean <= post.mean)
    assert torch.all(bound >= post.variance)
    for acq in (LogExpectedImprovement(model), NegativeLowerConfidenceBound(model, kappa=2.0)):
        assert np.all(acq.upper_bound(rows).double().numpy() >= acq(rows).double().numpy())


def test_bounds_hold_without_ieee_float32_products_and_settings_never_break_conditioning():
    """With TF32 / bfloat16 float32 products (the legacy and the new torch settings) the bound pass stays in the
    model's dtype; a mix of the two kinds of settings, which torch refuses to read, must not break a fit."""
    from graphbo.models.diffusion_gp_screening import _ieee_float32_products

    cpu = torch.device("cpu")
    assert _ieee_float32_products(cpu)
    legacy = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")
        assert not _ieee_float32_products(cpu)
        model, rows = _conditioned(torch.float64, 18.0, -12.0, 1.0, n=200)
        mean, bound = model.screening().mean_and_variance_bound(rows)
        post = model.posterior(rows)
        assert torch.all(mean <= post.mean) and torch.all(bound >= post.variance)
    finally:
        torch.set_float32_matmul_precision(legacy)
    cuda_setting = torch.backends.cuda.matmul.fp32_precision
    try:
        torch.backends.cuda.matmul.fp32_precision = "tf32"  # a new-style setting beside the legacy one
        assert not _ieee_float32_products(torch.device("cuda"))
        model, rows = _conditioned(torch.float64, 0.0, -6.0, 0.0, n=30)
        mean, _ = model.screening().mean_and_variance_bound(rows)
        assert torch.all(mean <= model.posterior(rows).mean)
    finally:
        torch.backends.cuda.matmul.fp32_precision = cuda_setting
