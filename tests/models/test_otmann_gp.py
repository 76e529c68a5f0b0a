"""The OTMANN GP's posterior (graphbo.models.otmann_gp): marginal variances agree with the joint
covariance and follow GP algebra with the Eq. 4 prior variance ``alpha + alpha_bar`` (Kandasamy et
al. 2018, Sec. 4.1), also when an indefinite Gram matrix was projected on the PSD cone."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import graphbo as gb
from graphbo.kernels.otmann import OTMANNKernel
from graphbo.kernels.otmann import project_psd as kernel_layer_project_psd
from graphbo.models.otmann_gp import OTMANNGP, OTMANNHyperSample
from graphbo.nas.distance.kernel import otmann_kernel, project_psd
from graphbo.nas.distance.otmann import DEFAULT_NU_STRS, OTMANN
from graphbo.nas.distance.otmann_batch import BatchOTMANN


def _distinct(space, archs):
    return list({space.key(a): a for a in archs}.values())


@pytest.fixture(scope="module")
def fitted():
    """A small fitted model: the MLP regression pool, values ~ number of layers."""
    space = gb.ArchitectureSpace("mlp-reg")
    archs = space.initial_pool()
    y = np.array([a.n_layers + 0.1 * np.random.default_rng(0).normal() for a in archs])
    model = OTMANNGP("mlp", n_burn=10, n_samples=3).fit(archs, y, rng=np.random.default_rng(0))
    new = space.sample_architectures(5, np.random.default_rng(2))
    return model, archs, y, new


#: hyper-parameters (tiny beta, beta_bar = 1) under which Eq. 4 is indefinite on the CNNs below
INDEFINITE = dict(log_alpha=0.0, log_alpha_bar=0.0, log_beta=np.full(4, -20.0), log_beta_bar=np.zeros(4))


@pytest.fixture(scope="module")
def indefinite_gram():
    """CNN networks and their Eq. 4 Gram matrix under INDEFINITE, from BatchOTMANN distances."""
    space = gb.ArchitectureSpace("cnn")
    archs = _distinct(space, space.initial_pool() + space.sample_architectures(20, np.random.default_rng(0)))
    D, Db = BatchOTMANN(OTMANN("cnn"), nu_strs=DEFAULT_NU_STRS).pairwise(archs)
    K = otmann_kernel(D, Db, alpha=1.0, alpha_bar=1.0, beta=np.exp(INDEFINITE["log_beta"]),
                      beta_bar=np.exp(INDEFINITE["log_beta_bar"]))
    lam = np.linalg.eigvalsh(K)
    assert lam.min() < -1e-4 * lam.max()  # the case under test
    return space, archs, D, Db, K


@pytest.fixture(scope="module")
def indefinite(indefinite_gram):
    """The GP conditioned under INDEFINITE with two noise levels: 1e-3 (K + eta^2 I is indefinite too)
    and 0.1 (K + eta^2 I is positive definite, so only the repair makes the model use project_psd(K))."""
    space, archs, _, _, K = indefinite_gram
    assert np.linalg.eigvalsh(K).min() + 0.1 > 0 > np.linalg.eigvalsh(K).min() + 1e-3
    y = np.random.default_rng(1).normal(size=len(archs))
    samples = [OTMANNHyperSample(mean=0.0, log_noise=np.log(noise), **INDEFINITE) for noise in (1e-3, 0.1)]
    model = OTMANNGP("cnn").condition(archs, y, samples=samples)
    new = space.sample_architectures(6, np.random.default_rng(3))
    return model, archs, y, new, K


def _check_consistent_psd(post):
    cov, var = post.covariance, post.variance
    assert torch.all(var >= 0)
    torch.testing.assert_close(torch.diagonal(cov, dim1=1, dim2=2), var, rtol=1e-10, atol=1e-14)
    torch.testing.assert_close(cov, cov.transpose(1, 2), rtol=1e-10, atol=1e-14)
    lam = torch.linalg.eigvalsh(cov)
    assert float(lam.min()) >= -1e-10 * float(lam.abs().max())


def test_the_model_uses_the_repaired_gram_matrix(indefinite):
    model, archs, _, _, K = indefinite
    np.testing.assert_allclose(model.training_gram(repaired=True)[0], project_psd(K), rtol=1e-10, atol=1e-12)


def test_variance_is_the_covariance_diagonal_and_the_covariance_is_psd(fitted):
    model, archs, y, new = fitted
    for X in (new, archs, archs[:4] + new[:3]):
        _check_consistent_psd(model.posterior(X))


def test_an_indefinite_gram_matrix_still_gives_a_consistent_psd_posterior(indefinite):
    model, archs, _, new, _ = indefinite
    for X in (archs[:6] + new, new, archs[:8]):
        _check_consistent_psd(model.posterior(X))


def test_an_indefinite_gram_matrix_is_projected_before_conditioning(indefinite):
    """The posterior mean by hand: mu + k_x^T (project_psd(K) + eta^2 I)^{-1} (y - mu), for both
    noise levels (with eta^2 = 0.1 the unrepaired K + eta^2 I could be factorised, but is not used)."""
    model, archs, y, new, K = indefinite
    R = project_psd(K)
    ot = BatchOTMANN(OTMANN("cnn"), nu_strs=DEFAULT_NU_STRS)
    Dx, Dbx = ot.cross(new, archs)
    k = otmann_kernel(Dx, Dbx, alpha=1.0, alpha_bar=1.0, beta=np.exp(INDEFINITE["log_beta"]),
                      beta_bar=np.exp(INDEFINITE["log_beta_bar"]))
    mean = model.posterior(new).mean.numpy()
    for s, smp in enumerate(model.samples):
        want = smp.mean + k @ np.linalg.solve(R + smp.noise * np.eye(len(y)), y - smp.mean)
        np.testing.assert_allclose(mean[s], want, rtol=1e-7, atol=1e-9)
        unrepaired = smp.mean + k @ np.linalg.solve(K + smp.noise * np.eye(len(y)), y - smp.mean)
        assert np.abs(want - unrepaired).max() > 1e-3  # the repair makes a difference here


def test_variance_at_a_training_point_is_about_the_noise(fitted):
    """Exact GP algebra: conditioning the leave-one-out posterior of f(x_i) (variance v) on the noisy
    y_i gives 1 / var_i = 1 / v + 1 / eta^2, so var_i <= eta^2, close to it where v >> eta^2."""
    model, archs, y, _ = fitted
    var = model.posterior(archs).variance.numpy()  # (S, n)
    noise = np.array([s.noise for s in model.samples])
    assert np.all(var <= noise[:, None] * (1 + 1e-9))
    loo = OTMANNGP("mlp")
    for i in range(len(archs)):
        keep = [j for j in range(len(archs)) if j != i]
        loo.condition([archs[j] for j in keep], y[keep], samples=model.samples)
        v = loo.posterior([archs[i]]).variance.numpy()[:, 0]
        np.testing.assert_allclose(var[:, i], 1.0 / (1.0 / v + 1.0 / noise), rtol=1e-6)
    assert np.all(var > 0.5 * noise[:, None])  # here the pool networks are far apart: v > eta^2


def test_posterior_variance_is_eq4_gp_algebra_with_prior_variance_alpha_plus_alpha_bar(fitted):
    """The variance by hand from independently computed OTMANN distances:
    k(x, x) - k_x^T (K + eta^2 I)^{-1} k_x with k(x, x) = alpha + alpha_bar (d(x, x) = 0)."""
    model, archs, y, new = fitted
    ot = OTMANN("mlp")
    D, Db = ot.pairwise(archs, nu_strs=model.nu_strs)
    Dx, Dbx = ot.pairwise(new, archs, nu_strs=model.nu_strs)
    var = model.posterior(new).variance.numpy()
    for s, smp in enumerate(model.samples):
        K = otmann_kernel(D, Db, alpha=smp.alpha, alpha_bar=smp.alpha_bar, beta=smp.beta, beta_bar=smp.beta_bar)
        assert np.linalg.eigvalsh(K).min() > 0  # no repair involved in this case
        k = otmann_kernel(Dx, Dbx, alpha=smp.alpha, alpha_bar=smp.alpha_bar, beta=smp.beta, beta_bar=smp.beta_bar)
        want = smp.alpha + smp.alpha_bar - np.einsum("kn,nk->k", k, np.linalg.solve(K + smp.noise * np.eye(len(y)), k.T))
        np.testing.assert_allclose(var[s], want, rtol=1e-8)
        assert want.max() > 0.05 * (smp.alpha + smp.alpha_bar)  # a test the prior variance matters in


def test_signal_and_noise_variance_scale_with_the_data():
    """Priors are relative to Var(y): data scaled by 4 give the same chain with alpha, alpha_bar, eta^2
    and the posterior variance scaled by 16 (4 is a power of 2: the standardised data are identical)."""
    space = gb.ArchitectureSpace("mlp-reg")
    archs = space.initial_pool()
    y = np.array([float(a.n_layers) for a in archs]) + np.linspace(0, 1, len(archs))
    new = space.sample_architectures(4, np.random.default_rng(5))
    m1 = OTMANNGP("mlp", n_burn=5, n_samples=2).fit(archs, y, rng=np.random.default_rng(0))
    m4 = OTMANNGP("mlp", n_burn=5, n_samples=2).fit(archs, 4.0 * y, rng=np.random.default_rng(0))
    for a, b in zip(m1.samples, m4.samples):
        np.testing.assert_allclose([b.alpha, b.alpha_bar, b.noise], 16 * np.array([a.alpha, a.alpha_bar, a.noise]),
                                   rtol=1e-9)
        np.testing.assert_allclose(b.mean, 4 * a.mean, rtol=1e-9)
        np.testing.assert_allclose(b.beta, a.beta, rtol=1e-12)
        np.testing.assert_allclose(b.beta_bar, a.beta_bar, rtol=1e-12)
        # the prior's own range: alpha within [0.01, 100] Var(y)
        assert 0.01 * y.var() <= a.alpha <= 100 * y.var() and 0.01 * y.var() <= a.alpha_bar <= 100 * y.var()
    np.testing.assert_allclose(m4.posterior(new).variance.numpy(), 16 * m1.posterior(new).variance.numpy(),
                               rtol=1e-8)


def test_project_psd_repairs_an_indefinite_eq4_gram_matrix(indefinite_gram):
    """The nearest PSD matrix in Frobenius norm: eigenvalues clipped at 0, so the distance to the
    input is exactly the norm of the negative eigenvalues (no PSD matrix is closer)."""
    space, archs, D, Db, K = indefinite_gram
    lam = np.linalg.eigvalsh(K)
    neg = lam[lam < 0]
    for repair in (project_psd, kernel_layer_project_psd):
        R = repair(K)
        mu = np.linalg.eigvalsh(R)
        assert mu.min() >= -1e-12 * mu.max()
        np.testing.assert_allclose(R, R.T, atol=1e-14)
        np.testing.assert_allclose(np.linalg.norm(R - K), np.linalg.norm(neg), rtol=1e-8)
        np.testing.assert_allclose(np.sort(mu), np.sort(np.maximum(lam, 0)), atol=1e-10 * lam.max())
        assert np.linalg.norm(R - K) < 0.1 * np.linalg.norm(K)  # close to the input
    # the kernel layer's Gram matrix with psd=True, from the same distances
    G = OTMANNKernel("cnn").gram(D, Db, alpha=1.0, alpha_bar=1.0, beta=np.exp(INDEFINITE["log_beta"]),
                                 beta_bar=np.exp(INDEFINITE["log_beta_bar"]), psd=True).numpy()
    np.testing.assert_allclose(G, project_psd(K), rtol=1e-12, atol=1e-14)
    # a PSD matrix is returned as it is
    P = project_psd(K)
    P2 = P + 1e-3 * np.eye(len(P))
    assert project_psd(P2) is P2


def test_the_samplers_noise_and_mean_density_is_the_gaussian_likelihood():
    """The noise and mean updates evaluate log N(y; mean, K + noise I) through one eigendecomposition of K
    (``_Sweeper.loglik_given_gram``): equal to the Cholesky form the other coordinates use and to SciPy's."""
    import scipy.stats

    from graphbo.models.otmann_gp import _Sweeper

    rng = np.random.default_rng(0)
    n = 7
    A = rng.normal(size=(n, n))
    K = A @ A.T / n
    y = rng.normal(size=n) + 2.0
    gp = OTMANNGP("mlp")
    D = np.zeros((gp.m, n, n))
    sweeper = _Sweeper(gp, D, D.copy(), y, np.full(4, -np.inf), np.full(4, np.inf), rng)
    ll = sweeper.loglik_given_gram(K)
    for noise, mean in ((1e-3, 0.0), (0.5, 2.0), (3.0, -1.0)):
        expected = scipy.stats.multivariate_normal(mean=np.full(n, mean), cov=K + noise * np.eye(n)).logpdf(y)
        assert ll(noise, mean) == pytest.approx(expected, rel=1e-9)
        assert sweeper._loglik(K.copy(), noise, mean) == pytest.approx(expected, rel=1e-9)
