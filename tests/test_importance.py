"""Parameter importance: the functional-ANOVA main effects, on exact means and on fitted surrogates."""

import numpy as np
import pytest

import graphbo as gb
from graphbo.importance import main_effects, param_importances
from graphbo.study import describe_space, space_from_description


def test_main_effects_of_an_additive_mean_are_the_variances_of_its_terms():
    space = gb.Space({"a": gb.Ordinal([0, 1, 2, 3, 4]), "b": gb.Categorical(["p", "q"]), "c": gb.Binary()})
    # m(x) = 2 * index(a) + 3 * [b == q]: V_a = 4 * Var(0..4) = 8, V_b = 9 * 1/4, V_c = 0, whatever the base rows
    v = main_effects(lambda rows: 2.0 * rows[:, 0] + 3.0 * rows[:, 1], space, rng=np.random.default_rng(0), n_base=16)
    assert v["a"] == pytest.approx(8.0)
    assert v["b"] == pytest.approx(2.25)
    assert v["c"] == pytest.approx(0.0)


def test_an_interaction_is_not_a_main_effect():
    space = gb.Space({"a": gb.Binary(), "b": gb.Binary()})
    # m = +1 where a == b, -1 otherwise: both main effects vanish under the uniform measure
    v = main_effects(lambda rows: np.where(rows[:, 0] == rows[:, 1], 1.0, -1.0), space,
                     rng=np.random.default_rng(0), n_base=4000)
    assert v["a"] < 0.01 and v["b"] < 0.01


def test_a_continuous_variable_uses_a_grid_and_a_long_ordinal_at_most_max_levels():
    space = gb.Space({"x": gb.Continuous(0.0, 1.0), "o": gb.Ordinal(list(range(100)))})
    seen: list[np.ndarray] = []

    def mean(rows):
        seen.append(rows.copy())
        return rows[:, 0]

    v = main_effects(mean, space, rng=np.random.default_rng(0), n_base=8, max_levels=10)
    grid = (np.arange(10) + 0.5) / 10
    assert v["x"] == pytest.approx(np.var(grid))
    assert np.unique(seen[0][:, 0]).tolist() == pytest.approx(grid.tolist())
    assert np.unique(seen[1][:, 1]).size == 10 and {0, 99} <= set(np.unique(seen[1][:, 1]).astype(int).tolist())


def test_a_conditional_variable_counts_where_it_is_active():
    space = gb.Space({"kernel": gb.Categorical(["rbf", "linear"]), "gamma": gb.Ordinal([1, 2, 3])},
                     conditions={"gamma": {"kernel": ["rbf"]}})
    inactive = space.n_values[1] - 1

    def mean(rows):
        assert np.all((rows[:, 0] == 0) == (rows[:, 1] != inactive))  # rows stay canonical
        return np.where(rows[:, 1] == inactive, 0.0, rows[:, 1].astype(float))

    v = main_effects(mean, space, rng=np.random.default_rng(1), n_base=64)
    assert v["gamma"] == pytest.approx(np.var([0.0, 1.0, 2.0]))  # the three active values, on active rows only
    assert v["kernel"] > 0  # rbf turns gamma's values on, linear turns them off


@pytest.mark.parametrize("mixed", [False, True])
def test_the_fitted_importances_find_the_variables_that_matter(mixed):
    variables = {"a": gb.Ordinal(list(range(10))), "b": gb.Categorical(list("wxyz")), "c": gb.Binary(),
                 "d": gb.Ordinal(list(range(5)))}
    if mixed:
        variables["e"] = gb.Continuous(0.0, 1.0)
    space = gb.Space(variables)
    configs = space.sample(40, seed=3)
    values = [(c["a"] - 3) ** 2 + 8.0 * (c["b"] == "x") for c in configs]
    imp = param_importances(space, configs, values=values, seed=0)
    assert list(imp)[:2] == ["a", "b"]
    assert sum(imp.values()) == pytest.approx(1.0)
    assert imp["a"] + imp["b"] > 0.95
    assert param_importances(space, configs, values=values, seed=0) == imp  # the same data and seed: the same numbers


def test_study_and_minimize_give_importances_whichever_method_ran():
    space = gb.Space({"a": gb.Ordinal(list(range(8))), "b": gb.Binary(), "c": gb.Categorical(["p", "q", "r"])})

    def f(c):
        return abs(c["a"] - 5) + 0.01 * c["b"]

    result = gb.minimize(f, space, budget=15, method="rs", seed=0)
    imp = result.param_importances()
    assert max(imp, key=imp.get) == "a"
    study = gb.Study(space, "rs", seed=0)
    study.optimize(f, budget=15)
    assert study.param_importances() == result.param_importances()  # same trials, same seed


def test_several_objectives_pick_one():
    space = gb.Space({"a": gb.Ordinal(list(range(8))), "b": gb.Ordinal(list(range(8)))})
    result = gb.minimize(lambda c: [float(c["a"]), float(c["b"])], space, budget=12, method="rs", seed=0,
                         directions=["minimize", "minimize"])
    assert max(result.param_importances(objective=0), key=result.param_importances(objective=0).get) == "a"
    second = result.param_importances(objective=1)
    assert max(second, key=second.get) == "b"
    with pytest.raises(ValueError, match="objective must be below"):
        result.param_importances(objective=2)


def test_too_little_data_and_constant_values():
    space = gb.Space({"a": gb.Binary(), "b": gb.Binary()})
    configs = space.sample(4, seed=0)
    with pytest.raises(ValueError, match="at least 3"):
        param_importances(space, configs[:2], values=[1.0, 2.0])
    with pytest.raises(ValueError, match="2 configurations and 3 values"):
        param_importances(space, configs[:2], values=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="finite"):
        param_importances(space, configs[:3], values=[1.0, np.nan, 3.0])
    assert param_importances(space, configs, values=[2.0] * 4) == {"a": 0.0, "b": 0.0}
    with pytest.raises(TypeError, match="graphbo.Space"):
        param_importances({"a": [0, 1]}, configs, values=[1.0, 2.0, 3.0, 4.0])


def test_a_stored_space_is_rebuilt_exactly_or_not_at_all():
    space = gb.Space({"k": gb.Categorical(["rbf", "poly"]), "g": gb.Continuous(1e-3, 1.0, log=True),
                      "d": gb.Ordinal([2, 3, 4]), "n": gb.Integer(1, 100), "b": gb.Binary(),
                      "o": gb.Ordinal(list(range(50)), edge_weight=1.0), "p": gb.Ordinal(list(range(50)))},
                     conditions={"d": {"k": ["poly"]}})
    rebuilt = space_from_description(describe_space(space))
    assert rebuilt is not None and describe_space(rebuilt) == describe_space(space)
    assert rebuilt.conditions == space.conditions
    graph = gb.Space({"v": gb.GraphVariable([0, 1, 2], [[0, 1, 0], [1, 0, 1], [0, 1, 0]])})
    assert space_from_description(describe_space(graph)) is None
    assert space_from_description(describe_space(gb.Space({"o": gb.Ordinal([1, 2, 3], edge_weight=2.5)}))) is None
    assert space_from_description({"not": "a list"}) is None
