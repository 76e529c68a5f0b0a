"""BO-FM's pool scoring (graphbo.optim.mixed, graphbo.optim.bounded): branch and bound on the screening's mean bound
and the float32 screening make the choices exact scoring makes, score few rows, and never return an evaluated
row. The screening's own bounds and moments are tested in tests/models/test_mixed_gp_screening.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphbo.acquisition.ei import LogExpectedImprovement
from graphbo.optim.bounded import BoundedScores, fresh_masks
from graphbo.optim.mixed import optimize_acquisition_mixed
from support import fitted_bofm_case


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


@pytest.mark.parametrize("case", [0, 1])
@pytest.mark.parametrize("seed", [0, 1])
def test_pruned_pool_makes_the_same_choice(case, seed, monkeypatch):
    from graphbo.optim import mixed

    monkeypatch.setattr(mixed, "_LOOSE", 1.0)  # prune whatever the trial rows show
    opt = fitted_bofm_case(case, 30, seed=seed)
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


def test_a_pool_whose_best_rows_were_evaluated_never_returns_them():
    opt = fitted_bofm_case(1, 20, seed=4)
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
    opt = fitted_bofm_case(case, 40, seed=case, kernel=kernel)
    acq, pool, score_rows = _pool(opt)
    exact = score_rows(pool)
    scores = mixed._pool_scores(acq, pool, score_rows, chunk=2000, n_starts=10)
    assert scores.scored.sum() < pool.shape[0] // 2  # most rows were only screened
    top = scores.top(10, distinct=False)
    assert np.array_equal(top, np.argsort(-exact, kind="stable")[:10])
    np.testing.assert_allclose(scores.exact[top], exact[top], rtol=1e-12)


@pytest.mark.parametrize("how", ["margin below rounding", "estimates off"])
def test_screening_scores_every_row_when_its_estimates_miss_by_more_than_half_the_margin(how, monkeypatch):
    from graphbo.optim import mixed

    monkeypatch.setattr(mixed, "_LOOSE", -1.0)
    opt = fitted_bofm_case(0, 40, seed=0)
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
    opt = fitted_bofm_case(0, 30, seed=1)
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


@pytest.mark.parametrize("kernel", ["modlap", "moddif"])
@pytest.mark.parametrize("case", [0, 2])
def test_the_acquisition_optimiser_makes_the_same_choice_without_any_screening(case, kernel, monkeypatch):
    """The whole of ``Surrogate.screening()`` (mean bound, float32 screening and neighbour moments, as the
    optimiser chooses them) against a model that offers none: every row scored exactly."""
    from graphbo.models.mixed_gp import MixedGP

    opt = fitted_bofm_case(case, 30, seed=case + 1, kernel=kernel)
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
