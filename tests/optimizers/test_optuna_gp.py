"""Optuna's GPSampler as the graphbo method ``gp-optuna``, with the real Optuna.

Suggestions cost about a second each on one thread, so the runs here are short.
"""

from __future__ import annotations

import numpy as np
import pytest

import graphbo as gb

pytest.importorskip("optuna")

from graphbo.optimizers import METHODS  # noqa: E402
from graphbo.optimizers.optuna_gp import OptunaGP  # noqa: E402


def six_kinds_space():
    """Every kind of variable: binary, categorical, graph, ordinal, rounded-continuous integer, continuous."""
    path = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]])
    return gb.Space({"b": gb.Binary(), "c": gb.Categorical(["x", "y", "z"]), "g": gb.GraphVariable(["p", "q", "r"], path),
                     "o": gb.Ordinal([1, 2, 4, 8, 16]), "i": gb.Integer(0, 1000, max_ordinal=10),
                     "x": gb.Continuous(-1.0, 2.0)})


def f_mixed(c):
    return (float(c["b"]) + "xyz".index(c["c"]) + "pqr".index(c["g"]) + abs(np.log2(c["o"]) - 2)
            + abs(c["i"] - 300) / 100 + (c["x"] - 0.5) ** 2)


def integer_space(levels=40):
    return gb.Space({f"n{k}": gb.Ordinal(list(range(levels))) for k in range(3)})


def f_integer(c):
    """Smooth: a bowl with its minimum 0 at (11, 23, 30)."""
    return float((c["n0"] - 11) ** 2 + (c["n1"] - 23) ** 2 + (c["n2"] - 30) ** 2)


def run(opt, f, budget):
    for _ in range(budget):
        c = opt.ask()
        opt.tell(c, f(c))
    return [o.config for o in opt.history]


def test_registered_beside_the_other_peers():
    assert METHODS["gp-optuna"] is OptunaGP
    assert {"tpe", "smac", "rs"} <= set(METHODS)  # the other peers of `graphbo compare --methods ...`


def test_the_distributions_keep_order_where_the_space_has_it():
    opt = OptunaGP(six_kinds_space(), seed=0, n_initial=2)
    d = opt._distributions
    kinds = {n: type(d[n]).__name__ for n in d}
    assert kinds == {"b": "CategoricalDistribution", "c": "CategoricalDistribution", "g": "CategoricalDistribution",
                     "o": "IntDistribution", "i": "IntDistribution", "x": "FloatDistribution"}
    assert (d["o"].low, d["o"].high) == (0, 4) and (d["i"].low, d["i"].high) == (0, 1000)


def test_suggestions_are_valid_distinct_and_reproducible_by_seed():
    space = six_kinds_space()
    first = run(OptunaGP(space, seed=4, n_initial=4), f_mixed, 7)
    for c in first:
        space.validate(c)
    assert len({tuple(sorted(c.items())) for c in first}) == 7
    again = run(OptunaGP(six_kinds_space(), seed=4, n_initial=4), f_mixed, 7)
    assert again == first
    other = run(OptunaGP(six_kinds_space(), seed=5, n_initial=4), f_mixed, 7)
    assert other[4:] != first[4:]


def test_pending_suggestions_are_distinct_and_all_reach_the_study():
    space = integer_space(5)
    opt = OptunaGP(space, seed=1, n_initial=3)
    run(opt, f_integer, 3)
    batch = opt.ask(3)  # model-based, with running trials as GPSampler's pending points
    keys = {tuple(sorted(c.items())) for c in batch} | {tuple(sorted(o.config.items())) for o in opt.history}
    assert len(keys) == 6
    for c in reversed(batch):
        opt.tell(c, f_integer(c))
    complete = [t for t in opt.study.trials if t.state.name == "COMPLETE"]
    assert len(complete) == 6 and sorted(t.value for t in complete) == sorted(opt.y)
    assert all(t.state.name in ("COMPLETE", "FAIL") for t in opt.study.trials)


