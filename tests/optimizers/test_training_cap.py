"""The cap on the GP's training set (``max_train``) of COMBO, BO-FM, CoCaBO, NASBOT and TreeBO.

Above the cap the model is fitted on :func:`graphbo.optimizers.base.training_subset`: the best, the most
recent and a seeded uniform sample of the other observations. These tests fit the real models: the
training set has the documented size and always holds the best observation (EI's incumbent is the best
of all observations), it is the same for the same seed and survives a save and restore of the state,
suggestions are never told configurations, ``None`` keeps every observation, and a bad value names
``max_train``.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

import graphbo as gb
from graphbo.nas.domain.space import ArchitectureSpace
from graphbo.optimizers import BOFM, COMBO
from graphbo.optimizers.cocabo import CoCaBO
from graphbo.optimizers.base import DEFAULT_MAX_TRAIN, MIN_MAX_TRAIN, training_subset
from graphbo.optimizers.nasbot import NASBOT
from graphbo.optimizers.treebo import TreeBO, chain_of
from support import binary_space

CAP = 30
N_TOLD = 60


# -- the rule ------------------------------------------------------------------------------------------
def _parts(n: int, cap: int) -> tuple[int, int, int]:
    """``(h, b, r)`` of the docstring of :func:`training_subset`."""
    h = cap // 4
    b = cap - h
    return h, b, b + h * ((n - 1 - b) // h)


def test_below_the_cap_or_without_one_every_observation_is_kept():
    y = np.random.default_rng(0).normal(size=50)
    assert training_subset(y, None, key=0).tolist() == list(range(50))
    assert training_subset(y, 50, key=0).tolist() == list(range(50))
    assert training_subset(y[:20], 30, key=0).tolist() == list(range(20))


@pytest.mark.parametrize("cap", [20, 30, 101])
def test_the_subset_keeps_the_best_the_recent_and_is_bounded(cap):
    rng = np.random.default_rng(cap)
    y = rng.normal(size=4 * cap)
    y[rng.integers(cap, 2 * cap)] = -10.0  # a best value that falls before later refresh points
    for n in range(cap + 1, 4 * cap + 1):
        idx = training_subset(y[:n], cap, key=7)
        h, b, r = _parts(n, cap)
        assert idx.tolist() == sorted(set(idx.tolist())), n  # ascending, no repeats
        assert b + 1 <= idx.size <= cap and idx.size == b + (n - r), n
        assert int(np.argmin(y[:n])) in idx, n  # EI's incumbent, the best of all, is always in
        kept = set(idx[idx < r].tolist())
        assert len(kept) == b and set(range(r, n)) <= set(idx.tolist())
        best = np.argsort(y[:r], kind="stable")[:b // 3]
        assert set(best.tolist()) <= kept, n  # the best b // 3 of y[:r]
        others = [i for i in range(r) if i not in set(best.tolist())]
        assert set(others[len(others) - b // 3:]) <= kept, n  # the most recent b // 3 of the others
        if n - 1 > r:  # between refresh points the list only grows (NASBOT's distance cache extends)
            prev = training_subset(y[:n - 1], cap, key=7)
            assert idx[:prev.size].tolist() == prev.tolist()


def test_the_subset_is_a_function_of_the_key():
    y = np.random.default_rng(1).normal(size=500)
    a = training_subset(y, 100, key=3)
    assert training_subset(y.copy(), 100, key=3).tolist() == a.tolist()
    assert training_subset(y, 100, key=4).tolist() != a.tolist()  # the uniform part moves with the seed
    # and it does not depend on the values after the refresh point
    _, _, r = _parts(500, 100)
    z = y.copy()
    z[r:] = 5.0
    assert training_subset(z, 100, key=3)[:a.size - (500 - r)].tolist() == a[:a.size - (500 - r)].tolist()


# -- the optimizers: real fits --------------------------------------------------------------------------
def _categorical_ordinal_binary_continuous_space():
    return gb.Space({"c": gb.Categorical(list("abcd")), "o": gb.Ordinal([1, 2, 3, 4, 5]),
                     "b": gb.Binary(), "r": gb.Continuous(0.0, 1.0)})


def _discrete_data(space, n, seed):
    """``n`` distinct configurations of a small discrete space and distinct values."""
    rows = np.array(list(itertools.product(*[range(v.n_values) for v in space.variables])))
    rng = np.random.default_rng(seed)
    rows = rows[rng.permutation(len(rows))[:n]]
    return [space.from_index(r) for r in rows], rng.permutation(n).astype(float) + rng.random(n) * 0.1


def _mixed_data(space, n, seed):
    rng = np.random.default_rng(seed)
    rows = space.sample_index(n, rng)
    return [space.from_index(r) for r in rows], rng.permutation(n).astype(float) + rng.random(n) * 0.1


def _nas_data(space, n, seed, chains=None):
    """``n`` networks of distinct keys (feed-forward chains of ``chains``, a FeedForwardTree, if given)."""
    rng = np.random.default_rng(seed)
    out, keys = [], set()
    while len(out) < n:
        if chains is None:
            arch = space.architecture_at(space.sample_index(1, rng)[0])
        else:
            c = chains.sample(rng)
            if not chains.valid(c):
                continue
            arch = chains.to_architecture(c)
        if space.key(arch) not in keys:
            keys.add(space.key(arch))
            out.append(arch.to_dict())
    return out, rng.permutation(n).astype(float) + rng.random(n) * 0.1


def _combo(**kw):
    return COMBO(binary_space(8), n_burn=5, n_samples=2, n_random=300, n_spray=5, n_starts=3, **kw)


def _bofm(**kw):
    return BOFM(_categorical_ordinal_binary_continuous_space(), n_restarts=1, n_random=300, n_spray=5, n_starts=3, **kw)


def _cocabo(**kw):
    return CoCaBO(_categorical_ordinal_binary_continuous_space(), n_restarts=1, n_random=300, n_starts=2, **kw)


def _nasbot(**kw):
    return NASBOT("mlp-class", n_burn=5, n_samples=2, ea_evaluations=20, **kw)


def _treebo(**kw):
    return TreeBO("mlp-class", max_depth=8, n_candidates=50, n_local_rounds=1, n_restarts=1, **kw)


def _data(opt, n, seed):
    if isinstance(opt, COMBO):
        return _discrete_data(opt.space, n, seed)
    if isinstance(opt, (BOFM, CoCaBO)):
        return _mixed_data(opt.space, n, seed)
    return _nas_data(opt.space, n, seed, chains=opt.tree if isinstance(opt, TreeBO) else None)


def _row_key(opt, config):
    if isinstance(opt.space, ArchitectureSpace):
        return opt.space.key(opt.space.architecture(config))
    return opt.space.to_index(config).tobytes()


MAKERS = {"combo": _combo, "bofm": _bofm, "cocabo": _cocabo, "nasbot": _nasbot, "treebo": _treebo}


def _told(make, n=N_TOLD, seed=0, **kw):
    opt = make(**kw)
    opt._initial.clear()  # the model's own suggestion at the next ask
    configs, values = _data(opt, n, seed)
    for c, v in zip(configs, values):
        opt.tell(c, v)
    return opt, configs, values


def _train_targets(opt):
    return np.asarray(opt.model.train_targets, dtype=float)


@pytest.mark.parametrize("method", list(MAKERS))
def test_the_model_is_fitted_on_the_capped_subset_and_keeps_the_best(method):
    opt, configs, values = _told(lambda **kw: MAKERS[method](seed=5, max_train=CAP, **kw))
    suggestion = opt.ask()
    idx = opt.last_training_indices
    expected = training_subset(values, CAP, key=5)
    assert idx is not None and idx.tolist() == expected.tolist()
    assert 0 < len(idx) <= CAP
    # the model holds exactly those rows (their values, in order) and the best of all of them
    assert _train_targets(opt).tolist() == pytest.approx(values[idx].tolist())
    assert float(np.min(_train_targets(opt))) == float(np.min(values))
    # EI's incumbent (Surrogate.best_observed) is the best of all observations, on the model's scale
    assert opt.model.best_observed() == pytest.approx(opt.model.transform_outcome(float(np.min(values))))
    # the suggestion is none of the told configurations, not only none of the training set
    assert _row_key(opt, suggestion) not in {_row_key(opt, c) for c in configs}


@pytest.mark.parametrize("method", list(MAKERS))
def test_the_same_seed_gives_the_same_subset_and_suggestion(method):
    make = MAKERS[method]
    a, _, _ = _told(lambda **kw: make(seed=11, max_train=CAP, **kw))
    b, _, _ = _told(lambda **kw: make(seed=11, max_train=CAP, **kw))
    c, _, _ = _told(lambda **kw: make(seed=12, max_train=CAP, **kw))
    sa, sb = a.ask(), b.ask()
    c.ask()
    assert a.last_training_indices.tolist() == b.last_training_indices.tolist()
    assert sa == sb
    assert c.last_training_indices.tolist() != a.last_training_indices.tolist()


@pytest.mark.parametrize("method", ["combo", "treebo"])
def test_no_cap_keeps_every_observation(method):
    opt, _, values = _told(lambda **kw: MAKERS[method](seed=2, max_train=None, **kw))
    opt.ask()
    assert opt.last_training_indices.tolist() == list(range(N_TOLD))
    assert sorted(_train_targets(opt).tolist()) == pytest.approx(sorted(values.tolist()))


def test_the_default_cap_keeps_small_studies_whole():
    for make in MAKERS.values():
        assert make().max_train == DEFAULT_MAX_TRAIN
    opt, _, _ = _told(_combo, seed=1)
    opt.ask()
    assert opt.last_training_indices.tolist() == list(range(N_TOLD))


@pytest.mark.parametrize("method", list(MAKERS))
@pytest.mark.parametrize("value, error, pattern", [
    (MIN_MAX_TRAIN - 1, ValueError, f"max_train must be >= {MIN_MAX_TRAIN}"),
    (0, ValueError, "max_train must be >="),
    (-5, ValueError, "max_train must be >="),
    (25.5, TypeError, "max_train must be an integer"),
    ("100", TypeError, "max_train must be an integer"),
    (True, TypeError, "max_train must be an integer"),
])
def test_a_bad_cap_names_max_train(method, value, error, pattern):
    with pytest.raises(error, match=pattern):
        MAKERS[method](max_train=value)


@pytest.mark.parametrize("method", ["combo", "nasbot"])
def test_the_subset_survives_a_saved_and_restored_state(method):
    """Without a seed the subset's key is drawn once and saved with the state: a restored optimizer fits
    the same subset and makes the same suggestion as the one it was saved from."""
    make = MAKERS[method]
    a, configs, values = _told(lambda **kw: make(max_train=CAP, **kw), n=N_TOLD - 1)
    first = a.ask()  # a first fit (NASBOT: at N_TOLD - 1 networks)
    a.tell(first, -1.0)  # a new best, after the refresh point
    state = json.loads(json.dumps(a.get_state()))
    b = make(max_train=CAP)
    for c, v in zip(configs + [first], list(values) + [-1.0]):
        b.tell(c, v)
    b.set_state(state)
    assert b._subset_key == a._subset_key
    assert b.ask() == a.ask()
    assert b.last_training_indices.tolist() == a.last_training_indices.tolist()
    assert N_TOLD - 1 in a.last_training_indices  # the new best is fitted on


def test_nasbot_restored_after_a_fit_conditions_on_the_same_subset():
    """NASBOT refits only when a network was told; restored with no new tell, it conditions the saved
    posterior samples on the training subset, recomputed from the saved key."""
    a, configs, values = _told(lambda **kw: _nasbot(max_train=CAP, **kw))
    a.ask()
    state = json.loads(json.dumps(a.get_state()))
    b = _nasbot(max_train=CAP)
    for c, v in zip(configs, values):
        b.tell(c, v)
    b.set_state(state)
    b.ask()
    assert b.model.n_data == len(a.last_training_indices) <= CAP
    assert b.last_training_indices.tolist() == a.last_training_indices.tolist()
    assert _train_targets(b).tolist() == _train_targets(a).tolist()


# -- exclusion sets (NASBOT, TreeBO): kept on tell, complete ---------------------------------------------
@pytest.mark.parametrize("method", ["nasbot", "treebo"])
def test_nas_exclusions_are_complete_without_a_rebuild(method):
    opt, configs, _ = _told(lambda **kw: MAKERS[method](seed=3, max_train=CAP, **kw), n=40)
    failed = _data(opt, 41, seed=9)[0][-1]
    if _row_key(opt, failed) in {_row_key(opt, c) for c in configs}:  # pragma: no cover - seed dependent
        pytest.skip("the extra network is a told one")
    opt.mark_failed(failed)
    keys = {_row_key(opt, c) for c in configs + [failed]}
    assert set(opt._done_keys) == keys
    pending = opt.ask(3)
    excluded = opt._excluded_keys()
    assert keys | {_row_key(opt, c) for c in pending} == set(excluded)
    assert not keys & {_row_key(opt, c) for c in pending}
    if isinstance(opt, TreeBO):
        chains = {chain_of(opt.space.architecture(c)) for c in configs + [failed]}
        assert opt._done_chains == chains


def test_nasbot_scores_the_training_networks_not_every_told_one():
    opt, _, _ = _told(lambda **kw: _nasbot(seed=4, max_train=CAP, **kw))
    opt.ask()
    start = opt._ea_start()
    pool = opt.space.initial_pool()
    assert len(start) == len(pool) + len(opt.last_training_indices) < len(pool) + N_TOLD
