"""Defects that GPyTorch's kernel test case found in graphbo's GPyTorch kernels.

* Batched kernels could not be indexed: the per-variable column vectors were buffers, and
  GPyTorch indexes every buffer by the batch index (``kernel[0]`` read column 0 only, or
  raised). The same indexing runs inside GPyTorch when a batched multi-output model's lazily
  evaluated covariance is indexed by output. GPyTorch also indexed ``active_dims``.
* In float32 the ``general`` frequency-modulated kernel had NaN gradients (graphbo's FMKernel
  floors ``alpha r^2`` at 1e-300, which is 0 in float32); the FM wrappers now compute in float64.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

pytest.importorskip("botorch")

from botorch.fit import fit_gpytorch_mll  # noqa: E402
from botorch.models import SingleTaskGP  # noqa: E402
from gpytorch.kernels import ScaleKernel  # noqa: E402
from gpytorch.mlls import ExactMarginalLogLikelihood  # noqa: E402

import graphbo as gb  # noqa: E402
from graphbo.integrations.gpytorch import FM_KERNELS, DiffusionKernel, FrequencyModulatedKernel  # noqa: E402

D = torch.float64


def interleaved_unit_mixed_space():
    return gb.Space({
        "x": gb.Continuous(0.0, 1.0),
        "a": gb.Binary(),
        "c": gb.Categorical(["p", "q", "r"]),
        "y": gb.Continuous(0.0, 1.0),
        "o": gb.Ordinal([0, 1, 2, 3, 4]),
    })


def rows(space, n, seed, dtype=D):
    return torch.tensor(space.sample_index(n, np.random.default_rng(seed)), dtype=dtype)


def make(name, space, **kwargs):
    if name == "diffusion":
        return DiffusionKernel(space, **kwargs)
    return FrequencyModulatedKernel(space, modulation=name, **kwargs)


def spread(kernel, seed=0):
    """Move every raw hyper-parameter by a different random amount per batch member."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, raw in sorted(kernel.named_parameters()):
            raw.add_(0.5 * torch.randn(raw.shape, generator=gen, dtype=raw.dtype))
    return kernel


def member(kernel, name, space, index, **kwargs):
    """A new unbatched kernel whose raw hyper-parameters are those of batch member ``index``."""
    single = make(name, space, **kwargs).to(D)
    with torch.no_grad():
        for pname, raw in single.named_parameters():
            raw.copy_(dict(kernel.named_parameters())[pname][index])
    return single


KINDS = ["diffusion", "modlap", "general"]


@pytest.mark.parametrize("name", KINDS)
def test_indexing_a_batched_kernel_gives_the_member_kernel(name):
    space = interleaved_unit_mixed_space()
    X = rows(space, 12, 0)
    kernel = spread(make(name, space, batch_shape=torch.Size([2, 3])).to(D))
    K = kernel(X).to_dense()
    assert K.shape == (2, 3, 12, 12)
    for index in [(0, 0), (1, 2), (0, 1)]:
        want = member(kernel, name, space, index)(X).to_dense()
        assert torch.allclose(kernel[index](X).to_dense(), want, rtol=1e-12, atol=1e-14)
        assert torch.allclose(K[index], want, rtol=1e-12, atol=1e-14)
    # the members differ, so the comparison above could tell them apart
    assert not torch.allclose(K[0, 0], K[1, 2])
    # a partial index keeps the remaining batch dimension
    row = kernel[1]
    assert row.batch_shape == torch.Size([3])
    assert torch.allclose(row(X).to_dense(), K[1], rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["diffusion", "modlap"])
def test_indexing_and_expanding_keep_active_dims(name):
    space = interleaved_unit_mixed_space()
    dims = [1, 3, 4, 6, 7]
    wide = torch.zeros(10, 8, dtype=D)
    wide[:, dims] = rows(space, 10, 1)
    wide[:, [0, 2, 5]] = 7.5  # columns the kernel must not read (not valid index rows)
    kernel = spread(make(name, space, batch_shape=torch.Size([2]), active_dims=dims).to(D))
    want = member(kernel, name, space, 1)(wide[:, dims]).to_dense()
    assert torch.equal(kernel[1].active_dims, torch.tensor(dims))
    assert torch.allclose(kernel[1](wide).to_dense(), want, rtol=1e-12, atol=1e-14)
    expanded = kernel.expand_batch(torch.Size([4, 2]))
    assert expanded.batch_shape == torch.Size([4, 2])
    assert torch.equal(expanded.active_dims, torch.tensor(dims))
    assert torch.allclose(expanded(wide).to_dense()[3, 1], want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["diffusion", "modlap"])
