"""An optimizer told evaluations it never asked for (an earlier study's trials, a worker joining a
running study) counts them towards its initial design: once ``n_initial`` are told or pending, it
suggests from its model, as Optuna's samplers do once ``n_startup_trials`` trials are complete.
Configurations given as ``initial_configs`` are asked all the same."""

from __future__ import annotations

import numpy as np
import pytest

import graphbo as gb


def _binary_categorical_ordinal6_space(continuous=True):
    variables = {"a": gb.Binary(), "b": gb.Categorical(["x", "y", "z"]), "c": gb.Ordinal(list(range(6)))}
    return gb.Space({**variables, "r": gb.Continuous(0.0, 1.0)} if continuous else variables)


def _objective(c):
    return float(c["a"]) + {"x": 0.0, "y": 0.5, "z": 1.0}[c["b"]] + (c["c"] - 2) ** 2 / 10 + (c.get("r", 0.3) - 0.3) ** 2


def _make(method, **kwargs):
    if method == "combo":
        return gb.COMBO(_binary_categorical_ordinal6_space(continuous=False), n_burn=5, n_samples=2, **kwargs)
    return gb.BOFM(_binary_categorical_ordinal6_space(), **kwargs)


@pytest.mark.parametrize("method", ["combo", "bofm"])
def test_told_evaluations_stand_in_for_the_random_initial_design(method):
    opt = _make(method, seed=0, n_initial=4)
    for config in gb.RandomSearch(opt.space, seed=1).ask(4):
        opt.tell(config, _objective(config))
    opt.ask()
    assert opt.last_training_indices is not None and len(opt.last_training_indices) == 4  # a model suggestion

    fresh = _make(method, seed=0, n_initial=4)
    for config in gb.RandomSearch(fresh.space, seed=1).ask(3):  # fewer than n_initial: the design goes on
        fresh.tell(config, _objective(config))
    fresh.ask()
    assert fresh.last_training_indices is None


def test_pending_evaluations_count_towards_the_initial_design_too():
    opt = _make("combo", seed=0, n_initial=4)
    told, pending = gb.RandomSearch(opt.space, seed=1).ask(2), gb.RandomSearch(opt.space, seed=2).ask(2)
    for config in told:
        opt.tell(config, _objective(config))
    for config in pending:
        opt.add_pending(config)
    opt.ask()
    assert opt.last_training_indices is not None


def test_given_initial_configs_are_asked_even_after_a_told_history():
    space = _binary_categorical_ordinal6_space(continuous=False)
    given = {"a": True, "b": "z", "c": 5}
    opt = gb.COMBO(space, seed=0, n_initial=2, initial_configs=[given], n_burn=5, n_samples=2)
    for config in gb.RandomSearch(space, seed=1).ask(6):
        if config != given:
            opt.tell(config, _objective(config))
    assert opt.ask() == given
    opt.tell(given, _objective(given))
    opt.ask()
    assert opt.last_training_indices is not None


def test_the_count_of_given_initial_configs_survives_a_resume():
    space = _binary_categorical_ordinal6_space(continuous=False)
    given = [{"a": True, "b": "z", "c": 5}, {"a": False, "b": "y", "c": 1}]
    opt = gb.COMBO(space, seed=0, n_initial=2, initial_configs=given, n_burn=5, n_samples=2)
    history = [c for c in gb.RandomSearch(space, seed=1).ask(6) if c not in given]
    for config in history:
        opt.tell(config, _objective(config))
    assert opt.ask() == given[0]
    opt.tell(given[0], 1.0)
    state = opt.get_state()

    resumed = gb.COMBO(space, seed=0, n_initial=2, initial_configs=given, n_burn=5, n_samples=2)
    for config in history + [given[0]]:
        resumed.tell(config, 1.0 if config == given[0] else _objective(config))
    resumed.set_state(state)
    assert resumed.ask() == given[1] == opt.ask()
    assert np.array_equal(resumed.rng.bit_generator.state["state"]["state"], opt.rng.bit_generator.state["state"]["state"])
