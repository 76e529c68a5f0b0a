"""MixedGP (graphbo.models.mixed_gp), BO-FM's GP: its ML-II fit on data that stalls restarts (it never keeps a
penalty state), the objective and the prior term by term, the warm-started fits (``restart_every > 1``: they
reach the cold fit's optimum, follow their schedule and fall back to the full restarts when the warm start ends
worse than the default point), its fantasies and its split of mixed rows."""

import logging
import math

import numpy as np
import pytest
import torch

import graphbo as gb
from graphbo.benchmarks import load_benchmark
from graphbo.kernels.frequency_modulated import FMKernel
from graphbo.models.mixed_gp import PENALTY, MixedGP
from support import (categorical_binary_integer_two_continuous_data, categorical_binary_integer_two_continuous_space,
                     fm_kernel)


def func2c_space():
    return load_benchmark("func2c").space


def model(kernel="modlap", cls=FMKernel, **kw):
    sp = func2c_space()
    spectra = [sp.variables[j].spectrum for j in sp.discrete_indices]
    return MixedGP(cls(kernel, spectra, n_continuous=len(sp.continuous_indices)), sp, n_restarts=4, **kw)


def rows(n, seed=0):
    return func2c_space().sample_index(n, np.random.default_rng(seed)).astype(float)


def nll(m, X, y):
    """Negative log marginal likelihood of the fitted hyper-parameters (standardised scale, no prior)."""
    V, C = m.split(X)
    ys = torch.as_tensor(m.transform_y(y))
    prior, m.prior = m.prior, "none"
    try:
        return float(m._neg_log_posterior(m.params, lambda kp: m.kernel(kp, V, C), ys))
    finally:
        m.prior = prior


def assert_sane(m, X, y):
    assert m.fit_info["fallback"] is None and m.fit_info["n_failed"] == 0
    assert math.isfinite(m.fit_info["objective"]) and m.fit_info["objective"] < PENALTY
    assert torch.isfinite(m.params).all()
    assert math.isfinite(nll(m, X, y))
    post = m.posterior(rows(50, seed=9))
    assert torch.isfinite(post.mean).all() and torch.isfinite(post.variance).all()
    assert (post.variance > 0).all()


def spearman(a, b):
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def test_huge_y_scale_fits_as_the_unit_scale_does():
    # y near the float range: y.std() overflowed to inf, every value standardised to 0, and the
    # model ignored the data (posterior mean 0 everywhere)
    X, y = rows(12), np.random.default_rng(1).normal(size=12)
    unit = model().fit(X, y, rng=np.random.default_rng(2))
    for scale in (1e300, 1e-300):
        huge = model().fit(X, y * scale, rng=np.random.default_rng(2))
        assert_sane(huge, X, y * scale)
        assert torch.allclose(huge.params, unit.params, atol=1e-5)
        mean = huge.posterior(X).mean[0].numpy()
        assert spearman(mean, y) > 0.8
        assert huge.transform_outcome(float(y.min() * scale)) == pytest.approx(unit.transform_outcome(float(y.min())))


def test_huge_offset_with_spread_keeps_the_spread():
    X = rows(10)
    y = 1e305 + np.arange(10.0) * 1e290  # deviations 1e290: their squares overflowed
    m = model().fit(X, y, rng=np.random.default_rng(0))
    assert_sane(m, X, y)
    assert spearman(m.posterior(X).mean[0].numpy(), y) > 0.8


def test_log_y_with_huge_values():
    X, y = rows(10), np.exp(np.random.default_rng(3).normal(size=10)) * 1e300
    m = model(log_y=True).fit(X, y, rng=np.random.default_rng(0))
    assert_sane(m, X, y)
    assert spearman(m.posterior(X).mean[0].numpy(), y) > 0.8


