"""Tests that fail when a load-bearing step of the samplers, optimisers or linear algebra is removed.

Each group names the step it guards:

* the slice sampler's slice-height check and Neal's (2003) Fig. 6 acceptance test;
* COMBO's breadth-first graph local search (supplement Sec. 3);
* BO-FM's hill-climbing step on the discrete part (supplement D.1);
* the diagonal-jitter retries of ``robust_cholesky``.
"""

import math

import numpy as np
import pytest
import scipy.stats
import torch

import graphbo as gb
from graphbo.acquisition import LogExpectedImprovement
from graphbo.models import CholeskyError, robust_cholesky, slice_sample
from graphbo.optim.graph_local_search import optimize_acquisition_on_graph
from graphbo.optim.mixed import optimize_acquisition_mixed


# -- slice sampling ------------------------------------------------------------------------------


def _one_update_each(logp, starts, width, seed):
    """One slice-sampling update from each of ``starts`` (independent draws from the target).

    If the update leaves the target invariant, the results are again independent draws
    from the target, so their distribution can be tested without any MCMC mixing error.
    """
    rng = np.random.default_rng(seed)
    return np.array([slice_sample(logp, float(x), rng=rng, width=width)[0] for x in starts])


def test_slice_update_leaves_a_two_piece_uniform_invariant():
    # Uniform on [0, 0.2] u [1, 4]: the small piece holds 1/16 of the mass. A narrow initial
    # bracket makes doubling from the small piece reach the large one and not the other way
    # round, so without Neal's Fig. 6 acceptance test the small piece gains mass (z ~ 9 at n = 6000).
    a, b, c = 0.2, 1.0, 4.0
    p_small = a / (a + c - b)
    logp = lambda x: 0.0 if (0.0 < x < a or b < x < c) else -math.inf
    n = 6000
    r = np.random.default_rng(1)
    starts = np.where(r.random(n) < p_small, r.uniform(0.0, a, n), r.uniform(b, c, n))
    x1 = _one_update_each(logp, starts, width=0.25, seed=0)

    assert np.all(((x1 > 0) & (x1 < a)) | ((x1 > b) & (x1 < c)))  # never outside the support
    assert np.mean(x1 != starts) > 0.99  # the chain moves (a sampler that stays put is also invariant)
    se = math.sqrt(p_small * (1 - p_small) / n)
    assert abs(np.mean(x1 < a) - p_small) < 4 * se
    cdf = lambda x: (np.clip(x, 0, a) + np.clip(x - b, 0, c - b)) / (a + c - b)
    assert scipy.stats.kstest(x1, cdf).pvalue > 1e-3


def test_slice_update_leaves_a_truncated_normal_invariant():
    # Standard normal truncated to [-1, 2]: without the check that a proposal lies above the
    # slice height, the shrinkage step accepts its first proposal, uniform in the bracket.
    lo, hi = -1.0, 2.0
    logp = lambda x: -0.5 * x * x if lo < x < hi else -math.inf
    target = scipy.stats.truncnorm(lo, hi)
    n = 4000
    starts = target.rvs(size=n, random_state=np.random.default_rng(2))
    x1 = _one_update_each(logp, starts, width=1.0, seed=3)

    assert np.all((x1 > lo) & (x1 < hi))
    assert np.mean(x1 != starts) > 0.99
    assert abs(x1.mean() - target.mean()) < 4 * target.std() / math.sqrt(n)
    for q in (0.1, 0.5, 0.9):  # quantiles within 4 binomial standard errors
        assert abs(np.mean(x1 < target.ppf(q)) - q) < 4 * math.sqrt(q * (1 - q) / n)
    assert scipy.stats.kstest(x1, target.cdf).pvalue > 1e-3


# -- COMBO: graph local search -------------------------------------------------------------------


def _l1_acquisition(target):
    """Acquisition with its single maximum (0) at ``target``: minus the L1 distance on path graphs."""
    return lambda rows: -np.abs(np.asarray(rows, dtype=float) - target).sum(1)


def _is_local_max(acquisition, space, row, exclude=frozenset(), tol=1e-9):
    nbrs = space.neighbor_index(row)
    nbrs = np.array([r for r in nbrs if r.tobytes() not in exclude])
    if nbrs.size == 0:
        return True
    vals = np.asarray(acquisition(nbrs), dtype=float).reshape(-1)
    return float(np.asarray(acquisition(row[None]), dtype=float).reshape(-1)[0]) >= vals.max() - tol


