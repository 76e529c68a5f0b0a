"""ConfigSpace input that graphbo cannot represent is refused, never silently dropped (issue 20, item 7):
conditions, forbidden clauses, and a categorical too large for a graph. In a module of its own, so that
without ConfigSpace (the ``configspace`` extra) only these tests are skipped."""

import pytest

# -- ConfigSpace -----------------------------------------------------------------------------------
CS = pytest.importorskip("ConfigSpace")
from graphbo.spaces.configspace import from_configspace  # noqa: E402


def configspace_with(extra):
    cs = CS.ConfigurationSpace(seed=0)
    a = CS.CategoricalHyperparameter("a", ["x", "y", "z"])
    b = CS.UniformFloatHyperparameter("b", 0.0, 1.0)
    c = CS.UniformIntegerHyperparameter("c", 1, 10)
    cs.add([a, b, c])
    cs.add(extra(a, b, c))
    return cs


@pytest.mark.parametrize("extra", [
    lambda a, b, c: CS.EqualsCondition(b, a, "x"),
    lambda a, b, c: CS.InCondition(b, a, ["x", "y"]),
    lambda a, b, c: CS.GreaterThanCondition(b, c, 3),
    lambda a, b, c: CS.OrConjunction(CS.EqualsCondition(b, a, "x"), CS.GreaterThanCondition(b, c, 3)),
    lambda a, b, c: CS.AndConjunction(CS.EqualsCondition(b, a, "x"), CS.LessThanCondition(b, c, 8)),
], ids=["equals", "in", "greater", "or", "and"])
def test_configspace_conditions_are_refused_not_dropped(extra):
    with pytest.raises(ValueError, match=r"from_configspace: hyper-parameter 'b' is conditional"):
        from_configspace(configspace_with(extra))


@pytest.mark.parametrize("extra", [
    lambda a, b, c: CS.ForbiddenEqualsClause(a, "z"),
    lambda a, b, c: CS.ForbiddenInClause(a, ["y", "z"]),
    lambda a, b, c: CS.ForbiddenAndConjunction(CS.ForbiddenEqualsClause(a, "y"), CS.ForbiddenEqualsClause(c, 3)),
    lambda a, b, c: CS.ForbiddenGreaterThanClause(c, 9),
], ids=["equals", "in", "and", "greater"])
def test_configspace_forbidden_clauses_are_refused_not_dropped(extra):
    with pytest.raises(ValueError, match=r"from_configspace: forbidden clause .* hyper-parameter\(s\) \['(a|c)'"):
        from_configspace(configspace_with(extra))


def test_a_configspace_categorical_too_large_for_a_graph_names_the_hyperparameter():
    cs = CS.ConfigurationSpace(seed=0)
    cs.add(CS.CategoricalHyperparameter("huge", [f"v{i}" for i in range(5000)]))
    with pytest.raises(ValueError, match=r"hyper-parameter 'huge': Categorical: choices has 5,000 values"):
        from_configspace(cs)
