"""Branch-and-bound acquisition scoring (graphbo.optim.bounded): bounds hold and choices are unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import graphbo as gb
from graphbo.acquisition.confidence_bound import NegativeLowerConfidenceBound
from graphbo.acquisition.ei import LogExpectedImprovement
from graphbo.optim.bounded import BoundedScores, best_fresh
from graphbo.optim.graph_local_search import optimize_acquisition_on_graph


def _fitted_combo(space, objective, n, seed):
    opt = gb.COMBO(space, seed=seed, n_initial=n, n_burn=10, n_samples=3)
    for _ in range(n):
        c = opt.ask()
        opt.tell(c, objective(c))
    opt.mark_failed(opt.ask())  # fits the model
    return opt


def _binary_and_ordinal_categorical_spaces():
    binary = gb.Space({f"b{i}": gb.Binary() for i in range(12)})
    mixed = gb.Space({"o": gb.Ordinal(list(range(30))), "c": gb.Categorical(list("abcde")),
                      "b": gb.Binary(), "p": gb.Ordinal(list(range(12)))})
    return [
        (binary, lambda c: float(sum((i % 3 - 1) * v for i, v in enumerate(c.values())) + 0.3 * c["b0"] * c["b1"])),
        (mixed, lambda c: float((c["o"] - 17) ** 2 / 50 + (c["c"] == "d") + c["b"] * 0.5 + abs(c["p"] - 3) / 4)),
    ]


@pytest.mark.parametrize("case", [0, 1])
@pytest.mark.parametrize("n", [15, 60])
def test_upper_bounds_hold_for_every_candidate(case, n):
    space, f = _binary_and_ordinal_categorical_spaces()[case]
    opt = _fitted_combo(space, f, n, seed=case)
    rows = space.sample_index(3000, np.random.default_rng(7))
    for acq in (LogExpectedImprovement(opt.model), NegativeLowerConfidenceBound(opt.model, kappa=1.5)):
        exact = acq(rows).numpy()
        bound = acq.upper_bound(rows).numpy()
        assert np.all(bound >= exact - 1e-10 * (1 + np.abs(exact)))
        assert np.any(bound > exact + 1e-6)  # a bound, not the score itself


@pytest.mark.parametrize("case", [0, 1])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pruned_optimiser_makes_the_same_choice(case, seed):
    space, f = _binary_and_ordinal_categorical_spaces()[case]
    opt = _fitted_combo(space, f, 40, seed=seed)
    acq = LogExpectedImprovement(opt.model)
    incumbent = opt.X[int(np.argmin(opt.y))]
    out = {}
    for prune in (True, False):
        out[prune] = optimize_acquisition_on_graph(acq, space, rng=np.random.default_rng(100 + seed),
                                                   incumbent=incumbent,
                                                   exclude=set(opt.excluded_rows), n_random=2000, n_starts=10,
                                                   prune=prune)
    assert np.array_equal(out[True][0], out[False][0])
    assert out[True][1] == pytest.approx(out[False][1], rel=1e-9, abs=1e-12)


def test_pruning_scores_few_candidates_exactly():
    space, f = _binary_and_ordinal_categorical_spaces()[0]
    opt = _fitted_combo(space, f, 60, seed=0)
    rows = space.sample_index(4000, np.random.default_rng(3))
    scores = BoundedScores(LogExpectedImprovement(opt.model), rows)
    top = scores.top(10)
    exact = LogExpectedImprovement(opt.model)(rows).numpy()
    expected = np.argsort(-exact, kind="stable")
    # the same ten as scoring everything (the rows here are distinct draws of 12 bits, duplicates aside)
    keys = [rows[i].tobytes() for i in expected]
    distinct = [i for j, i in enumerate(expected) if keys[j] not in keys[:j]][:10]
    assert list(top) == distinct
    assert scores.known.sum() < rows.shape[0]


def test_best_fresh_skips_excluded_rows_and_scores_lazily():
    rows = np.arange(10)[:, None]
    values = np.array([5.0, 9.0, 1.0, 7.0, 9.0, 0.0, 3.0, 8.0, 2.0, 4.0])

    class Acq:
        calls = 0

        def __call__(self, r):
            Acq.calls += len(r)
            return torch.as_tensor(values[r[:, 0]])

        def upper_bound(self, r):
            return torch.as_tensor(values[r[:, 0]] + 0.5)

    part = BoundedScores(Acq(), rows, block=2)
    fresh = np.ones(10, dtype=bool)
    fresh[[1, 4]] = False  # the two best are "evaluated"
    row, val = best_fresh([part], [fresh])
    assert row[0] == 7 and val == 8.0
    assert Acq.calls < 10
    assert best_fresh([part], [np.zeros(10, dtype=bool)]) is None


def test_nan_scores_count_as_worst_and_end_the_search():
    """A user acquisition that returns NaN (with finite bounds) neither loops nor wins."""
    rows = np.arange(12)[:, None]
    values = np.array([np.nan, 2.0, np.nan, 5.0, 1.0, np.nan, 3.0, 0.5, np.nan, 4.0, 2.5, np.nan])

    class Acq:
        def __call__(self, r):
            return torch.as_tensor(values[r[:, 0]])

        def upper_bound(self, r):
            return torch.full((len(r),), 10.0)  # finite bounds everywhere, NaN scores underneath

    part = BoundedScores(Acq(), rows, block=2)
    row, val = best_fresh([part], [np.ones(12, dtype=bool)])
    assert row[0] == 3 and val == 5.0
    only_nan = np.isnan(values)
    row, val = best_fresh([BoundedScores(Acq(), rows, block=2)], [only_nan])
    assert row[0] == 0 and val == -np.inf  # a fresh row is still returned, scored as the worst
    assert list(BoundedScores(Acq(), rows, block=2).top(3)) == [3, 9, 6]


def test_acquisition_without_a_bound_of_its_own_is_scored_once():
    class Mean(gb.AcquisitionFunction):
        calls = 0

        def __call__(self, X):
            Mean.calls += len(X)
            return -self.model.posterior(X).mean.mean(0)

    space, f = _binary_and_ordinal_categorical_spaces()[0]
    opt = _fitted_combo(space, f, 20, seed=0)
    acq = Mean(opt.model)
    assert not acq.has_upper_bound and LogExpectedImprovement(opt.model).has_upper_bound
    assert not NegativeLowerConfidenceBound(opt.model, kappa=-1.0).has_upper_bound
    rows = space.sample_index(1000, np.random.default_rng(0))
    BoundedScores(acq, rows, block=64).top(5)
    assert Mean.calls == 1000


@pytest.mark.parametrize("case", [0, 1])
def test_graph_search_never_returns_an_excluded_row(case):
    """The excluded-row look-ups cover only the rows that could win (bounded.fresh_masks): excluding the
    first choice must give another row, itself not excluded, and never a row of the excluded set."""
    space, f = _binary_and_ordinal_categorical_spaces()[case]
    opt = _fitted_combo(space, f, 30, seed=3 + case)
    acq = LogExpectedImprovement(opt.model)
    incumbent = opt.X[int(np.argmin(opt.y))]
    args = dict(n_random=2000, n_starts=10)
    first, _ = optimize_acquisition_on_graph(acq, space, rng=np.random.default_rng(5), incumbent=incumbent,
                                             exclude=set(opt.excluded_rows), **args)
    exclude = set(opt.excluded_rows) | {first.tobytes()}
    second, _ = optimize_acquisition_on_graph(acq, space, rng=np.random.default_rng(5), incumbent=incumbent,
                                              exclude=exclude, **args)
    assert first.tobytes() not in opt.excluded_rows
    assert second.tobytes() not in exclude and not np.array_equal(first, second)


@pytest.mark.parametrize("case", [0, 1])
def test_variance_bound_holds_and_is_tight_beside_the_data(case):
    """The variance bound from the nearest data point never falls below the exact posterior variance and is
    far below the prior variance at the data's own rows; the float32 mean bound
    never exceeds the exact mean and stays within a thousandth of the data's spread of it."""
    space, f = _binary_and_ordinal_categorical_spaces()[case]
    opt = _fitted_combo(space, f, 40, seed=case)
    model = opt.model
    rng = np.random.default_rng(5)
    nbrs, _ = space.neighbor_index_batch(opt.X[:10])
    rows = np.concatenate([opt.X, nbrs, space.sample_index(500, rng)])
    mean, bound = model.screening().mean_and_variance_bound(rows)
    post = model.posterior(rows)
    assert torch.all(mean <= post.mean)
    assert float((post.mean - mean).max()) < 1e-3 * float(np.ptp(opt.y))
    assert torch.all(bound >= post.variance)
    prior = model.prior_variance(model.kernel.one_hot(torch.as_tensor(opt.X)))
    noise = torch.tensor([np.exp(s.log_noise) for s in model.samples], dtype=prior.dtype)[:, None]
    at_data = bound[:, :opt.X.shape[0]]
    # prior * noise / (prior + noise) exactly, plus the float32 kernel values' relative error times the prior
    assert torch.all(at_data <= prior * noise / (prior + noise) + 1e-3 * prior)


