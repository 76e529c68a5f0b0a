"""The screening of a conditioned MixedGP (graphbo.models.mixed_gp_screening): ModLap's lower bound of the
posterior mean and its cheap and tight variance bounds hold (at the training rows and with fantasies too), the
float32 screen moments are the posterior up to the Gram matrix's precision, the neighbour moments of the
hill-climbing step (one factor of Eq. 5 replaced) equal the neighbours' posterior for every kernel of the FM
family, which kernels offer what, and a screening made for one conditioning refuses to answer after another.
How BO-FM's acquisition optimiser uses them is tested in tests/optim/test_mixed_screening.py and
tests/optim/test_mixed_neighbours.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import graphbo as gb
from graphbo.acquisition.ei import LogExpectedImprovement
from graphbo.models.mixed_gp_screening import MixedGPScreening
from graphbo.optim.mixed import _neighbour_scores
from support import fitted_bofm_case, fitted_bofm_on_ring


@pytest.mark.parametrize("case", [0, 1, 2])
@pytest.mark.parametrize("n", [12, 40])
def test_mean_lower_bound_holds_for_every_candidate(case, n):
    opt = fitted_bofm_case(case, n, seed=case)
    model = opt.model
    screening = model.screening()
    assert screening is not None and screening.offers_mean_lower_bound
    rows = opt.space.sample_index(3000, np.random.default_rng(5)).astype(float)
    post = model.posterior(rows)
    mean_lo, var_hi = screening.mean_lower_bound(rows, chunk=700)  # several chunks
    exact_mean, exact_var = post.mean[0].detach(), post.variance[0].detach()
    tol = 1e-10 * (1 + exact_mean.abs())
    assert torch.all(mean_lo <= exact_mean + tol)
    assert torch.all(var_hi >= exact_var - 1e-12)
    # the cheap variance bound is the prior variance amp k(x, x), from the same tables as the mean's bound
    V, C = model.split(rows)
    prior = model.signal_variance * opt.kernel.diag(model.kernel_params, V, C=C)
    torch.testing.assert_close(var_hi, prior, rtol=1e-10, atol=0.0)
    assert torch.all(var_hi >= prior)
    if case == 1:  # no continuous inputs: r = 0 for every pair, the bound is the mean itself
        assert torch.allclose(mean_lo, exact_mean, rtol=1e-9, atol=1e-9)
    else:
        assert torch.any(mean_lo < exact_mean - 1e-6)  # a bound, not the mean
    acq = LogExpectedImprovement(model)
    exact = acq(torch.as_tensor(rows)).detach().numpy()
    from graphbo.optim.mixed import _BoundedEI

    bound = _BoundedEI(acq, screening, lambda r: acq(torch.as_tensor(r)).detach().numpy()).upper_bound(rows).numpy()
    assert np.all(bound >= exact - 1e-9 * (1 + np.abs(exact)))


def test_only_modlap_claims_the_bound():
    screening = fitted_bofm_case(0, 12, seed=0, kernel="moddif").model.screening()
    assert screening is not None and not screening.offers_mean_lower_bound
    with pytest.raises(NotImplementedError, match="ModLap"):
        screening.mean_lower_bound(np.zeros((1, 12)))


@pytest.mark.parametrize("case", [0, 1, 2])
@pytest.mark.parametrize("n", [12, 40])
def test_tight_variance_bound_lies_between_the_posterior_and_the_prior_variance(case, n):
    opt = fitted_bofm_case(case, n, seed=case + 3)
    model = opt.model
    rows = opt.space.sample_index(2000, np.random.default_rng(6)).astype(float)
    post = model.posterior(rows)
    exact_mean, exact_var = post.mean[0].detach(), post.variance[0].detach()
    mean_cheap, prior = model.screening().mean_lower_bound(rows, chunk=700)
    mean_lo, var_hi = model.screening().mean_lower_bound(rows, chunk=700, tight_variance=True)
    assert torch.equal(mean_lo, mean_cheap)  # the mean bound is the same
    assert torch.all(var_hi >= exact_var - 1e-12)
    assert torch.all(var_hi <= prior)
    if case == 1:  # no continuous inputs: the cross-covariance is known exactly, so is the variance
        assert torch.all(var_hi - exact_var <= 2e-9 * prior + 1e-12)  # up to the margin against rounding
        return
    if case == 2:  # a nearly interpolating fit (posterior variance 1e-3 of the prior): |A k| is large, and
        return     # the bound may say no more than the prior variance, which it never exceeds (above)
    # long lengthscales (a short continuous range R): much closer to the posterior variance than the prior is
    layout = dict(zip([name for name, _ in opt.kernel.layout], np.cumsum([0] + [k for _, k in opt.kernel.layout])))
    model.params = model.params.clone()
    model.params[layout["log_theta"]:layout["log_theta"] + opt.kernel.Dc] = 3.0
    model.condition(opt.X, opt.y)
    exact_var = model.posterior(rows).variance[0].detach()
    _, prior = model.screening().mean_lower_bound(rows)  # a new screening (new bound tables) for the new conditioning
    _, var_hi = model.screening().mean_lower_bound(rows, tight_variance=True)
    assert torch.all(var_hi >= exact_var - 1e-12)
    assert float((var_hi - exact_var).mean()) < 0.5 * float((prior - exact_var).mean())


@pytest.mark.parametrize("case", [0, 1])
def test_tight_variance_bound_holds_at_training_rows_and_with_fantasies(case):
    opt = fitted_bofm_case(case, 25, seed=7)
    model = opt.model
    model.add_fantasies(opt.space.sample_index(4, np.random.default_rng(8)).astype(float))
    rows = np.concatenate([opt.X, opt.space.sample_index(300, np.random.default_rng(9)).astype(float)])
    exact = model.posterior(rows).variance[0].detach()
    _, prior = model.screening().mean_lower_bound(rows)
    _, var_hi = model.screening().mean_lower_bound(rows, tight_variance=True)
    assert torch.all(var_hi >= exact - 1e-12)
    assert torch.all(var_hi <= prior)
    if case == 1:  # no continuous inputs: the bound is the posterior variance, small at the training rows
        assert torch.all(var_hi - exact <= 2e-9 * prior + 1e-12)
        n = len(opt.X)
        assert float(var_hi[:n].median()) < 0.1 * float(prior[:n].median())


@pytest.mark.parametrize("case", [0, 1, 2])
def test_screen_moments_are_the_posterior_up_to_the_gram_matrix_precision(case):
    opt = fitted_bofm_case(case, 30, seed=case)
    model = opt.model
    screening = model.screening()
    assert screening is not None and screening.offers_screen_moments
    rows = opt.space.sample_index(2000, np.random.default_rng(7)).astype(float)
    post = model.posterior(rows)
    mean, var = post.mean[0].detach(), post.variance[0].detach()
    m64, v64 = screening.screen_moments(rows, dtype=torch.float64)  # the same arithmetic as the posterior
    torch.testing.assert_close(m64, mean, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(v64, var, rtol=1e-10, atol=1e-12)
    m32, v32 = screening.screen_moments(rows)
    assert m32.dtype == torch.float64  # float32 Gram entries, float64 moments
    # float32's rounding of the Gram entries, relative to the prior's scale (the variance is the prior
    # variance less the explained part: its error is relative to the prior variance, not to itself)
    V, C = model.split(rows)
    prior = float((model.signal_variance * opt.kernel.diag(model.kernel_params, V, C=C)).max())
    assert float((m32 - mean).abs().max()) <= 1e-4 * (float(mean.abs().max()) + 1.0)
    assert float((v32 - var).abs().max()) <= 1e-4 * prior
    assert float((m32 - mean).abs().max()) > 0.0  # float32 rounding, not the float64 path


def test_only_modlap_and_moddif_models_screen():
    assert fitted_bofm_case(0, 12, seed=0, kernel="moddif").model.screening().offers_screen_moments
    general = fitted_bofm_case(0, 12, seed=0, kernel="general").model.screening()
    assert general is not None and not general.offers_screen_moments  # neighbour moments only
    assert general.offers_neighbour_moments and not general.offers_mean_lower_bound
    with pytest.raises(NotImplementedError, match="ModLap or ModDif"):
        general.screen_moments(np.zeros((1, 12)))


def test_screening_is_made_once_per_conditioning_and_a_kept_one_raises_after_it():
    opt = fitted_bofm_case(0, 12, seed=2)
    model = opt.model
    rows = opt.space.sample_index(50, np.random.default_rng(1)).astype(float)
    first = model.screening()
    assert first is not None and model.screening() is first  # one per conditioning (its bound tables with it)
    first.mean_lower_bound(rows)
    model.add_fantasies(rows[:2])  # a new conditioning: a new screening
    second = model.screening()
    assert second is not first and model.screening() is second
    starts = rows[:3]
    nbrs, owner = opt.space.neighbor_index_batch(starts)
    disc = opt.space.discrete_indices
    var = (nbrs[:, disc] != starts[owner][:, disc]).argmax(1)
    value = nbrs[np.arange(len(nbrs)), disc[var]].astype(np.int64)
    for ask in (lambda s: s.mean_lower_bound(rows), lambda s: s.screen_moments(rows),
                lambda s: s.neighbour_moments(starts, owner, var=var, value=value)):
        with pytest.raises(RuntimeError, match="conditioned again"):
            ask(first)
    # the new screening bounds the new posterior
    post = model.posterior(rows)
    mean_lo, var_hi = second.mean_lower_bound(rows, tight_variance=True)
    assert torch.all(mean_lo <= post.mean[0].detach() + 1e-10 * (1 + post.mean[0].detach().abs()))
    assert torch.all(var_hi >= post.variance[0].detach() - 1e-12)
    # an unfitted model has a screening (its capabilities are its kernel's) but no numbers yet
    unfitted = gb.BOFM(opt.space, seed=0).model.screening()
    assert unfitted is not None and unfitted.offers_mean_lower_bound
    with pytest.raises(RuntimeError, match="not been conditioned"):
        unfitted.mean_lower_bound(rows)


@pytest.mark.parametrize("kernel, continuous", [("modlap", True), ("moddif", True), ("general", True), ("fnn", True),
                                                ("modlap", False)])
def test_neighbour_moments_equal_the_posterior_of_the_neighbours(kernel, continuous, monkeypatch):
    opt = fitted_bofm_on_ring(kernel, continuous)
    model = opt.model
    screening = model.screening()
    assert screening is not None and screening.offers_neighbour_moments
    starts = opt.space.sample_index(12, np.random.default_rng(3)).astype(float)
    nbrs, owner = opt.space.neighbor_index_batch(starts)
    disc = opt.space.discrete_indices
    var = (nbrs[:, disc] != starts[owner][:, disc]).argmax(1)
    value = nbrs[np.arange(len(nbrs)), disc[var]].astype(np.int64)

    V, C = model.split(starts)
    Vn, Cn = model.split(nbrs.astype(float))
    kp = model.kernel_params
    V_train, C_train = model.conditioned_inputs
    fast = model.kernel.neighbour_gram(kp, V, C1=C, V2=V_train, C2=C_train, owner=torch.as_tensor(owner), var=torch.as_tensor(var),
                                       value=torch.as_tensor(value))
    exact = model.kernel(kp, Vn, Cn, V_train, C_train)
    assert torch.allclose(fast, exact, rtol=1e-10, atol=1e-14)

    post = model.posterior(nbrs.astype(float))
    for entries in (4_000_000, 1):  # one chunk, and one row of X per chunk
        mean, variance = screening.neighbour_moments(starts, owner, var=var, value=value, entries=entries)
        assert torch.allclose(mean, post.mean[0].detach(), rtol=1e-9, atol=1e-12)
        assert torch.allclose(variance, post.variance[0].detach(), rtol=1e-8, atol=1e-12)

    acq = LogExpectedImprovement(model)

    def score_rows(rows):
        return acq(torch.as_tensor(rows, dtype=torch.float64)).detach().numpy()

    used = []
    monkeypatch.setattr(MixedGPScreening, "neighbour_moments_pay", lambda self, n_rows, n_neighbours: True)
    scores = _neighbour_scores(acq, opt.space, starts, nbrs, owner, lambda rows: used.append(len(rows)))
    assert not used  # the factor path, not the rows afresh
    assert np.allclose(scores, score_rows(nbrs.astype(float)), rtol=1e-8, atol=1e-10)


def test_the_factor_path_is_used_only_where_it_pays():
    """Few starts (its fixed cost per variable), or ordinal variables (path graphs: as many eigenspaces as
    values and two neighbours) are scored afresh; many starts on binary and categorical variables are not."""
    binary = gb.BOFM(gb.Space([(f"b{i}", gb.Binary()) for i in range(50)] + [("x", gb.Continuous(0.0, 1.0))]),
                     seed=0).model.screening()  # the cost rule reads the kernel only: no fit needed
    assert binary.neighbour_moments_pay(40, 40 * 50) and not binary.neighbour_moments_pay(1, 50)
    ordinal = gb.BOFM(gb.Space([(f"o{i}", gb.Ordinal(list(range(30)))) for i in range(8)]
                               + [("x", gb.Continuous(0.0, 1.0))]), seed=0).model.screening()
    assert not ordinal.neighbour_moments_pay(40, 40 * 16)
