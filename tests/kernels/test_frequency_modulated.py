"""The frequency-modulated kernels (graphbo.kernels.frequency_modulated, BO-FM's Eq. 5): positive definite, a
similarity measure where the paper says so, the graph kernel where the continuous parts coincide, Eq. 5 written
out, their gradients, and the fast paths (blocked Gram matrix, the FM product's backward pass, the projector
grids and the diagonal's cache) against the plain ones."""

import numpy as np
import pytest
import torch

import graphbo as gb
from graphbo.kernels import frequency_modulated as fm
from graphbo.kernels.frequency_modulated import KERNELS, FMKernel
from support import bofm_screening_cases, fm_kernel, split_rows


def mixed_space_with_graph():
    adj = [[0, 1, 0, 0], [1, 0, 2, 0], [0, 2, 0, 1], [0, 0, 1, 0]]
    return gb.Space({
        "a": gb.Categorical(["p", "q", "r"]),
        "x": gb.Continuous(0.0, 1.0),
        "b": gb.Ordinal([1, 2, 3, 4, 5]),
        "y": gb.Continuous(-1.0, 1.0),
        "g": gb.GraphVariable(list("wxyz"), adj),
    })


@pytest.mark.parametrize("name", KERNELS)
def test_gram_matrices_are_psd_on_random_mixed_data(name):
    """Thm 3.1: FM kernels with a positive definite modulating function are PD jointly."""
    space = mixed_space_with_graph()
    k = fm_kernel(space, name)
    rng = np.random.default_rng(0)
    for _ in range(4):
        params = k.random_params(rng)
        V, C = split_rows(space, space.sample_index(80, rng))
        K = k(params, V, C)
        assert torch.allclose(K, K.T, atol=1e-12)
        eig = torch.linalg.eigvalsh(K)
        assert float(eig.min()) > -1e-9 * float(eig.max())


@pytest.mark.parametrize("name", ["modlap", "general", "fnn", "moddif"])
def test_kernel_values_are_non_negative(name):
    """Thm 3.2: decreasing convex modulation gives a non-negative similarity."""
    space = mixed_space_with_graph()
    k = fm_kernel(space, name)
    rng = np.random.default_rng(1)
    for _ in range(4):
        V, C = split_rows(space, space.sample_index(60, rng))
        assert float(k(k.random_params(rng), V, C).min()) >= -1e-12


def test_modlap_is_a_similarity_measure_and_moddif_is_not():
    """Eq. 3: a larger continuous distance never increases ModLap (random pairs); ModDif can (Sec. 3.3)."""
    space = mixed_space_with_graph()
    rng = np.random.default_rng(2)
    lap = fm_kernel(space, "modlap")
    for _ in range(200):
        params = lap.random_params(rng)
        V, C = split_rows(space, space.sample_index(2, rng))
        far = C.clone()
        far[1] = C[0] + 1.7 * (C[1] - C[0])  # same direction, larger distance
        k_near = lap(params, V[:1], C[:1], V[1:], C[1:])
        k_far = lap(params, V[:1], C[:1], V[1:], far[1:])
        assert float(k_near) >= float(k_far) - 1e-12
    # a counterexample for ModDif: two different values of a binary variable become MORE similar
    # as the continuous distance grows, because the modulation flattens the spectrum
    space2 = gb.Space({"b": gb.Binary(), "x": gb.Continuous(0.0, 1.0)})
    dif = fm_kernel(space2, "moddif")
    params = torch.zeros(dif.size, dtype=torch.float64)  # theta = alpha = beta = 1
    V = torch.tensor([[0], [1]])
    k_near = dif(params, V[:1], torch.tensor([[0.0]]), V[1:], torch.tensor([[0.0]]))
    k_far = dif(params, V[:1], torch.tensor([[0.0]]), V[1:], torch.tensor([[1.0]]))
    assert float(k_far) > float(k_near)


@pytest.mark.parametrize("name, g", [("modlap", lambda bl: 1 / (1 + bl)), ("moddif", lambda bl: np.exp(-bl)),
                                     ("prodlap", lambda bl: 1 / (1 + bl)), ("proddif", lambda bl: np.exp(-bl))])