@pytest.mark.slow  # a quality check (an optimisation run to a budget): run with -m slow
def test_gp_improves_on_its_random_start_on_a_smooth_integer_problem():
    """3 ordinals of 40 levels (64,000 points), 5 random points then 10 GP suggestions, two seeds.

    The best of the 5 random points is ~100 away from the optimum on average; a GP
    that used the told values (a bowl is what a Matérn GP fits best) ends within a
    few units of it. Random search with the same 15 evaluations is the reference:
    GPSampler must beat it on each seed and improve on its own random start.
    """
    for seed in (0, 1):
        gp = OptunaGP(integer_space(), seed=seed, n_initial=5)
        run(gp, f_integer, 15)
        rs = gb.RandomSearch(integer_space(), seed=seed, n_initial=5)
        run(rs, f_integer, 15)
        np.testing.assert_array_equal(gp.y[:5], rs.y[:5])  # the shared initial design
        assert gp.y[5:].min() < gp.y[:5].min() / 4, (seed, gp.y)
        assert gp.y.min() < rs.y.min(), (seed, gp.y.min(), rs.y.min())
        assert gp.y.min() <= 20.0, (seed, gp.y)


def test_a_failed_configuration_is_a_fail_trial_the_gp_ignores():
    space = integer_space(4)
    opt = OptunaGP(space, seed=2, n_initial=3)
    run(opt, f_integer, 3)
    bad = opt.ask()
    opt.mark_failed(bad)
    states = [t.state.name for t in opt.study.trials]
    assert states.count("FAIL") == 1 and states.count("COMPLETE") == 3 and "RUNNING" not in states
    failed = next(t for t in opt.study.trials if t.state.name == "FAIL")
    assert failed.values is None
    assert opt.n_told == 3 and opt.n_pending == 0
    # the failed configuration is not suggested again, and later suggestions still come from the GP
    nxt = [opt.ask() for _ in range(3)]
    assert bad not in nxt
    for c in nxt:
        opt.tell(c, f_integer(c))
    assert opt.n_told == 6 and opt.n_fallbacks == 0
    # a configuration the sampler never proposed can fail too (a trial is added)
    seen = [o.config for o in opt.history]
    other = next(c for c in ({"n0": a, "n1": b, "n2": 0} for a in range(4) for b in range(4)) if c not in seen)
    opt.mark_failed(other)
    fails = [t.params for t in opt.study.trials if t.state.name == "FAIL"]
    assert len(fails) == 2 + opt.n_duplicates  # proposals that repeated a configuration are FAIL trials too
    for c in (bad, other):
        assert opt._params_of(space.to_index(c)) in fails


def test_a_reopened_sqlite_study_continues_as_an_uninterrupted_one(tmp_path):
    """The told data are replayed and the sampler's random states and kernel cache restored."""
    space, budget, before = integer_space(12), 11, 7

    def step(study, n):
        for t in study.ask(n):
            study.tell(t, f_integer(t.config))

    with gb.Study(space, "gp-optuna", storage=str(tmp_path / "whole.db"), seed=3, n_initial=4) as whole:
        while whole.n_finished < before:
            step(whole, 1)
        pending = whole.ask(2)
        whole.tell(pending[0], f_integer(pending[0].config))
        whole.tell(pending[1], f_integer(pending[1].config))
        while whole.n_finished < budget:
            step(whole, 1)
        expected = [(t.config, t.value) for t in whole.trials]

    path = str(tmp_path / "split.db")
    with gb.Study(space, "gp-optuna", storage=path, seed=3, n_initial=4) as first:
        while first.n_finished < before:
            step(first, 1)
        pending = first.ask(2)
        first.tell(pending[0], f_integer(pending[0].config))  # pending[1] is left running
    with gb.Study(space, "gp-optuna", storage=path, seed=3, n_initial=4) as second:
        (again,) = [t for t in second.trials if t.status == "running"]
        second.tell(again, f_integer(again.config))
        while second.n_finished < budget:
            step(second, 1)
        assert [(t.config, t.value) for t in second.trials] == expected


@pytest.mark.parametrize("options, error, pattern", [
    ({"n_startup_trials": -1}, ValueError, "n_startup_trials"),
    ({"deterministic_objective": "yes"}, TypeError, "deterministic_objective"),
    ({"max_retries": -1}, ValueError, "max_retries"),
])
def test_a_wrong_option_names_itself(options, error, pattern):
    with pytest.raises(error, match=pattern):
        OptunaGP(integer_space(3), **options)


def test_missing_optuna_is_one_line(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "optuna", None)
    with pytest.raises(ImportError, match=r'^gp-optuna \(GPSampler\) needs optuna: pip install "graphbo\[tpe\]"$'):
        OptunaGP(integer_space(3), seed=0)
