"""ConfigSpace input that graphbo cannot represent is refused, never silently dropped: disjunctions of
conditions or forbidden clauses, a continuous parent, and a categorical too large for a graph. In a module of its own, so that
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


@pytest.mark.parametrize("extra,match", [
    (lambda a, b, c: CS.OrConjunction(CS.EqualsCondition(b, a, "x"), CS.GreaterThanCondition(b, c, 3)),
     r"hyper-parameter 'b' has an OrConjunction"),
    (lambda a, b, c: CS.EqualsCondition(c, b, 0.5), r"'c' is conditional on 'b', which is continuous"),
    (lambda a, b, c: CS.ForbiddenOrConjunction(CS.ForbiddenEqualsClause(a, "y"), CS.ForbiddenEqualsClause(c, 3)),
     r"forbidden clause .* is a ForbiddenOrConjunction"),
], ids=["or-condition", "continuous-parent", "or-forbidden"])
def test_configspace_structure_graphbo_cannot_express_is_refused_not_dropped(extra, match):
    with pytest.raises(ValueError, match="from_configspace: .*" + match):
        from_configspace(configspace_with(extra))


def test_a_configspace_categorical_too_large_for_a_graph_names_the_hyperparameter():
    cs = CS.ConfigurationSpace(seed=0)
    cs.add(CS.CategoricalHyperparameter("huge", [f"v{i}" for i in range(5000)]))
    with pytest.raises(ValueError, match=r"hyper-parameter 'huge': Categorical: choices has 5,000 values"):
        from_configspace(cs)
