"""Slice sampling: the univariate sampler (graphbo.models.slice_sampling) draws from its density, and COMBO's
sweep over the DiffusionGP's hyper-parameters (``diffusion_gp._Sweeper``): the fast paths compute the same
densities and leave the chain's law unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest

import graphbo as gb
from graphbo.models import diffusion_gp, slice_sample
from graphbo.models.diffusion_gp import DiffusionGP, HyperSample, _Sweeper
from support import binary_space


class _ReferenceSweeper(_Sweeper):
    """Every density from the general formula: tables gathered per variable, ``K_rest`` from the other
    factors' logs, nothing carried between updates, and the fixed unit bracket width of Neal's sampler
    (no adaptation)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._equal = {}
        self.safe_product = math.inf
        self.widths[:] = 1.0

    def adapted_widths(self):
        return self.widths.copy()

    def _update(self, coord, logp_prior, lik, x0):
        self._lik = None
        return super()._update(coord, logp_prior, lik, x0)


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
    gp.state = HyperSample(mean=0.2, log_amp=0.3, log_noise=-4.0, log_beta=rng.normal(size=4))
    fast, ref = _Sweeper(gp, X, y, rng), _ReferenceSweeper(gp, X, y, rng)
    logK = sum(ref._log_factor(i, gp.state.log_beta[i]) for i in range(4))
    assert np.allclose(sum(fast._log_factor(i, gp.state.log_beta[i]) for i in range(4)), logK, atol=1e-12)
    for i in range(4):
        K_rest = np.exp(logK - ref._log_factor(i, gp.state.log_beta[i]))
        for b in rng.normal(size=3):
            got = fast._beta_likelihood(i, K_rest, 0.2, math.exp(0.3), math.exp(-4.0))(b)
            want = ref._beta_likelihood(i, K_rest, 0.2, math.exp(0.3), math.exp(-4.0))(b)
            assert got == pytest.approx(want, rel=1e-10, abs=1e-9)
            if i in fast._equal:  # K's parts scaled by the current factor's (a0, c0), either one the larger
                E = fast._equal[i]
                for a0, c0 in ((3.0, 1e-4), (1e-4, 3.0)):
                    lik = fast._two_valued_likelihood(i, a0 * K_rest * E, c0 * K_rest * ~E, a0, c0, 0.2,
                                                      math.exp(0.3), math.exp(-4.0))
                    assert lik(b) == pytest.approx(want, rel=1e-10, abs=1e-9)


