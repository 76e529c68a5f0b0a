"""Dimension-scaled priors of the FM kernels (Hvarfner et al., ICML 2024) and BO-FM's rule that takes them
from :data:`~graphbo.optimizers.bofm.SCALED_PRIOR_MIN_DIMENSIONS` effective variables."""

import math

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

import graphbo as gb
from graphbo.kernels.frequency_modulated import KERNELS, FMKernel
from graphbo.models.mixed_gp import MixedGP
from graphbo.optimizers import METHODS
from graphbo.optimizers.bofm import BOFM, SCALED_PRIOR_MIN_DIMENSIONS


def _binaries_unit_continuous_space(p: int, n_cont: int = 0) -> gb.Space:
    return gb.Space([(f"b{i}", gb.Binary()) for i in range(p)] + [(f"x{j}", gb.Continuous(0.0, 1.0))
                                                                     for j in range(n_cont)])


def _kernel(name: str, space: gb.Space, prior: str = "scaled") -> FMKernel:
    spectra = [space.variables[j].spectrum for j in space.discrete_indices]
    return FMKernel(name, spectra, n_continuous=len(space.continuous_indices), prior=prior)


@pytest.mark.parametrize("name", KERNELS)
@pytest.mark.parametrize("p", [3, 30])
def test_at_the_scaled_centre_one_binary_flip_keeps_correlation_exp_minus_one_over_d(name, p):
    space = _binaries_unit_continuous_space(p, n_cont=2)
    k = _kernel(name, space)
    d = p + 2
    assert k.n_effective == d
    V = torch.zeros(2, p, dtype=torch.long)
    V[1, 0] = 1  # one binary variable changed, same continuous part (r = 0)
    C = torch.full((2, 2), 0.5, dtype=torch.float64)
    if name in ("addlap", "adddif"):  # the graph kernel of the sum (the RBF term does not see the change)
        K = k._graph_kernel(k.unpack(k.default_params()), V, V)
    else:
        K = k(k.default_params(), V, C)
    corr = float(K[0, 1] / torch.sqrt(K[0, 0] * K[1, 1]))
    if name in ("fnn", "general"):  # the Lap centre: 1 / (2 + beta lambda - k_NN) with k_NN(c, c) < 1,
        assert math.exp(-2 / d) < corr < 1.0  # and general's higher powers of its first term
    else:
        assert corr == pytest.approx(math.exp(-1 / d), rel=1e-9)


def test_scaled_centre_of_the_continuous_lengthscale_and_the_modulation():
    space = _binaries_unit_continuous_space(50, n_cont=3)
    p = _kernel("modlap", space).unpack(_kernel("modlap", space).default_params())
    assert torch.allclose(p["log_theta"], torch.full((3,), math.sqrt(2) + 0.5 * math.log(53), dtype=torch.float64))
    assert torch.allclose(p["log_alpha"], torch.full((50,), -math.log(50), dtype=torch.float64))


def test_single_valued_variables_do_not_count_in_d():
    space = gb.Space([("a", gb.Categorical(["only"])), ("b", gb.Binary()), ("x", gb.Continuous(0, 1))])
    assert _kernel("modlap", space).n_effective == 2


@pytest.mark.parametrize("prior", ["weak", "scaled"])
def test_log_prior_is_highest_at_its_centre_and_random_starts_scatter_around_it(prior):
    space = _binaries_unit_continuous_space(25, n_cont=2)
    k = _kernel("modlap", space, prior=prior)
    centre = k.default_params()
    if prior == "weak":
        assert torch.equal(centre, torch.zeros(k.size, dtype=torch.float64))
    t = centre.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(k.log_prior(t), t)
    assert torch.allclose(g, torch.zeros_like(g))
    shift = torch.zeros_like(centre)
    shift[0] = 1.0
    sd = 3.0 if prior == "weak" else math.sqrt(3.0)
    assert float(k.log_prior(centre) - k.log_prior(centre + shift)) == pytest.approx(0.5 / sd**2)
    draws = torch.stack([k.random_params(np.random.default_rng(s)) for s in range(400)])
    assert torch.allclose(draws.mean(0), centre, atol=0.2)


