"""graphbo's kernels as GPyTorch kernels inside BoTorch models (graphbo.integrations.gpytorch)."""

import math
import pickle

import numpy as np
import pytest
import scipy.linalg
import torch

pytest.importorskip("botorch")

from botorch.fit import fit_gpytorch_mll  # noqa: E402
from botorch.models import SingleTaskGP  # noqa: E402
from gpytorch.constraints import Interval  # noqa: E402
from gpytorch.kernels import RBFKernel, ScaleKernel  # noqa: E402
from gpytorch.mlls import ExactMarginalLogLikelihood  # noqa: E402

import graphbo as gb  # noqa: E402
from graphbo.integrations.gpytorch import (FM_KERNELS, DiffusionKernel, FrequencyModulatedKernel,  # noqa: E402
                                           decode, encode, mixed_alternating_spec)
from graphbo.kernels.diffusion import GraphDiffusionKernel  # noqa: E402
from support import fm_kernel, split_rows  # noqa: E402

D = torch.float64


def binary_categorical_ordinal_binary_graph_space():
    return gb.Space({
        "a": gb.Binary(),
        "c": gb.Categorical(["p", "q", "r", "s"]),
        "o": gb.Ordinal([1, 2, 3, 4, 5]),
        "b": gb.Binary(),
        "g": gb.GraphVariable(list("wxyz"), [[0, 1, 0, 0], [1, 0, 2, 0], [0, 2, 0, 1], [0, 0, 1, 0]]),
    })


def interleaved_mixed_space():
    return gb.Space({
        "x": gb.Continuous(0.0, 1.0),
        "a": gb.Binary(),
        "c": gb.Categorical(["p", "q", "r"]),
        "y": gb.Continuous(-2.0, 2.0),
        "o": gb.Ordinal([0, 1, 2, 3, 4]),
    })


def rows(space, n, seed):
    return torch.tensor(space.sample_index(n, np.random.default_rng(seed)), dtype=D)


def expm_reference(space, beta, X1, X2):
    """COMBO's normalised ARD diffusion kernel from matrix exponentials of the Laplacians (no eigensystems)."""
    K = torch.ones(X1.shape[0], X2.shape[0], dtype=D)
    for q, j in enumerate(space.discrete_indices):
        var = space.variables[j]
        H = scipy.linalg.expm(-beta[q] * var.laplacian)
        H /= np.exp(-beta[q] * var.spectrum.eigenvalues).mean()
        K *= torch.tensor(H)[X1[:, j].long()][:, X2[:, j].long()]
    return K


# -- diffusion kernel ---------------------------------------------------------------------------------
def test_diffusion_gram_equals_graphbo_kernel_and_the_expm_formula():
    space = binary_categorical_ordinal_binary_graph_space()
    kern = DiffusionKernel(space, unit_diagonal=False).to(D)  # supplement Eq. 8 as written
    graph = GraphDiffusionKernel([v.spectrum for v in space.variables], unit_diagonal=False)
    default, default_graph = DiffusionKernel(space).to(D), GraphDiffusionKernel([v.spectrum for v in space.variables])
    rng = np.random.default_rng(0)
    for seed in range(3):
        beta = rng.uniform(0.05, 3.0, size=len(space))
        kern.beta = torch.tensor(beta)
        assert torch.allclose(kern.beta, torch.tensor(beta, dtype=D), rtol=1e-12)
        X1, X2 = rows(space, 25, seed), rows(space, 17, seed + 10)
        K = kern(X1, X2).to_dense()
        ref = graph.gram(torch.log(torch.tensor(beta))[None], X1.long(), X2=X2.long())[0]
        assert torch.allclose(K, ref, rtol=1e-12, atol=1e-14)
        assert torch.allclose(K, expm_reference(space, beta, X1, X2), rtol=1e-8, atol=1e-12)
        default.beta = torch.tensor(beta)  # the default is COMBO's kernel, unit-diagonal factors on paths
        assert torch.allclose(default(X1, X2).to_dense(),
                              default_graph.gram(torch.log(torch.tensor(beta))[None], X1.long(), X2=X2.long())[0],
                              rtol=1e-12, atol=1e-14)
        # symmetric Gram matrix and its diagonal
        K11 = kern(X1).to_dense()
        assert torch.allclose(K11, K11.T, atol=1e-14)
        assert torch.allclose(kern(X1, diag=True), torch.diagonal(K11), rtol=1e-12)


