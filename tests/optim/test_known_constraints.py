"""Known constraints: rules on the configuration that no method ever suggests against."""

import numpy as np
import pytest

import graphbo as gb
from graphbo.optimizers import METHODS
from graphbo.spaces.constraints import KnownConstraint


def constrained_discrete_space():
    # 8 x 8 x 3 = 192 configurations, about half of them refused
    return gb.Space({"a": gb.Ordinal(list(range(8))), "b": gb.Ordinal(list(range(8))),
                     "c": gb.Categorical(["x", "y", "z"])},
                    constraints=["a + b <= 7", "not (c == 'z' and a > 2)"])


def constrained_mixed_space():
    return gb.Space({"u": gb.Continuous(0.0, 1.0), "v": gb.Continuous(0.0, 1.0), "c": gb.Categorical(["p", "q"])},
                    constraints=["u + v <= 0.8", lambda cfg: not (cfg["c"] == "q" and cfg["u"] > 0.5)])


def objective(cfg):
    return float(sum(hash(str(v)) % 97 for v in cfg.values()))


def bowl(cfg):
    # lowest at a = b = 7, which the rules refuse: the optimizers are pulled against the boundary
    return float((cfg["a"] - 7) ** 2 + (cfg["b"] - 7) ** 2 + (cfg["c"] != "z"))


@pytest.mark.parametrize("method", ["combo", "rs", "sa", "re", "cocabo"])
def test_no_discrete_method_suggests_a_refused_configuration(method):
    space = constrained_discrete_space()
    opt = METHODS[method](space, seed=1, n_initial=4)
    for _ in range(14):
        cfg = opt.ask()
        assert space.allows(cfg), (method, cfg)
        opt.tell(cfg, bowl(cfg))


@pytest.mark.parametrize("method", ["bofm", "rs"])
def test_no_mixed_method_suggests_a_refused_configuration(method):
    space = constrained_mixed_space()
    opt = METHODS[method](space, seed=2, n_initial=3, **({"n_random": 500, "n_starts": 5} if method == "bofm" else {}))
    for _ in range(8):
        cfg = opt.ask()
        assert space.allows(cfg), (method, cfg)
        opt.tell(cfg, -(cfg["u"] + cfg["v"]) + (cfg["c"] == "p"))  # best at the boundary u + v = 0.8


def test_combo_finds_the_best_allowed_configuration_without_falling_back_to_random():
    space = constrained_discrete_space()
    result = gb.minimize(bowl, space, method="combo", budget=30, seed=0, n_initial=6)
    allowed = [c for c in (space.from_index(r) for r in np.ndindex(8, 8, 3)) if space.allows(c)]
    best_allowed = min(bowl(c) for c in allowed)
    assert all(space.allows(t.config) for t in result.trials)
    assert result.best_value <= best_allowed + 2  # the boundary is reached (a random allowed point averages ~25)


def test_sampling_draws_only_allowed_configurations_and_says_when_almost_nothing_is():
    space = constrained_discrete_space()
    rows = space.sample_index(500, 0)
    assert space.allowed_rows(rows).all()
    assert rows.shape == (500, 3)
    never = gb.Space({"a": gb.Ordinal(list(range(8)))}, constraints=["a > 100"])
    with pytest.raises(ValueError, match="allow 0 of"):
        never.sample_index(1, 0)


def test_initial_configs_that_break_a_rule_are_refused():
    with pytest.raises(ValueError, match="breaks a known constraint"):
        METHODS["combo"](constrained_discrete_space(), initial_configs=[{"a": 7, "b": 7, "c": "x"}])