def test_unknown_kernel_prior_is_refused_naming_it():
    with pytest.raises(ValueError, match="prior"):
        _kernel("modlap", _binaries_unit_continuous_space(3), prior="strong")


def test_bofm_takes_the_scaled_priors_from_the_threshold_on():
    small = BOFM(_binaries_unit_continuous_space(SCALED_PRIOR_MIN_DIMENSIONS - 2, n_cont=1), seed=0)
    large = BOFM(_binaries_unit_continuous_space(SCALED_PRIOR_MIN_DIMENSIONS - 1, n_cont=1), seed=0)
    assert (small.prior, small.kernel.prior, small.model.prior) == ("weak", "weak", "weak")
    assert (large.prior, large.kernel.prior, large.model.prior) == ("scaled", "scaled", "weak")
    # the kernels' priors are the rule's whole choice: a fresh kernel with them has the same centre
    for opt in (small, large):
        fresh = _kernel("modlap", opt.space, prior=opt.prior)
        torch.testing.assert_close(opt.kernel.default_params(), fresh.default_params())


def test_bofm_has_no_prior_option():
    """``BOFM(prior=...)`` ("auto", "weak", "scaled", "none") was removed: the rule above is the only one, and a
    run that still passes the option is told so. The kernel's and the model's own ``prior`` stay."""
    import inspect

    space = _binaries_unit_continuous_space(4, n_cont=1)
    assert "prior" not in inspect.signature(BOFM).parameters
    for value in ("auto", "weak", "scaled", "none"):
        with pytest.raises(TypeError, match="prior"):
            BOFM(space, seed=0, prior=value)
    with pytest.raises(TypeError, match="prior"):
        METHODS["bofm-tr"](space, seed=0, prior="weak")


def _neighbour_ranking(prior: str, seed: int) -> float:
    """AUC of the fit's ranking of the incumbent's 40 one-variable neighbours on ``f = number of ones + a mild
    continuous term``, from 40 random points and a local search's 40 points around a good one (one to three of
    its zeros set to one, all worse): the share of (better, worse) neighbour pairs whose posterior means are
    in the right order. Setting a one to zero is better, setting a zero to one worse."""
    p = 40
    space = _binaries_unit_continuous_space(p, n_cont=1)
    rng = np.random.default_rng(seed)

    def f(rows: np.ndarray) -> np.ndarray:
        return rows[:, :p].sum(1) + 2.0 * (rows[:, p] - 0.3) ** 2

    random = np.concatenate([rng.integers(0, 2, (40, p)), rng.random((40, 1))], 1).astype(float)
    centre = random[np.argmin(f(random))].copy()
    near = np.repeat(centre[None], 40, 0)
    zeros = np.flatnonzero(centre[:p] == 0)
    for r in near:
        r[rng.choice(zeros, rng.integers(1, 4), replace=False)] = 1
    X = np.concatenate([random, near])
    y = f(X)
    incumbent = X[np.argmin(y)]
    flips = np.repeat(incumbent[None], p, 0)
    flips[np.arange(p), np.arange(p)] = 1 - flips[np.arange(p), np.arange(p)]
    better = incumbent[:p] == 1
    gp = MixedGP(_kernel("modlap", space, prior=prior), space, n_restarts=3).fit(X, y, rng=np.random.default_rng(1))
    mean = gp.posterior(flips).mean.detach().numpy().ravel()
    return float(np.mean(mean[better][:, None] < mean[~better][None, :]))


def test_in_forty_dimensions_the_scaled_fit_ranks_the_incumbents_neighbours_by_their_value():
    """The failure the scaled priors fix (docs/bofm_benchmarks.md): with the weak priors' centre every
    variable is relevant at unit scale, so in 40 dimensions the fit reverts to its mean a few flips from
    the data; where a local search has tried only the worse neighbours of a good point, the weak fit can
    rank the untried better ones below them."""
    scaled = [_neighbour_ranking("scaled", seed) for seed in range(4)]
    weak = [_neighbour_ranking("weak", seed) for seed in range(4)]
    assert min(scaled) >= 0.95, scaled
    assert min(weak) < 0.5, weak  # the failure, on at least one of the four data sets