def test_graph_local_search_climbs_from_two_random_starts_to_the_maximum():
    space = gb.Space({f"x{i}": gb.Ordinal(list(range(7))) for i in range(6)})  # 117,649 vertices
    target = np.array([3, 0, 6, 2, 5, 1])
    acq = _l1_acquisition(target)
    for seed in range(3):
        row, value = optimize_acquisition_on_graph(acq, space, rng=np.random.default_rng(seed),
                                                   incumbent=space.sample_index(1, seed)[0], exclude=set(),
                                                   n_random=2, n_spray=0, n_starts=2)
        np.testing.assert_array_equal(row, target)
        assert value == 0.0


def test_graph_local_search_ends_next_to_an_excluded_maximum():
    space = gb.Space({f"x{i}": gb.Ordinal(list(range(7))) for i in range(6)})
    target = np.array([3, 0, 6, 2, 5, 1])
    row, value = optimize_acquisition_on_graph(_l1_acquisition(target), space, rng=np.random.default_rng(0),
                                               incumbent=space.sample_index(1, 0)[0], exclude={target.tobytes()},
                                               n_random=2, n_spray=0, n_starts=2)
    assert value == -1.0 and np.abs(row - target).sum() == 1  # the best vertex that may be returned


def test_graph_local_search_returns_a_local_maximum_of_a_rugged_acquisition():
    space = gb.Space({f"c{i}": gb.Categorical(list(range(4))) for i in range(5)})  # complete graphs K4
    radix = 4 ** np.arange(4, -1, -1)
    for seed in range(5):
        table = np.random.default_rng(100 + seed).normal(size=4 ** 5)
        acq = lambda rows: table[np.asarray(rows, dtype=np.int64) @ radix]
        row, value = optimize_acquisition_on_graph(acq, space, rng=np.random.default_rng(seed),
                                                   incumbent=space.sample_index(1, seed)[0], exclude=set(),
                                                   n_random=3, n_spray=0, n_starts=3)
        assert value == acq(row[None])[0]
        assert _is_local_max(acq, space, row), f"seed {seed}: a neighbour of the returned vertex scores higher"


def test_combo_suggestion_is_a_local_maximum_of_its_acquisition():
    # With 3 random candidates and no spray vertices, only the local search can reach a local maximum
    # (the maximiser's own row: untrimmed).
    space = gb.Space({f"x{i}": gb.Ordinal(list(range(8))) for i in range(5)})
    f = lambda c: sum((c[f"x{i}"] - 2 - i % 3) ** 2 for i in range(5))
    opt = gb.COMBO(space, seed=0, n_initial=6, n_burn=10, n_samples=2, n_random=3, n_spray=0, n_starts=2,
                   trim_proposals=False)
    for _ in range(6):
        c = opt.ask()
        opt.tell(c, f(c))
    for _ in range(2):
        row = space.to_index(opt.ask())  # no pending rows when the model is fitted: no fantasies
        acq = LogExpectedImprovement(opt.model)
        score = lambda rows: acq(rows).detach().numpy()
        evaluated = {r.tobytes() for r in opt.X.astype(space.row_dtype)}
        assert _is_local_max(score, space, row, exclude=evaluated)
        opt.tell(space.from_index(row), f(space.from_index(row)))


# -- BO-FM: hill climbing on the discrete part ---------------------------------------------------


def _ordinals_categorical_continuous_space():
    return gb.Space({**{f"d{i}": gb.Ordinal(list(range(6))) for i in range(4)},
                     "b": gb.Categorical(list("pqrs")), "x": gb.Continuous(0.0, 1.0)})


def test_mixed_optimiser_hill_climbs_the_discrete_part_to_the_maximum():
    space = _ordinals_categorical_continuous_space()
    disc, cont = space.discrete_indices, space.continuous_indices
    target = torch.tensor([4.0, 1.0, 5.0, 0.0, 2.0], dtype=torch.float64)

    def acquisition(rows: torch.Tensor) -> torch.Tensor:
        return -(rows[:, disc] - target).abs().sum(1) - (rows[:, cont[0]] - 0.3) ** 2

    for seed in range(3):
        row, value = optimize_acquisition_mixed(acquisition, space, rng=np.random.default_rng(seed),
                                                incumbent=space.sample_index(1, seed)[0], exclude=set(),
                                                n_random=2, n_spray=0, n_starts=2)
        np.testing.assert_array_equal(row[disc], target.numpy())
        assert row[cont[0]] == pytest.approx(0.3, abs=1e-4)