def test_diffusion_beta_limits_make_a_variable_irrelevant_or_decisive():
    space = gb.Space({"a": gb.Binary(), "c": gb.Categorical(list("pqr"))})
    kern = DiffusionKernel(space).to(D)
    X = torch.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=D)
    kern.beta = torch.tensor([50.0, 1e-6])  # 'a' irrelevant, 'c' decisive
    K = kern(X).to_dense().detach()
    assert abs(float(K[1, 2]) - float(K[1, 1])) < 1e-8  # changing 'a' changes nothing
    assert float(K[0, 1]) < 1e-5  # changing 'c' removes all correlation


def test_diffusion_gram_is_psd():
    space = binary_categorical_ordinal_binary_graph_space()
    kern = DiffusionKernel(space).to(D)
    rng = np.random.default_rng(1)
    for seed in range(4):
        kern.beta = torch.tensor(np.exp(rng.uniform(-4, 2, size=len(space))))
        K = kern(rows(space, 120, seed)).to_dense().detach()  # 120 rows of a 640-vertex space: many repeats
        eig = torch.linalg.eigvalsh(K)
        assert float(eig.min()) > -1e-10 * float(eig.max())


def test_diffusion_batches_broadcast_like_separate_calls():
    space = binary_categorical_ordinal_binary_graph_space()
    kern = DiffusionKernel(space, batch_shape=torch.Size([2])).to(D)
    kern.beta = torch.tensor([[0.2, 0.5, 1.0, 2.0, 0.7], [1.5, 0.1, 0.3, 0.9, 2.5]])
    X1 = torch.stack([rows(space, 6, 0), rows(space, 6, 1)])  # (2, 6, d)
    X2 = rows(space, 4, 2)  # (4, d), broadcast against the batch
    K = kern(X1, X2).to_dense()
    assert K.shape == (2, 6, 4)
    for b in range(2):
        single = DiffusionKernel(space).to(D)
        single.beta = kern.beta[b].detach()
        assert torch.allclose(K[b], single(X1[b], X2).to_dense(), rtol=1e-12)
        assert torch.allclose(kern(X1, diag=True)[b], single(X1[b], diag=True), rtol=1e-12)
    X3 = rows(space, 6, 3)  # diag=True between different points: k(x1_j, x3_j)
    assert torch.allclose(kern(X1, X3, diag=True), torch.diagonal(kern(X1, X3).to_dense(), dim1=-2, dim2=-1))


def test_diffusion_gradients_match_finite_differences():
    space = binary_categorical_ordinal_binary_graph_space()
    kern = DiffusionKernel(space).to(D)
    kern.beta = torch.tensor([0.3, 1.2, 0.8, 2.0, 0.5])
    X1, X2 = rows(space, 12, 0), rows(space, 9, 1)
    R = torch.tensor(np.random.default_rng(2).normal(size=(12, 9)))

    def objective():
        return (kern(X1, X2).to_dense() * R).sum() + kern(X1, diag=True).square().sum()

    kern.zero_grad()
    objective().backward()
    grad = kern.raw_beta.grad.clone()
    assert grad.abs().max() > 1e-3  # a gradient is there at all
    raw, h = kern.raw_beta.detach().clone(), 1e-6
    fd = torch.zeros_like(raw)
    with torch.no_grad():
        for i in range(raw.numel()):
            for sign in (1.0, -1.0):
                r = raw.clone()
                r[i] += sign * h
                kern.raw_beta.copy_(r)
                fd[i] += sign * float(objective()) / (2 * h)
        kern.raw_beta.copy_(raw)
    assert torch.allclose(grad, fd, rtol=1e-5, atol=1e-7)


def test_diffusion_inputs_are_checked():
    space = binary_categorical_ordinal_binary_graph_space()
    kern = DiffusionKernel(space).to(D)
    X = rows(space, 4, 0)
    bad = X.clone()
    bad[1, 2] = 1.5
    with pytest.raises(ValueError, match="'o'.*1.5"):
        kern(bad).to_dense()
    bad[1, 2] = 5.0  # 'o' has 5 values: indices 0..4
    with pytest.raises(ValueError, match="0..4"):
        kern(bad).to_dense()
    with pytest.raises(ValueError, match="columns"):
        kern(X[:, :3]).to_dense()
    with pytest.raises(ValueError, match="no discrete"):
        DiffusionKernel(gb.Space({"x": gb.Continuous(0, 1)}))