def test_reduces_to_the_graph_kernel_when_continuous_parts_coincide(name, g):
    space = mixed_space_with_graph()
    k = fm_kernel(space, name)
    params = k.random_params(np.random.default_rng(3))
    rows = space.sample_index(30, 4)
    V, C = split_rows(space, rows)
    C_same = C[:1].expand_as(C)  # every point at the same continuous location
    K = k(params, V, C_same).numpy()
    beta = np.exp(k.unpack(params)["log_beta"].numpy())
    expected = np.ones((30, 30))
    for q, j in enumerate(space.discrete_indices):
        lam, U = space.variables[j].spectrum.eigenvalues, space.variables[j].spectrum.eigenvectors
        gv = g(beta[q] * lam)
        table = U @ np.diag(gv / gv.mean()) @ U.T
        expected *= table[V[:, q]][:, V[:, q]]
    assert np.allclose(K, expected, rtol=1e-10)


def test_unknown_kernel_name():
    with pytest.raises(ValueError, match="unknown kernel"):
        FMKernel("rbf2", [], n_continuous=1)


@pytest.mark.parametrize("name", KERNELS)
def test_diag_matches_the_gram_diagonal(name):
    space = mixed_space_with_graph()
    k = fm_kernel(space, name)
    params = k.random_params(np.random.default_rng(5))
    V, C = split_rows(space, space.sample_index(40, 6))
    assert torch.allclose(k.diag(params, V, C=C), torch.diagonal(k(params, V, C)), rtol=1e-10)


def reference_fm(name, k, space, params, V1, C1, V2, C2):
    """Eq. (5) written out in NumPy: a sum over every eigenvalue of every variable (no eigenspaces, no batching)."""
    p = {key: v.numpy() for key, v in k.unpack(params).items()}
    c1, c2 = C1.numpy() / np.exp(p["log_theta"]), C2.numpy() / np.exp(p["log_theta"])
    r2 = ((c1[:, None, :] - c2[None, :, :]) ** 2).sum(-1)
    if name == "fnn":
        s = np.exp(p["log_sigma"])
        x1 = np.hstack([np.ones((len(c1), 1)), 2 * C1.numpy() - 1])
        x2 = np.hstack([np.ones((len(c2), 1)), 2 * C2.numpy() - 1])
        n1, n2 = 1 + 2 * (x1**2 * s).sum(1), 1 + 2 * (x2**2 * s).sum(1)
        knn = 2 / np.pi * np.arcsin(2 * (x1 * s) @ x2.T / np.sqrt(n1[:, None] * n2[None, :]))
    K = np.ones((len(c1), len(c2)))
    for q, j in enumerate(space.discrete_indices):
        lam, U = space.variables[j].spectrum.eigenvalues, space.variables[j].spectrum.eigenvectors
        beta = np.exp(p["log_beta"][q])
        bl = beta * lam[None, None, :]
        if name == "fnn":
            F, F0 = 1 / (2 + bl - knn[..., None]), 1 / (1 + beta * lam)
        else:
            ar2 = np.exp(p["log_alpha"][q]) * r2[..., None]
            if name == "modlap":
                F, F0 = 1 / (1 + bl + ar2), 1 / (1 + beta * lam)
            elif name == "moddif":
                F, F0 = np.exp(-(1 + ar2) * bl), np.exp(-beta * lam)
            else:  # general
                tau = 2 / (1 + np.exp(-p["logit_tau"][0]))
                w = np.exp(p["log_w"])
                inv, inv0 = 1 / (1 + bl + ar2 ** (tau / 2)), 1 / (1 + beta * lam)
                F = sum(w[n] * inv ** (n + 1) for n in range(len(w)))
                F0 = sum(w[n] * inv0 ** (n + 1) for n in range(len(w)))
        K *= np.einsum("ai,abi,bi->ab", U[V1[:, q].numpy()], F, U[V2[:, q].numpy()]) / F0.mean()
    return K


