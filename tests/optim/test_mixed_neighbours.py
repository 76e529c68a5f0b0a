"""BO-FM's hill-climbing step scores graph neighbours by replacing one factor of Eq. 5 where the model's screening
offers neighbour moments, and afresh otherwise; either way the acquisition optimiser makes the same choice. That
the neighbour moments equal the neighbours' posterior is tested in tests/models/test_mixed_gp_screening.py."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from graphbo.acquisition.ei import LogExpectedImprovement
from graphbo.models.mixed_gp_screening import MixedGPScreening
from graphbo.optim import mixed
from graphbo.optim.mixed import _neighbour_scores, optimize_acquisition_mixed
from support import fitted_bofm_on_ring


def test_a_kernel_outside_the_fm_family_is_scored_afresh():
    opt = fitted_bofm_on_ring("prodlap", True, n=15)
    assert opt.model.screening() is None  # no screening at all, so no neighbour moments
    starts = opt.space.sample_index(3, np.random.default_rng(1)).astype(float)
    nbrs, owner = opt.space.neighbor_index_batch(starts)
    calls = []
    acq = LogExpectedImprovement(opt.model)

    def score_rows(rows):
        calls.append(len(rows))
        return acq(torch.as_tensor(rows, dtype=torch.float64)).detach().numpy()

    _neighbour_scores(acq, opt.space, starts, nbrs, owner, score_rows)
    assert calls == [len(nbrs)]


def test_the_acquisition_optimiser_makes_the_same_choice_with_the_neighbour_path(monkeypatch):
    opt = fitted_bofm_on_ring("modlap", True, n=30, seed=2)
    monkeypatch.setattr(MixedGPScreening, "neighbour_moments_pay", lambda self, n_rows, n_neighbours: True)
    acq = LogExpectedImprovement(opt.model)

    def run():
        return optimize_acquisition_mixed(acq, opt.space, rng=np.random.default_rng(4),
                                          incumbent=opt.X[np.argmin(opt.y)],
                                          exclude=set(opt.excluded_rows), n_random=400, n_starts=12)

    fast_row, fast_value = run()
    calls = []
    original = mixed._neighbour_scores

    def afresh(acquisition, space, starts, nbrs, owner, score_rows):
        calls.append(len(nbrs))
        return score_rows(nbrs.astype(float))

    monkeypatch.setattr(mixed, "_neighbour_scores", afresh)
    row, value = run()
    assert calls  # the hill-climbing steps went through the neighbour scorer
    assert np.array_equal(fast_row, row) and value == pytest.approx(fast_value, rel=1e-9, abs=1e-12)
    assert original is not afresh
