"""Constrained log-EI (graphbo.acquisition.constrained): log-EI plus the log probability of feasibility, and
before a feasible point the expected improvement of an unmet constraint below its lowest value."""

import numpy as np
import pytest
import torch

import graphbo as gb
from graphbo.acquisition.constrained import LogConstrainedExpectedImprovement, log_probability_of_feasibility
from graphbo.acquisition.ei import LogExpectedImprovement, log_mean_expected_improvement
from graphbo.optimizers import METHODS


def test_constrained_ei_is_log_ei_plus_the_log_probability_of_feasibility():
    space = gb.Space({f"b{i}": gb.Binary() for i in range(4)})
    rng = np.random.default_rng(0)
    X = space.sample_index(12, rng)
    y = X.sum(1).astype(float) + rng.normal(0, 0.1, 12)
    c = (X[:, 0] - 0.5) + rng.normal(0, 0.1, 12)
    opt_y = METHODS["combo"](space, seed=0)
    opt_c = METHODS["combo"](space, seed=1)
    opt_y.model.fit(X, y, rng=np.random.default_rng(0))
    opt_c.model.fit(X, c, rng=np.random.default_rng(1))
    Xq = np.array([[0, 0, 0, 0], [1, 1, 1, 1], [1, 0, 1, 0]])
    best = float(y[c <= 0].min())
    acq = LogConstrainedExpectedImprovement(opt_y.model, [opt_c.model], best_f=best)
    post = opt_c.model.posterior(Xq)
    p = torch.special.ndtr(-post.mean / post.variance.sqrt()).mean(0)
    expected = LogExpectedImprovement(opt_y.model, best)(Xq).double() + torch.log(p)
    assert torch.allclose(acq(Xq), expected, atol=1e-6)
    assert torch.allclose(log_probability_of_feasibility(opt_c.model, Xq), torch.log(p), atol=1e-6)
    no_incumbent = LogConstrainedExpectedImprovement(opt_y.model, [opt_c.model], best_f=None)
    assert torch.allclose(no_incumbent(Xq), torch.log(p), atol=1e-6)
    assert torch.all(acq.upper_bound(Xq) >= acq(Xq) - 1e-9)
    # pruning uses a bound only where it is one of its own: before a feasible point the score is its own bound
    assert acq.has_upper_bound and not no_incumbent.has_upper_bound


def test_before_a_feasible_point_an_unmet_constraint_scores_its_expected_improvement_below_its_lowest_value():
    space = gb.Space({f"b{i}": gb.Binary() for i in range(4)})
    rng = np.random.default_rng(0)
    X = space.sample_index(12, rng)
    y = X.sum(1).astype(float)
    unmet = 2.0 + X[:, 0] + rng.normal(0, 0.1, 12)  # never <= 0
    met = X[:, 1] - 0.5 + rng.normal(0, 0.1, 12)  # <= 0 on some rows
    models = []
    for seed, values in enumerate((y, unmet, met)):
        opt = METHODS["combo"](space, seed=seed)
        opt.model.fit(X, values, rng=np.random.default_rng(seed))
        models.append(opt.model)
    Xq = np.array([[0, 0, 0, 0], [1, 1, 1, 1], [1, 0, 1, 0], [0, 1, 0, 1]])
    lowest = [models[1].transform_outcome(float(unmet.min())), models[2].transform_outcome(float(met.min()))]
    acq = LogConstrainedExpectedImprovement(models[0], models[1:], best_f=None, constraint_best=lowest)
    post = models[1].posterior(Xq)
    expected = (log_mean_expected_improvement(post.mean, post.variance, best=lowest[0]).double()
                + log_probability_of_feasibility(models[2], Xq))
    assert torch.allclose(acq(Xq), expected, atol=1e-9)
    assert torch.all(acq.upper_bound(Xq) >= acq(Xq) - 1e-9)
    # lower is better for the unmet constraint: the row with x0 = 0 (lower values) scores higher
    assert acq(Xq)[0] > acq(Xq)[1]
    with pytest.raises(ValueError, match="one value per constraint"):
        LogConstrainedExpectedImprovement(models[0], models[1:], best_f=None, constraint_best=[1.0])
