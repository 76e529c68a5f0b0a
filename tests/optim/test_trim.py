"""Trimming a proposal to the changes from the incumbent that the posterior mean pays for."""

import numpy as np

import graphbo as gb
from graphbo.optim.trim import trim_to_paid_changes
from support import binary_space


def _mean(rows):
    # variable 0 pays (1 is better than 0), variable 1 costs, variables 2 and 3 do not matter
    rows = np.asarray(rows)
    return -2.0 * rows[:, 0] + 1.0 * rows[:, 1]


def _all(rows):
    return np.ones(len(rows), dtype=bool)


def test_free_and_costly_changes_are_set_back_and_paid_ones_kept():
    incumbent = np.zeros(4, dtype=np.int64)
    row = np.array([1, 1, 1, 1])
    out = trim_to_paid_changes(row, incumbent, mean=_mean, exclude=set(), allowed=_all)
    assert out.tolist() == [1, 0, 0, 0]
    assert row.tolist() == [1, 1, 1, 1]  # the input is left as it is


def test_a_jump_paid_only_as_a_whole_stays_whole():
    def mean(rows):  # the two changes pay together, each alone costs
        rows = np.asarray(rows)
        both = rows[:, 0] * rows[:, 1]
        return -5.0 * both + 1.0 * (rows[:, 0] + rows[:, 1])
    out = trim_to_paid_changes(np.array([1, 1, 1]), np.zeros(3, dtype=np.int64), mean=mean, exclude=set(), allowed=_all)
    assert out.tolist() == [1, 1, 0]


def test_a_reversal_to_an_evaluated_or_refused_row_is_not_made():
    incumbent = np.zeros(4, dtype=np.int64)
    row = np.array([1, 0, 1, 0])
    # setting back variable 2 gives [1, 0, 0, 0]: already evaluated
    out = trim_to_paid_changes(row, incumbent, mean=_mean, exclude={np.array([1, 0, 0, 0]).tobytes()}, allowed=_all)
    assert out.tolist() == [1, 0, 1, 0]
    refuse_last_zero = lambda rows: np.asarray(rows)[:, 2] == 1  # noqa: E731
    out = trim_to_paid_changes(row, incumbent, mean=_mean, exclude=set(), allowed=refuse_last_zero)
    assert out.tolist() == [1, 0, 1, 0]


def test_combo_trims_by_default_and_only_sets_changes_back():
    """The default proposal is the paper's (``trim_proposals=False``) with some changes from the incumbent set
    back: same observations and seed, so the same maximiser's row before trimming."""
    space = binary_space(10)
    rng = np.random.default_rng(3)
    X = space.sample_index(12, rng)
    y = X[:, :3].sum(1) - 0.1 * X[:, 3:].sum(1)
    fewer = 0
    for seed in range(3):
        rows = []
        for trim in (True, False):
            kw = {} if trim else {"trim_proposals": False}
            opt = gb.COMBO(space, seed=seed, n_initial=4, n_burn=20, n_samples=3, n_random=300, n_spray=5,
                           n_starts=5, **kw)
            for r, v in zip(X, y):
                opt.tell(space.from_index(r), float(v))
            rows.append(space.to_index(opt.ask()))
        incumbent = X[int(np.argmin(y))]
        trimmed, paper = (set(np.flatnonzero(r != incumbent)) for r in rows)
        assert trimmed <= paper and all(rows[0][j] == rows[1][j] for j in trimmed)
        fewer += len(trimmed) < len(paper)
    assert fewer >= 1


def test_combo_with_trimmed_proposals_changes_no_more_than_it_must():
    space = binary_space(8)

    def f(c):  # only x0 and x1 matter
        return -float(c["x0"]) - float(c["x1"])

    opt = gb.COMBO(space, seed=0, n_initial=6, n_burn=20, n_samples=3, n_random=300, n_spray=5, n_starts=5)
    for _ in range(6):
        c = opt.ask()
        opt.tell(c, f(c))
    for _ in range(6):
        incumbent = opt.X[int(np.argmin(opt.y))]
        c = opt.ask()
        row = space.to_index(c)
        mean = opt.model.posterior(np.stack([row, incumbent])).mean.mean(0).numpy()
        # every change left is paid for: setting any one back (to an unevaluated row) does not lower the mean
        for j in np.flatnonzero(row != incumbent):
            back = row.copy()
            back[j] = incumbent[j]
            if back.tobytes() in {r.tobytes() for r in opt.X}:  # evaluated: not a row it may suggest
                continue
            assert opt.model.posterior(back[None]).mean.mean(0).item() > mean[0]
        opt.tell(c, f(c))
    assert opt.best.value == -2.0


def test_combo_trims_by_default_only_where_it_was_chosen():
    """Binary and categorical variables (where the default was measured): trimmed; an ordinal or another graph
    variable in the space: the paper's proposals unless asked."""
    binary_categorical = gb.Space({"a": gb.Binary(), "b": gb.Categorical(list("xyz"))})
    with_ordinal = gb.Space({"a": gb.Binary(), "o": gb.Ordinal([1, 2, 4, 8])})
    with_graph = gb.Space({"a": gb.Binary(), "g": gb.GraphVariable(list("pqr"), [[0, 1, 0], [1, 0, 1], [0, 1, 0]])})
    assert gb.COMBO(binary_categorical, seed=0).trim_proposals
    assert not gb.COMBO(with_ordinal, seed=0).trim_proposals and not gb.COMBO(with_graph, seed=0).trim_proposals
    assert gb.COMBO(with_ordinal, seed=0, trim_proposals=True).trim_proposals
    assert not gb.COMBO(binary_categorical, seed=0, trim_proposals=False).trim_proposals
