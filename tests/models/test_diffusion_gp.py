"""DiffusionGP (graphbo.models.diffusion_gp), COMBO's GP: its posterior, its fit by slice sampling (warm starts,
burn-in, the signal-variance restart) and the Matern form of its kernel."""

import math

import numpy as np
import pytest
import torch

import graphbo as gb
from graphbo.kernels import GraphDiffusionKernel
from graphbo.models import DiffusionGP, HyperSample
from support import binary_space


def space5():
    return gb.Space({f"v{i}": gb.Categorical([0, 1, 2]) for i in range(5)})


def test_gp_interpolates_training_points_at_small_noise():
    space = space5()
    kern = GraphDiffusionKernel([v.spectrum for v in space.variables])
    X = space.sample_index(25, 0)
    X = np.unique(X, axis=0)
    y = np.sin(X.sum(1)) + X[:, 0]
    gp = DiffusionGP(kern)
    sample = HyperSample(mean=float(y.mean()), log_amp=0.0, log_noise=-12.0, log_beta=np.full(5, -1.0))
    gp.condition(X, y, samples=[sample])
    post = gp.posterior(X)
    mean, var = post.mean, post.variance
    assert np.allclose(mean[0].numpy(), y, atol=1e-3)
    assert float(var.max()) < 1e-3
    # far from the data the variance returns towards the prior
    Xnew = space.sample_index(200, 5)
    var_new = gp.posterior(Xnew).variance
    assert float(var_new.max()) > 0.5


def test_fit_draws_samples_inside_the_prior_bounds_and_warm_starts():
    space = space5()
    kern = GraphDiffusionKernel([v.spectrum for v in space.variables])
    rng = np.random.default_rng(3)
    X = space.sample_index(30, rng)
    y = (X[:, 0] == 2).astype(float) * 3.0 + 0.01 * rng.normal(size=30)  # only v0 matters
    gp = DiffusionGP(kern, n_burn=30, n_samples=10).fit(X, y, rng=rng)
    assert len(gp.samples) == 10
    for s in gp.samples:
        assert y.min() <= s.mean <= y.max()
        assert np.all(s.log_beta >= -12) and np.all(s.log_beta <= math.log(100))
    last = gp.samples[-1].log_beta.copy()
    gp.n_burn = 10**6  # a second fit must not burn in again
    gp.fit(X, y, rng=rng)
    assert len(gp.samples) == 10 and not np.array_equal(gp.samples[0].log_beta, last)
    # the relevant variable keeps a small beta (strong dependence), irrelevant ones drift larger
    beta = gp.beta_posterior_mean
    assert beta[0] < np.median(beta[1:])
    mean = gp.posterior(X).mean
    assert np.corrcoef(mean.mean(0).numpy(), y)[0, 1] > 0.95


def test_signal_variance_restart_lands_at_the_data_scale():
    """When the chain's signal variance falls outside Eq. (10)'s support, the sweep
    restarts it at the data's scale, not in the middle of a support that K_min ~ 1e-100 stretches
    to ~115 nats above the data."""
    from graphbo.models.diffusion_gp import HyperSample, _Sweeper
    from graphbo.models.priors import log_signal_variance_support

    space = binary_space(60)
    kern = GraphDiffusionKernel([v.spectrum for v in space.variables])
    gaps = []
    for seed in range(5):
        rng = np.random.default_rng(seed)
        X = space.sample_index(40, rng)
        y = X[:, :5].sum(1) + 0.1 * rng.normal(size=40)
        gp = DiffusionGP(kern, n_burn=0, n_samples=1)
        # small betas make distant rows nearly independent: K_min is tiny, the support huge
        gp.state = HyperSample(mean=float(y.mean()), log_amp=500.0, log_noise=math.log(1e-3 * y.var()),
                               log_beta=np.full(60, math.log(1e-3)))
        sweeper = _Sweeper(gp, X, y, rng)
        K = np.exp(sum(np.log(np.maximum(sweeper._factor(i, math.log(1e-3)), 1e-300)) for i in range(60)))
        lo, hi = log_signal_variance_support(float(y.var()), k_min=float(K.min()), k_max=float(K.max()))
        assert hi - lo > 100  # the situation the restart must handle
        sweeper.sweep()
        gaps.append(abs(gp.state.log_amp - math.log(y.var())))
    # after the restart and one slice-sampling step the amplitude is within a few nats of var(y)
    assert max(gaps) < 5.0, gaps


def _gaussian_loglik(y, mean, C):
    L = np.linalg.cholesky(C)
    z = np.linalg.solve(L, y - mean)
    return -0.5 * z @ z - np.log(np.diagonal(L)).sum() - 0.5 * len(y) * math.log(2 * math.pi)


