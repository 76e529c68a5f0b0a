"""Conditional variables: active only when their parents take given values."""

import itertools

import numpy as np
import pytest

import graphbo as gb
from graphbo.optimizers import METHODS
from graphbo.spaces.conditions import INACTIVE


def svc_space():
    return gb.Space({"kernel": gb.Categorical(["linear", "rbf", "poly"]), "C": gb.Continuous(0.01, 100.0, log=True),
                     "gamma": gb.Continuous(1e-4, 1.0, log=True), "degree": gb.Ordinal([2, 3, 4, 5]),
                     "coef0": gb.Binary()},
                    conditions={"gamma": {"kernel": ["rbf", "poly"]}, "degree": {"kernel": "poly"},
                                "coef0": {"degree": [3, 4]}})


def tree_space():
    return gb.Space({"a": gb.Categorical(["x", "y"]), "b": gb.Ordinal(list(range(6))), "c": gb.Binary(),
                     "e": gb.Ordinal(list(range(5)))},
                    conditions={"b": {"a": "x"}, "c": {"b": [2, 3]}})


def expected_active(cfg_or_row_values):
    v = cfg_or_row_values
    active = {"kernel", "C"}
    if v["kernel"] in ("rbf", "poly"):
        active.add("gamma")
    if v["kernel"] == "poly":
        active.add("degree")
        if v["degree"] in (3, 4):
            active.add("coef0")
    return active


def test_configurations_hold_exactly_their_active_variables_and_round_trip():
    space = svc_space()
    for cfg in space.sample(300, 0):
        assert set(cfg) == expected_active(cfg)
        assert space.from_index(space.to_index(cfg)) == cfg
    kernels = {c["kernel"] for c in space.sample(300, 1)}
    assert kernels == {"linear", "rbf", "poly"}


def test_canonical_rows_are_stable_and_neighbours_are_canonical():
    space = tree_space()
    rows = space.sample_index(200, 0)
    assert np.array_equal(space.canonical(rows), rows)
    for row in rows[:40]:
        nbrs = space.neighbor_index(row)
        assert np.array_equal(space.canonical(nbrs), nbrs)
        assert not np.any(np.all(nbrs == row, axis=1))
        # moving the parent switches the child on (at its first value) or off
        cfg = space.from_index(row)
        flipped = {"a": "y" if cfg["a"] == "x" else "x"}
        if flipped["a"] == "x":
            flipped["b"] = 0
        flipped["e"] = cfg["e"]
        assert any(space.from_index(n) == flipped for n in nbrs)
    batch, owner = space.neighbor_index_batch(rows[:40])
    assert np.array_equal(space.canonical(batch), batch) and not np.any(np.all(batch == rows[owner], axis=1))


def test_size_counts_the_configurations_a_user_can_write():
    space = tree_space()
    draws = [range(2), range(6), range(2), range(5)]
    canonical = {tuple(space.canonical(np.array([r]))[0]) for r in itertools.product(*draws)}
    assert space.size == len(canonical) == 5 + 4 * 5 + 2 * 2 * 5


def test_an_inactive_discrete_variable_is_a_vertex_joined_to_every_value():
    space = gb.Space({"a": gb.Categorical(["x", "y"]), "b": gb.Ordinal(list(range(6))), "k": gb.Categorical(["p", "q", "r"])},
                     conditions={"b": {"a": "x"}, "k": {"a": "x"}})
    b, k = space["b"], space["k"]
    assert b.n_values == 7 and b.values[-1] is INACTIVE
    assert np.array_equal(b.adjacency[:6, :6], gb.Ordinal(list(range(6))).adjacency)
    assert b.adjacency[6, :6].tolist() == [1 / 6] * 6 and b.adjacency[6, 6] == 0.0  # an ordinal keeps its path
    assert k.adjacency[3, :3].tolist() == [1.0] * 3  # a categorical: one more category
    row = space.to_index({"a": "x", "b": 5, "k": "p"})
    moved = {tuple(r) for r in space.neighbor_index(row)}
    assert (0, 4, 0) in moved and (0, 0, 0) not in moved  # b moves along its path, never via "inactive" to 0


@pytest.mark.parametrize("conditions,match", [
    ({"z": {"a": "x"}}, "no such variable"),
    ({"b": {"q": "x"}}, "parent 'q' is not a variable"),
    ({"b": {"a": "w"}}, "'w' is not a value of 'a'"),
    ({"b": {"e": 1}, "e": {"b": 2}}, "cycle"),
    ({"b": {"b": 1}}, "conditional on itself"),
    ({"b": {"u": 0.5}}, "'u' is continuous"),
])
def test_conditions_that_cannot_hold_are_refused_where_they_are_given(conditions, match):
    with pytest.raises(ValueError, match=match):
        gb.Space({"a": gb.Categorical(["x", "y"]), "b": gb.Ordinal(list(range(6))), "e": gb.Ordinal([1, 2]),
                  "u": gb.Continuous(0, 1)}, conditions=conditions)


