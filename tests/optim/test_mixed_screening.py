"""BO-FM's pool scoring by branch and bound: the mean bound holds, choices are unchanged."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import graphbo as gb
from graphbo.acquisition.ei import LogExpectedImprovement
from graphbo.optim.bounded import BoundedScores, fresh_masks
from graphbo.optim.mixed import optimize_acquisition_mixed


def _mixed_discrete_and_binary_spaces():
    mixed = gb.Space([(f"b{i}", gb.Binary()) for i in range(8)]
                     + [("o", gb.Ordinal(list(range(7)))), ("c", gb.Categorical(list("abcd"))),
                        ("x", gb.Continuous(-1.0, 1.0)), ("z", gb.Continuous(0.0, 2.0))])
    discrete = gb.Space([(f"b{i}", gb.Binary()) for i in range(6)] + [("o", gb.Ordinal(list(range(9))))])

    def f_mixed(c):
        return float(sum((i % 3 - 1) * c[f"b{i}"] for i in range(8)) + (c["o"] - 4) ** 2 / 8
                     + (c["c"] == "b") + (c["x"] - 0.3) ** 2 + 0.5 * np.sin(3 * c["z"]))

    def f_discrete(c):
        return float(sum((i % 2) * c[f"b{i}"] for i in range(6)) + abs(c["o"] - 2) / 3)

    # binary variables only (and continuous ones): the bound's one-hot encoding is the index rows themselves
    binary = gb.Space([(f"b{i}", gb.Binary()) for i in range(10)] + [("x", gb.Continuous(-1.0, 1.0))])

    def f_binary(c):
        return float(sum((i % 3 - 1) * c[f"b{i}"] for i in range(10)) + 2 * (c["x"] - 0.3) ** 2)

    return [(mixed, f_mixed), (discrete, f_discrete), (binary, f_binary)]


def _fitted(case, n, seed, kernel="modlap"):
    space, f = _mixed_discrete_and_binary_spaces()[case]
    opt = gb.BOFM(space, seed=seed, n_initial=n, kernel=kernel, n_random=500, n_starts=5)
    for _ in range(n):
        c = opt.ask()
        opt.tell(c, f(c))
    opt.mark_failed(opt.ask())  # fits the model
    return opt


class _Linear:
    """A linear score ``rows @ w`` with an upper bound ``score + slack(rows)``, and optionally a refined bound
    ``score + refined``, for :class:`BoundedScores`; ``calls`` counts the rows scored exactly."""

    has_upper_bound = True

    def __init__(self, w, slack, refined=None):
        self.w, self.slack, self.calls = np.asarray(w), slack, 0
        if refined is not None:
            self.refined_bound = lambda r: self.exact(r) + refined

    def exact(self, r):
        return np.asarray(r) @ self.w

    def __call__(self, r):
        self.calls += len(r)
        return self.exact(r)

    def upper_bound(self, r):
        return self.exact(r) + self.slack(r)


@pytest.mark.parametrize("case", [0, 1, 2])
@pytest.mark.parametrize("n", [12, 40])
def test_mean_lower_bound_holds_for_every_candidate(case, n):
    opt = _fitted(case, n, seed=case)
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
    screening = _fitted(0, 12, seed=0, kernel="moddif").model.screening()
    assert screening is not None and not screening.offers_mean_lower_bound
    with pytest.raises(NotImplementedError, match="ModLap"):
        screening.mean_lower_bound(np.zeros((1, 12)))


@pytest.mark.parametrize("case", [0, 1])
@pytest.mark.parametrize("seed", [0, 1])
def test_pruned_pool_makes_the_same_choice(case, seed, monkeypatch):
    from graphbo.optim import mixed

    monkeypatch.setattr(mixed, "_LOOSE", 1.0)  # prune whatever the trial rows show
    opt = _fitted(case, 30, seed=seed)
    acq = LogExpectedImprovement(opt.model)
    incumbent = opt.X[int(np.argmin(opt.y))]
    out = {}
    for pruned in (True, False):
        # a plain callable has no bound: every pool row is scored exactly, as before the pruning
        # (chunk=500: the pool of 4020 rows is over 4 chunks, so the pruned path is tried)
        a = acq if pruned else (lambda X: acq(X))
        out[pruned] = optimize_acquisition_mixed(a, opt.space, rng=np.random.default_rng(100 + seed),
                                                 incumbent=incumbent,
                                                 exclude=set(opt.excluded_rows), n_random=4000, n_spray=20, n_starts=6,
                                                 chunk=500)
    assert np.array_equal(out[True][0], out[False][0])
    assert out[True][1] == pytest.approx(out[False][1], rel=1e-9, abs=1e-12)


def test_top_without_distinct_counts_repeated_rows_like_a_stable_sort():
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 3, size=(600, 2)).astype(float)  # many repeated rows
    acq = _Linear([0.7, -0.4], lambda r: rng.uniform(0, 0.5, len(r)))
    scores = BoundedScores(acq, rows, block=16)
    top = scores.top(25, distinct=False)
    assert np.array_equal(top, np.argsort(-acq.exact(rows), kind="stable")[:25])
    assert not scores.known.all()  # some rows were pruned



@pytest.mark.parametrize("case", [0, 1, 2])
@pytest.mark.parametrize("n", [12, 40])
def test_tight_variance_bound_lies_between_the_posterior_and_the_prior_variance(case, n):
    opt = _fitted(case, n, seed=case + 3)
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
    model._condition(model._V, model._C, model._ys)
    exact_var = model.posterior(rows).variance[0].detach()
    _, prior = model.screening().mean_lower_bound(rows)  # a new screening (new bound tables) for the new conditioning
    _, var_hi = model.screening().mean_lower_bound(rows, tight_variance=True)
    assert torch.all(var_hi >= exact_var - 1e-12)
    assert float((var_hi - exact_var).mean()) < 0.5 * float((prior - exact_var).mean())


@pytest.mark.parametrize("distinct", [False, True])
def test_refined_bound_keeps_ties_and_repeated_rows_as_exact_scoring_does(distinct):
    rng = np.random.default_rng(4)
    rows = rng.integers(0, 4, size=(2000, 3)).astype(float)  # many repeated rows, many tied scores
    # the refined bound is exactly tight: ties with the k-th value must still be scored
    acq = _Linear([1.0, -1.0, 0.5], lambda r: rng.uniform(0.0, 3.0, len(r)), refined=0.0)
    plain = BoundedScores.from_exact(rows, acq.exact(rows))
    for k in (1, 7, 30):
        top = BoundedScores(acq, rows, block=128).top(k, distinct=distinct)
        assert np.array_equal(top, plain.top(k, distinct=distinct))


def test_refined_bound_scores_fewer_rows_and_keeps_the_top_rows():
    rows = np.random.default_rng(1).normal(size=(3000, 3))
    counted = {}
    for refined in (None, 0.05):
        acq = _Linear([0.7, -0.4, 0.2], lambda r: 2.0, refined=refined)
        top = BoundedScores(acq, rows, block=256).top(20, distinct=False)
        assert np.array_equal(top, np.argsort(-acq.exact(rows), kind="stable")[:20])
        counted[refined] = acq.calls
    assert counted[0.05] < counted[None] / 2


@pytest.mark.parametrize("case", [0, 1])
def test_projector_entries_are_each_eigenspace_entry_of_each_pair(case):
    opt = _fitted(case, 12, seed=0)
    kernel = opt.kernel
    space = opt.space
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
    opt = _fitted(0, 12, seed=1)
    kernel, model = opt.kernel, opt.model
    V, C = model.split(opt.space.sample_index(50, np.random.default_rng(3)).astype(float))
    params = model.kernel_params.clone()
    first = kernel.diag(params, V, C=C)
    other = params.clone()
    other[kernel.Dc + 8] += 1.0  # the ordinal's beta (after the Dc lengthscales and 8 binary betas, whose
    # factors k(x, x) are 1 at every beta)
    changed = kernel.diag(other, V, C=C)
    kernel._diag_cache = None
    assert torch.equal(kernel.diag(other, V, C=C), changed)  # the cached tables are the fresh ones
    assert not torch.allclose(changed, first)
    assert torch.equal(kernel.diag(params, V, C=C), first)


def test_a_pool_whose_best_rows_were_evaluated_never_returns_them():
    opt = _fitted(1, 20, seed=4)
    acq = LogExpectedImprovement(opt.model)
    incumbent = opt.X[int(np.argmin(opt.y))]
    args = dict(n_random=3000, n_spray=10, n_starts=3, chunk=500)
    first, _ = optimize_acquisition_mixed(acq, opt.space, rng=np.random.default_rng(9), incumbent=incumbent,
                                          exclude=set(opt.excluded_rows), **args)
    # exclude the first choice and the rows the search would climb to: the answer must change
    exclude = set(opt.excluded_rows) | {first.tobytes()}
    second, _ = optimize_acquisition_mixed(acq, opt.space, rng=np.random.default_rng(9), incumbent=incumbent,
                                           exclude=exclude, **args)
    assert second.tobytes() not in exclude
    assert not np.array_equal(first, second)
    # the masks looked up only where a row could win give the same answer as testing every row
    parts = [BoundedScores.from_exact(np.stack([first, second]), np.array([1.0, 0.5])),
             BoundedScores.from_exact(np.stack([first, second, first]), np.array([2.0, 0.7, 0.1]))]
    masks = fresh_masks(parts, {first.tobytes()})
    assert masks[0].tolist() == [False, True]
    # floor = 0.7 (the best fresh scored row); the last row's 0.1 cannot reach it: not looked up
    assert masks[1].tolist() == [False, True, True]
    # a scored row whose bound lies below its exact value is still looked up (an excluded row is never
    # marked fresh by a bad bound)
    bad = BoundedScores.from_exact(np.stack([first, second]), np.array([3.0, 0.7]))
    bad.bound[0] = -5.0
    assert fresh_masks([bad], {first.tobytes()})[0].tolist() == [False, True]


@pytest.mark.parametrize("case", [0, 1])
def test_tight_variance_bound_holds_at_training_rows_and_with_fantasies(case):
    opt = _fitted(case, 25, seed=7)
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
    opt = _fitted(case, 30, seed=case)
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


def _pool(opt, n=12000, seed=3):
    acq = LogExpectedImprovement(opt.model)
    pool = opt.space.sample_index(n, np.random.default_rng(seed)).astype(float)

    def score_rows(rows):
        with torch.no_grad():
            return np.concatenate([acq(torch.as_tensor(rows[s:s + 2000])).numpy() for s in range(0, len(rows), 2000)])

    return acq, pool, score_rows


@pytest.mark.parametrize("kernel", ["modlap", "moddif"])  # moddif: no mean bound, no trial rows
@pytest.mark.parametrize("case", [0, 2])
def test_screened_pool_scores_few_rows_and_takes_the_exact_best(case, kernel, monkeypatch):
    from graphbo.optim import mixed

    monkeypatch.setattr(mixed, "_LOOSE", -1.0)  # the mean bound is never used: the float32 screening is
    opt = _fitted(case, 40, seed=case, kernel=kernel)
    acq, pool, score_rows = _pool(opt)
    exact = score_rows(pool)
    scores = mixed._pool_scores(acq, pool, score_rows, chunk=2000, n_starts=10)
    assert scores.scored.sum() < pool.shape[0] // 2  # most rows were only screened
    top = scores.top(10, distinct=False)
    assert np.array_equal(top, np.argsort(-exact, kind="stable")[:10])
    np.testing.assert_allclose(scores.exact[top], exact[top], rtol=1e-12)


def test_only_modlap_and_moddif_models_screen():
    assert _fitted(0, 12, seed=0, kernel="moddif").model.screening().offers_screen_moments
    general = _fitted(0, 12, seed=0, kernel="general").model.screening()
    assert general is not None and not general.offers_screen_moments  # neighbour moments only
    assert general.offers_neighbour_moments and not general.offers_mean_lower_bound
    with pytest.raises(NotImplementedError, match="ModLap or ModDif"):
        general.screen_moments(np.zeros((1, 12)))


@pytest.mark.parametrize("how", ["margin below rounding", "estimates off"])
def test_screening_scores_every_row_when_its_estimates_miss_by_more_than_half_the_margin(how, monkeypatch):
    from graphbo.optim import mixed

    monkeypatch.setattr(mixed, "_LOOSE", -1.0)
    opt = _fitted(0, 40, seed=0)
    acq, pool, score_rows = _pool(opt)
    if how == "margin below rounding":
        monkeypatch.setattr(mixed, "SCREEN_MARGIN", 1e-15)  # below float32's rounding: the check must fail
    else:  # every other row's estimate 3 margins too low, at the normal margin
        real = mixed._ScreenedEI.estimate

        def off(self, rows):
            out = real(self, rows)
            return out - 3 * mixed.SCREEN_MARGIN * (np.arange(rows.shape[0]) % 2)

        monkeypatch.setattr(mixed._ScreenedEI, "estimate", off)
    scores = mixed._pool_scores(acq, pool, score_rows, chunk=2000, n_starts=10)
    assert scores.scored.all()
    # the rows scored before the check keep their values (computed in other batches: equal up to rounding)
    np.testing.assert_allclose(scores.exact, score_rows(pool), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(scores.bound, scores.exact)


def test_screened_pool_makes_the_same_choice(monkeypatch):
    from graphbo.models.mixed_gp_screening import MixedGPScreening
    from graphbo.optim import mixed

    monkeypatch.setattr(mixed, "_LOOSE", -1.0)
    opt = _fitted(0, 30, seed=1)
    acq = LogExpectedImprovement(opt.model)
    incumbent = opt.X[int(np.argmin(opt.y))]
    out, starts = {}, {}
    real = mixed._pool_scores

    def spy(acquisition, pool, score_rows, chunk, n_starts):
        scores = real(acquisition, pool, score_rows, chunk, n_starts)
        starts[screened] = pool[scores.top(n_starts, distinct=False)]
        return scores

    monkeypatch.setattr(mixed, "_pool_scores", spy)
    for screened in (True, False):
        if not screened:  # the same path but every pool row scored exactly
            monkeypatch.setattr(MixedGPScreening, "offers_screen_moments", property(lambda self: False))
        out[screened] = optimize_acquisition_mixed(acq, opt.space, rng=np.random.default_rng(11), incumbent=incumbent,
                                                   exclude=set(opt.excluded_rows), n_random=4000, n_spray=20, n_starts=6,
                                                   chunk=500)
    np.testing.assert_array_equal(starts[True], starts[False])
    assert np.array_equal(out[True][0], out[False][0])
    assert out[True][1] == pytest.approx(out[False][1], rel=1e-9, abs=1e-12)


def test_screening_is_made_once_per_conditioning_and_a_kept_one_raises_after_it():
    opt = _fitted(0, 12, seed=2)
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


@pytest.mark.parametrize("kernel", ["modlap", "moddif"])
@pytest.mark.parametrize("case", [0, 2])
def test_the_acquisition_optimiser_makes_the_same_choice_without_any_screening(case, kernel, monkeypatch):
    """The whole of ``Surrogate.screening()`` (mean bound, float32 screening and neighbour moments, as the
    optimiser chooses them) against a model that offers none: every row scored exactly."""
    from graphbo.models.mixed_gp import MixedGP

    opt = _fitted(case, 30, seed=case + 1, kernel=kernel)
    acq = LogExpectedImprovement(opt.model)
    incumbent = opt.X[int(np.argmin(opt.y))]
    out = {}
    for screened in (True, False):
        if not screened:
            monkeypatch.setattr(MixedGP, "screening", lambda self: None)
        assert (opt.model.screening() is not None) == screened
        out[screened] = optimize_acquisition_mixed(acq, opt.space, rng=np.random.default_rng(12), incumbent=incumbent,
                                                   exclude=set(opt.excluded_rows), n_random=4000, n_spray=20, n_starts=8,
                                                   chunk=500)
    assert np.array_equal(out[True][0], out[False][0])
    assert out[True][1] == pytest.approx(out[False][1], rel=1e-9, abs=1e-12)
