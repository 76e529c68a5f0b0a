"""FMKernel pieces that mutation testing (mutmut over graphbo.kernels) found unchecked.

The comparison kernels of BO-FM supplement E (an RBF kernel on the continuous part with a graph
kernel on the discrete part, as a product or a mixture), the RBF fall-back of a space without
discrete variables, the hyper-parameter layout and the N(0, 3^2) prior were only ever compared
with themselves (reference formulas read the parameters through ``FMKernel.unpack``).
"""

import math

import numpy as np
import pytest
import torch

import graphbo as gb
from graphbo.kernels.frequency_modulated import FMKernel, unpack_params
from support import fm_kernel, split_rows


def mixed_space_three_continuous():
    return gb.Space({"a": gb.Categorical(["p", "q", "r"]), "x": gb.Continuous(0.0, 1.0),
                     "b": gb.Ordinal([1, 2, 3, 4, 5]), "y": gb.Continuous(-1.0, 1.0), "z": gb.Continuous(0.0, 2.0)})


def test_unpack_params_splits_the_vector_in_layout_order():
    params = torch.arange(10.0)
    out = unpack_params([("a", 2), ("b", 3), ("c", 4), ("d", 1)], params)
    assert [out[k].tolist() for k in "abcd"] == [[0.0, 1.0], [2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0]]


@pytest.mark.parametrize("name, sizes", [
    ("modlap", {"log_theta": 3, "log_beta": 2, "log_alpha": 2}),
    ("general", {"log_theta": 3, "log_beta": 2, "log_alpha": 2, "log_w": 4, "logit_tau": 1}),
    ("fnn", {"log_theta": 3, "log_beta": 2, "log_sigma": 4}),  # one sigma per input and the bias (R&W Eq. 4.29)
    ("addlap", {"log_theta": 3, "log_beta": 2, "logit_mix": 1}),
])
def test_parameter_layout_has_one_entry_per_hyper_parameter(name, sizes):
    space = mixed_space_three_continuous()  # 2 discrete, 3 continuous variables
    k = FMKernel(name, [space.variables[j].spectrum for j in space.discrete_indices], n_continuous=3, n_terms=4)
    assert dict(k.layout) == sizes
    assert k.size == sum(sizes.values())
    p = k.unpack(torch.arange(float(k.size)))
    assert torch.equal(torch.cat([p[n] for n, _ in k.layout]), torch.arange(float(k.size)))


def test_log_prior_is_independent_normals_with_sd_3():
    k = fm_kernel(mixed_space_three_continuous(), "modlap")
    params = torch.as_tensor(np.random.default_rng(0).normal(0, 2, k.size))
    expected = sum(-0.5 * (float(t) / 3.0) ** 2 for t in params)  # log N(t; 0, 9) up to a constant
    assert float(k.log_prior(params)) == pytest.approx(expected, rel=1e-12)
    assert float(k.log_prior(torch.zeros(k.size, dtype=torch.float64))) == 0.0


def _graph_kernel_written_out(space, name, log_beta, V1, V2):
    """prod_p U^p diag(g(lambda^p)) U^p^T / mean g(lambda^p), g = 1/(1 + beta lambda) or exp(-beta lambda)."""
    K = np.ones((len(V1), len(V2)))
    for q, j in enumerate(space.discrete_indices):
        lam, U = space.variables[j].spectrum.eigenvalues, space.variables[j].spectrum.eigenvectors
        beta = math.exp(log_beta[q])
        g = 1 / (1 + beta * lam) if name.endswith("lap") else np.exp(-beta * lam)
        K *= (U[V1[:, q]] * g) @ U[V2[:, q]].T / g.mean()
    return K


@pytest.mark.parametrize("name", ["prodlap", "addlap", "proddif", "adddif"])
def test_comparison_kernels_match_supplement_e_written_out(name):
    space = mixed_space_three_continuous()
    k = fm_kernel(space, name)
    rng = np.random.default_rng(3)
    params = k.random_params(rng)
    p = {n: v.numpy() for n, v in zip([n for n, _ in k.layout], torch.split(params, [s for _, s in k.layout]))}
    V1, C1 = split_rows(space, space.sample_index(12, rng))
    V2, C2 = split_rows(space, space.sample_index(9, rng))
    theta = np.exp(p["log_theta"])
    r2 = ((((C1.numpy()[:, None, :] - C2.numpy()[None, :, :])) / theta) ** 2).sum(-1)
    rbf = np.exp(-0.5 * r2)
    g = _graph_kernel_written_out(space, name, p["log_beta"], V1.numpy(), V2.numpy())
    if name.startswith("prod"):
        expected = rbf * g
    else:
        w = 1 / (1 + np.exp(-p["logit_mix"][0]))
        expected = w * rbf + (1 - w) * g
    np.testing.assert_allclose(k(params, V1, C1, V2, C2).numpy(), expected, rtol=1e-12, atol=1e-14)


def test_without_discrete_variables_the_kernel_is_the_rbf_kernel():
    space = gb.Space({"x": gb.Continuous(0.0, 1.0), "y": gb.Continuous(0.0, 1.0)})
    k = FMKernel("modlap", [], n_continuous=2)
    log_theta = torch.tensor([-1.0, 0.5], dtype=torch.float64)
    rows = torch.as_tensor(space.sample_index(7, 0))
    V = torch.zeros(7, 0, dtype=torch.long)
    expected = np.exp(-0.5 * (((rows.numpy()[:, None] - rows.numpy()[None]) / np.exp(log_theta.numpy())) ** 2).sum(-1))
    np.testing.assert_allclose(k(log_theta, V, rows).numpy(), expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["modlap", "general", "fnn", "prodlap", "adddif"])
@pytest.mark.parametrize("variables", [
    {"a": gb.Categorical(list("pqrs")), "x": gb.Continuous(0.0, 1.0)},  # one discrete variable
    {"a": gb.Categorical(list("pqr")), "b": gb.Ordinal([1, 2, 3, 4])},  # no continuous variable
])
def test_diag_matches_the_gram_diagonal_with_one_discrete_or_no_continuous_variable(name, variables):
    space = gb.Space(variables)
    k = fm_kernel(space, name)
    params = k.random_params(np.random.default_rng(4))
    V, C = split_rows(space, space.sample_index(25, 5))
    K = k(params, V, C)
    assert torch.allclose(k.diag(params, V, C=C), torch.diagonal(K), rtol=1e-10)
    assert not torch.allclose(K, torch.ones_like(K))  # the discrete part is not dropped
