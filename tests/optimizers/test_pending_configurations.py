"""The public pending-configuration API of every optimizer: configurations in flight that the optimizer did not
ask for itself (a resumed study's running trials, another sampler's suggestions)."""

import numpy as np
import pytest

import graphbo as gb
from graphbo.optimizers import METHODS

FAST_COMBO = {"n_burn": 5, "n_samples": 2, "n_random": 200, "n_spray": 5, "n_starts": 3}


def categorical_binary_ordinal4_space():
    return gb.Space({"a": gb.Categorical(["x", "y", "z"]), "b": gb.Binary(), "c": gb.Ordinal([1, 2, 3, 4])})


def all_configs(space):
    return [space.from_index(np.array(r)) for r in np.ndindex(*[v.n_values for v in space.variables])]


@pytest.mark.parametrize("method", ["rs", "combo", "sa"])
def test_a_pending_configuration_is_never_suggested_until_it_is_removed(method):
    space = categorical_binary_ordinal4_space()
    options = FAST_COMBO if method == "combo" else {}
    opt = METHODS[method](space, seed=0, n_initial=3, **options)
    configs = all_configs(space)
    held = configs[:-1]
    for c in held:
        opt.add_pending(c)
    assert opt.n_pending == len(held) and opt.pending_configs == held
    assert not opt.exhausted
    assert opt.ask() == configs[-1]  # the one configuration not in flight
    assert opt.exhausted
    opt.remove_pending(held[0])
    assert not opt.exhausted and opt.ask() == held[0]


def test_pending_configurations_condition_the_model_and_told_ones_are_not_pending():
    space = categorical_binary_ordinal4_space()
    opt = gb.COMBO(space, seed=1, n_initial=4, **FAST_COMBO)
    for _ in range(4):
        c = opt.ask()
        opt.tell(c, float(c["c"]) + (c["a"] == "x"))
    told = opt.X.copy()
    opt.add_pending(space.from_index(told[0]))  # already told: nothing changes
    assert opt.n_pending == 0
    free = opt.ask()
    opt.clear_pending()
    opt.add_pending(free)
    assert opt.pending_configs == [free] and opt.ask() != free
    opt.clear_pending()
    assert opt.n_pending == 0 and opt.pending_configs == []


def test_remove_pending_of_a_configuration_not_in_flight_does_nothing():
    space = categorical_binary_ordinal4_space()
    opt = gb.RandomSearch(space, seed=0)
    asked = opt.ask()
    opt.remove_pending(next(c for c in all_configs(space) if c != asked))
    assert opt.pending_configs == [asked]