def test_mixed_optimiser_returns_a_discrete_local_optimum_at_its_continuous_part():
    # A rugged table over the discrete part, coupled to the continuous part: the returned point
    # must beat every one-variable discrete neighbour with the continuous coordinate held fixed.
    space = _ordinals_categorical_continuous_space()
    disc, cont = space.discrete_indices, space.continuous_indices
    radix = torch.tensor([6 ** 3 * 4, 6 ** 2 * 4, 6 * 4, 4, 1], dtype=torch.long)
    for seed in range(4):
        g = np.random.default_rng(200 + seed)
        table = torch.as_tensor(g.normal(size=6 ** 4 * 4))
        centre = torch.as_tensor(g.uniform(size=6 ** 4 * 4))

        def acquisition(rows: torch.Tensor) -> torch.Tensor:
            k = rows[:, disc].round().long() @ radix
            return table[k] - 2.0 * (rows[:, cont[0]] - centre[k]) ** 2

        row, value = optimize_acquisition_mixed(acquisition, space, rng=np.random.default_rng(seed),
                                                incumbent=space.sample_index(1, seed)[0], exclude=set(),
                                                n_random=3, n_spray=0, n_starts=3)
        score = lambda rows: acquisition(torch.as_tensor(np.asarray(rows, dtype=float))).numpy()
        assert value == pytest.approx(float(score(row[None])[0]))
        nbrs, _ = space.neighbor_index_batch(row[None])
        assert float(score(nbrs).max()) <= value + 1e-9, f"seed {seed}: a discrete neighbour scores higher"


# -- robust Cholesky -----------------------------------------------------------------------------


def _matrix_with_eigenvalues(eigs, seed):
    q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(len(eigs), len(eigs))))
    return torch.as_tensor((q * np.asarray(eigs)) @ q.T)


def test_robust_cholesky_factorises_a_slightly_indefinite_matrix_with_the_smallest_jitter():
    # eigenvalues (1..4, and three at -1e-10) * 1e-4, as rounding leaves the Gram matrix of repeated
    # points at a small signal variance: the jitter must follow the matrix's scale
    C = _matrix_with_eigenvalues([1.0, 2.0, 3.0, 4.0, -1e-10, -1e-10, -1e-10], seed=0) * 1e-4
    C = 0.5 * (C + C.T)
    assert torch.linalg.cholesky_ex(C).info > 0  # plain Cholesky fails
    L = robust_cholesky(C)
    assert torch.isfinite(L).all() and torch.equal(L, L.tril()) and (L.diagonal() > 0).all()
    err = L @ L.T - C
    scale = float(C.diagonal().mean())
    off = err - torch.diag(err.diagonal())
    assert float(off.abs().max()) < 1e-12 * scale  # only the diagonal moves
    jitter = err.diagonal()
    assert float(jitter.max() - jitter.min()) < 1e-12 * scale  # by one common amount
    assert 0 < float(jitter.mean()) <= 1e-7 * scale  # the first sufficient one of 1e-8, 1e-7, ...


def test_robust_cholesky_jitters_only_the_batch_members_that_need_it():
    good = _matrix_with_eigenvalues([1.0, 2.0, 3.0, 4.0, 5.0], seed=1)
    good = 0.5 * (good + good.T)
    v = torch.as_tensor(np.random.default_rng(2).normal(size=(5, 2)))
    singular = v @ v.T  # rank 2
    L = robust_cholesky(torch.stack([good, singular, good]))
    ref = torch.linalg.cholesky(good)
    assert torch.equal(L[0], ref) and torch.equal(L[2], ref)  # untouched, bit for bit
    err = L[1] @ L[1].T - singular
    assert torch.isfinite(L[1]).all()
    assert float((err - torch.diag(err.diagonal())).abs().max()) < 1e-12 * float(singular.diagonal().mean())
    assert 0 < float(err.diagonal().mean()) <= 1e-6 * float(singular.diagonal().mean())


def test_robust_cholesky_gives_up_on_a_clearly_indefinite_matrix():
    C = _matrix_with_eigenvalues([1.0, 1.0, -0.5], seed=3)
    with pytest.raises(CholeskyError, match="jitter"):
        robust_cholesky(0.5 * (C + C.T))
