"""BO-FM's pool scoring by branch and bound (issue 17.2): the mean bound holds, choices are unchanged."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import graphbo as gb
from graphbo.acquisition.ei import LogExpectedImprovement
from graphbo.optim.bounded import BoundedScores
from graphbo.optim.mixed import optimize_acquisition_mixed


def _spaces():
    mixed = gb.Space([(f"b{i}", gb.Binary()) for i in range(8)]
                     + [("o", gb.Ordinal(list(range(7)))), ("c", gb.Categorical(list("abcd"))),
                        ("x", gb.Continuous(-1.0, 1.0)), ("z", gb.Continuous(0.0, 2.0))])
    discrete = gb.Space([(f"b{i}", gb.Binary()) for i in range(6)] + [("o", gb.Ordinal(list(range(9))))])

    def f_mixed(c):
        return float(sum((i % 3 - 1) * c[f"b{i}"] for i in range(8)) + (c["o"] - 4) ** 2 / 8
                     + (c["c"] == "b") + (c["x"] - 0.3) ** 2 + 0.5 * np.sin(3 * c["z"]))

    def f_discrete(c):
        return float(sum((i % 2) * c[f"b{i}"] for i in range(6)) + abs(c["o"] - 2) / 3)

    return [(mixed, f_mixed), (discrete, f_discrete)]


def _fitted(case, n, seed, kernel="modlap"):
    space, f = _spaces()[case]
    opt = gb.BOFM(space, seed=seed, n_initial=n, kernel=kernel, n_random=500, n_starts=5)
    for _ in range(n):
        c = opt.ask()
        opt.tell(c, f(c))
    opt.mark_failed(opt.ask())  # fits the model
    return opt


@pytest.mark.parametrize("case", [0, 1])
@pytest.mark.parametrize("n", [12, 40])
def test_mean_lower_bound_holds_for_every_candidate(case, n):
    opt = _fitted(case, n, seed=case)
    model = opt.model
    assert model.has_mean_lower_bound
    rows = opt.space.sample_index(3000, np.random.default_rng(5)).astype(float)
    post = model.posterior(rows)
    mean_lo, var_hi = model.mean_lower_bound(rows, chunk=700)  # several chunks
    exact_mean, exact_var = post.mean[0].detach(), post.variance[0].detach()
    tol = 1e-10 * (1 + exact_mean.abs())
    assert torch.all(mean_lo <= exact_mean + tol)
    assert torch.all(var_hi >= exact_var - 1e-12)
    if case == 1:  # no continuous inputs: r = 0 for every pair, the bound is the mean itself
        assert torch.allclose(mean_lo, exact_mean, rtol=1e-9, atol=1e-9)
    else:
        assert torch.any(mean_lo < exact_mean - 1e-6)  # a bound, not the mean
    acq = LogExpectedImprovement(model)
    exact = acq(torch.as_tensor(rows)).detach().numpy()
    from graphbo.optim.mixed import _BoundedEI

    bound = _BoundedEI(acq, lambda r: acq(torch.as_tensor(r)).detach().numpy()).upper_bound(rows).numpy()
    assert np.all(bound >= exact - 1e-9 * (1 + np.abs(exact)))


def test_only_modlap_claims_the_bound():
    assert not _fitted(0, 12, seed=0, kernel="moddif").model.has_mean_lower_bound
    with pytest.raises(RuntimeError, match="ModLap"):
        _fitted(0, 12, seed=0, kernel="moddif").model.mean_lower_bound(np.zeros((1, 12)))


@pytest.mark.parametrize("case", [0, 1])
@pytest.mark.parametrize("method", ["supplement", "typewise", "batched"])
@pytest.mark.parametrize("seed", [0, 1])
def test_pruned_pool_makes_the_same_choice(case, method, seed, monkeypatch):
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
        out[pruned] = optimize_acquisition_mixed(a, opt.space, np.random.default_rng(100 + seed), incumbent,
                                                 exclude=set(opt._exclude), n_random=4000, n_spray=20, n_starts=6,
                                                 method=method, chunk=500)
    assert np.array_equal(out[True][0], out[False][0])
    assert out[True][1] == pytest.approx(out[False][1], rel=1e-9, abs=1e-12)


def test_top_without_distinct_counts_repeated_rows_like_a_stable_sort():
    rng = np.random.default_rng(0)
    rows = rng.integers(0, 3, size=(600, 2)).astype(float)  # many repeated rows
    w = np.array([0.7, -0.4])

    def exact(r):
        return np.asarray(r) @ w

    class Bounded:
        has_upper_bound = True

        def __call__(self, r):
            return exact(r)

        def upper_bound(self, r):
            return exact(r) + rng.uniform(0, 0.5, len(r))

    scores = BoundedScores(Bounded(), rows, block=16)
    top = scores.top(25, distinct=False)
    assert np.array_equal(top, np.argsort(-exact(rows), kind="stable")[:25])
    assert not scores.known.all()  # some rows were pruned