def test_matern_form_posterior_is_the_gp_posterior_under_the_matern_gram():
    space = gb.Space({f"b{i}": gb.Binary() for i in range(6)} | {"c": gb.Categorical(list("pqrs"))})
    kern = GraphDiffusionKernel([v.spectrum for v in space.variables], form="matern52")
    X = np.unique(space.sample_index(20, 0), axis=0)
    Xs = space.sample_index(15, 1)
    y = np.cos(X.sum(1)) + X[:, 0]
    sample = HyperSample(mean=0.3, log_amp=0.2, log_noise=-3.0, log_beta=np.linspace(-2, 1, 7))
    gp = DiffusionGP(kern).condition(X, y, samples=[sample])
    lb = torch.tensor(sample.log_beta[None])
    K = kern.gram(lb, torch.tensor(X))[0].numpy() * math.exp(0.2)
    Ks = kern.gram(lb, torch.tensor(Xs), X2=torch.tensor(X))[0].numpy() * math.exp(0.2)
    C = K + math.exp(-3.0) * np.eye(len(y))
    mean = 0.3 + Ks @ np.linalg.solve(C, y - 0.3)
    var = math.exp(0.2) - np.einsum("ij,ji->i", Ks, np.linalg.solve(C, Ks.T))
    post = gp.posterior(Xs)
    assert np.allclose(post.mean[0].numpy(), mean, atol=1e-9)
    assert np.allclose(post.variance[0].numpy(), var, atol=1e-9)
    # the acquisition's bounds hold (for this form the model has no screening: they are the exact moments)
    from graphbo.acquisition.base import mean_and_variance_bound

    assert gp.screening() is None
    lo, hi = mean_and_variance_bound(gp, Xs)
    assert (lo[0].numpy() <= mean + 1e-9).all() and (hi[0].numpy() >= var - 1e-9).all()


def test_matern_form_slice_sampler_scores_the_matern_likelihood():
    # the sampler's density of log beta_i (other factors fixed) is the Gaussian likelihood under the Matern Gram
    from graphbo.models.diffusion_gp import _Sweeper
    space = gb.Space({f"b{i}": gb.Binary() for i in range(4)} | {"o": gb.Ordinal(list(range(6)))})
    kern = GraphDiffusionKernel([v.spectrum for v in space.variables], form="matern52")
    rng = np.random.default_rng(4)
    X = space.sample_index(25, rng)
    y = X[:, 0] * 2.0 + np.sin(X[:, 4]) + 0.05 * rng.normal(size=25)
    gp = DiffusionGP(kern, n_burn=5, n_samples=3).fit(X, y, rng=rng)
    st = gp.state
    sweeper = _Sweeper(gp, X, y, rng)
    amp, noise = math.exp(st.log_amp), math.exp(st.log_noise)
    for i in (0, 4):
        log_rest = sum(sweeper._log_factor(j, st.log_beta[j]) for j in range(len(space)) if j != i)
        lik = sweeper._beta_likelihood_of_log(i, log_rest, st.mean, amp, noise)
        for b in (-1.5, 0.0, 1.0):
            lb = st.log_beta.copy()
            lb[i] = b
            K = kern.gram(torch.tensor(lb[None]), torch.tensor(X))[0].numpy()
            assert lik(b) == pytest.approx(_gaussian_loglik(y, st.mean, amp * K + noise * np.eye(25)), abs=1e-6)
    # and the fit predicts the data it was given
    assert np.corrcoef(gp.posterior(X).mean.mean(0).numpy(), y)[0, 1] > 0.95


def test_a_first_fit_on_a_large_told_history_burns_in_for_thirty_sweeps():
    from graphbo.models.diffusion_gp import LARGE_FIRST_FIT, LARGE_FIRST_FIT_BURN_IN

    space = gb.Space({f"b{i}": gb.Binary() for i in range(6)} | {"c": gb.Categorical(list("pqr"))})
    kern = GraphDiffusionKernel([v.spectrum for v in space.variables])

    def samples(n, n_burn):
        X = space.sample_index(n, np.random.default_rng(n))
        y = X[:, 0] * 2.0 - X[:, 3] + 0.1 * np.random.default_rng(n + 1).normal(size=n)
        gp = DiffusionGP(kern, n_burn=n_burn, n_samples=2).fit(X, y, rng=np.random.default_rng(0))
        return np.stack([s.log_beta for s in gp.samples])

    large = LARGE_FIRST_FIT
    assert np.array_equal(samples(large, 100), samples(large, LARGE_FIRST_FIT_BURN_IN))
    assert np.array_equal(samples(large, 12), samples(large, 12))  # fewer than 30 asked: as asked
    assert not np.array_equal(samples(large, 12), samples(large, LARGE_FIRST_FIT_BURN_IN))
    small = LARGE_FIRST_FIT - 1
    assert not np.array_equal(samples(small, 100), samples(small, LARGE_FIRST_FIT_BURN_IN))


def test_before_a_fit_the_model_says_so_instead_of_failing_inside():
    import graphbo as gb

    space = gb.Space({f"b{i}": gb.Binary() for i in range(3)})
    model = gb.COMBO(space, seed=0).model
    with pytest.raises(RuntimeError, match="fit first"):
        model.screening()
    with pytest.raises(RuntimeError, match="fit the model first"):
        model.condition(np.zeros((2, 3), dtype=int), np.zeros(2))