def _chain(sweeper_cls, seed, monkeypatch, n_samples, n_fits=1):
    """The kept samples of ``n_fits`` consecutive fits (warm-started, widths adapted between them)."""
    monkeypatch.setattr(diffusion_gp, "_Sweeper", sweeper_cls)
    space, X, y = _problem(30)
    gp = DiffusionGP(gb.GraphDiffusionKernel([v.spectrum for v in space.variables]), n_burn=30,
                     n_samples=n_samples // n_fits)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_fits):
        gp.fit(X, y, rng=rng)
        out += [[s.mean, s.log_amp, s.log_noise, *s.log_beta] for s in gp.samples]
    return np.array(out)


def test_fast_chain_has_the_reference_chains_stationary_statistics(monkeypatch):
    n = 600
    fast = _chain(_Sweeper, 1, monkeypatch, n, n_fits=30)  # 30 fits of 20 sweeps: adapted widths, warm starts
    ref = _chain(_ReferenceSweeper, 2, monkeypatch, n)

    def batch_se(x):  # standard error from 20 batch means (accounts for autocorrelation)
        means = x.reshape(20, -1, x.shape[1]).mean(axis=1)
        return means.std(axis=0, ddof=1) / math.sqrt(20)

    se = np.sqrt(batch_se(fast) ** 2 + batch_se(ref) ** 2)
    z = np.abs(fast.mean(0) - ref.mean(0)) / np.maximum(se, 1e-9)
    assert np.all(z < 4.5), z


def test_adapted_widths_need_fewer_likelihood_evaluations_than_unit_widths(monkeypatch):
    """Many irrelevant binary variables: their log beta posteriors are broad, where unit brackets double often."""
    space = gb.Space({f"b{i}": gb.Binary() for i in range(12)})
    rng = np.random.default_rng(0)
    X = space.sample_index(50, rng)
    y = 2.0 * X[:, 0] - X[:, 1] + 0.05 * rng.normal(size=50)
    kernel = gb.GraphDiffusionKernel([v.spectrum for v in space.variables])
    calls = [0]
    base = _Sweeper._loglik_of

    def counting(self, *a, **k):
        calls[0] += 1
        return base(self, *a, **k)

    monkeypatch.setattr(_Sweeper, "_loglik_of", counting)
    counts = {}
    for adapt in (False, True):
        gp = DiffusionGP(kernel, n_burn=40, n_samples=10)
        fit_rng = np.random.default_rng(1)
        gp.fit(X, y, rng=fit_rng)
        calls[0] = 0
        for _ in range(5):
            if not adapt:
                gp.widths = np.ones(3 + kernel.d)
                gp.widths[0] = np.std(y)
            gp.fit(X, y, rng=fit_rng)
        counts[adapt] = calls[0]
    assert gp.widths is not None and np.all(gp.widths > 0)
    assert counts[True] < 0.85 * counts[False], counts


@pytest.mark.parametrize("seed", [0, 1])
def test_log_likelihood_is_the_gaussian_density(seed):
    """Supplement Eq. (7) against SciPy's multivariate normal (the in-place LAPACK path, in Fortran order)."""
    from scipy.stats import multivariate_normal

    space, X, y = _problem(35, seed)
    kernel = gb.GraphDiffusionKernel([v.spectrum for v in space.variables])
    gp = DiffusionGP(kernel)
    rng = np.random.default_rng(seed)
    gp.state = HyperSample(mean=0.1, log_amp=0.5, log_noise=-3.0, log_beta=rng.normal(size=4))
    sweeper = _Sweeper(gp, X, y, rng)
    K = np.exp(sum(sweeper._log_factor(i, gp.state.log_beta[i]) for i in range(4)))
    amp, noise = math.exp(0.5), math.exp(-3.0)
    want = multivariate_normal(mean=np.full(len(y), 0.1), cov=amp * K + noise * np.eye(len(y))).logpdf(y)
    assert sweeper._loglik(0.1, amp, noise, K) == pytest.approx(want, rel=1e-9)


def test_stored_widths_are_clipped_to_the_current_data():
    """Widths carried from other data (a resumed study, a constant start) are brought to this data's scale."""
    space, X, y = _problem(40)
    kernel = gb.GraphDiffusionKernel([v.spectrum for v in space.variables])
    gp = DiffusionGP(kernel, n_burn=5, n_samples=3)
    gp.widths = np.full(3 + kernel.d, 1e6)
    gp.widths[0], gp.widths[1], gp.widths[2] = 1e-12, np.nan, -1.0
    w = gp._widths(kernel.d, y)
    low, high = diffusion_gp._WIDTH_RANGE
    scale = np.ones_like(w)
    scale[0] = np.std(y)
    assert np.all(w >= low * scale * (1 - 1e-12)) and np.all(w <= high * scale * (1 + 1e-12))
    assert w[0] == pytest.approx(low * np.std(y)) and w[1] == 1.0 and w[2] == 1.0 and w[3] == high
    gp.fit(X, y, rng=np.random.default_rng(0))
    assert np.all(np.isfinite(gp.widths)) and np.all(gp.widths > 0)


def test_adapted_widths_never_narrow_below_the_unit_bracket():
    """Narrow posteriors (strong signal, many points) would shrink the bracket; it stays at least Neal's unit
    width (the mean's: std(y)), so the doubling can still reach other modes."""
    space, X, y = _problem(150, seed=2)
    kernel = gb.GraphDiffusionKernel([v.spectrum for v in space.variables])
    gp = DiffusionGP(kernel, n_burn=20, n_samples=5)
    rng = np.random.default_rng(0)
    for _ in range(2):
        gp.fit(X, y, rng=rng)
    assert gp.widths is not None
    assert gp.widths[0] >= np.std(y) * (1 - 1e-12)
    assert np.all(gp.widths[1:] >= 1.0)


class _SwitchingSweeper(_Sweeper):
    """Switches to summing logs after a varying number of beta updates (the count of checks runs on across
    sweeps): from the first update in some sweeps, after one to three in others."""

    def _underflows(self, K):
        self._checks = getattr(self, "_checks", 0) + 1
        return self._checks % self.kernel.d > 2 or self._checks % self.kernel.d == 0


@pytest.mark.parametrize("seed", [0, 1])
def test_product_and_log_updates_of_K_give_the_same_sweeps(seed):
    """``K_rest`` by division (entries of ``K`` normal) and from the other factors' logs are the same
    matrix up to rounding, so from the same state and random stream the sweeps agree."""
    space, X, y = _problem(40, seed)
    kernel = gb.GraphDiffusionKernel([v.spectrum for v in space.variables])
    states = []
    for cls, safe in ((_Sweeper, math.inf), (_Sweeper, None), (_Sweeper, 0.0), (_SwitchingSweeper, None)):
        gp = DiffusionGP(kernel)
        gp.state = HyperSample(mean=float(y.mean()), log_amp=0.3, log_noise=-4.0,
                               log_beta=np.random.default_rng(seed).normal(size=4))
        sweeper = cls(gp, X, y, np.random.default_rng(10 + seed))
        if safe is not None:
            sweeper.safe_product = safe
        for _ in range(3):
            sweeper.sweep()
        states.append([gp.state.mean, gp.state.log_amp, gp.state.log_noise, *gp.state.log_beta])
    states = np.array(states)
    assert np.allclose(states, states[0], rtol=1e-8, atol=1e-10), states  # states[0]: logs throughout


def test_carried_gram_is_the_gram_of_the_current_betas():
    space, X, y = _problem(40, 3)
    kernel = gb.GraphDiffusionKernel([v.spectrum for v in space.variables])
    gp = DiffusionGP(kernel)
    gp.state = HyperSample(mean=float(y.mean()), log_amp=0.3, log_noise=-4.0, log_beta=np.zeros(4))
    sweeper = _Sweeper(gp, X, y, np.random.default_rng(0))
    for _ in range(10):
        sweeper.sweep()
        betas, K = sweeper._carried
        assert np.array_equal(betas, gp.state.log_beta)
        fresh = np.exp(sum(sweeper._log_factor(i, gp.state.log_beta[i]) for i in range(4)))
        assert np.allclose(K, fresh, rtol=1e-12, atol=0)
    # betas changed outside the sweeps (a warp step): the next sweep rebuilds K instead of carrying it
    gp.state.log_beta[1] += 1.0
    sweeper.sweep()
    fresh = np.exp(sum(sweeper._log_factor(i, gp.state.log_beta[i]) for i in range(4)))
    assert np.allclose(sweeper._carried[1], fresh, rtol=1e-12, atol=0)


def test_an_underflowing_gram_switches_the_sweep_to_logs():
    """120 relevant binary variables (tiny betas): distant rows' K is below the safe floor, the updates sum logs,
    and the sweep is the all-logs reference's."""
    space = binary_space(120)
    kernel = gb.GraphDiffusionKernel([v.spectrum for v in space.variables])
    rng = np.random.default_rng(0)
    X = space.sample_index(40, rng)
    y = X[:, :5].sum(1) + 0.1 * rng.normal(size=40)
    out = {}
    for safe in (None, math.inf):
        gp = DiffusionGP(kernel)
        gp.state = HyperSample(mean=float(y.mean()), log_amp=0.0, log_noise=math.log(1e-3),
                               log_beta=np.full(120, -11.0))
        sweeper = _Sweeper(gp, X, y, np.random.default_rng(1))
        if safe is not None:
            sweeper.safe_product = safe
        else:
            K = np.exp(sum(sweeper._log_factor(i, -11.0) for i in range(120)))
            assert K.min() < sweeper.safe_product
        sweeper.sweep()
        if safe is None:
            assert sweeper._carried is None
        out[safe] = np.array([gp.state.mean, gp.state.log_amp, gp.state.log_noise, *gp.state.log_beta])
    assert np.allclose(out[None], out[math.inf], rtol=1e-8, atol=1e-10)


def test_two_values_in_closed_form_are_the_tables_entries():
    """``GraphDiffusionKernel.two_values`` (a = 1, b = (1 - w) / (1 + (k - 1) w)) against the table it replaces in
    the sweeps, for binary and categorical variables over the sampler's whole range of beta."""
    space = gb.Space({"b": gb.Binary(), "c": gb.Categorical(list("abcdefg")), "t": gb.Categorical(list("xyz"))})
    kernel = gb.GraphDiffusionKernel([v.spectrum for v in space.variables])
    for i in range(3):
        for log_beta in np.linspace(-12.0, math.log(100.0), 60):
            table = kernel.factor_table(i, log_beta)
            a, b = kernel.two_values(i, log_beta)
            assert np.allclose(np.diagonal(table), a, rtol=1e-12)
            off = table[~np.eye(table.shape[0], dtype=bool)]
            assert np.allclose(off, b, rtol=1e-9, atol=1e-15)


def test_slice_sampler_reproduces_a_normal():
    rng = np.random.default_rng(0)
    logp = lambda x: -0.5 * ((x - 2.0) / 0.5) ** 2
    x, draws = 0.0, []
    for _ in range(20000):
        x, _ = slice_sample(logp, x, rng=rng)
        draws.append(x)
    draws = np.array(draws[500:])
    assert abs(draws.mean() - 2.0) < 0.03
    assert abs(draws.var() - 0.25) < 0.02


def test_slice_sampler_respects_a_bounded_support():
    rng = np.random.default_rng(1)
    logp = lambda x: -2.0 * x if x > 0 else -math.inf  # Exponential(rate 2): mean 0.5, var 0.25
    x, draws = 1.0, []
    for _ in range(20000):
        x, _ = slice_sample(logp, x, rng=rng, width=0.1)
        draws.append(x)
    draws = np.array(draws[500:])
    assert draws.min() > 0
    assert abs(draws.mean() - 0.5) < 0.03
    assert abs(draws.var() - 0.25) < 0.03


def test_slice_sampler_rejects_an_impossible_start():
    with pytest.raises(ValueError, match="log density"):
        slice_sample(lambda x: -math.inf, 0.0, rng=np.random.default_rng(0))