@pytest.mark.parametrize("rule,match", [
    ("__import__('os').system('true')", "not allowed"),
    ("a.real > 1", "not allowed"),
    ("(lambda: 1)()", "not allowed"),
    ("[x for x in range(3)]", "not allowed"),
    ("d > 1", "'d', which is not a variable"),
    ("a >", "not an expression"),
    ("open('f')", "not allowed"),
])
def test_expressions_other_than_arithmetic_and_comparisons_are_refused(rule, match):
    with pytest.raises(ValueError, match=match):
        gb.Space({"a": gb.Ordinal([1, 2]), "b": gb.Ordinal([1, 2])}, constraints=[rule])


def test_expressions_evaluate_as_python_would():
    names = ["a", "b", "c"]
    cases = ["a + b * 2 <= 7", "a // 2 == b % 3", "c in ('x', 'y') or a ** 2 > 10", "-a < b < 5",
             "max(a, b) - min(a, b) >= abs(a - 3)", "(a if c == 'x' else b) > 2", "not c != 'z'"]
    for text in cases:
        rule = KnownConstraint(text, names)
        for a in range(5):
            for b in range(5):
                for c in "xyz":
                    assert rule.allows({"a": a, "b": b, "c": c}) == eval(text, {}, {"a": a, "b": b, "c": c}), text


@pytest.mark.parametrize("text", [
    "(a != 0) + (b != 0) + (c != 'x') <= 1", "a + b * 2 <= 7", "a // 2 == b % 3", "c in ('x', 'y') or a ** 2 > 10",
    "-a < b < 5", "max(a, b) - min(a, b) >= abs(a - 3)", "(a if c == 'x' else b) > 2", "not c != 'z'",
    "c not in ['y'] and a / (b + 1) < 1.5", "c + 'q' == 'xq'", "True", "u * 2 < a", "-(a > b) + u >= 0",
])
def test_rows_are_judged_at_once_as_each_configuration_would_be(text):
    space = gb.Space({"a": gb.Ordinal(list(range(5))), "b": gb.Ordinal([0, 1, 2, 3, 4]),
                      "c": gb.Categorical(["x", "y", "z"]), "u": gb.Continuous(0.0, 3.0)}, constraints=[text])
    rows = space._sample_unconstrained(400, np.random.default_rng(0))
    one_by_one = np.array([space.allows(space.from_index(r)) for r in rows])
    assert np.array_equal(space.allowed_rows(rows), one_by_one)
    assert 0 < one_by_one.sum() or text == "True"


def test_a_rule_that_cannot_be_evaluated_names_itself_and_the_configuration():
    rule = KnownConstraint("a / b > 1", ["a", "b"])
    with pytest.raises(ValueError, match=r"'a / b > 1' cannot be evaluated on \{'a': 1, 'b': 0\}: ZeroDivision"):
        rule.allows({"a": 1, "b": 0})
    with pytest.raises(ValueError, match="exponent"):
        KnownConstraint("a ** 1000 > 1", ["a"]).allows({"a": 3})
    with pytest.raises(ValueError, match="only numbers can be multiplied"):
        KnownConstraint("c * 100000000 == ''", ["c"]).allows({"c": "x"})


def test_a_study_stores_its_rules_and_refuses_a_space_with_other_rules(tmp_path):
    path = tmp_path / "s.db"
    space = constrained_discrete_space()
    gb.minimize(bowl, space, method="rs", budget=5, seed=0, storage=path)
    from graphbo.storage.info import read_study_info
    assert read_study_info(path)["space_constraints"] == ["a + b <= 7", "not (c == 'z' and a > 2)"]
    other = gb.Space({"a": gb.Ordinal(list(range(8))), "b": gb.Ordinal(list(range(8))),
                      "c": gb.Categorical(["x", "y", "z"])}, constraints=["a + b <= 6"])
    before = path.read_bytes()
    with pytest.raises(gb.StorageError, match="constraints"):
        gb.Study(other, "rs", storage=path)
    assert path.read_bytes() == before
    # the same rules: resumes
    result = gb.minimize(bowl, constrained_discrete_space(), method="rs", budget=8, seed=0, storage=path)
    assert len(result.trials) == 8