@pytest.mark.parametrize("name", ["modlap", "moddif", "general", "fnn"])
def test_batched_fm_gram_matches_eq5_written_out(name):
    """Every evaluation path (autograd on precomputed pairs, symmetric or not; in-place without grad) is Eq. (5)."""
    space = mixed_space_with_graph()
    k = fm_kernel(space, name)
    rng = np.random.default_rng(7)
    for _ in range(3):
        params = k.random_params(rng)
        V1, C1 = split_rows(space, space.sample_index(30, rng))
        V2, C2 = split_rows(space, space.sample_index(17, rng))
        for A, B in (((V1, C1), (V1, C1)), ((V1, C1), (V2, C2))):
            expected = reference_fm(name, k, space, params, *A, *B)
            scale = np.abs(expected).max()
            with torch.no_grad():  # the in-place prediction path
                fast = k(params, *A, *B).numpy()
            grad_path = k(params.clone().requires_grad_(), *A, *B).detach().numpy()
            assert np.abs(fast - expected).max() <= 1e-12 * scale
            assert np.abs(grad_path - expected).max() <= 1e-12 * scale
        # precomputed symmetric pairs (ML-II): only the upper triangle is computed, mirrored exactly
        K = k.gram(params, k.pairs(V1, C1)).numpy()
        assert np.array_equal(K, K.T)
        assert np.abs(K - reference_fm(name, k, space, params, V1, C1, V1, C1)).max() <= 1e-12 * np.abs(K).max()


@pytest.mark.parametrize("name", ["modlap", "moddif", "fnn", "general"])
def test_fm_gram_gradients_match_finite_differences(name):
    """The hand-written backward pass (modlap, moddif, fnn) and autograd (general), in hyper-parameters and inputs."""
    space = mixed_space_with_graph()
    k = fm_kernel(space, name)
    rng = np.random.default_rng(8)
    params = (k.random_params(rng) * 0.5).requires_grad_()
    V1, C1 = split_rows(space, space.sample_index(6, rng))
    V2, C2 = split_rows(space, space.sample_index(5, rng))
    C1 = C1.clone().requires_grad_()
    weights = torch.as_tensor(rng.normal(size=(6, 6)))
    assert torch.autograd.gradcheck(lambda t: (k.gram(t, k.pairs(V1, C1.detach())) * weights).sum(), (params,))
    assert torch.autograd.gradcheck(lambda t, c: k(t, V1, c, V2, C2), (params, C1))


@pytest.mark.parametrize("name", ["modlap", "moddif", "fnn", "general"])
def test_blocked_gram_and_diagonal_equal_eq5(name, monkeypatch, categorical_binary_integer_two_continuous_space):
    space = categorical_binary_integer_two_continuous_space
    kernel = fm_kernel(space, name)
    assert any(c is not None for cs in kernel._es_const for c in cs)  # complete graphs: constant projectors
    assert any(all(c is None for c in cs[1:]) and len(cs) > 2 for cs in kernel._es_const)  # the path graph
    monkeypatch.setattr(fm, "_BLOCK_ENTRIES", 7 * 23)  # several blocks of 7 rows, the last one short
    rng = np.random.default_rng(3)
    A, B = space.sample_index(45, rng).astype(float), space.sample_index(23, rng).astype(float)
    V1, C1 = split_rows(space, A)
    V2, C2 = split_rows(space, B)
    for _ in range(3):
        params = torch.tensor(rng.normal(0.0, 1.0, kernel.size))
        reference = kernel.gram(params, kernel.pairs(V1, C1, V2=V2, C2=C2))  # autograd path, all pairs at once
        fast = kernel(params, V1, C1, V2, C2)  # no gradient needed: the blocked path
        assert torch.allclose(fast, reference, rtol=1e-9, atol=1e-15)  # path graphs: cancellation
        square = kernel.gram(params, kernel.pairs(V1, C1))
        assert torch.allclose(kernel.diag(params, V1, C=C1), torch.diagonal(square), rtol=1e-9, atol=1e-15)


def _product_inputs(zero_factor: bool) -> tuple[torch.Tensor, ...]:
    rng = np.random.default_rng(7)
    var = torch.tensor([0, 0, 1, 1, 1, 2])
    J, T, P = var.numel(), 9, 3
    a = torch.tensor(rng.uniform(1.0, 2.0, J), requires_grad=True)
    b = torch.tensor(rng.uniform(0.2, 1.0, J), requires_grad=True)
    x = torch.tensor(rng.uniform(0.0, 2.0, T), requires_grad=True)
    norms = torch.tensor(rng.uniform(0.5, 1.5, P), requires_grad=True)
    G = torch.tensor(rng.uniform(0.1, 1.0, (J, T)))
    if zero_factor:
        G[var == 1, 4] = 0.0  # variable 1's factor is exactly 0 at pair 4
    return a, b, x, norms, G, var


