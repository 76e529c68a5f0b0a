"""Branch-and-bound acquisition scoring (graphbo.optim.bounded): choices are unchanged, few candidates are scored
exactly, excluded rows are never returned. The bounds it relies on are tested in tests/acquisition/test_base.py
and tests/models/test_diffusion_gp_screening.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import graphbo as gb
from graphbo.acquisition.confidence_bound import NegativeLowerConfidenceBound
from graphbo.acquisition.ei import LogExpectedImprovement
from graphbo.optim.bounded import BoundedScores, best_fresh
from graphbo.optim.graph_local_search import optimize_acquisition_on_graph
from support import combo_bound_cases, fitted_combo


@pytest.mark.parametrize("case", [0, 1])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pruned_optimiser_makes_the_same_choice(case, seed):
    space, f = combo_bound_cases()[case]
    opt = fitted_combo(space, f, 40, seed=seed)
    acq = LogExpectedImprovement(opt.model)
    incumbent = opt.X[int(np.argmin(opt.y))]
    out = {}
    for prune in (True, False):
        out[prune] = optimize_acquisition_on_graph(acq, space, rng=np.random.default_rng(100 + seed),
                                                   incumbent=incumbent,
                                                   exclude=set(opt.excluded_rows), n_random=2000, n_starts=10,
                                                   prune=prune)
    assert np.array_equal(out[True][0], out[False][0])
    assert out[True][1] == pytest.approx(out[False][1], rel=1e-9, abs=1e-12)


def test_pruning_scores_few_candidates_exactly():
    space, f = combo_bound_cases()[0]
    opt = fitted_combo(space, f, 60, seed=0)
    rows = space.sample_index(4000, np.random.default_rng(3))
    scores = BoundedScores(LogExpectedImprovement(opt.model), rows)
    top = scores.top(10)
    exact = LogExpectedImprovement(opt.model)(rows).numpy()
    expected = np.argsort(-exact, kind="stable")
    # the same ten as scoring everything (the rows here are distinct draws of 12 bits, duplicates aside)
    keys = [rows[i].tobytes() for i in expected]
    distinct = [i for j, i in enumerate(expected) if keys[j] not in keys[:j]][:10]
    assert list(top) == distinct
    assert scores.known.sum() < rows.shape[0]


def test_best_fresh_skips_excluded_rows_and_scores_lazily():
    rows = np.arange(10)[:, None]
    values = np.array([5.0, 9.0, 1.0, 7.0, 9.0, 0.0, 3.0, 8.0, 2.0, 4.0])

    class Acq:
        calls = 0

        def __call__(self, r):
            Acq.calls += len(r)
            return torch.as_tensor(values[r[:, 0]])

        def upper_bound(self, r):
            return torch.as_tensor(values[r[:, 0]] + 0.5)

    part = BoundedScores(Acq(), rows, block=2)
    fresh = np.ones(10, dtype=bool)
    fresh[[1, 4]] = False  # the two best are "evaluated"
    row, val = best_fresh([part], [fresh])
    assert row[0] == 7 and val == 8.0
    assert Acq.calls < 10
    assert best_fresh([part], [np.zeros(10, dtype=bool)]) is None


def test_nan_scores_count_as_worst_and_end_the_search():
    """A user acquisition that returns NaN (with finite bounds) neither loops nor wins."""
    rows = np.arange(12)[:, None]
    values = np.array([np.nan, 2.0, np.nan, 5.0, 1.0, np.nan, 3.0, 0.5, np.nan, 4.0, 2.5, np.nan])

    class Acq:
        def __call__(self, r):
            return torch.as_tensor(values[r[:, 0]])

        def upper_bound(self, r):
            return torch.full((len(r),), 10.0)  # finite bounds everywhere, NaN scores underneath

    part = BoundedScores(Acq(), rows, block=2)
    row, val = best_fresh([part], [np.ones(12, dtype=bool)])
    assert row[0] == 3 and val == 5.0
    only_nan = np.isnan(values)
    row, val = best_fresh([BoundedScores(Acq(), rows, block=2)], [only_nan])
    assert row[0] == 0 and val == -np.inf  # a fresh row is still returned, scored as the worst
    assert list(BoundedScores(Acq(), rows, block=2).top(3)) == [3, 9, 6]


def test_acquisition_without_a_bound_of_its_own_is_scored_once():
    class Mean(gb.AcquisitionFunction):
        calls = 0

        def __call__(self, X):
            Mean.calls += len(X)
            return -self.model.posterior(X).mean.mean(0)

    space, f = combo_bound_cases()[0]
    opt = fitted_combo(space, f, 20, seed=0)
    acq = Mean(opt.model)
    assert not acq.has_upper_bound and LogExpectedImprovement(opt.model).has_upper_bound
    assert not NegativeLowerConfidenceBound(opt.model, kappa=-1.0).has_upper_bound
    rows = space.sample_index(1000, np.random.default_rng(0))
    BoundedScores(acq, rows, block=64).top(5)
    assert Mean.calls == 1000


@pytest.mark.parametrize("case", [0, 1])
def test_graph_search_never_returns_an_excluded_row(case):
    """The excluded-row look-ups cover only the rows that could win (bounded.fresh_masks): excluding the
    first choice must give another row, itself not excluded, and never a row of the excluded set."""
    space, f = combo_bound_cases()[case]
    opt = fitted_combo(space, f, 30, seed=3 + case)
    acq = LogExpectedImprovement(opt.model)
    incumbent = opt.X[int(np.argmin(opt.y))]
    args = dict(n_random=2000, n_starts=10)
    first, _ = optimize_acquisition_on_graph(acq, space, rng=np.random.default_rng(5), incumbent=incumbent,
                                             exclude=set(opt.excluded_rows), **args)
    exclude = set(opt.excluded_rows) | {first.tobytes()}
    second, _ = optimize_acquisition_on_graph(acq, space, rng=np.random.default_rng(5), incumbent=incumbent,
                                              exclude=exclude, **args)
    assert first.tobytes() not in opt.excluded_rows
    assert second.tobytes() not in exclude and not np.array_equal(first, second)
