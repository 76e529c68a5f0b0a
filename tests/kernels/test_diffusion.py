import math
import itertools

import numpy as np
import scipy.linalg
import pytest
import torch
from scipy.sparse.csgraph import shortest_path

import graphbo as gb
from graphbo.kernels import GraphDiffusionKernel


def binary_categorical_weighted_ordinal_graph_space():
    adj = [[0, 1.5, 0.5], [1.5, 0, 0], [0.5, 0, 0]]
    return gb.Space({
        "b": gb.Binary(),
        "c": gb.Categorical(["x", "y", "z"]),
        "o": gb.Ordinal([0, 1, 2, 3], edge_weight=2.0),
        "g": gb.GraphVariable(["p", "q", "r"], adj),
    })


def kron_sum(laplacians, weights):
    """Laplacian of the weighted graph Cartesian product: sum_i beta_i I x .. x L_i x .. x I (supp. Eq. 6)."""
    sizes = [L.shape[0] for L in laplacians]
    total = np.zeros((np.prod(sizes),) * 2)
    for i, (L, w) in enumerate(zip(laplacians, weights)):
        mats = [np.eye(k) for k in sizes]
        mats[i] = L
        term = mats[0]
        for m in mats[1:]:
            term = np.kron(term, m)
        total += w * term
    return total


def all_rows(space):
    return np.array(list(itertools.product(*[range(k) for k in space.n_values])))


def test_product_of_factors_equals_explicit_product_graph_kernel():
    space = binary_categorical_weighted_ordinal_graph_space()
    kern = GraphDiffusionKernel([v.spectrum for v in space.variables], unit_diagonal=False)  # Eq. 8 as written
    rng = np.random.default_rng(0)
    log_beta = rng.normal(size=(1, len(space)))
    beta = np.exp(log_beta[0])
    # Eq. (3)-(5) on the full product graph, normalised per variable as in the supplement
    L = kron_sum([v.laplacian for v in space.variables], beta)
    psi = np.prod([np.mean(np.exp(-b * v.spectrum.eigenvalues)) for b, v in zip(beta, space.variables)])
    explicit = scipy.linalg.expm(-L) / psi
    rows = all_rows(space)  # itertools.product is row-major, as np.kron
    ours = kern.gram(torch.tensor(log_beta), torch.tensor(rows))[0].numpy()
    assert np.allclose(ours, explicit, rtol=1e-8, atol=1e-12)
    # the unit-diagonal factors (graphbo's default on paths and other non-walk-regular graphs): the
    # diagonal of a product is the product of diagonals, so their product is the product graph's
    # kernel scaled to unit diagonal
    scaled = GraphDiffusionKernel([v.spectrum for v in space.variables], unit_diagonal=True)
    d = np.sqrt(np.diagonal(explicit))
    assert np.allclose(scaled.gram(torch.tensor(log_beta), torch.tensor(rows))[0].numpy(),
                       explicit / d[:, None] / d[None, :], rtol=1e-8, atol=1e-12)


def test_diagonal_and_cross_gram_are_consistent():
    space = binary_categorical_weighted_ordinal_graph_space()
    kern = GraphDiffusionKernel([v.spectrum for v in space.variables])
    log_beta = torch.tensor(np.random.default_rng(1).normal(size=(3, len(space))))
    X1 = torch.tensor(space.sample_index(7, 0))
    X2 = torch.tensor(space.sample_index(5, 1))
    K12 = kern.gram(log_beta, X1, X2=X2)
    assert K12.shape == (3, 7, 5)
    assert torch.allclose(kern.gram(log_beta, X2, X2=X1), K12.transpose(1, 2))
    assert torch.allclose(torch.exp(kern.log_diag(log_beta, X1)), torch.diagonal(kern.gram(log_beta, X1), dim1=1, dim2=2))
    # the NumPy per-variable tables (used by the slice sampler) give the same product
    prod = np.ones((7, 5))
    for i in range(len(space)):
        t = kern.factor_table(i, float(log_beta[0, i]))
        prod *= t[X1[:, i].numpy()][:, X2[:, i].numpy()]
    assert np.allclose(prod, K12[0].numpy())


def test_graph_distance_is_hamming_for_complete_graphs():
    space = gb.Space({"a": gb.Categorical([0, 1, 2]), "b": gb.Binary(), "c": gb.Categorical("pqrs"[i] for i in range(4))})
    A = kron_sum([(v.adjacency > 0).astype(float) for v in space.variables], np.ones(3))  # adjacency also Kronecker-sums
    dist = shortest_path(A, unweighted=True)
    rows = all_rows(space)
    hamming = (rows[:, None, :] != rows[None, :, :]).sum(-1)
    assert np.array_equal(dist, hamming)


def test_gram_matrices_are_psd():
    space = binary_categorical_weighted_ordinal_graph_space()
    kern = GraphDiffusionKernel([v.spectrum for v in space.variables])
    rng = np.random.default_rng(2)
    for _ in range(5):
        log_beta = torch.tensor(rng.uniform(-6, 4, size=(1, len(space))))
        X = torch.tensor(space.sample_index(60, rng))
        K = kern.gram(log_beta, X)[0]
        eig = torch.linalg.eigvalsh(K)
        assert eig.min() > -1e-9 * eig.max()


