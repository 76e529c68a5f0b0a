"""COMBO's prior on the diffusion parameters ``beta_i`` (COMBO supplement Eq. 11), sampled on ``log beta_i``.

``beta_prior="reference"`` evaluates the Horseshoe proxy at ``exp(log beta)`` with no Jacobian, as the authors'
code; ``"horseshoe"`` is the paper's prior on ``beta`` carried to ``log beta`` by the change of variables. These
tests check the consequence that made the option necessary (the densities themselves are checked in
tests/models/test_priors.py): with little data the reference density holds every ``beta_i`` near its lower
bound, where the GP predicts its mean away from the data, while the paper's prior lets it generalise.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

import graphbo as gb
from support import binary_space


def _fitted(beta_prior, n=40, d=30, seed=0):
    space = binary_space(d)
    weights = np.random.default_rng(100).normal(size=d)

    def f(row):  # additive: every variable matters, smoothly
        return float(np.asarray(row, dtype=float) @ weights)

    rng = np.random.default_rng(seed)
    rows = space.sample_index(n + 200, rng)
    opt = gb.COMBO(space, seed=seed, n_initial=n, n_burn=60, n_samples=5, n_random=500, n_starts=3,
                   beta_prior=beta_prior)
    for r in rows[:n]:
        opt.tell(space.from_index(r), f(r))
    opt.ask()  # fits the model
    test = rows[n:]
    mean = opt.model.posterior(test).mean.mean(0).detach().numpy()
    beta = np.exp(np.stack([s.log_beta for s in opt.model.samples]))
    return mean, np.array([f(r) for r in test]), beta


def test_with_the_papers_prior_the_gp_generalises_from_few_points_and_with_the_reference_density_it_does_not():
    mean, truth, beta = _fitted("horseshoe")
    rho = spearmanr(mean, truth).correlation
    assert rho > 0.5, rho  # held-out rank correlation on an additive function of 30 bits, 40 points
    assert np.median(beta) > 0.1
    ref_mean, _, ref_beta = _fitted("reference")
    assert np.median(ref_beta) < 0.01  # held at the lower bound: each factor is nearly the identity
    spread = float(np.std(ref_mean)) / float(np.std(truth))
    ref_rho = spearmanr(ref_mean, truth).correlation if spread > 1e-9 else 0.0
    assert ref_rho < rho - 0.3, (ref_rho, rho)


def test_a_bad_beta_prior_names_the_option():
    with pytest.raises(ValueError, match="beta_prior"):
        gb.COMBO(gb.Space({"x": gb.Binary()}), beta_prior="flat")


def test_a_chain_saved_under_another_prior_loads_with_a_warning_naming_it():
    space = binary_space(6)
    old = gb.COMBO(space, seed=0, n_initial=4, n_burn=5, n_samples=2, n_random=200, n_starts=2, beta_prior="reference")
    for _ in range(6):
        c = old.ask()
        old.tell(c, float(sum(c.values())))
    state = old.get_state()
    assert state["method"]["beta_prior"] == "reference"
    with pytest.warns(UserWarning, match="beta_prior='reference'"):
        gb.COMBO(space, seed=0, n_initial=4).set_state(state)
    before_the_option = dict(state, method={k: v for k, v in state["method"].items() if k != "beta_prior"})
    with pytest.warns(UserWarning, match="beta_prior='reference'"):  # saved before the option: the reference one
        gb.COMBO(space, seed=0, n_initial=4).set_state(before_the_option)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gb.COMBO(space, seed=0, n_initial=4, beta_prior="reference").set_state(state)  # its own prior: silent
