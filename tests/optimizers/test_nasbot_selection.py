"""NASBOT's evolutionary parent selection (Kandasamy et al. 2018, App. B.2, "Sampling strategy"):
parents are drawn with replacement from the evaluated networks with ``pi(z_i) ~ exp(g(z_i) / sigma)``,
``g`` = EI (the acquisition ``phi_t``) and ``sigma`` a multiple of the standard deviation of the
``g`` values. The library evaluates log-EI, so the EA must exponentiate it before selecting."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import chi2

from graphbo.nas.domain.keys import architecture_key
from graphbo.nas.domain.pools import initial_pool
from graphbo.optim.evolutionary import SIGMA_SCALE, optimize_acquisition_ea, selection_probabilities

#: EI of the ten start networks: a wide range, so that exp(EI / sigma), exp(log EI / sigma),
#: EI / sum(EI) and the uniform distribution are far apart
EI = np.array([0.5, 0.3, 0.2, 0.1, 0.05, 0.02, 1e-2, 1e-3, 1e-4, 1e-6])


def paper_rule(ei: np.ndarray, sigma_scale: float = SIGMA_SCALE) -> np.ndarray:
    """App. B.2 written out: pi_i = exp(g_i / sigma) / sum_j exp(g_j / sigma), sigma = scale * std(g)."""
    w = np.exp(ei / (sigma_scale * ei.std()))
    return w / w.sum()


def test_log_values_select_by_exp_of_ei_over_sigma():
    p = selection_probabilities(np.log(EI), log_values=True)
    np.testing.assert_allclose(p, paper_rule(EI), rtol=1e-12)
    np.testing.assert_allclose(selection_probabilities(EI), paper_rule(EI), rtol=1e-12)  # g given directly
    # not the log-EI rule the EA used before (exp(log EI / sigma_log)), nor EI / sum(EI)
    assert np.abs(p - selection_probabilities(np.log(EI))).max() > 0.1
    assert np.abs(p - EI / EI.sum()).max() > 0.1
    # EI far below the float range: log-EI of about -1000 (EI * 1e-430 underflows to 0 in float64)
    np.testing.assert_allclose(selection_probabilities(np.log(EI) - 990.0, log_values=True), p, rtol=1e-9)
    # sigma scales with g: multiplying every EI by a constant changes nothing
    np.testing.assert_allclose(selection_probabilities(np.log(EI) + 3.0, log_values=True), p, rtol=1e-9)


def test_log_values_edge_cases():
    # log-EI of -inf is an EI of 0: a legitimate, least likely parent; NaN is never a parent
    q = selection_probabilities([np.log(0.2), -np.inf, np.log(0.1), np.nan], log_values=True)
    np.testing.assert_allclose(q[:3], paper_rule(np.array([0.2, 0.0, 0.1])), rtol=1e-12)
    assert q[3] == 0.0
    # every EI is 0 (or every value unusable): uniform over the usable ones
    np.testing.assert_allclose(selection_probabilities([-np.inf, -np.inf], log_values=True), [0.5, 0.5])
    np.testing.assert_allclose(selection_probabilities([np.nan, np.nan], log_values=True), [0.5, 0.5])
    with pytest.raises(ValueError, match="values"):
        selection_probabilities([], log_values=True)


def test_ea_draws_parents_with_the_paper_probabilities():
    """The EA's own draws: over 2000 first-round parents, the frequencies of the ten start
    networks match exp(EI / sigma) (chi-square, 9 degrees of freedom, level 1e-4); the same counts
    reject uniform selection, selection by exp(log EI / sigma) and selection proportional to EI."""
    pool = initial_pool("mlp-reg")
    assert len({architecture_key(a) for a in pool}) == len(EI)
    log_ei = {architecture_key(a): float(np.log(v)) for a, v in zip(pool, EI)}

    def phi(archs):  # log-EI: known on the start networks, tiny on children (never parents in round 1)
        return np.array([log_ei.get(architecture_key(a), -50.0) for a in archs])

    n_round, counts = 200, np.zeros(len(EI))
    for seed in range(10):
        res = optimize_acquisition_ea(phi, pool, rng=np.random.default_rng(seed), n_evaluations=n_round,
                                      n_mutations=n_round, log_acquisition=True)
        first = np.asarray(res.parents[:n_round])
        assert first.size == n_round and first.max() < len(EI)
        counts += np.bincount(first, minlength=len(EI))
    n = counts.sum()

    def statistic(p):
        return float(((counts - n * p) ** 2 / (n * p)).sum())

    limit = chi2.ppf(1 - 1e-4, df=len(EI) - 1)
    assert statistic(paper_rule(EI)) < limit
    for wrong in (np.full(len(EI), 1 / len(EI)), selection_probabilities(np.log(EI)), EI / EI.sum()):
        assert statistic(wrong) > 3 * limit
