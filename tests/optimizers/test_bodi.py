"""BODi (Deshwal et al., AISTATS 2023), the dictionary-embedding baseline ``bodi``.

The embedding is checked against Hamming distances counted here, the dictionary against the space and the
diversity of its sparsities, and the optimizer against the protocol: reproducible from its seed, never a
repeated or pending configuration, known constraints honoured, continuous variables refused by name, a
study stored in SQLite resumed to the same trace, and a small binary problem solved better than random
search does. Small dictionaries and acquisition searches keep the whole file to a few seconds per test.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("botorch")

import graphbo as gb  # noqa: E402
from graphbo.optimizers import METHODS, BODi, RandomSearch  # noqa: E402
from graphbo.optimizers.bodi import (diverse_dictionary, hamming_embedding, hamming_neighbours,  # noqa: E402
                                     levels_of)
from support import binary_space  # noqa: E402

#: a small dictionary and acquisition search: a suggestion in a fraction of a second
FAST = {"n_dictionary": 24, "n_candidates": 200, "n_restarts": 4, "n_local_steps": 8}


@pytest.fixture(autouse=True)
def one_thread():
    with gb.limit_threads(1):  # as a Study runs its suggestions
        yield


def mixed_levels_space():
    return gb.Space({"c": gb.Categorical(["r", "g", "b", "k", "w"]), "o": gb.Ordinal([1, 2, 3]),
                     "b": gb.Binary(), "d": gb.Categorical(["p", "q", "s", "t"])})


def hamming_by_hand(x, a):
    return sum(1 for u, v in zip(x, a) if u != v)


# -- the embedding and the dictionary ------------------------------------------------------------------------------
def test_the_embedding_is_the_fraction_of_differing_coordinates():
    rng = np.random.default_rng(0)
    levels = [5, 3, 2, 4, 7, 2]
    rows = np.stack([rng.integers(0, n, size=30) for n in levels], axis=1)
    dictionary = diverse_dictionary(levels, 9, rng=rng)
    phi = hamming_embedding(rows, dictionary)
    assert phi.shape == (30, 9)
    expected = [[hamming_by_hand(x, a) / len(levels) for a in dictionary] for x in rows]
    assert np.array_equal(phi, np.array(expected))


def test_the_optimizers_dictionary_embeds_its_data_by_hamming_distance():
    space = mixed_levels_space()
    opt = BODi(space, seed=1, n_initial=4, **FAST)
    for c in space.sample(4, seed=2):
        opt.tell(c, float(len(str(c))))
    opt.ask()
    D = opt.dictionary
    assert D is not None and D.shape == (FAST["n_dictionary"], len(space))
    for a in D:
        space.from_index(a)  # a configuration of the space
    X = opt.X
    assert np.allclose(hamming_embedding(X, D), [[hamming_by_hand(x, a) / 4 for a in D] for x in X])
    opt.tell(opt.pending_configs[0], 1.0)
    opt.ask()
    assert not np.array_equal(opt.dictionary, D)  # a fresh dictionary at every suggestion


def test_binary_dictionaries_have_uniformly_spread_numbers_of_ones():
    d, m = 20, 400
    D = diverse_dictionary([2] * d, m, rng=np.random.default_rng(3))
    assert set(np.unique(D)) <= {0, 1}
    ones = D.sum(axis=1)
    assert ones.min() >= 1 and ones.max() <= d - 2  # the authors' range, 1 .. d - 2
    assert ones.min() <= 2 and ones.max() >= d - 3  # the whole range is used
    # uniform on 1..18: standard deviation 5.2; a fixed density (all elements alike) would give at most 2.3
    assert ones.std() > 4.0
    share = D.mean(axis=0)  # the ones at uniformly random positions: every coordinate one about half the time
    assert np.all((share > 0.3) & (share < 0.7)), share


def test_categorical_dictionaries_are_valid_and_vary_in_concentration():
    space = mixed_levels_space()
    levels = levels_of(space)
    assert levels.tolist() == [5, 3, 2, 4]
    rng = np.random.default_rng(4)
    D = diverse_dictionary(levels, 300, rng=rng)
    assert np.all((D >= 0) & (D < levels))
    for a in D:
        space.from_index(a)
    # each element draws its own level probabilities: in a space of 30 five-level variables, the share of
    # the most frequent level varies far more across elements than across uniformly random configurations
    wide = diverse_dictionary([5] * 30, 300, rng=rng)
    uniform = rng.integers(0, 5, size=(300, 30))
    modal = lambda R: np.array([np.bincount(r, minlength=5).max() / 30 for r in R])  # noqa: E731
    assert modal(wide).std() > 2.5 * modal(uniform).std()
    assert modal(wide).max() > 0.8 and modal(uniform).max() < 0.6


def test_hamming_neighbours_change_one_variable_to_each_other_level():
    levels = [3, 2, 4]
    rows = np.array([[0, 1, 2], [2, 0, 0]])
    nbrs, owner = hamming_neighbours(rows, levels)
    assert nbrs.shape == (2 * (2 + 1 + 3), 3)
    for k, r in zip(owner, nbrs):
        assert hamming_by_hand(r, rows[k]) == 1
    assert len({(int(k), tuple(r)) for k, r in zip(owner, nbrs)}) == len(nbrs)


# -- the protocol ------------------------------------------------------------------------------------------------
def run(opt, fn, n):
    out = []
    for _ in range(n):
        c = opt.ask()
        opt.tell(c, fn(c))
        out.append(c)
    return out


def score(c):
    return {"r": 0.0, "g": 1.0, "b": 2.0, "k": 0.5, "w": 3.0}[c["c"]] + (c["o"] - 2) ** 2 + (0.3 if c["b"] else 0.0) \
        + {"p": 1.0, "q": 0.0, "s": 2.0, "t": 0.2}[c["d"]]


def test_the_same_seed_gives_the_same_run_and_another_seed_another():
    space = mixed_levels_space()
    a = run(BODi(space, seed=5, n_initial=3, **FAST), score, 7)
    b = run(BODi(space, seed=5, n_initial=3, **FAST), score, 7)
    c = run(BODi(space, seed=6, n_initial=3, **FAST), score, 4)
    assert a == b
    assert a[:4] != c


def test_no_configuration_is_suggested_twice_and_an_exhausted_space_is_reported():
    space = gb.Space({"a": gb.Binary(), "c": gb.Categorical(["x", "y", "z"])})
    opt = BODi(space, seed=0, n_initial=2, **FAST)
    seen = run(opt, lambda c: float(c["a"]) + {"x": 1.0, "y": 0.0, "z": 2.0}[c["c"]], 6)
    assert len({tuple(sorted(c.items())) for c in seen}) == 6 == space.size
    assert opt.exhausted
    with pytest.raises(gb.SpaceExhaustedError):
        opt.ask()


def test_the_acquisition_search_returns_the_best_configuration_neither_told_nor_pending():
    space = binary_space(6)
    opt = BODi(space, seed=0, n_initial=0, n_candidates=30, n_restarts=3, n_local_steps=10)
    peak = np.array([1, 0, 1, 1, 0, 1])
    opt.tell(space.from_index(peak), 0.0)
    opt.add_pending(space.from_index(1 - peak))
    closeness = lambda rows: -np.count_nonzero(rows != peak, axis=1).astype(float)  # noqa: E731
    pool = np.vstack([peak, 1 - peak, space.sample_index(30, np.random.default_rng(1))])
    row = opt._search(closeness, pool, opt.excluded_rows)  # the peak itself scores best, but it is told
    assert row is not None and row.tobytes() not in opt.excluded_rows
    assert hamming_by_hand(row, peak) == 1


def test_pending_configurations_are_never_suggested():
    space = mixed_levels_space()
    opt = BODi(space, seed=2, n_initial=3, **FAST)
    run(opt, score, 4)
    asked = opt.ask(4)  # four in flight: each suggestion conditions on the pending ones before it
    keys = {tuple(sorted(c.items())) for c in asked}
    told = {tuple(sorted(o.config.items())) for o in opt.history}
    assert len(keys) == 4 and not keys & told and opt.n_pending == 4
    held = space.sample(1, seed=9)[0]
    opt.add_pending(held)
    nxt = opt.ask()
    assert tuple(sorted(nxt.items())) not in keys | told | {tuple(sorted(held.items()))}


def test_known_constraints_are_honoured():
    space = gb.Space({"x": gb.Ordinal(list(range(6))), "y": gb.Ordinal(list(range(6))), "c": gb.Binary()},
                     constraints=["x + y <= 5"])
    opt = BODi(space, seed=3, n_initial=3, **FAST)
    seen = run(opt, lambda c: (c["x"] - 4) ** 2 + (c["y"] - 4) ** 2 + (0.5 if c["c"] else 0.0), 10)
    assert all(c["x"] + c["y"] <= 5 for c in seen)


@pytest.mark.parametrize("variable", [gb.Continuous(0.0, 1.0), gb.IntegerRange(0, 10_000)])
def test_continuous_variables_are_refused_by_name_with_bofm_suggested(variable):
    space = gb.Space({"a": gb.Binary(), "lr": variable})
    with pytest.raises(ValueError, match=r"discrete variables only.*'lr'.*'bofm'"):
        BODi(space)


def test_registered_as_bodi():
    assert METHODS["bodi"] is BODi and BODi.name == "bodi"


# -- resuming a stored study --------------------------------------------------------------------------------------
def test_a_study_in_sqlite_resumes_to_the_same_trace(tmp_path):
    space = mixed_levels_space()
    kwargs = dict(seed=7, n_initial=3, **FAST)
    reference = gb.minimize(score, space, method="bodi", budget=7, **kwargs)
    path = str(tmp_path / "bodi.db")
    first = gb.minimize(score, space, method="bodi", budget=4, storage=path, **kwargs)
    assert len(first.history) == 4
    resumed = gb.minimize(score, space, method="bodi", budget=7, storage=path, **kwargs)
    trace = lambda r: [(o.config, o.value) for o in r.history]  # noqa: E731
    assert trace(resumed) == trace(reference)


# -- it optimises ---------------------------------------------------------------------------------------------------
D_BITS = 10
_Q = np.random.default_rng(11).normal(scale=0.3, size=(D_BITS, D_BITS))
_Q = (_Q + _Q.T) / 2
_TARGET = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 1])
_ALL = np.array(list(np.ndindex(*[2] * D_BITS)), dtype=float)


def quadratic(x):
    """Squared distance to a target string plus a weak pairwise term: a binary quadratic, one optimum."""
    x = np.asarray(x, dtype=float)
    dx = x - _TARGET
    return float(np.sum(dx ** 2, axis=-1) + np.einsum("...i,ij,...j->...", dx, _Q, dx) * 0.3)


OPTIMUM = float(np.min([quadratic(x) for x in _ALL]))


def test_finds_the_optimum_of_a_small_binary_quadratic_better_than_random_search():
    space = binary_space(D_BITS)
    fn = lambda c: quadratic([int(c[f"x{i}"]) for i in range(D_BITS)])  # noqa: E731
    budget, seeds = 16, (0, 1, 2)
    bodi = [min(fn(c) for c in run(BODi(space, seed=s, n_initial=6, **FAST), fn, budget)) - OPTIMUM for s in seeds]
    rs = [min(fn(c) for c in run(RandomSearch(space, seed=s, n_initial=6), fn, budget)) - OPTIMUM for s in seeds]
    assert sum(r == 0 for r in bodi) >= 2, bodi  # the optimum (1 of 1024) found in most runs of 16 evaluations
    assert np.mean(bodi) < np.mean(rs) - 0.5, (bodi, rs)


def test_without_botorch_the_message_is_one_line_naming_the_extra(monkeypatch):
    import sys

    from graphbo._lazy import MissingExtraError

    monkeypatch.setitem(sys.modules, "botorch", None)
    with pytest.raises(MissingExtraError) as info:
        BODi(mixed_levels_space())
    assert str(info.value) == 'BODi needs botorch: pip install "graphbo[botorch]"'
