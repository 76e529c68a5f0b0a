"""BO-FM's hill-climbing step scores graph neighbours by replacing one factor of Eq. 5:
the neighbours' Gram rows, posterior moments and log-EI equal scoring the rows afresh, for every kernel of
the FM family, with graph, ordinal, categorical and binary variables, with and without continuous ones."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import graphbo as gb
from graphbo.acquisition.ei import LogExpectedImprovement
from graphbo.models.mixed_gp_screening import MixedGPScreening
from graphbo.optim import mixed
from graphbo.optim.mixed import _neighbour_scores, optimize_acquisition_mixed

RING = [[1 if abs(i - j) in (1, 4) else 0 for j in range(5)] for i in range(5)]  # a 5-cycle


def _binaries_ordinal_categorical_ring_space(continuous: bool) -> gb.Space:
    variables = [(f"b{i}", gb.Binary()) for i in range(4)] + [
        ("o", gb.Ordinal(list(range(6)))), ("c", gb.Categorical(list("abcd"))),
        ("g", gb.GraphVariable(list("vwxyz"), RING))]
    if continuous:
        variables += [("x", gb.Continuous(-1.0, 1.0)), ("z", gb.Continuous(0.0, 2.0))]
    return gb.Space(variables)


def _objective(c) -> float:
    value = sum((i % 3 - 1) * c[f"b{i}"] for i in range(4)) + (c["o"] - 3) ** 2 / 6 + (c["c"] == "b")
    value += 0.3 * "vwxyz".index(c["g"])
    if "x" in c:
        value += (c["x"] - 0.3) ** 2 + 0.5 * np.sin(3 * c["z"])
    return float(value)


def _fitted(kernel: str, continuous: bool, n: int = 25, seed: int = 0) -> gb.BOFM:
    opt = gb.BOFM(_binaries_ordinal_categorical_ring_space(continuous), seed=seed, n_initial=n, kernel=kernel,
                  n_random=300, n_starts=4, n_restarts=2)
    for _ in range(n):
        c = opt.ask()
        opt.tell(c, _objective(c))
    opt.mark_failed(opt.ask())  # fits the model
    return opt


@pytest.mark.parametrize("kernel, continuous", [("modlap", True), ("moddif", True), ("general", True), ("fnn", True),
                                                ("modlap", False)])
def test_neighbour_moments_equal_the_posterior_of_the_neighbours(kernel, continuous, monkeypatch):
    opt = _fitted(kernel, continuous)
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
    fast = model.kernel.neighbour_gram(kp, V, C1=C, V2=V_train, C2=C_train, owner=torch.as_tensor(owner),
                                       var=torch.as_tensor(var), value=torch.as_tensor(value))
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


def test_a_kernel_outside_the_fm_family_is_scored_afresh():
    opt = _fitted("prodlap", True, n=15)
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
    opt = _fitted("modlap", True, n=30, seed=2)
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
