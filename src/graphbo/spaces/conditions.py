"""Conditional variables: a variable that is active only when other variables take given values.

``Space(..., conditions={"gamma": {"kernel": ["rbf", "poly"]}, "degree": {"kernel": "poly"}})`` says that
``gamma`` exists only when ``kernel`` is ``rbf`` or ``poly`` and ``degree`` only when it is ``poly``
(ConfigSpace's ``InCondition`` and ``EqualsCondition``; several parents of one variable must all hold, as
in an ``AndConjunction``). A parent is a discrete variable and may itself be conditional: a variable whose
parent is inactive is inactive. Conditions may not form a cycle.

A configuration holds its active variables only. Inside the space, every index row holds every variable,
in a *canonical* form (:meth:`graphbo.Space.canonical`):

* a conditional **discrete** variable of ``k`` values has a ``(k+1)``-th value, *inactive*, a vertex joined
  to each of its ``k`` values by an edge of weight 1 for a categorical variable and ``1/k`` for an ordinal
  or another graph, whose own distances then stay (:func:`with_inactive_vertex`). An inactive variable
  sits on it; an active one never does (a graph move never goes onto it). Under COMBO's diffusion kernel (and BO-FM's frequency-modulated
  ones, which use the same graph's spectrum) two configurations that both leave the variable inactive
  agree on it, and an inactive one is equally far from every value;
* a conditional **continuous** variable is held at the middle of its range (unit coordinate 0.5) while
  inactive: the kernel then compares inactive configurations as agreeing on it.

Sampling draws every variable as if unconditional and then makes the row canonical; graph neighbours
are made canonical too (moving a parent switches its children on, at their first value, or off).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .limits import short_repr
from .variables import Categorical, Continuous, GraphVariable, Variable

__all__ = ["INACTIVE", "INACTIVE_UNIT", "check_conditions", "topological_order", "with_inactive_vertex"]

#: where an inactive continuous variable sits, as a unit coordinate
INACTIVE_UNIT = 0.5


class _Inactive:
    """The value of the extra vertex of a conditional discrete variable; never part of a configuration."""

    _instance = None

    def __new__(cls) -> "_Inactive":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "INACTIVE"

    def __reduce__(self) -> str:
        return "INACTIVE"


#: the sentinel value of an inactive discrete variable's extra vertex
INACTIVE = _Inactive()


def with_inactive_vertex(var: Variable) -> GraphVariable:
    """``var``'s graph with one more vertex, :data:`INACTIVE`, joined to every value: by an edge of weight 1 for a
    categorical variable (inactive is one more category), of weight ``1/k`` otherwise (an ordinal's path, or any
    graph, keeps its distances: the detour through the inactive vertex is weak)."""
    k = var.n_values
    adj = np.zeros((k + 1, k + 1))
    adj[:k, :k] = var.adjacency
    adj[k, :k] = adj[:k, k] = 1.0 if isinstance(var, Categorical) else 1.0 / k
    out = GraphVariable(tuple(var.values) + (INACTIVE,), adj)
    return out


def check_conditions(conditions: Any, variables: Mapping[str, Any]) -> dict[str, dict[str, tuple[Any, ...]]]:
    """``conditions`` as ``{child: {parent: (values, ...)}}``, checked against ``variables`` (name -> variable):
    ``ValueError`` naming the condition for an unknown variable, a continuous parent, a value the parent does
    not have, a variable conditioned on itself or a cycle."""
    if conditions is None:
        return {}
    if not isinstance(conditions, Mapping):
        raise TypeError("conditions must be a dict {variable: {parent: value or list of values}}, got "
                        f"{short_repr(conditions)}")
    out: dict[str, dict[str, tuple[Any, ...]]] = {}
    for child, parents in conditions.items():
        if child not in variables:
            raise ValueError(f"condition on {short_repr(child)}: no such variable (variables: {list(variables)})")
        if not isinstance(parents, Mapping) or not parents:
            raise ValueError(f"condition on {child!r}: give {{parent: value or list of values}}, got "
                             f"{short_repr(parents)}")
        out[child] = {}
        for parent, values in parents.items():
            if parent not in variables:
                raise ValueError(f"condition on {child!r}: parent {short_repr(parent)} is not a variable of the "
                                 f"space (variables: {list(variables)})")
            if parent == child:
                raise ValueError(f"condition on {child!r}: a variable cannot be conditional on itself")
            pvar = variables[parent]
            if isinstance(pvar, Continuous) or not isinstance(pvar, Variable):
                raise ValueError(f"condition on {child!r}: parent {parent!r} is continuous; a parent must be a "
                                 "discrete variable (its values are compared for equality)")
            vals = tuple(values) if isinstance(values, (list, tuple, set, frozenset)) else (values,)
            if not vals:
                raise ValueError(f"condition on {child!r}: no value of {parent!r} is given")
            for v in vals:
                try:
                    pvar.index_of(v)
                except (ValueError, KeyError, TypeError):
                    raise ValueError(f"condition on {child!r}: {short_repr(v)} is not a value of {parent!r} "
                                     f"(values: {list(pvar.values)})") from None
            out[child][parent] = vals
    topological_order(out, list(variables))
    return out


def topological_order(conditions: Mapping[str, Mapping[str, Any]], names: list[str]) -> list[str]:
    """``names`` ordered so that every parent comes before its children (stable otherwise); ``ValueError``
    naming the cycle if the conditions have one."""
    order: list[str] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(name: str, path: list[str]) -> None:
        if state.get(name) == 2:
            return
        if state.get(name) == 1:
            cycle = path[path.index(name):] + [name]
            raise ValueError(f"the conditions form a cycle: {' -> '.join(cycle)} (each is conditional on the next)")
        state[name] = 1
        for parent in conditions.get(name, {}):
            visit(parent, path + [name])
        state[name] = 2
        order.append(name)

    for n in names:
        visit(n, [])
    return order