def test_diffusion_in_a_mixed_space_uses_the_discrete_columns_only():
    space = interleaved_mixed_space()
    kern = DiffusionKernel(space, unit_diagonal=False).to(D)
    X = rows(space, 8, 0)
    moved = X.clone()
    moved[:, space.continuous_indices] = torch.rand(8, 2, dtype=D)
    assert torch.equal(kern(X).to_dense(), kern(moved).to_dense())
    beta = np.array([0.4, 1.3, 0.9])
    kern.beta = torch.tensor(beta)
    X2 = rows(space, 5, 1)
    assert torch.allclose(kern(X, X2).to_dense(), expm_reference(space, beta, X, X2), rtol=1e-8, atol=1e-12)
    assert set(kern.beta_by_name()) == {"a", "c", "o"}


def fit(space, covar, X, Y):
    model = SingleTaskGP(X, Y, covar_module=covar)
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    model.eval()
    return model


def test_single_task_gp_with_the_diffusion_kernel_fits_predicts_and_finds_the_relevant_variables():
    space = gb.Space({
        "a": gb.Binary(), "b": gb.Binary(), "c": gb.Categorical(list("pqr")),
        "d": gb.Ordinal([0, 1, 2, 3, 4]), "e": gb.Categorical(list("wxyz")), "f": gb.Ordinal([1, 2, 3, 4]),
    })

    def objective(X):  # depends on 'c' and 'd' only
        return 2.0 * (X[:, 2] == 1) + 0.5 * (X[:, 3] - 2.0) ** 2

    X = rows(space, 40, 0)
    Y = objective(X).unsqueeze(-1)
    model = fit(space, ScaleKernel(DiffusionKernel(space)), X, Y)
    with torch.no_grad():
        mean = model.posterior(X).mean.squeeze(-1)
        X_test = rows(space, 200, 1)
        mean_test = model.posterior(X_test).mean.squeeze(-1)
    y = Y.squeeze(-1)
    # interpolates the (standardised) training targets: the objective is noise-free
    assert float(((mean - y) / y.std()).abs().max()) < 0.05
    # and generalises to unseen configurations
    assert np.corrcoef(mean_test.numpy(), objective(X_test).numpy())[0, 1] > 0.9
    # a small beta keeps a variable decisive; the irrelevant ones are pushed towards constant factors
    beta = model.covar_module.base_kernel.beta_by_name()
    assert max(beta["c"], beta["d"]) < 0.5 * min(beta[n] for n in "abef"), beta


def test_diffusion_kernel_times_rbf_in_a_mixed_space_fits():
    space = interleaved_mixed_space()  # x, a, c, y, o
    X = rows(space, 30, 3)
    Y = (torch.sin(4 * X[:, 0]) + (X[:, 2] == 1)).unsqueeze(-1)  # depends on 'x' and 'c'
    diffusion = DiffusionKernel(space, beta_constraint=Interval(1e-4, 100.0))
    rbf = RBFKernel(active_dims=space.continuous_indices.tolist(), ard_num_dims=2)
    model = fit(space, ScaleKernel(diffusion * rbf), X, Y)
    with torch.no_grad():
        mean = model.posterior(X).mean.squeeze(-1)
    assert float(((mean - Y.squeeze(-1)) / Y.std()).abs().max()) < 0.1
    beta = diffusion.beta_by_name()
    assert beta["c"] < 0.5 * min(beta["a"], beta["o"]), beta
    lengthscale = rbf.lengthscale.detach().reshape(-1)
    assert float(lengthscale[1]) > 5 * float(lengthscale[0])  # 'y' is irrelevant, 'x' is not


# -- frequency-modulated kernels ----------------------------------------------------------------------
@pytest.mark.parametrize("name", FM_KERNELS)
def test_fm_gram_equals_graphbo_kernel(name):
    space = interleaved_mixed_space()
    kern = FrequencyModulatedKernel(space, modulation=name).to(D)
    ref = fm_kernel(space, name)
    rng = np.random.default_rng(0)
    for seed in range(2):
        params = ref.random_params(rng)
        kern.set_graphbo_params(params)
        # the GPyTorch parameters hold the constrained values graphbo's vector encodes
        for block, value in ref.unpack(params).items():
            if block == "logit_tau":  # the general family's exponent, in (0, 2]
                expected, attr = 2.0 / (1.0 + torch.exp(-value)), "tau"
            elif block == "logit_mix":
                expected, attr = 1.0 / (1.0 + torch.exp(-value)), "mix"
            else:
                expected, attr = torch.exp(value), block[len("log_"):]
            assert torch.allclose(getattr(kern, attr), expected, rtol=1e-10), block
        assert torch.allclose(kern.graphbo_params(), params, atol=1e-8)
        X1, X2 = rows(space, 20, seed), rows(space, 13, seed + 5)
        K = kern(X1, X2).to_dense()
        assert torch.allclose(K, ref(params, *split_rows(space, X1), *split_rows(space, X2)), rtol=1e-9, atol=1e-12)
        K11 = kern(X1).to_dense()
        assert torch.allclose(kern(X1, diag=True), torch.diagonal(K11), rtol=1e-10)