def test_batched_multi_output_single_task_gp_matches_one_model_per_output(name):
    space = interleaved_unit_mixed_space()
    X = rows(space, 24, 2)
    Y = torch.stack([torch.sin(3 * X[:, 0]) + 0.5 * X[:, 4], (X[:, 2] == 1).to(D) - X[:, 1] + X[:, 3]], dim=-1)
    batch = torch.Size([2])
    model = SingleTaskGP(X, Y, covar_module=ScaleKernel(make(name, space, batch_shape=batch), batch_shape=batch))
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    Xt = rows(space, 8, 3)
    post = model.posterior(Xt)
    assert post.mean.shape == (8, 2)
    assert torch.isfinite(post.mean).all() and torch.isfinite(post.variance).all()
    assert (post.variance > 0).all()

    # the prior covariance per output: GPyTorch indexes the lazily evaluated kernel (and so the kernel)
    prior = model.forward(Xt).lazy_covariance_matrix
    for j in range(2):
        assert torch.allclose(prior[j].to_dense(), model.covar_module[j](Xt).to_dense(), rtol=1e-10, atol=1e-12)

    # each output on its own: the batch member's kernel, noise and mean give the batched model's posterior
    for j in range(2):
        single = SingleTaskGP(X, Y[:, j:j + 1], covar_module=model.covar_module[j])
        single.likelihood.noise = model.likelihood.noise[j]
        single.mean_module.constant.data.copy_(model.mean_module.constant.data[j])
        single.eval()
        got = single.posterior(Xt)
        assert torch.allclose(got.mean.squeeze(-1), post.mean[:, j], rtol=1e-6, atol=1e-8)
        assert torch.allclose(got.variance.squeeze(-1), post.variance[:, j], rtol=1e-6, atol=1e-8)


def _gram_and_gradient(kernel, X):
    K = kernel(X).to_dense()
    diag = kernel(X, diag=True)
    kernel.zero_grad()
    (K * torch.linspace(-1.0, 1.0, K.numel(), dtype=K.dtype).reshape(K.shape)).sum().backward()
    grad = torch.cat([p.grad.reshape(-1) for _, p in sorted(kernel.named_parameters())])
    return K.detach(), diag.detach(), grad


@pytest.mark.parametrize("scale", [1e-3, 1.0, 50.0])
@pytest.mark.parametrize("name", ["diffusion", *FM_KERNELS])
def test_float32_gram_and_gradients_are_finite_and_match_float64(name, scale):
    space = gb.Space({"x": gb.Continuous(0.0, 1.0), "o": gb.Ordinal(list(range(40))),
                      "c": gb.Categorical(list("abcde")), "y": gb.Continuous(0.0, 1.0)})
    X = rows(space, 30, 4)
    results = {}
    for dtype in (torch.float64, torch.float32):
        kernel = make(name, space).to(dtype)
        for pname in ("beta", "theta", "alpha", "sigma", "w"):
            if hasattr(kernel, f"raw_{pname}"):
                setattr(kernel, pname, scale)
        results[dtype] = _gram_and_gradient(kernel, X.to(dtype))
    (K64, d64, g64), (K32, d32, g32) = results[torch.float64], results[torch.float32]
    assert K32.dtype == d32.dtype == g32.dtype == torch.float32
    assert torch.isfinite(K32).all() and torch.isfinite(d32).all() and torch.isfinite(g32).all()
    top = float(K64.abs().max())
    assert torch.allclose(K32.double(), K64, rtol=1e-5, atol=1e-5 * top)
    assert torch.allclose(d32.double(), d64, rtol=1e-5, atol=1e-5 * top)
    assert torch.allclose(d32.double(), torch.diagonal(K64), rtol=1e-5, atol=1e-5 * top)
    assert torch.allclose(g32.double(), g64, rtol=1e-3, atol=1e-3 * float(g64.abs().max()) + 1e-6)
    assert math.isfinite(float(g64.abs().max()))
