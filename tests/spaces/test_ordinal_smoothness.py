"""Ordinal variables can be modelled as smooth over their whole range.

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
    edges = np.linspace(0, k, n_train + 1).astype(int)  # one random value in each of n_train equal blocks
    train = np.array([rng.integers(a, b) for a, b in zip(edges[:-1], edges[1:])])
    gp.fit(train[:, None], _smooth(train.astype(float), k), rng=rng)
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


def _paper_factor(var, log_beta: float) -> np.ndarray:
    """Supplement Eq. 8 as the paper writes it: ``U exp(-beta Lambda) U^T / Psi``."""
    lam, u = var.spectrum.eigenvalues, var.spectrum.eigenvectors
    w = np.exp(-math.exp(log_beta) * lam)
    return (u * (w / w.mean())) @ u.T


@pytest.mark.parametrize("log_beta", [-6.0, -2.0, 0.0, 2.0, math.log(100.0)])
def test_path_factors_have_unit_prior_variance_and_complete_graphs_are_the_papers(log_beta):
    """A path's end values had up to twice the prior variance of its middle ones, so EI went to
    the corners of ordinal grids; its factor is now in unit-diagonal form. Complete graphs
    (binary, categorical) already had a constant diagonal and keep the paper's factor exactly."""
    path, cat, binary = gb.Ordinal(list(range(60))), gb.Categorical(list("abcde")), gb.Binary()
    kernel = GraphDiffusionKernel([path.spectrum, cat.spectrum, binary.spectrum])
    assert kernel.unit_diagonal.tolist() == [True, False, False]
    table = kernel.factor_table(0, log_beta)
    np.testing.assert_allclose(np.diagonal(table), 1.0, rtol=1e-12)
    assert np.linalg.eigvalsh(table).min() > -1e-9  # still a kernel
    paper = _paper_factor(path, log_beta)
    d = np.sqrt(np.diagonal(paper))
    np.testing.assert_allclose(table, paper / d[:, None] / d[None, :], rtol=1e-10, atol=1e-300)
    for i, var in ((1, cat), (2, binary)):
        assert np.array_equal(kernel.factor_table(i, log_beta), _paper_factor(var, log_beta))
    # the torch path used for prediction agrees with the NumPy tables of the sampler
    W = kernel.log_block_diagonal(torch.full((1, 3), log_beta, dtype=torch.float64))[0].numpy()
    np.testing.assert_allclose(np.exp(W[:60, :60]), table, rtol=1e-9, atol=1e-12)  # tiny entries are rounding noise
    np.testing.assert_allclose(np.exp(W[60:65, 60:65]), _paper_factor(cat, log_beta), rtol=1e-12)


def test_first_model_suggestion_on_a_smooth_grid_is_not_a_corner():
    """With data only inside the grid and equal prior variance everywhere, EI has no reason to
    prefer the 8 corners of a 3-variable ordinal grid (before the fix every seed went there)."""
    space = gb.Space({f"x{i}": gb.Ordinal(list(range(100))) for i in range(3)})

    def bowl(c):
        return sum((c[f"x{i}"] - 60) ** 2 for i in range(3)) / 100.0

    corners = 0
    for seed in range(3):
        opt = gb.COMBO(space, seed=seed, n_initial=10, n_burn=30, n_samples=5, n_random=2000, n_starts=5)
        for _ in range(12):
            config = opt.ask()
            opt.tell(config, bowl(config))
        model_phase = [opt.X[i] for i in range(10, 12)]
        corners += sum(bool(np.all((row == 0) | (row == 99))) for row in model_phase)
    assert corners == 0