@pytest.mark.parametrize("name", FM_KERNELS)
def test_fm_gram_is_psd(name):
    space = interleaved_mixed_space()
    kern = FrequencyModulatedKernel(space, modulation=name).to(D)
    rng = np.random.default_rng(1)
    for seed in range(3):
        kern.set_graphbo_params(fm_kernel(space, name).random_params(rng))
        K = kern(rows(space, 80, seed)).to_dense().detach()
        assert torch.allclose(K, K.T, atol=1e-12)
        eig = torch.linalg.eigvalsh(K)
        assert float(eig.min()) > -1e-9 * float(eig.max())


@pytest.mark.parametrize("name", FM_KERNELS)
def test_fm_gradients_match_finite_differences(name):
    space = interleaved_mixed_space()
    kern = FrequencyModulatedKernel(space, modulation=name).to(D)
    kern.set_graphbo_params(fm_kernel(space, name).random_params(np.random.default_rng(4)))
    X1, X2 = rows(space, 10, 0), rows(space, 7, 1)
    R = torch.tensor(np.random.default_rng(2).normal(size=(10, 7)))

    def objective():
        return (kern(X1, X2).to_dense() * R).sum() + kern(X1, diag=True).square().sum()

    kern.zero_grad()
    objective().backward()
    params = [p for _, p in kern.named_parameters()]
    grads = [p.grad.clone() for p in params]
    h = 1e-6
    for p, g in zip(params, grads):
        fd = torch.zeros_like(p)
        with torch.no_grad():
            for i in range(p.numel()):
                for sign in (1.0, -1.0):
                    p.view(-1)[i] += sign * h
                    fd.view(-1)[i] += sign * float(objective()) / (2 * h)
                    p.view(-1)[i] -= sign * h
        assert torch.allclose(g, fd, rtol=1e-5, atol=1e-7), (name, g, fd)


def test_fm_batches_broadcast_like_separate_calls():
    space = interleaved_mixed_space()
    kern = FrequencyModulatedKernel(space, modulation="modlap").to(D)
    kern.set_graphbo_params(fm_kernel(space, "modlap").random_params(np.random.default_rng(5)))
    train = rows(space, 7, 0)
    cand = rows(space, 6, 1).reshape(3, 2, -1)  # 3 batches of 2 candidates
    K = kern(cand, train.expand(3, 7, -1)).to_dense()  # as BoTorch predicts: shared training rows
    assert K.shape == (3, 2, 7)
    K_t = kern(train.expand(3, 7, -1), cand).to_dense()
    mixed = torch.stack([cand[0], cand[1], cand[2]])
    K_loop = kern(mixed, torch.stack([train, train.flip(0), train])).to_dense()  # no shared side: loop
    for b in range(3):
        single = kern(cand[b], train).to_dense()
        assert torch.allclose(K[b], single, rtol=1e-12)
        assert torch.allclose(K_t[b], single.T, rtol=1e-12)
        other = train.flip(0) if b == 1 else train
        assert torch.allclose(K_loop[b], kern(cand[b], other).to_dense(), rtol=1e-12)
    other = rows(space, 7, 3)
    assert torch.allclose(kern(train, other, diag=True), torch.diagonal(kern(train, other).to_dense()), rtol=1e-12)
    batched = FrequencyModulatedKernel(space, modulation="modlap", batch_shape=torch.Size([2])).to(D)
    batched.beta = torch.tensor([[0.5, 2.0, 1.0], [3.0, 0.2, 0.7]])
    Kb = batched(train).to_dense()
    for b in range(2):
        kern.beta = batched.beta[b].detach()
        kern.theta, kern.alpha = batched.theta[b].detach(), batched.alpha[b].detach()
        assert torch.allclose(Kb[b], kern(train).to_dense(), rtol=1e-12)