@pytest.mark.parametrize("log_beta", [-12.0, -3.0, 0.0, 4.6])
def test_float32_mean_bound_holds_for_extreme_kernel_tables(log_beta):
    """Long ordinals (tables down to the 1e-300 floor for small beta), categoricals and binaries, a large
    amplitude and tiny noise: the float32 mean bound stays below the float64 mean, the variance bound above
    the variance."""
    from graphbo.models.diffusion_gp import DiffusionGP, HyperSample

    space = gb.Space({"o": gb.Ordinal(list(range(200))), "p": gb.Ordinal(list(range(60))),
                      "c": gb.Categorical(list("abcdefgh")), **{f"b{i}": gb.Binary() for i in range(20)}})
    rng = np.random.default_rng(0)
    X = space.sample_index(150, rng)
    y = np.sin(X[:, 0] / 9.0) * 40 + X[:, 3:].sum(1) + rng.normal(size=150)
    kernel = gb.GraphDiffusionKernel([v.spectrum for v in space.variables])
    samples = [HyperSample(mean=float(y.mean()), log_amp=math.log(1e4), log_noise=math.log(1e-6),
                           log_beta=np.full(23, log_beta) + rng.normal(size=23))
               for _ in range(3)]
    model = DiffusionGP(kernel).condition(X, y, samples=samples)
    rows = np.concatenate([X, space.sample_index(3000, rng)])
    mean, bound = model.screening().mean_and_variance_bound(rows)
    post = model.posterior(rows)
    assert torch.all(mean <= post.mean)
    assert torch.all(bound >= post.variance)