def test_duplicate_inputs_with_different_values_fit_a_noise_level():
    X = np.repeat(rows(3), 5, axis=0)
    g = np.random.default_rng(4)
    y = np.repeat([0.0, 3.0, -2.0], 5) + g.normal(0, 0.5, size=15)
    m = model().fit(X, y, rng=np.random.default_rng(0))
    assert_sane(m, X, y)
    noise_raw = float(torch.exp(m.params[-2])) * m._sd**2
    within = np.mean([y[5 * k:5 * k + 5].var(ddof=1) for k in range(3)])
    assert 0.1 * within < noise_raw < 5 * within  # the replicates' scatter is noise, not signal
    mean = m.posterior(X[::5]).mean[0].numpy() * m._sd + m._mu
    np.testing.assert_allclose(mean, [y[5 * k:5 * k + 5].mean() for k in range(3)], atol=0.6)


def test_constant_y_gives_a_flat_finite_posterior():
    X, y = rows(8), np.full(8, 3.5)
    m = model().fit(X, y, rng=np.random.default_rng(0))
    assert_sane(m, X, y)
    mean = m.posterior(rows(30, seed=5)).mean[0].numpy() * m._sd + m._mu
    np.testing.assert_allclose(mean, 3.5, atol=1e-6)


def test_non_finite_y_is_rejected_naming_y():
    with pytest.raises(ValueError, match="y must be finite"):
        model().fit(rows(4), np.array([0.0, 1.0, np.inf, 2.0]), rng=np.random.default_rng(0))


def test_a_stalled_restart_is_replaced_by_a_fresh_random_start():
    # hyper-parameters restored from a corrupted state (nan): the first restart starts at a point
    # whose objective is not finite; it must not be kept, and a fresh random start replaces it
    X, y = rows(12), np.random.default_rng(1).normal(size=12)
    m = model()
    m.params = torch.full((m.kernel.size + 3,), float("nan"), dtype=torch.float64)
    m.fit(X, y, rng=np.random.default_rng(0))
    assert_sane(m, X, y)
    assert m.fit_info["n_run"] == 4  # nan start is replaced by the default one, not counted as failed

    big = model()  # a start at the bounds' far corner, where the Gram matrix is degenerate, still recovers
    big.params = torch.cat([torch.full((big.kernel.size,), 8.0), torch.tensor([6.0, -14.0, 3.0])]).double()
    big.fit(X, y, rng=np.random.default_rng(0))
    assert torch.isfinite(big.params).all() and big.fit_info["objective"] < PENALTY


class NaNGradientKernel(FMKernel):
    """An FM kernel whose Gram matrix has finite values but nan gradients (as the square root of a
    zero distance gives): every ML-II step fails. The real kernels do not fail this way on valid
    data, so the fallback path needs this fault injected."""

    def gram(self, params, pairs):
        K = super().gram(params, pairs)
        return K + 0.0 * torch.sqrt(0.0 * params.sum())


def test_when_every_restart_fails_the_previous_parameters_are_kept_with_a_warning(caplog):
    X, y = rows(12), np.random.default_rng(1).normal(size=12)
    good = model().fit(X, y, rng=np.random.default_rng(0))
    m = model(cls=NaNGradientKernel)
    m.params = good.params.clone()
    with caplog.at_level(logging.WARNING, logger="graphbo"):
        m.fit(X, y, rng=np.random.default_rng(0))
    assert m.fit_info["fallback"] == "previous" and m.fit_info["n_failed"] == m.fit_info["n_run"] == 8
    assert torch.equal(m.params, good.params)
    assert any(r.name.startswith("graphbo") and "all 8 ML-II restarts failed" in r.getMessage()
               and "previous" in r.getMessage() for r in caplog.records)
    assert math.isfinite(m.fit_info["objective"])
    post = m.posterior(rows(20, seed=3))
    assert torch.isfinite(post.mean).all() and torch.isfinite(post.variance).all()

    fresh = model(cls=NaNGradientKernel)  # nothing fitted before: the default hyper-parameters
    with caplog.at_level(logging.WARNING, logger="graphbo"):
        fresh.fit(X, y, rng=np.random.default_rng(0))
    assert fresh.fit_info["fallback"] == "default"
    default = torch.cat([fresh.kernel.default_params(), torch.tensor([0.0, -4.0, 0.0], dtype=torch.float64)])
    assert torch.equal(fresh.params, default)
    assert torch.isfinite(fresh.posterior(X).mean).all()