@pytest.mark.parametrize("name", ["proddif", "moddif"])
def test_fm_on_a_discrete_space_reduces_to_the_diffusion_kernel(name):
    """Without continuous variables r = 0, and ProdDif and ModDif are COMBO's normalised diffusion kernel."""
    space = binary_categorical_ordinal_binary_graph_space()
    beta = torch.tensor([0.3, 1.1, 0.6, 2.2, 0.9], dtype=D)
    fm, dk = FrequencyModulatedKernel(space, modulation=name).to(D), DiffusionKernel(space, unit_diagonal=False).to(D)
    fm.beta, dk.beta = beta, beta
    X1, X2 = rows(space, 15, 0), rows(space, 11, 1)
    assert torch.allclose(fm(X1, X2).to_dense(), dk(X1, X2).to_dense(), rtol=1e-9, atol=1e-12)


def test_priors_are_registered_sampled_and_pickled():
    from botorch.optim.utils import sample_all_priors
    from gpytorch.priors import GammaPrior, LogNormalPrior

    space = interleaved_mixed_space()
    X = rows(space, 6, 0)
    for kern in (DiffusionKernel(space, beta_prior=GammaPrior(2.0, 1.0)).to(D),
                 FrequencyModulatedKernel(space, priors={"beta": LogNormalPrior(0.0, 1.0)}).to(D)):
        names = [n for n, *_ in kern.named_priors()]
        assert names == ["beta_prior"]
        before = kern.beta.detach().clone()
        torch.manual_seed(0)
        sample_all_priors(kern)
        assert not torch.allclose(kern.beta, before)
        copy = pickle.loads(pickle.dumps(kern))
        assert torch.equal(copy.beta, kern.beta)
        assert torch.equal(copy(X).to_dense(), kern(X).to_dense())


def test_fm_rejects_unknown_names():
    with pytest.raises(ValueError, match="unknown modulation"):
        FrequencyModulatedKernel(interleaved_mixed_space(), modulation="laplace")
    with pytest.raises(ValueError, match="no hyper-parameter"):
        FrequencyModulatedKernel(interleaved_mixed_space(), modulation="prodlap",
                                 constraints={"alpha": Interval(0.1, 1.0)})
    with pytest.raises(ValueError, match="length"):
        FrequencyModulatedKernel(interleaved_mixed_space(), modulation="modlap").set_graphbo_params(torch.zeros(3))


def test_single_task_gp_with_the_fm_kernel_fits_and_predicts():
    space = interleaved_mixed_space()

    def objective(X):
        return torch.sin(5 * X[:, 0]) + 1.5 * (X[:, 2] == 1) + 0.3 * X[:, 4] + 0.5 * X[:, 3]

    X = rows(space, 40, 1)
    Y = objective(X).unsqueeze(-1)
    model = fit(space, ScaleKernel(FrequencyModulatedKernel(space, modulation="modlap")), X, Y)
    with torch.no_grad():
        mean = model.posterior(X).mean.squeeze(-1)
        X_test = rows(space, 200, 2)
        post = model.posterior(X_test)
    y = Y.squeeze(-1)
    assert float(((mean - y) / y.std()).abs().max()) < 0.1
    assert np.corrcoef(post.mean.squeeze(-1).numpy(), objective(X_test).numpy())[0, 1] > 0.95
    assert bool((post.variance > 0).all())


# -- helpers ------------------------------------------------------------------------------------------
def test_encode_decode_and_search_spec():
    space = interleaved_mixed_space()
    configs = space.sample(5, seed=0)
    X = encode(space, configs)
    assert X.dtype == torch.float64 and X.shape == (5, len(space))
    assert decode(space, X) == configs
    spec = mixed_alternating_spec(space)
    assert spec["bounds"].tolist() == [[0, 0, 0, 0, 0], [1, 1, 2, 1, 4]]
    assert spec["discrete_dims"] == {4: [0.0, 1.0, 2.0, 3.0, 4.0]}
    assert spec["cat_dims"] == {1: [0.0, 1.0], 2: [0.0, 1.0, 2.0]}
    assert spec["options"]["initialization_strategy"] == "random"  # no continuous relaxation of indices
    long = gb.Space({"n": gb.Ordinal(list(range(30))), "x": gb.Continuous(0, 1)})
    assert mixed_alternating_spec(long)["options"]["max_discrete_values"] >= 30
    assert math.isclose(float(X[0, 0]), space.to_index(configs[0])[0])
