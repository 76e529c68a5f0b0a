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

graphbo spaces are flat products of variables, sampled uniformly: conditions,
forbidden clauses and non-uniform distributions (normal, beta) have no
equivalent and raise a ``ValueError`` naming the hyper-parameter. Categorical
weights and default values are priors for sampling; they do not change the
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
    conditions = list(cs.conditions)
    if conditions:
        cond = conditions[0]
        children = list(cs.conditional_hyperparameters)
        raise ValueError(
            f"from_configspace: hyper-parameter {children[0]!r} is conditional ({cond}); graphbo spaces have no "
            f"conditions (conditional: {children}). Remove the conditions: make the hyper-parameters always "
            "active and let the objective ignore the ones that do not apply")
    forbiddens = list(cs.forbidden_clauses)
    if forbiddens:
        clause = forbiddens[0]
        names = _clause_names(clause)
        raise ValueError(
            f"from_configspace: forbidden clause ({clause}) on hyper-parameter(s) {names}; graphbo spaces have no "
            "forbidden clauses. Remove them and let the objective return a penalty (or raise: the evaluation is "
            "recorded as failed) for forbidden configurations")
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
    return Space(variables)


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
    for name, var in zip(space.names, space.variables):
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
    return cs