def test_prior_none_is_plain_marginal_likelihood():
    X, y = rows(12), np.random.default_rng(1).normal(size=12)
    weak, none = model(prior="weak"), model(prior="none")
    theta = torch.tensor(np.r_[np.full(weak.kernel.size, 0.5), 0.3, -2.0, 0.1])
    V, C = weak.split(X)
    ys = torch.as_tensor(weak.transform_y(y))
    none.transform_y(y)
    gram = lambda kp: weak.kernel(kp, V, C)  # noqa: E731
    diff = float(weak._neg_log_posterior(theta, gram, ys) - none._neg_log_posterior(theta, gram, ys))
    assert diff == pytest.approx(-float(weak.log_prior(theta)))
    assert float(weak.log_prior(theta)) < 0
    with pytest.raises(ValueError, match="prior"):
        model(prior="paper")


# -- the objective and the warm-start schedule, term by term (gaps found by mutation testing) ----------------


def test_negative_log_likelihood_is_the_gaussian_log_density_of_the_data():
    # prior="none": the objective is -log N(y; mean, amp K + (noise + 1e-6) I), checked with SciPy
    scipy_stats = pytest.importorskip("scipy.stats")
    m = model(prior="none")
    X, y = rows(9), np.random.default_rng(3).normal(size=9)
    V, C = m.split(X)
    theta = torch.cat([m.kernel.random_params(np.random.default_rng(4)).to(torch.float64),
                       torch.tensor([0.3, -2.0, 0.1], dtype=torch.float64)])
    K = m.kernel(theta[:-3], V, C).detach().numpy()
    cov = math.exp(0.3) * K + (math.exp(-2.0) + 1e-6) * np.eye(9)
    expected = -scipy_stats.multivariate_normal(mean=np.full(9, 0.1), cov=cov).logpdf(y)
    got = float(m._neg_log_posterior(theta, lambda kp: m.kernel(kp, V, C), torch.as_tensor(y)))
    assert got == pytest.approx(expected, rel=1e-9)
    # prior="weak" subtracts exactly the documented log prior (N(0, 2^2), N(-4, 3^2), N(0, 1) and the kernel's)
    weak = model(prior="weak")
    kp, log_amp, log_noise, mean = theta[:-3], 0.3, -2.0, 0.1
    log_prior = float(weak.kernel.log_prior(kp)) - 0.5 * (log_amp / 2) ** 2 - 0.5 * ((log_noise + 4) / 3) ** 2 \
        - 0.5 * mean ** 2
    assert float(weak.log_prior(theta)) == pytest.approx(log_prior, rel=1e-12)
    got_weak = float(weak._neg_log_posterior(theta, lambda kp: weak.kernel(kp, V, C), torch.as_tensor(y)))
    assert got_weak == pytest.approx(expected - log_prior, rel=1e-9)


def test_a_cold_fit_with_restarts_comes_every_restart_every_fits_and_warm_fits_start_from_the_last():
    # restart_every=3: after a cold fit, at most two warm fits (the previous optimum alone, one L-BFGS-B run),
    # then a cold one again; a warm fit that succeeds reports one run and no failure
    m = model(restart_every=3)
    X, y = rows(30, seed=5), None
    y = np.sin(X[:, -1] * 3.0) + 0.1 * X[:, 0]
    kinds = []
    for n in range(12, 21):
        m.fit(X[:n], y[:n], rng=np.random.default_rng(n))
        kinds.append(bool(m.fit_info["warm"]))
        if m.fit_info["warm"]:
            assert m.fit_info["n_run"] == 1 and m.fit_info["n_failed"] == 0 and m.fit_info["fallback"] is None
        else:
            assert m.fit_info["n_run"] >= m.n_restarts
    # nothing to warm-start from at first; then two warm fits (they all succeed on this smooth data), a cold one
    assert kinds == [False, True, True] * 3


