"""Ordinal variables can be modelled as smooth over their whole range (issue 16.3).

With unit path edges and COMBO's cap ``beta <= 100`` the diffusion kernel correlates no
more than about 14 steps, so a smooth function on 0..199 could only be modelled as rough.
:func:`graphbo.spaces.variables.path_edge_weight` rescales long paths.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import graphbo as gb
from graphbo.kernels.diffusion import GraphDiffusionKernel
from graphbo.models.diffusion_gp import DiffusionGP
from graphbo.models.priors import LOG_BETA_UPPER
from graphbo.spaces.io import space_from_dict, space_to_dict
from graphbo.spaces.variables import SMOOTH_STEPS, path_edge_weight


def test_default_weight_is_unit_on_short_paths_and_grows_with_length():
    for k in range(1, SMOOTH_STEPS + 2):
        assert path_edge_weight(k) == 1.0
        assert gb.Ordinal(list(range(k))).edge_weight == 1.0
    assert path_edge_weight(21) == pytest.approx(4.0)
    assert path_edge_weight(201) == pytest.approx(400.0)
    assert gb.Ordinal(list(range(200))).edge_weight == pytest.approx(199 ** 2 / 100)
    assert gb.Ordinal(list(range(200)), edge_weight=1.0).edge_weight == 1.0  # explicit weights are kept


def _end_to_end_correlation(var: gb.Ordinal, beta: float) -> float:
    """Correlation of the first and last value under the normalised diffusion kernel at ``beta``."""
    kernel = GraphDiffusionKernel([var.spectrum])
    table = kernel.factor_table(0, math.log(beta))
    return float(table[0, -1] / math.sqrt(table[0, 0] * table[-1, -1]))


@pytest.mark.parametrize("k", [12, 50, 200, 1000])
def test_smoothest_allowed_kernel_spans_the_range(k):
    """At COMBO's largest beta the two ends of any default path stay correlated."""
    beta_max = math.exp(LOG_BETA_UPPER)
    assert _end_to_end_correlation(gb.Ordinal(list(range(k))), beta_max) > 0.5
    if k >= 50:  # with unit edges they were not (the defect)
        assert _end_to_end_correlation(gb.Ordinal(list(range(k)), edge_weight=1.0), beta_max) < 0.05


def _smooth(x: np.ndarray, k: int) -> np.ndarray:
    t = x / (k - 1)
    return np.sin(3 * np.pi * t) + 0.5 * np.cos(7 * t) + t ** 2


def _prediction_error(var: gb.Ordinal, n_train: int, seed: int) -> float:
    """RMSE of the posterior mean on the values not trained on, over the function's std."""
    k = var.n_values
    rng = np.random.default_rng(seed)
    gp = DiffusionGP(GraphDiffusionKernel([var.spectrum]))
    train = rng.choice(k, n_train, replace=False)
    gp.fit(train[:, None], _smooth(train.astype(float), k), rng)
    rest = np.setdiff1d(np.arange(k), train)
    with torch.no_grad():
        mu = gp.posterior(rest[:, None]).mean.mean(0).numpy()
    full = _smooth(np.arange(k, dtype=float), k)
    return float(np.sqrt(np.mean((mu - _smooth(rest.astype(float), k)) ** 2)) / np.std(full))


def test_gp_on_20_points_predicts_the_other_180_of_a_smooth_function():
    var = gb.Ordinal(list(range(200)))
    errors = [_prediction_error(var, 20, seed) for seed in range(5)]
    assert max(errors) < 0.1, errors


def test_gp_on_10_points_still_learns_the_shape():
    """Sparser data: the scaled path keeps the error well below the function's spread,
    where unit edges (graphbo 0.1) predicted about the mean (relative error near 1)."""
    scaled = [_prediction_error(gb.Ordinal(list(range(200))), 10, seed) for seed in range(5)]
    unit = [_prediction_error(gb.Ordinal(list(range(200)), edge_weight=1.0), 10, seed) for seed in range(5)]
    assert np.median(scaled) < 0.25, scaled
    assert np.median(unit) > 2 * np.median(scaled), (unit, scaled)


def test_space_files_keep_default_and_explicit_weights_apart():
    space = gb.Space({"a": gb.Ordinal(["x", "y", "z"] * 1 + [f"v{i}" for i in range(40)]),
                      "b": gb.Ordinal([f"w{i}" for i in range(40)], edge_weight=1.0)})
    d = space_to_dict(space)
    assert "edge_weight" not in d["variables"]["a"]
    assert d["variables"]["b"]["edge_weight"] == 1.0
    back = space_from_dict(d)
    assert back["a"].edge_weight == space["a"].edge_weight == path_edge_weight(43)
    assert back["b"].edge_weight == 1.0