@pytest.mark.parametrize("zero_factor", [False, True])
@pytest.mark.parametrize("exp", [False, True])
def test_fm_product_gradient(zero_factor, exp):
    a, b, x, norms, G, var = _product_inputs(zero_factor)
    K = fm._fm_product(a, b, x, norms, G, var, exp)
    assert (K[4] == 0) == zero_factor
    assert torch.autograd.gradcheck(lambda a, b, x, n: fm._fm_product(a, b, x, n, G, var, exp),
                                    (a, b, x, norms))


def test_projector_grid_cache_is_keyed_by_the_index_values(categorical_binary_integer_two_continuous_space):
    """The last small grid is kept (the acquisition optimiser asks for the same rows many times); a change of
    any index value, in either set, gives the grid of the new values, never the kept one."""
    space = categorical_binary_integer_two_continuous_space
    kernel = fm_kernel(space)
    rng = np.random.default_rng(3)
    V1 = torch.as_tensor(space.sample_index(5, rng)[:, space.discrete_indices].astype(np.int64))
    V2 = torch.as_tensor(space.sample_index(7, rng)[:, space.discrete_indices].astype(np.int64))
    first = kernel._grid_pairs(V1, V2)
    assert kernel._grid_pairs(V1.clone(), V2.clone())[2] is first[2]  # equal values: the kept grid
    for changed in (0, 1):
        W1, W2 = V1.clone(), V2.clone()
        (W1 if changed == 0 else W2)[2, 0] = ((W1 if changed == 0 else W2)[2, 0] + 1) % 3
        i, j, G = kernel._grid_pairs(W1, W2)
        assert torch.equal(G, kernel._projector_grid(W1, W2))
        assert not torch.equal(G, first[2])
        assert torch.equal(i, torch.arange(5).repeat_interleave(7)) and torch.equal(j, torch.arange(7).repeat(5))


@pytest.mark.parametrize("case", [0, 1])
def test_projector_entries_are_each_eigenspace_entry_of_each_pair(case):
    space, _ = bofm_screening_cases()[case]
    kernel = fm_kernel(space)
    rng = np.random.default_rng(2)
    V1 = torch.as_tensor(space.sample_index(7, rng)[:, space.discrete_indices].astype(np.int64))
    V2 = torch.as_tensor(space.sample_index(5, rng)[:, space.discrete_indices].astype(np.int64))
    i = torch.arange(7).repeat_interleave(5)
    j = torch.arange(5).repeat(7)
    G = kernel._projector_entries(V1, V2, i, j, entries=50)  # several blocks of pairs
    expected = []
    for q, groups in enumerate(kernel.eigenspaces):
        for _, P in groups:
            expected.append(P[V1[i, q], V2[j, q]])
    assert torch.equal(G, torch.stack(expected))
    assert torch.equal(kernel._projector_grid(V1, V2), G)  # the row-major shortcut of pairs()
    assert torch.equal(kernel._projector_grid(V1, V2, entries=30), G)  # in blocks of rows


def test_diag_follows_the_hyper_parameters_it_is_given():
    space, _ = bofm_screening_cases()[0]
    kernel = fm_kernel(space)
    V, C = split_rows(space, space.sample_index(50, np.random.default_rng(3)).astype(float))
    params = kernel.random_params(np.random.default_rng(1))
    first = kernel.diag(params, V, C=C)
    other = params.clone()
    other[kernel.Dc + 8] += 1.0  # the ordinal's beta (after the Dc lengthscales and 8 binary betas, whose
    # factors k(x, x) are 1 at every beta)
    changed = kernel.diag(other, V, C=C)
    kernel._diag_cache = None
    assert torch.equal(kernel.diag(other, V, C=C), changed)  # the cached tables are the fresh ones
    assert not torch.allclose(changed, first)
    assert torch.equal(kernel.diag(params, V, C=C), first)