def test_fit_options_are_validated_at_the_boundary():
    for bad in ({"restart_every": 0}, {"maxiter": 0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            model(**bad)
    # the smallest legal values are accepted and fit (restart_every=1: a cold fit every time)
    m = model(maxiter=1, restart_every=1)
    X, y = rows(10), np.random.default_rng(5).normal(size=10)
    m.fit(X, y, rng=np.random.default_rng(0))
    m.fit(X, y, rng=np.random.default_rng(1))
    assert m.fit_info["warm"] is False and torch.isfinite(m.params).all()


def test_warm_fit_reaches_the_cold_optimum_and_predicts_the_same(categorical_binary_integer_two_continuous_space):
    space = categorical_binary_integer_two_continuous_space
    X, y = categorical_binary_integer_two_continuous_data(40)
    Xq = space.sample_index(30, np.random.default_rng(5)).astype(float)
    cold = MixedGP(fm_kernel(space), space, n_restarts=6, restart_every=1)
    warm = MixedGP(fm_kernel(space), space, n_restarts=6, restart_every=10)
    for model in (cold, warm):
        model.fit(X[:-1], y[:-1], rng=np.random.default_rng(1))  # both: full restarts at the first fit
    assert cold.fit_info["warm"] is False and warm.fit_info["warm"] is False
    cold.fit(X, y, rng=np.random.default_rng(2))
    warm.fit(X, y, rng=np.random.default_rng(2))
    assert cold.fit_info["warm"] is False and cold.fit_info["n_run"] >= 6
    assert warm.fit_info["warm"] is True and warm.fit_info["n_run"] == 1
    assert warm.fit_info["objective"] == pytest.approx(cold.fit_info["objective"], abs=1e-4)
    pc, pw = cold.posterior(Xq), warm.posterior(Xq)
    assert torch.allclose(pc.mean, pw.mean, atol=1e-3)
    assert torch.allclose(pc.variance, pw.variance, atol=1e-3)


def test_restart_schedule(categorical_binary_integer_two_continuous_space):
    space = categorical_binary_integer_two_continuous_space
    X, y = categorical_binary_integer_two_continuous_data(30)
    model = MixedGP(fm_kernel(space), space, n_restarts=3, restart_every=3)
    warm = []
    for n in range(20, 27):
        model.fit(X[:n], y[:n], rng=np.random.default_rng(n))
        warm.append(model.fit_info["warm"])
    assert warm == [False, True, True, False, True, True, False]


def test_a_warm_start_worse_than_the_default_point_runs_the_restarts(categorical_binary_integer_two_continuous_space):
    space = categorical_binary_integer_two_continuous_space
    X, y = categorical_binary_integer_two_continuous_data(30)
    model = MixedGP(fm_kernel(space), space, n_restarts=4, restart_every=10, maxiter=1)
    model.fit(X, y, rng=np.random.default_rng(0))
    # a previous optimum far from the data (tiny signal, huge noise): one L-BFGS-B iteration
    # cannot get below the default point's objective, so the warm fit must not be kept
    model.params = torch.tensor([6.0] * model.kernel.size + [-6.0, 2.0, 3.0], dtype=torch.float64)
    model.warm_fits = 0
    model.fit(X, y, rng=np.random.default_rng(1))
    assert model.fit_info["warm"] is False
    assert model.fit_info["n_run"] == 4 and model.warm_fits == 0
    default = torch.cat([model.kernel.default_params(), torch.tensor([0.0, -4.0, 0.0], dtype=torch.float64)])
    assert not torch.allclose(model.params, torch.tensor([6.0] * model.kernel.size + [-6.0, 2.0, 3.0],
                                                         dtype=torch.float64))
    assert model.fit_info["objective"] < float("inf") and default.numel() == model.params.numel()


def test_restart_every_is_validated_by_name(categorical_binary_integer_two_continuous_space):
    space = categorical_binary_integer_two_continuous_space
    with pytest.raises(ValueError, match="restart_every"):
        MixedGP(fm_kernel(space), space, restart_every=0)


@pytest.mark.parametrize("order", ["consecutive", "interleaved"])
def test_split_takes_the_columns_without_aliasing_the_rows(order):
    """Consecutive discrete and continuous columns are sliced (a column gather of a large pool is slow),
    others gathered; either way the parts are the right columns, the continuous part keeps the autograd
    graph of a tensor input, and neither part is a view of the caller's rows."""
    space = categorical_binary_integer_two_continuous_space() if order == "consecutive" else gb.Space(
        {"u": gb.Continuous(0.0, 1.0), "a": gb.Categorical(["x", "y", "z"]), "v": gb.Continuous(0.0, 1.0),
         "b": gb.Binary()})
    model = MixedGP(fm_kernel(space), space)
    X = torch.tensor(space.sample_index(6, np.random.default_rng(1)).astype(float), requires_grad=True)
    V, C = model.split(X)
    disc, cont = space.discrete_indices, space.continuous_indices
    assert torch.equal(V, X.detach()[:, disc].long()) and V.dtype == torch.long
    assert torch.equal(C.detach(), X.detach()[:, cont])
    C.sum().backward()
    assert torch.equal(X.grad[:, cont], torch.ones(6, cont.size, dtype=X.dtype))
    assert torch.all(X.grad[:, disc] == 0)
    before = X.detach().clone()
    with torch.no_grad():
        C += 1.0
        V += 1
    assert torch.equal(X.detach(), before)


def test_fantasies_collapse_the_variance_at_pending_points_and_keep_the_fit():
    bench = load_benchmark("func2c")
    space = bench.space
    X = rows(12)
    y = np.array([bench(space.from_index(r)) for r in X])
    m = model().fit(X, y, rng=np.random.default_rng(0))
    params = m.params.clone()
    pending = space.sample_index(3, np.random.default_rng(1))
    probe = space.sample_index(200, np.random.default_rng(2))

    def marginals(rows):
        post = m.posterior(rows)
        return post.mean[0], post.variance[0]

    mean_before, var_before = marginals(pending)
    probe_mean_before, probe_var_before = marginals(probe)
    m.add_fantasies(pending)
    L = m.cholesky
    fantasy = ((L @ (L.T @ m.alpha))[:, 0] + m.constant_mean)[-3:]  # the conditioning values, fantasies last
    mean_after, var_after = marginals(pending)
    probe_mean_after, probe_var_after = marginals(probe)
    noise = float(torch.exp(params[-2])) + 1e-6
    # the pending points are now data (observed with noise): latent variance at most the noise variance
    assert m.n_fantasies == 3 and m.conditioned_inputs[0].shape[0] == 12 + 3
    assert torch.all(var_after <= noise * (1 + 1e-6)) and torch.all(var_after > 0.5 * noise)
    assert torch.all(var_before > 5 * var_after)
    # fantasies are the posterior mean: the mean is unchanged (at them and elsewhere), variance never grows
    assert torch.allclose(fantasy, mean_before, rtol=0, atol=1e-12)
    assert torch.allclose(mean_after, mean_before, atol=1e-6)
    assert torch.allclose(probe_mean_after, probe_mean_before, atol=1e-6)
    assert torch.all(probe_var_after <= probe_var_before + 1e-12)
    # the hyper-parameters are those fitted to the real data
    assert torch.equal(m.params, params)
    # a refit starts from the real data again
    m.fit(X, y, rng=np.random.default_rng(0))
    assert m.n_fantasies == 0 and m.conditioned_inputs[0].shape[0] == 12
