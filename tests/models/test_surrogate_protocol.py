"""The surrogate protocol (graphbo.models.base): one posterior type for COMBO's, BO-FM's and
NASBOT's GPs, acquisition functions that accept any model, and acquisition optimisers that
accept any acquisition function."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import graphbo as gb
from graphbo.acquisition import LogExpectedImprovement, log_expected_improvement
from graphbo.acquisition.confidence_bound import NegativeLowerConfidenceBound
from graphbo.benchmarks import load_benchmark
from graphbo.models.base import Posterior, Screening, Surrogate
from graphbo.models.diffusion_gp import DiffusionGP
from graphbo.models.mixed_gp import MixedGP
from graphbo.models.otmann_gp import OTMANNGP
from graphbo.optim.graph_local_search import optimize_acquisition_on_graph
from graphbo.optim.mixed import optimize_acquisition_mixed
from support import fm_kernel


def _diffusion_kernel(space):
    from graphbo.kernels import GraphDiffusionKernel

    return GraphDiffusionKernel([v.spectrum for v in space.variables])


def combo_case():
    space = gb.Space({f"x{i}": gb.Ordinal(list(range(6))) for i in range(4)})
    rng = np.random.default_rng(0)
    X = np.unique(space.sample_index(25, rng), axis=0)
    y = np.sin(X.sum(1) / 3.0) + 0.1 * X[:, 0]
    model = DiffusionGP(_diffusion_kernel(space), n_burn=5, n_samples=3).fit(X, y, rng=rng)
    return model, X, y, space.sample_index(12, np.random.default_rng(1))


def bofm_case():
    bench = load_benchmark("func2c")
    space = bench.space
    rng = np.random.default_rng(0)
    X = space.sample_index(15, rng).astype(float)
    y = np.array([bench(space.from_index(r)) for r in X])
    model = MixedGP(fm_kernel(space), space, n_restarts=2).fit(X, y, rng=rng)
    return model, X, y, space.sample_index(10, np.random.default_rng(1)).astype(float)


def nasbot_case():
    space = gb.ArchitectureSpace("mlp-reg")
    archs = space.initial_pool()
    rng = np.random.default_rng(0)
    y = np.array([a.n_layers + 0.1 * rng.normal() for a in archs])
    model = OTMANNGP("mlp", n_burn=3, n_samples=3).fit(archs, y, rng=rng)
    new = [space.architecture_at(r) for r in space.sample_index(6, np.random.default_rng(2))]
    return model, archs, y, new


CASES = {"combo": combo_case, "bofm": bofm_case, "nasbot": nasbot_case}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request):
    return CASES[request.param]()


def test_every_surrogate_returns_one_posterior_type(case):
    model, X, y, new = case
    assert isinstance(model, Surrogate)
    post = model.posterior(new)
    assert isinstance(post, Posterior)
    S, m = post.mean.shape
    assert post.variance.shape == (S, m) and m == len(new) and S == post.n_samples >= 1
    assert torch.all(post.variance > 0)
    cov = post.covariance
    assert cov.shape == (S, m, m)
    # the joint covariance agrees with the marginal variances and is symmetric positive semi-definite
    torch.testing.assert_close(torch.diagonal(cov, dim1=1, dim2=2), post.variance, rtol=1e-6, atol=1e-9)
    torch.testing.assert_close(cov, cov.transpose(1, 2), rtol=1e-8, atol=1e-10)
    eig = torch.linalg.eigvalsh(0.5 * (cov + cov.transpose(1, 2)))
    assert float(eig.min()) >= -1e-8 * float(eig.max().abs().max())


def test_posterior_samples_have_the_posterior_moments(case):
    model, X, y, new = case
    post = model.posterior(new)
    draws = post.sample(4000, np.random.default_rng(0))
    assert draws.shape == (4000, *post.mean.shape)
    sd = post.variance.sqrt()
    # sample mean within 5 standard errors of the posterior mean, sample variance within 15 %
    assert torch.all((draws.mean(0) - post.mean).abs() <= 5 * sd / math.sqrt(4000))
    assert torch.all((draws.var(0) / post.variance - 1).abs() < 0.15)
    # the same generator state gives the same draws
    torch.testing.assert_close(post.sample(3, np.random.default_rng(5)), post.sample(3, np.random.default_rng(5)))


def test_fantasies_shrink_the_variance_and_keep_the_mean(case):
    model, X, y, new = case
    before = model.posterior(new)
    model.add_fantasies(new[:2])
    after = model.posterior(new)
    assert torch.all(after.variance[:, :2] < 0.5 * before.variance[:, :2])
    torch.testing.assert_close(after.mean, before.mean, rtol=1e-5, atol=1e-5 * float(np.std(y)) + 1e-8)
    assert torch.all(after.variance <= before.variance * (1 + 1e-6) + 1e-12)
    # the incumbent is still the best real observation, not a fantasy
    assert model.best_observed() == pytest.approx(model.transform_outcome(float(np.min(y))))
    model.fit(X, y, rng=np.random.default_rng(9))  # a refit starts from the real data
    assert model.posterior(new).variance[:, :2].min() > after.variance[:, :2].max()


def test_log_ei_of_any_model_averages_ei_over_the_posterior_samples(case):
    model, X, y, new = case
    acq = LogExpectedImprovement(model)
    post = model.posterior(new)
    per_sample = torch.exp(log_expected_improvement(post.mean, post.variance, best=model.best_observed()))
    torch.testing.assert_close(torch.exp(acq(new)), per_sample.mean(0), rtol=1e-9, atol=1e-300)
    lcb = NegativeLowerConfidenceBound(model, kappa=2.0)(new)
    torch.testing.assert_close(lcb, (-(post.mean - 2.0 * post.variance.sqrt())).mean(0))


class NearestNeighbourModel(Surrogate):
    """A fourth surrogate written only against the protocol: predicts the value of the nearest
    (Hamming) observation, with variance growing with the distance to it."""

    def fit(self, X, y, rng):
        self.X, self.y = np.asarray(X), np.asarray(y, dtype=float)
        self._fantasies = np.zeros((0, self.X.shape[1]), dtype=self.X.dtype)
        return self

    @property
    def train_targets(self):
        return self.y

    def _distances(self, X, data):
        return (np.asarray(X)[:, None, :] != data[None, :, :]).sum(-1)

    def posterior(self, X):
        d = self._distances(X, self.X)
        near = d.argmin(1)
        mean = torch.as_tensor(self.y[near], dtype=torch.float64)[None]
        dist = d.min(1).astype(float)
        if len(self._fantasies):
            dist = np.minimum(dist, self._distances(X, self._fantasies).min(1))
        var = torch.as_tensor(0.01 + dist, dtype=torch.float64)[None]
        return Posterior(mean, var, covariance_fn=lambda: torch.diag_embed(var))

    def add_fantasies(self, X):
        self._fantasies = np.concatenate([self._fantasies, np.asarray(X)])


def test_only_a_model_that_offers_a_screening_returns_one(case):
    model, X, y, new = case
    screening = model.screening()
    if isinstance(model, MixedGP):  # a ModLap FM kernel: the three single-sample capabilities
        assert isinstance(screening, Screening)
        assert screening.offers_screen_moments and screening.offers_mean_lower_bound
        assert screening.offers_neighbour_moments and not screening.offers_mean_and_variance_bound
    elif isinstance(model, DiffusionGP):  # the diffusion form: the mean and variance bounds of every sample
        assert isinstance(screening, Screening) and screening.offers_mean_and_variance_bound
        assert not (screening.offers_screen_moments or screening.offers_mean_lower_bound
                    or screening.offers_neighbour_moments)
    else:  # OTMANNGP: the protocol's default
        assert screening is None
    assert NearestNeighbourModel().screening() is None  # a model written against the protocol alone


def test_a_screening_offers_nothing_it_does_not_implement():
    class Nothing(Screening):
        pass

    nothing = Nothing()
    assert not (nothing.offers_screen_moments or nothing.offers_mean_lower_bound or nothing.offers_neighbour_moments
                or nothing.offers_mean_and_variance_bound)
    assert not nothing.neighbour_moments_pay(100, 10_000)
    X, one = np.zeros((1, 2)), np.zeros(1, dtype=int)
    for ask in (lambda: nothing.screen_moments(X), lambda: nothing.mean_lower_bound(X),
                lambda: nothing.neighbour_moments(X, one, var=one, value=one + 1),
                lambda: nothing.mean_and_variance_bound(X)):
        with pytest.raises(NotImplementedError):
            ask()


def test_a_new_surrogate_needs_no_acquisition_code():
    space = gb.Space({f"b{i}": gb.Binary() for i in range(8)})
    rng = np.random.default_rng(0)
    X = np.unique(space.sample_index(20, rng), axis=0)
    y = -X.sum(1).astype(float)  # best: all ones
    model = NearestNeighbourModel().fit(X, y, rng=rng)
    acq = LogExpectedImprovement(model)
    exclude = {r.tobytes() for r in X}
    row, value = optimize_acquisition_on_graph(acq, space, rng=rng, incumbent=X[np.argmin(y)], exclude=exclude,
                                               n_random=500, n_spray=10, n_starts=5)
    assert row.tobytes() not in exclude and np.isfinite(value)
    assert value == pytest.approx(float(acq(row[None])[0]))
    assert value >= float(acq(space.sample_index(200, 1)).max()) - 1e-12  # no random vertex scores higher
    model.add_fantasies(row[None])
    assert float(acq(row[None])[0]) < value  # the believer's pending row has less EI left


def test_mixed_optimiser_takes_any_differentiable_acquisition():
    bench = load_benchmark("func2c")
    space = bench.space
    cont, disc = space.continuous_indices, space.discrete_indices
    target = torch.full((len(cont),), 0.3, dtype=torch.float64)

    def acquisition(rows: torch.Tensor) -> torch.Tensor:  # best at continuous part 0.3, discrete index 0
        return -((rows[:, cont] - target) ** 2).sum(1) - rows[:, disc].sum(1)

    row, value = optimize_acquisition_mixed(acquisition, space, rng=np.random.default_rng(0),
                                            incumbent=space.sample_index(1, np.random.default_rng(1))[0],
                                            exclude=set(), n_random=200, n_spray=5, n_starts=4)
    assert np.all(row[disc] == 0)
    np.testing.assert_allclose(row[cont], 0.3, atol=0.02)