def _conditioned(dtype, log_amp, log_noise, log_beta, n=120, seed=0):
    from graphbo.models.diffusion_gp import DiffusionGP, HyperSample

    space = gb.Space({"o": gb.Ordinal(list(range(30))), "c": gb.Categorical(list("abcde")),
                      **{f"b{i}": gb.Binary() for i in range(6)}})
    rng = np.random.default_rng(seed)
    X = space.sample_index(n, rng)
    y = np.sin(X[:, 0] / 5.0) * 3 + X[:, 2:].sum(1) + 0.01 * rng.normal(size=n)
    kernel = gb.GraphDiffusionKernel([v.spectrum for v in space.variables], dtype=dtype)
    samples = [HyperSample(mean=float(y.mean()), log_amp=log_amp, log_noise=log_noise,
                           log_beta=np.full(8, log_beta) + rng.normal(size=8) * 0.5)
               for _ in range(3)]
    rows = np.concatenate([X, space.neighbor_index_batch(X[:20])[0], space.sample_index(500, rng)])
    return DiffusionGP(kernel).condition(X, y, samples=samples), rows


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("log_amp, log_noise, log_beta", [(0.0, -12.0, 0.0), (4.0, -12.0, -1.0), (8.0, -12.0, 1.0),
                                                         (2.0, -9.0, -3.0)])
def test_bounds_hold_in_either_dtype_however_conditioned(dtype, log_amp, log_noise, log_beta):
    """Tiny noise against large amplitudes (condition numbers up to ~1e9): in a float32 model the rounding of
    the subtraction and of the quadratic form, and in either dtype that of the mean, must not put a bound
    on the wrong side of the value posterior() computes, nor the acquisition's bound below its score."""
    model, rows = _conditioned(dtype, log_amp, log_noise, log_beta)
    mean, bound = model.screening().mean_and_variance_bound(rows)
    post = model.posterior(rows)
    assert torch.all(mean <= post.mean)
    assert torch.all(bound >= post.variance)
    for acq in (LogExpectedImprovement(model), NegativeLowerConfidenceBound(model, kappa=2.0)):
        assert np.all(acq.upper_bound(rows).double().numpy() >= acq(rows).double().numpy())


def test_bounds_hold_without_ieee_float32_products_and_settings_never_break_conditioning():
    """With TF32 / bfloat16 float32 products (the legacy and the new torch settings) the bound pass stays in the
    model's dtype; a mix of the two kinds of settings, which torch refuses to read, must not break a fit."""
    from graphbo.models.diffusion_gp_screening import _ieee_float32_products

    cpu = torch.device("cpu")
    assert _ieee_float32_products(cpu)
    legacy = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")
        assert not _ieee_float32_products(cpu)
        model, rows = _conditioned(torch.float64, 18.0, -12.0, 1.0, n=200)
        mean, bound = model.screening().mean_and_variance_bound(rows)
        post = model.posterior(rows)
        assert torch.all(mean <= post.mean) and torch.all(bound >= post.variance)
    finally:
        torch.set_float32_matmul_precision(legacy)
    cuda_setting = torch.backends.cuda.matmul.fp32_precision
    try:
        torch.backends.cuda.matmul.fp32_precision = "tf32"  # a new-style setting beside the legacy one
        assert not _ieee_float32_products(torch.device("cuda"))
        model, rows = _conditioned(torch.float64, 0.0, -6.0, 0.0, n=30)
        mean, _ = model.screening().mean_and_variance_bound(rows)
        assert torch.all(mean <= model.posterior(rows).mean)
    finally:
        torch.backends.cuda.matmul.fp32_precision = cuda_setting