def test_large_beta_makes_a_variable_irrelevant_and_zero_beta_makes_it_decisive():
    kern = GraphDiffusionKernel([gb.Binary().spectrum])
    X = torch.tensor([[0], [1]])
    K_big = kern.gram(torch.tensor([[np.log(100.0)]]), X)[0]
    assert torch.allclose(K_big, torch.ones(2, 2, dtype=K_big.dtype), atol=1e-8)
    K_small = kern.gram(torch.tensor([[-12.0]]), X)[0]
    assert float(K_small[0, 1]) < 1e-4 and abs(float(K_small[0, 0]) - 1.0) < 1e-4


def test_mean_correlation_equals_the_heat_kernels_mean_off_diagonal_correlation():
    # mean_correlation (the relevance of COMBO's variables) against an independent computation: the matrix
    # exponential of -beta L with SciPy, normalised to a correlation, averaged over pairs of distinct values;
    # and the closed form tanh(beta) for a binary variable (L has eigenvalues 0 and 2).
    variables = [gb.Binary(), gb.Categorical(["a", "b", "c", "d"]), gb.Ordinal(list(range(5))),
                 gb.Ordinal(list(range(30)))]
    for unit in (True, False):
        kernel = GraphDiffusionKernel([v.spectrum for v in variables], unit_diagonal=unit)
        for i, v in enumerate(variables):
            adj = np.asarray(v.adjacency, dtype=float)
            lap = np.diag(adj.sum(1)) - adj
            k = adj.shape[0]
            for log_beta in (-3.0, -0.5, 0.7):
                heat = scipy.linalg.expm(-math.exp(log_beta) * lap)
                d = np.sqrt(np.diag(heat))
                corr = heat / np.outer(d, d)
                expected = (corr.sum() - k) / (k * (k - 1))
                assert kernel.mean_correlation(i, log_beta) == pytest.approx(expected, rel=1e-6, abs=1e-9)
                if k == 2:
                    assert kernel.mean_correlation(i, log_beta) == pytest.approx(math.tanh(math.exp(log_beta)))
    one = GraphDiffusionKernel([gb.Categorical(["only"]).spectrum])
    assert one.mean_correlation(0, 0.0) == 1.0  # a one-value variable cannot matter


def test_matern_form_is_the_matern52_profile_of_weighted_hamming_distance_on_complete_graphs():
    space = gb.Space({"a": gb.Categorical([0, 1, 2]), "b": gb.Binary(), "c": gb.Categorical(list("pqrs"))})
    kern = GraphDiffusionKernel([v.spectrum for v in space.variables], form="matern52")
    diffusion = GraphDiffusionKernel([v.spectrum for v in space.variables])
    log_beta = torch.tensor([[-1.0, 0.5, -2.0]], dtype=torch.float64)
    rows = all_rows(space)
    # per variable the distance weight of a change: -log of the factor's off-diagonal value
    w = np.array([-math.log(kern.two_values(i, float(log_beta[0, i]))[1]) for i in range(3)])
    d = ((rows[:, None, :] != rows[None, :, :]) * w).sum(-1)
    r = np.sqrt(5 * d)
    expected = (1 + r + r ** 2 / 3) * np.exp(-r)
    ours = kern.gram(log_beta, torch.tensor(rows))[0].numpy()
    assert np.allclose(ours, expected, rtol=1e-10, atol=1e-14)
    assert np.allclose(np.diagonal(ours), 1.0)
    # the same distance as the diffusion form reads: exp(-d) is that kernel
    assert np.allclose(diffusion.gram(log_beta, torch.tensor(rows))[0].numpy(), np.exp(-d), rtol=1e-10)
    # heavier tails: configurations apart are more correlated than under exp(-d)
    apart = d > 1.0
    assert (ours[apart] > np.exp(-d[apart])).all()
    eig = np.linalg.eigvalsh(ours)
    assert eig.min() > -1e-9 * eig.max()


def test_matern_form_needs_unit_diagonal_factors_and_a_known_name():
    spectra = [gb.Ordinal([0, 1, 2, 3]).spectrum]
    with pytest.raises(ValueError, match="unit-diagonal"):
        GraphDiffusionKernel(spectra, form="matern52", unit_diagonal=False)
    with pytest.raises(ValueError, match="form"):
        GraphDiffusionKernel(spectra, form="rbf")
    # on a path the unit-diagonal factors give a zero distance from each value to itself
    kern = GraphDiffusionKernel(spectra, form="matern52")
    X = torch.arange(4)[:, None]
    K = kern.gram(torch.tensor([[0.3]], dtype=torch.float64), X)[0]
    assert torch.allclose(torch.diagonal(K), torch.ones(4, dtype=K.dtype))


def test_mean_correlation_spans_constant_to_uncorrelated():
    space = gb.Space({"o": gb.Ordinal(list(range(6))), "c": gb.Categorical(list("abcd"))})
    kernel = GraphDiffusionKernel([v.spectrum for v in space.variables])
    for i in range(2):
        rho = [kernel.mean_correlation(i, lb) for lb in (-12.0, -2.0, 0.0, 12.0)]
        assert rho[0] == pytest.approx(0.0, abs=1e-3)  # beta -> 0: distinct values uncorrelated
        assert rho[-1] == pytest.approx(1.0, abs=1e-3)  # beta -> inf: a constant factor
        assert 0.0 < rho[1] < rho[2] < 1.0  # and monotone in between
