"""Conversion between ConfigSpace's ``ConfigurationSpace`` and graphbo's :class:`~graphbo.Space`.

=====================================  ==================================================
ConfigSpace                            graphbo
=====================================  ==================================================
``CategoricalHyperparameter``          :class:`~graphbo.Categorical` (complete graph)
``OrdinalHyperparameter``              :class:`~graphbo.Ordinal` (path graph)
``UniformFloatHyperparameter``         :class:`~graphbo.Continuous` (``log`` kept)
``UniformIntegerHyperparameter``       :func:`~graphbo.Integer` (``log`` kept): an ordinal
                                       for at most 64 linear values, else a rounded range
``Constant``                           a single-value :class:`~graphbo.Categorical`
=====================================  ==================================================

Conditions become the space's ``conditions`` (:mod:`graphbo.spaces.conditions`): ``EqualsCondition``,
``NotEqualsCondition``, ``InCondition``, ``GreaterThanCondition`` and ``LessThanCondition`` on a discrete
parent (each a set of the parent's values) and ``AndConjunction`` of them; an ``OrConjunction`` has no
equivalent. Forbidden clauses become known constraints (:mod:`graphbo.spaces.constraints`):
``ForbiddenEqualsClause``, ``ForbiddenInClause``, the comparison clauses, ``ForbiddenAndConjunction`` of
them and the ``Forbidden...Relation`` between two hyper-parameters, each an expression ``not (...)`` when the names are
identifiers, else an equivalent Python rule. As in ConfigSpace, a forbidden clause on an inactive
hyper-parameter does not apply. Non-uniform distributions (normal, beta) raise a ``ValueError`` naming the
hyper-parameter. Categorical weights and default values are priors for sampling; they do not change the
space and are dropped (categorical weights with a warning).

ConfigSpace is imported only inside the functions (``pip install ConfigSpace``).
"""

from __future__ import annotations

import warnings
from typing import Any

from .._lazy import require
from .space import Space
from .variables import Binary, Categorical, Continuous, GraphVariable, Integer, IntegerRange, Ordinal

__all__ = ["from_configspace", "to_configspace"]


def _import_configspace() -> Any:
    return require("ConfigSpace", "converting a ConfigurationSpace", extra="configspace")


def _clause_names(clause: Any) -> list[str]:
    """Names of the hyper-parameters a forbidden clause (or conjunction) mentions."""
    names: list[str] = []
    parts = list(getattr(clause, "dlcs", None) or [clause])
    for part in parts:
        for attr in ("hyperparameter", "left", "right"):
            hp = getattr(part, attr, None)
            name = getattr(hp, "name", None)
            if name is not None and name not in names:
                names.append(name)
    return names


def from_configspace(cs: Any) -> Space:
    """A :class:`~graphbo.Space` with one variable per hyper-parameter of ``cs`` (in ``cs``'s order).

    Raises
    ------
    ValueError
        For conditions or forbidden clauses, and for hyper-parameter types
        without a graphbo equivalent; the message names the hyper-parameter.
    TypeError
        If ``cs`` is not a ``ConfigSpace.ConfigurationSpace``.
    """
    C = _import_configspace()
    if not isinstance(cs, C.ConfigurationSpace):
        raise TypeError(f"from_configspace: expected a ConfigSpace.ConfigurationSpace, got {type(cs).__name__}")
    variables: dict[str, Any] = {}
    for hp in cs.values():
        name = hp.name
        kind = type(hp)
        try:
            if kind is C.CategoricalHyperparameter:
                weights = getattr(hp, "weights", None)
                if weights is not None and len(set(float(w) for w in weights)) > 1:
                    warnings.warn(f"from_configspace: hyper-parameter {name!r}: the categorical weights {weights} "
                                  "are ignored; graphbo samples the choices uniformly", stacklevel=2)
                variables[name] = Categorical(list(hp.choices))
            elif kind is C.OrdinalHyperparameter:
                variables[name] = Ordinal(list(hp.sequence))
            elif kind is C.UniformFloatHyperparameter:
                variables[name] = Continuous(float(hp.lower), float(hp.upper), log=bool(hp.log))
            elif kind is C.UniformIntegerHyperparameter:
                variables[name] = Integer(int(hp.lower), int(hp.upper), log=bool(hp.log))
            elif isinstance(hp, C.Constant):
                variables[name] = Categorical([hp.value])
            else:
                raise ValueError(
                    f"from_configspace: hyper-parameter {name!r} is a {kind.__name__}, which graphbo cannot "
                    "represent (supported: CategoricalHyperparameter, OrdinalHyperparameter, "
                    "UniformFloatHyperparameter, UniformIntegerHyperparameter, Constant); "
                    "use a uniform one (with log=True for a log scale)")
        except ValueError as exc:
            if str(exc).startswith("from_configspace"):
                raise
            raise ValueError(f"from_configspace: hyper-parameter {name!r}: {exc}") from None
    if not variables:
        raise ValueError("from_configspace: the ConfigurationSpace has no hyper-parameters")
    conditions: dict[str, dict[str, list[Any]]] = {}
    for cond in cs.conditions:
        child = _child_of(cond)
        for parent, values in _condition_parents(C, cond, variables):
            mine = conditions.setdefault(child, {})
            mine[parent] = [v for v in mine[parent] if v in values] if parent in mine else values
    rules = [_forbidden_rule(C, clause) for clause in cs.forbidden_clauses]
    try:
        return Space(variables, constraints=rules, conditions=conditions)
    except ValueError as exc:
        raise ValueError(f"from_configspace: {exc}") from None