def test_a_configuration_with_an_inactive_variable_or_without_an_active_one_is_refused():
    space = svc_space()
    with pytest.raises(ValueError, match="'gamma', which is inactive"):
        space.to_index({"kernel": "linear", "C": 1.0, "gamma": 0.1})
    with pytest.raises(ValueError, match="missing variable 'degree', which is active"):
        space.to_index({"kernel": "poly", "C": 1.0, "gamma": 0.1})


@pytest.mark.parametrize("method", ["combo", "sa", "re", "rs"])
def test_every_discrete_method_suggests_valid_conditional_configurations(method):
    space = tree_space()

    def f(c):
        return float((c.get("b", 9) - 3) ** 2 + c.get("c", 2) + (c["e"] - 2) ** 2)

    result = gb.minimize(f, space, method=method, budget=18, seed=0, n_initial=6)
    for t in result.trials:
        assert space.from_index(space.to_index(t.config)) == t.config
    assert len({tuple(sorted(t.config.items())) for t in result.trials}) == 18  # no repeats
    if method in ("combo", "sa"):
        assert result.best_value == 0.0  # b = 3, c = 0, e = 2 reached


def test_a_wrapped_library_refuses_a_conditional_or_constrained_space():
    with pytest.raises(ValueError, match="'tpe' hands its library a flat product"):
        METHODS["tpe"](tree_space())
    with pytest.raises(ValueError, match="'gp-optuna' hands its library a flat product"):
        METHODS["gp-optuna"](gb.Space({"a": gb.Ordinal([1, 2, 3])}, constraints=["a > 1"]))


def test_bofm_on_a_conditional_mixed_space_and_a_resumed_study(tmp_path):
    space = svc_space()

    def f(c):
        v = abs(np.log10(c["C"]) - 1)
        if c["kernel"] == "rbf":
            v += abs(np.log10(c["gamma"]) + 2)
        elif c["kernel"] == "poly":
            v += abs(np.log10(c["gamma"]) + 1) + 0.5 + 0.1 * c.get("coef0", 0)
        else:
            v += 1.2
        return float(v)

    path = tmp_path / "svc.db"
    gb.minimize(f, space, method="bofm", budget=8, seed=0, n_initial=5, storage=path, n_random=500, n_starts=5)
    result = gb.minimize(f, svc_space(), method="bofm", budget=10, seed=0, n_initial=5, storage=path, n_random=500,
                         n_starts=5)
    assert len(result.trials) == 10
    assert all(set(t.config) == expected_active(t.config) for t in result.trials)
    other = gb.Space({"kernel": gb.Categorical(["linear", "rbf", "poly"]), "C": gb.Continuous(0.01, 100.0, log=True),
                      "gamma": gb.Continuous(1e-4, 1.0, log=True), "degree": gb.Ordinal([2, 3, 4, 5]),
                      "coef0": gb.Binary()},
                     conditions={"gamma": {"kernel": ["rbf"]}, "degree": {"kernel": "poly"},
                                 "coef0": {"degree": [3, 4]}})
    with pytest.raises(gb.StorageError, match="gamma"):
        gb.Study(other, "bofm", storage=path, n_initial=5, n_random=500, n_starts=5)


def test_a_known_constraint_on_an_inactive_variable_does_not_apply():
    space = gb.Space({"a": gb.Categorical(["x", "y"]), "b": gb.Ordinal(list(range(6)))},
                     conditions={"b": {"a": "x"}}, constraints=["b >= 3"])
    assert space.allows({"a": "y"}) and not space.allows({"a": "x", "b": 1})
    rows = space.sample_index(300, 0)
    configs = [space.from_index(r) for r in rows]
    assert all(c["a"] == "y" or c["b"] >= 3 for c in configs)
    assert any(c["a"] == "y" for c in configs)


def test_space_files_hold_conditions(tmp_path):
    space = svc_space()
    path = tmp_path / "svc.yaml"
    gb.save_space(space, path)
    back = gb.load_space(path)
    assert back.conditions == space.conditions
    cfg = {"kernel": "poly", "C": 2.0, "gamma": 0.01, "degree": 3, "coef0": 1}
    assert np.array_equal(back.to_index(cfg), space.to_index(cfg))
    (tmp_path / "bad.yaml").write_text("variables:\n  a: {type: binary}\nconditions: [a]\n")
    with pytest.raises(gb.SpaceFileError, match="'conditions' must be a mapping"):
        gb.load_space(tmp_path / "bad.yaml")


