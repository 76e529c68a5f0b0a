"""COMBO's slice sampler: the fast paths compute the same densities and leave the chain's law unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest

import graphbo as gb
from graphbo.models import diffusion_gp
from graphbo.models.diffusion_gp import DiffusionGP, HyperSample, _Sweeper


class _ReferenceSweeper(_Sweeper):
    """Every density from the general formula: tables gathered per variable, nothing carried between updates."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._equal = {}

    def _update(self, logp_prior, lik, x0):
        self._lik = None
        return super()._update(logp_prior, lik, x0)


def _problem(n, seed=0):
    space = gb.Space({"a": gb.Binary(), "b": gb.Categorical(list("abcd")), "c": gb.Ordinal(list(range(9))),
                      "d": gb.Binary()})
    rng = np.random.default_rng(seed)
    X = space.sample_index(n, rng)
    y = 1.5 * X[:, 0] - (X[:, 1] == 2) + 0.1 * (X[:, 2] - 4.0) ** 2 + 0.05 * rng.normal(size=n)
    return space, X, y


def test_kernel_recognises_two_valued_factors():
    space, _, _ = _problem(5)
    kernel = gb.GraphDiffusionKernel([v.spectrum for v in space.variables])
    assert [kernel.is_two_valued(i) for i in range(4)] == [True, True, False, True]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fast_likelihoods_equal_the_general_formula(seed):
    space, X, y = _problem(40, seed)
    kernel = gb.GraphDiffusionKernel([v.spectrum for v in space.variables])
    rng = np.random.default_rng(seed)
    gp = DiffusionGP(kernel)
    gp.state = HyperSample(0.2, 0.3, -4.0, rng.normal(size=4))
    fast, ref = _Sweeper(gp, X, y, rng), _ReferenceSweeper(gp, X, y, rng)
    logK = sum(ref._log_factor(i, gp.state.log_beta[i]) for i in range(4))
    assert np.allclose(sum(fast._log_factor(i, gp.state.log_beta[i]) for i in range(4)), logK, atol=1e-12)
    for i in range(4):
        K_rest = np.exp(logK - ref._log_factor(i, gp.state.log_beta[i]))
        for b in rng.normal(size=3):
            got = fast._beta_likelihood(i, K_rest, 0.2, math.exp(0.3), math.exp(-4.0))(b)
            want = ref._beta_likelihood(i, K_rest, 0.2, math.exp(0.3), math.exp(-4.0))(b)
            assert got == pytest.approx(want, rel=1e-10, abs=1e-9)


def _chain(sweeper_cls, seed, monkeypatch, n_samples):
    monkeypatch.setattr(diffusion_gp, "_Sweeper", sweeper_cls)
    space, X, y = _problem(30)
    gp = DiffusionGP(gb.GraphDiffusionKernel([v.spectrum for v in space.variables]), n_burn=30,
                     n_samples=n_samples)
    gp.fit(X, y, np.random.default_rng(seed))
    return np.array([[s.mean, s.log_amp, s.log_noise, *s.log_beta] for s in gp.samples])


def test_fast_chain_has_the_reference_chains_stationary_statistics(monkeypatch):
    n = 600
    fast = _chain(_Sweeper, 1, monkeypatch, n)
    ref = _chain(_ReferenceSweeper, 2, monkeypatch, n)

    def batch_se(x):  # standard error from 20 batch means (accounts for autocorrelation)
        means = x.reshape(20, -1, x.shape[1]).mean(axis=1)
        return means.std(axis=0, ddof=1) / math.sqrt(20)

    se = np.sqrt(batch_se(fast) ** 2 + batch_se(ref) ** 2)
    z = np.abs(fast.mean(0) - ref.mean(0)) / np.maximum(se, 1e-9)
    assert np.all(z < 4.5), z