def _child_of(cond: Any) -> str:
    """The name of the hyper-parameter a condition (or a conjunction of conditions) makes conditional."""
    while not hasattr(cond, "parent") and getattr(cond, "components", None):
        cond = cond.components[0]
    return str(cond.child.name)


def _condition_parents(C: Any, cond: Any, variables: dict[str, Any]) -> list[tuple[str, list[Any]]]:
    """``[(parent, values that activate the child)]`` of a condition or an ``AndConjunction`` of conditions."""
    if isinstance(cond, C.AndConjunction):
        return [pv for part in cond.components for pv in _condition_parents(C, part, variables)]
    if isinstance(cond, C.OrConjunction):
        raise ValueError(f"from_configspace: hyper-parameter {_child_of(cond)!r} has an OrConjunction "
                         f"({cond}); graphbo's conditions are conjunctions (every parent must hold)")
    parent, child = cond.parent.name, cond.child.name
    var = variables[parent]
    values = list(getattr(var, "values", None) or [])
    if not values:
        raise ValueError(f"from_configspace: hyper-parameter {child!r} is conditional on {parent!r}, which is "
                         "continuous; a parent must be discrete")
    if isinstance(cond, C.EqualsCondition):
        return [(parent, [cond.value])]
    if isinstance(cond, C.InCondition):
        return [(parent, list(cond.values))]
    if isinstance(cond, C.NotEqualsCondition):
        return [(parent, [v for v in values if v != cond.value])]
    # ConfigSpace orders a parent's values by their position (an OrdinalHyperparameter's sequence, an integer's
    # range): so does the comparison here
    if isinstance(cond, (C.GreaterThanCondition, C.LessThanCondition)):
        if cond.value not in values:
            raise ValueError(f"from_configspace: hyper-parameter {child!r}: {cond.value!r} is not a value of {parent!r}")
        at = values.index(cond.value)
        keep = [v for i, v in enumerate(values) if (i > at if isinstance(cond, C.GreaterThanCondition) else i < at)]
        return [(parent, keep)]
    raise ValueError(f"from_configspace: hyper-parameter {child!r} has a {type(cond).__name__} ({cond}), which "
                     "graphbo cannot represent")


class _ByPosition(Exception):
    """A comparison clause on non-numeric values: kept as ConfigSpace's own test."""


def _forbidden_rule(C: Any, clause: Any) -> Any:
    """A forbidden clause as a known-constraint rule: ``not (...)`` as an expression when every name is an
    identifier and every comparison is between numbers, else a Python function with ConfigSpace's own meaning
    (described by the clause)."""
    try:
        expr, names = _forbidden_expression(C, clause)
    except _ByPosition:
        return _ForbiddenRule(f"forbidden: {clause}", clause)
    text = f"not ({expr})"
    if all(n.isidentifier() for n in names):
        return text
    return _ForbiddenRule(text, clause)