def test_configspace_conditions_and_forbidden_clauses_mean_what_they_mean_in_configspace():
    CS = pytest.importorskip("ConfigSpace")
    cs = CS.ConfigurationSpace(seed=0)
    kernel = CS.CategoricalHyperparameter("kernel", ["linear", "rbf", "poly", "sigmoid"])
    C = CS.UniformFloatHyperparameter("C", 0.01, 100, log=True)
    gamma = CS.UniformFloatHyperparameter("gamma", 1e-4, 1, log=True)
    degree = CS.UniformIntegerHyperparameter("degree", 2, 5)
    coef0 = CS.UniformFloatHyperparameter("coef0", 0.0, 1.0)
    shrinking = CS.CategoricalHyperparameter("shrinking", [True, False])
    cs.add([kernel, C, gamma, degree, coef0, shrinking])
    cs.add([CS.InCondition(gamma, kernel, ["rbf", "poly", "sigmoid"]), CS.EqualsCondition(degree, kernel, "poly"),
            CS.AndConjunction(CS.NotEqualsCondition(coef0, kernel, "linear"),
                              CS.NotEqualsCondition(coef0, kernel, "rbf"))])
    cs.add(CS.ForbiddenAndConjunction(CS.ForbiddenEqualsClause(kernel, "sigmoid"),
                                      CS.ForbiddenEqualsClause(shrinking, False)))
    space = gb.from_configspace(cs)
    for sampled in cs.sample_configuration(200):
        cfg = dict(sampled)
        back = space.from_index(space.to_index(cfg))
        assert set(back) == set(cfg)  # ConfigSpace's active set is graphbo's
        assert all(back[k] == pytest.approx(v) if isinstance(v, float) else back[k] == v for k, v in cfg.items())
        assert space.allows(cfg)
    for cfg in space.sample(200, 0):
        CS.Configuration(cs, values=cfg).check_valid_configuration()  # and graphbo's samples are valid there
    assert not space.allows({"kernel": "sigmoid", "C": 1.0, "gamma": 0.1, "coef0": 0.5, "shrinking": False})
    back = gb.to_configspace(gb.Space({"a": gb.Categorical(["x", "y"]), "b": gb.Ordinal([1, 2, 3])},
                                      conditions={"b": {"a": "x"}}))
    assert [str(c) for c in back.conditions] == ["b | a == 'x'"]


def test_the_conditional_svc_task_passes_scikit_learn_only_the_active_parameters():
    pytest.importorskip("sklearn")
    from graphbo.benchmarks.sklearn_tuning import SklearnTuning

    task = SklearnTuning("svc-digits-conditional")
    assert set(task.space.conditions) == {"gamma", "degree", "coef0"}
    linear = {"kernel": "linear", "C": 1.0, "shrinking": 1}
    assert task._model(linear).get_params()["gamma"] == "scale"  # scikit-learn's default: gamma was not passed
    poly = {"kernel": "poly", "C": 1.0, "gamma": 0.01, "degree": 3, "coef0": 0.5, "shrinking": 0}
    assert task._model(poly).get_params()["degree"] == 3
    assert 0.0 <= task(linear) < 0.2  # a linear SVC classifies the digits well
    with pytest.raises(ValueError, match="inactive"):
        task({**linear, "degree": 3})


def test_configspace_comparisons_on_an_ordinal_go_by_position_as_in_configspace():
    CS = pytest.importorskip("ConfigSpace")
    cs = CS.ConfigurationSpace(seed=0)
    size = CS.OrdinalHyperparameter("size", ["small", "medium", "large"])
    x = CS.CategoricalHyperparameter("x", ["p", "q"])
    depth = CS.OrdinalHyperparameter("depth", ["low", "mid", "high"])
    cs.add([size, x, depth])
    cs.add(CS.GreaterThanCondition(x, size, "small"))
    cs.add(CS.ForbiddenGreaterThanClause(depth, "mid"))
    space = gb.from_configspace(cs)
    assert space.conditions == {"x": {"size": ("medium", "large")}}
    for sampled in cs.sample_configuration(100):
        cfg = dict(sampled)
        assert space.from_index(space.to_index(cfg)) == cfg and space.allows(cfg)
    assert not space.allows({"size": "small", "depth": "high"})  # "high" comes after "mid"
    assert space.allows({"size": "small", "depth": "low"})