def _forbidden_expression(C: Any, clause: Any) -> tuple[str, list[str]]:
    if isinstance(clause, C.ForbiddenAndConjunction):
        parts = [_forbidden_expression(C, c) for c in clause.components]
        return " and ".join(f"({e})" for e, _ in parts), [n for _, ns in parts for n in ns]
    if isinstance(clause, C.ForbiddenEqualsClause):
        name = clause.hyperparameter.name
        return f"{name} == {clause.value!r}", [name]
    if isinstance(clause, C.ForbiddenInClause):
        name = clause.hyperparameter.name
        return f"{name} in {tuple(clause.values)!r}", [name]
    comparisons = {C.ForbiddenGreaterThanClause: ">", C.ForbiddenGreaterThanEqualsClause: ">=",
                   C.ForbiddenLessThanClause: "<", C.ForbiddenLessThanEqualsClause: "<="}
    for cls, op in comparisons.items():
        if isinstance(clause, cls):
            name = clause.hyperparameter.name
            if not isinstance(clause.value, (int, float)):
                raise _ByPosition(clause)  # an ordinal's values: ConfigSpace compares positions, not values
            return f"{name} {op} {clause.value!r}", [name]
    relations = {C.ForbiddenEqualsRelation: "==", C.ForbiddenGreaterThanRelation: ">",
                 C.ForbiddenLessThanRelation: "<", C.ForbiddenGreaterThanEqualsRelation: ">=",
                 C.ForbiddenLessThanEqualsRelation: "<="}
    for cls, op in relations.items():
        if isinstance(clause, cls):
            return f"{clause.left.name} {op} {clause.right.name}", [clause.left.name, clause.right.name]
    names = _clause_names(clause)
    raise ValueError(f"from_configspace: forbidden clause ({clause}) on hyper-parameter(s) {names} is a "
                     f"{type(clause).__name__}, which graphbo cannot represent")


class _ForbiddenRule:
    """A forbidden clause whose hyper-parameter names are not identifiers: ConfigSpace's own test on a
    configuration (True: allowed)."""

    def __init__(self, description: str, clause: Any):
        self.description, self.clause = description, clause

    def __call__(self, config: Any) -> bool:
        values = dict(config)
        try:
            return not self.clause.is_forbidden_value(values)
        except (KeyError, ValueError):  # an inactive hyper-parameter: the clause does not apply
            return True


def to_configspace(space: Space, seed: int | None = None) -> Any:
    """A ``ConfigSpace.ConfigurationSpace`` with one hyper-parameter per variable of ``space``.

    Binary and Categorical -> ``CategoricalHyperparameter`` (one value: ``Constant``);
    an Ordinal over consecutive integers -> ``UniformIntegerHyperparameter``, other
    Ordinals -> ``OrdinalHyperparameter``; Continuous -> ``UniformFloatHyperparameter``;
    integer ranges -> ``UniformIntegerHyperparameter``. ``from_configspace`` of the
    result gives back ``space`` for spaces built from a ConfigurationSpace.

    Raises ``ValueError`` naming the variable for what ConfigSpace cannot express:
    a GraphVariable (an arbitrary graph) or an Ordinal with edge weights other than 1.
    """
    C = _import_configspace()
    from .io import _integer_range_of

    if not isinstance(space, Space):
        raise TypeError(f"to_configspace: expected a graphbo.Space, got {type(space).__name__}")
    hps = []
    for name, var in zip(space.names, space.declared_variables):
        if isinstance(var, Categorical):  # Binary included
            values = list(var.values)
            hps.append(C.Constant(name, values[0]) if len(values) == 1 and not isinstance(var, Binary)
                       else C.CategoricalHyperparameter(name, values))
        elif isinstance(var, Ordinal):
            if not var.has_default_weight:
                raise ValueError(f"to_configspace: variable {name!r} is an Ordinal with edge weight "
                                 f"{var.edge_weight:g}; ConfigSpace ordinals have no edge weights")
            bounds = _integer_range_of(var)
            hps.append(C.UniformIntegerHyperparameter(name, *bounds) if bounds is not None
                       else C.OrdinalHyperparameter(name, list(var.values)))
        elif isinstance(var, GraphVariable):
            raise ValueError(f"to_configspace: variable {name!r} is a GraphVariable; ConfigSpace has no "
                             "hyper-parameter on an arbitrary graph")
        elif isinstance(var, IntegerRange):
            hps.append(C.UniformIntegerHyperparameter(name, int(var.low), int(var.high), log=var.log))
        elif isinstance(var, Continuous):
            hps.append(C.UniformFloatHyperparameter(name, var.low, var.high, log=var.log))
        else:
            raise ValueError(f"to_configspace: variable {name!r} ({type(var).__name__}) has no ConfigSpace "
                             "equivalent")
    cs = C.ConfigurationSpace(seed=seed)
    cs.add(hps)
    by_name = {hp.name: hp for hp in hps}
    conds = []
    for child, parents in space.conditions.items():
        parts = [C.EqualsCondition(by_name[child], by_name[p], vals[0]) if len(vals) == 1
                 else C.InCondition(by_name[child], by_name[p], list(vals)) for p, vals in parents.items()]
        conds.append(parts[0] if len(parts) == 1 else C.AndConjunction(*parts))
    if conds:
        cs.add(conds)
    if space.constraints:
        raise ValueError(f"to_configspace: the space has known constraints ({space.constraints[0].description!r}, "
                         "...), which ConfigSpace's forbidden clauses cannot express in general")
    return cs
