"""Space files: a :class:`~graphbo.Space` written as YAML or JSON, and read back.

The schema (see ``docs/spaces.md``) is a mapping with one required key,
``variables``, mapping each variable name to its definition, in row order::

    version: 1                      # optional; the only version is 1
    variables:
      lr:        {type: continuous, low: 1.0e-4, high: 0.1, log: true}
      optimizer: {type: categorical, choices: [sgd, adam]}
      layers:    {type: integer, low: 1, high: 8}
      batch:     {type: ordinal, values: [16, 32, 64], edge_weight: 2.0}
      shuffle:   {type: binary}
      act:       {type: graph, values: [relu, elu, tanh], edges: [[relu, elu], [elu, tanh, 0.5]]}
    constraints:                    # optional: known constraints, expressions over the variable names
      - "layers * batch <= 256"
    conditions:                     # optional: a variable active only for some values of others
      act: {optimizer: [adam]}
    directions: [minimize, maximize]  # optional, for `graphbo run`: several objectives
    n_constraints: 1                # optional, for `graphbo run`: black-box constraint values returned

Every definition is checked here, with a message naming the file, the
variable and the offending field. :func:`space_to_dict` is the inverse of
:func:`space_from_dict`: the round trip gives a space with the same variables,
values, graphs (edge weights included) and bounds, hence the same encodings.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Mapping

import numpy as np

from .limits import MAX_ADJACENCY_ENTRIES, MAX_VALUES, SpaceFileError, short_repr
from .reading import import_yaml, parse_json, parse_yaml, read_text
from .space import Space
from .variables import (Binary, Categorical, Continuous, GraphVariable, Integer, IntegerRange, Ordinal, Variable)

__all__ = ["SpaceFileError", "space_from_dict", "space_to_dict", "load_space", "load_problem", "save_space",
           "SPACE_TYPES", "FORMAT_VERSION", "PROBLEM_KEYS"]

#: version of the space-file schema
FORMAT_VERSION = 1
#: top-level keys of a space file that describe the problem rather than the space (read by :func:`load_problem`)
PROBLEM_KEYS = ("directions", "n_constraints")

#: ``type`` -> (required keys, optional keys)
SPACE_TYPES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "binary": ((), ()),
    "categorical": (("choices",), ()),
    "ordinal": (("values",), ("edge_weight",)),
    "graph": (("values",), ("edges", "adjacency")),
    "continuous": (("low", "high"), ("log",)),
    "integer": (("low", "high"), ("log", "encoding")),
}

_INTEGER_ENCODINGS = ("auto", "ordinal", "range")
#: ranges of at most this many integers become an ordinal (path graph) with ``encoding: auto``,
#: as :func:`graphbo.spaces.variables.Integer` does
_MAX_ORDINAL = 64
_EXTENSIONS = {".json": "json", ".yaml": "yaml", ".yml": "yaml"}
_TOO_MANY = (f"a discrete variable has at most {MAX_VALUES} values (its graph is a dense k x k matrix; "
             "graphbo.spaces.limits.MAX_VALUES)")


# -- reading --------------------------------------------------------------------------------------
def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, bool, int, float))


def _number(value: Any, where: str, field: str, integer: bool = False) -> float | int:
    """A finite number (numeric strings accepted: PyYAML reads ``1e-4`` as a string)."""
    if isinstance(value, bool) or value is None:
        raise SpaceFileError(f"{where}: {field} must be a number, got {short_repr(value)}")
    x = value
    if isinstance(value, str):
        try:
            x = int(value) if integer and value.strip().lstrip("+-").isdigit() else float(value)
        except ValueError:
            raise SpaceFileError(f"{where}: {field} must be a number, got {short_repr(value)}") from None
    if not isinstance(x, (int, float)):
        raise SpaceFileError(f"{where}: {field} must be a number, got {short_repr(value)}")
    if isinstance(x, int) and x.bit_length() > 1023:  # no float holds it (10**308 and more)
        raise SpaceFileError(f"{where}: {field} is an integer of about {int(x.bit_length() * 0.30103)} digits, "
                             "too large for a number graphbo can compute with")
    if not math.isfinite(x):
        raise SpaceFileError(f"{where}: {field} must be finite, got {short_repr(value)}")
    if integer:
        if float(x) != int(x):
            raise SpaceFileError(f"{where}: {field} must be an integer, got {short_repr(value)}")
        return int(x)
    return x


def _bool(value: Any, where: str, field: str) -> bool:
    if not isinstance(value, bool):
        raise SpaceFileError(f"{where}: {field} must be true or false, got {short_repr(value)}")
    return value


def _values(value: Any, where: str, field: str) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise SpaceFileError(f"{where}: {field} must be a list of values, got {short_repr(value)}")
    if len(value) == 0:
        raise SpaceFileError(f"{where}: {field} is empty")
    if len(value) > MAX_VALUES:
        raise SpaceFileError(f"{where}: {field} has {len(value):,} values; {_TOO_MANY}")
    seen: dict[Any, Any] = {}
    for v in value:
        if not _is_scalar(v):
            raise SpaceFileError(f"{where}: {field}: value {short_repr(v)} is not a string, number, boolean or null")
        if isinstance(v, float) and not math.isfinite(v):
            raise SpaceFileError(f"{where}: {field}: value {short_repr(v)} is not finite")
        # 1 == 1.0 == True in Python: two such values could not be told apart in a configuration
        if v in seen:
            dup = seen[v]
            extra = "" if type(dup) is type(v) else f" (equal to {short_repr(dup)})"
            raise SpaceFileError(f"{where}: {field}: duplicate value {short_repr(v)}{extra}")
        seen[v] = v
    return list(value)


def _graph_adjacency(spec: Mapping[str, Any], values: list[Any], where: str) -> np.ndarray:
    k = len(values)
    has_edges, has_adj = "edges" in spec, "adjacency" in spec
    if has_edges == has_adj:
        raise SpaceFileError(f"{where}: a graph variable needs exactly one of 'edges' (a list of [u, v] or "
                             f"[u, v, weight]) and 'adjacency' (a {k} x {k} matrix)")
    if has_adj:
        adj = spec["adjacency"]
        if (not isinstance(adj, (list, tuple)) or len(adj) != k
                or any(not isinstance(r, (list, tuple)) or len(r) != k for r in adj)):
            raise SpaceFileError(f"{where}: adjacency must be a {k} x {k} list of lists (one row per value)")
        return np.array([[_number(x, where, f"adjacency[{i}][{j}]") for j, x in enumerate(r)]
                         for i, r in enumerate(adj)], dtype=float)
    edges = spec["edges"]
    if not isinstance(edges, (list, tuple)):
        raise SpaceFileError(f"{where}: edges must be a list of [u, v] or [u, v, weight], got {short_repr(edges)}")
    adj = np.zeros((k, k))

    positions = {v: i for i, v in enumerate(values)}

    def index(v: Any, e: int) -> int:
        if not _is_scalar(v) or v not in positions:
            raise SpaceFileError(f"{where}: edges[{e}]: {short_repr(v)} is not one of the values {short_repr(values)}")
        return positions[v]

    for e, edge in enumerate(edges):
        if not isinstance(edge, (list, tuple)) or len(edge) not in (2, 3):
            raise SpaceFileError(f"{where}: edges[{e}] must be [u, v] or [u, v, weight], got {short_repr(edge)}")
        i, j = index(edge[0], e), index(edge[1], e)
        w = 1.0 if len(edge) == 2 else _number(edge[2], where, f"edges[{e}] weight")
        if i == j:
            raise SpaceFileError(f"{where}: edges[{e}] is a self-loop on {short_repr(edge[0])}")
        if w <= 0:
            raise SpaceFileError(f"{where}: edges[{e}] has weight {w}; edge weights must be positive")
        if adj[i, j] != 0:
            raise SpaceFileError(f"{where}: edges[{e}] repeats the edge {short_repr(edge[0])} - {short_repr(edge[1])}")
        adj[i, j] = adj[j, i] = w
    return adj


def _variable(spec: Any, where: str) -> Variable | Continuous:
    if not isinstance(spec, Mapping):
        raise SpaceFileError(f"{where}: the definition must be a mapping with a 'type', got {short_repr(spec)}")
    if "type" not in spec:
        raise SpaceFileError(f"{where}: missing field 'type' (one of {', '.join(SPACE_TYPES)})")
    kind = spec["type"]
    if not isinstance(kind, str) or kind not in SPACE_TYPES:
        raise SpaceFileError(f"{where}: unknown type {short_repr(kind)}; choose one of {', '.join(SPACE_TYPES)}")
    required, optional = SPACE_TYPES[kind]
    allowed = ("type",) + required + optional
    for key in spec:
        if key not in allowed:
            raise SpaceFileError(f"{where}: unknown key {short_repr(key)} for type {kind} "
                                 f"(allowed: {', '.join(allowed)})")
    for key in required:
        if key not in spec:
            raise SpaceFileError(f"{where}: missing field {short_repr(key)} for type {kind}")
    try:
        if kind == "binary":
            return Binary()
        if kind == "categorical":
            return Categorical(_values(spec["choices"], where, "choices"))
        if kind == "ordinal":
            weight = None
            if "edge_weight" in spec:  # absent: the default of the path's length (path_edge_weight)
                weight = _number(spec["edge_weight"], where, "edge_weight")
                if weight <= 0:
                    raise SpaceFileError(f"{where}: edge_weight must be positive, "
                                         f"got {short_repr(spec['edge_weight'])}")
            return Ordinal(_values(spec["values"], where, "values"), edge_weight=weight)
        if kind == "graph":
            values = _values(spec["values"], where, "values")
            return GraphVariable(values, _graph_adjacency(spec, values, where))
        integer = kind == "integer"
        low = _number(spec["low"], where, "low", integer)
        high = _number(spec["high"], where, "high", integer)
        log = _bool(spec.get("log", False), where, "log")
        if not low < high:
            raise SpaceFileError(f"{where}: low must be < high, got low={short_repr(spec['low'])}, "
                                 f"high={short_repr(spec['high'])}")
        if log and low <= 0:
            raise SpaceFileError(f"{where}: log: true needs low > 0, got low={short_repr(spec['low'])}")
        if not integer:
            return Continuous(low, high, log=log)
        encoding = spec.get("encoding", "auto")
        if not isinstance(encoding, str) or encoding not in _INTEGER_ENCODINGS:
            raise SpaceFileError(f"{where}: encoding must be one of {', '.join(_INTEGER_ENCODINGS)}, "
                                 f"got {short_repr(encoding)}")
        if encoding == "ordinal":
            if log:
                raise SpaceFileError(f"{where}: encoding: ordinal cannot be combined with log: true "
                                     "(a path graph has no scale); use encoding: range")
            if high - low + 1 > MAX_VALUES:
                raise SpaceFileError(f"{where}: encoding: ordinal over {high - low + 1:,} integers; {_TOO_MANY}; "
                                     "use encoding: range")
            return Ordinal(list(range(int(low), int(high) + 1)))
        if encoding == "range":
            return IntegerRange(int(low), int(high), log=log)
        return Integer(int(low), int(high), log=log, max_ordinal=_MAX_ORDINAL)
    except SpaceFileError:
        raise
    except ValueError as exc:  # the variable's own validation
        raise SpaceFileError(f"{where}: {exc}") from None


def space_from_dict(d: Any, source: str | None = None) -> Space:
    """The :class:`~graphbo.Space` a dict describes (the schema in the module docstring).

    Parameters
    ----------
    d : mapping (anything else is refused with a SpaceFileError)
        ``{"variables": {name: {"type": ..., ...}, ...}}``, optionally with ``"version": 1``.
    source : str, optional
        What to call the definition in error messages (a file name); default ``"space"``.

    Raises
    ------
    SpaceFileError
        (a ``ValueError``) naming ``source``, the variable and the bad field.
    """
    src = source or "space"
    if not isinstance(d, Mapping):
        raise SpaceFileError(f"{src}: a space must be a mapping with a 'variables' key, got {type(d).__name__}")
    for key in d:
        if key not in ("variables", "version", "constraints", "conditions") + PROBLEM_KEYS:
            raise SpaceFileError(f"{src}: unknown top-level key {short_repr(key)} (allowed: variables, constraints, "
                                 "conditions, directions, n_constraints, version)")
    if "version" in d and (isinstance(d["version"], bool) or d["version"] != FORMAT_VERSION):
        raise SpaceFileError(f"{src}: unsupported version {short_repr(d['version'])}; this graphbo reads version "
                             f"{FORMAT_VERSION}")
    if "variables" not in d:
        raise SpaceFileError(f"{src}: missing top-level key 'variables'")
    variables = d["variables"]
    if not isinstance(variables, Mapping) or not variables:
        raise SpaceFileError(f"{src}: 'variables' must be a non-empty mapping of variable name -> definition")
    out = {}
    entries = 0  # adjacency entries so far: sum of k^2 over the discrete variables
    for name, spec in variables.items():
        if not isinstance(name, str) or not name:
            raise SpaceFileError(f"{src}: variable names must be non-empty strings, got {short_repr(name)}")
        where = f"{src}: variable {short_repr(name)}"
        var = out[name] = _variable(spec, where)
        entries += var.n_values**2
        if entries > MAX_ADJACENCY_ENTRIES:
            raise SpaceFileError(
                f"{where}: the discrete variables so far have {entries:,} adjacency entries (the sum of their "
                f"number of values squared); a space has at most {MAX_ADJACENCY_ENTRIES:,} "
                "(graphbo.spaces.limits.MAX_ADJACENCY_ENTRIES)")
    rules = d.get("constraints", [])
    if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
        raise SpaceFileError(f"{src}: 'constraints' must be a list of expressions (strings) over the variable names, "
                             f"got {short_repr(rules)}")
    conditions = d.get("conditions")
    if conditions is not None and not isinstance(conditions, Mapping):
        raise SpaceFileError(f"{src}: 'conditions' must be a mapping {{variable: {{parent: [values]}}}}, got "
                             f"{short_repr(conditions)}")
    try:
        return Space(out, constraints=rules, conditions=conditions)
    except (TypeError, ValueError) as exc:  # what Space itself refuses (a name that is not text, a bad rule, ...)
        raise SpaceFileError(f"{src}: {exc}") from None


# -- writing --------------------------------------------------------------------------------------
def _plain_value(v: Any, where: str) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if not _is_scalar(v):
        raise SpaceFileError(f"{where}: value {short_repr(v)} ({type(v).__name__}) cannot be written to a space file; "
                             "values must be strings, numbers, booleans or null")
    if isinstance(v, float) and not math.isfinite(v):
        raise SpaceFileError(f"{where}: value {short_repr(v)} cannot be written to a space file")
    return v


def _integer_range_of(var: Ordinal) -> tuple[int, int] | None:
    """``(low, high)`` if ``var`` is the path graph over ``low .. high`` (default edges); else ``None``."""
    vals = var.values
    if not var.has_default_weight or len(vals) < 2:
        return None
    if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in vals):
        return None
    low = int(vals[0])
    return (low, low + len(vals) - 1) if [int(v) for v in vals] == list(range(low, low + len(vals))) else None


def space_to_dict(space: Space) -> dict[str, Any]:
    """The schema dict of ``space``; :func:`space_from_dict` of it gives an equal space.

    Raises :class:`SpaceFileError` for values that JSON/YAML cannot hold (tuples, objects).
    """
    if not isinstance(space, Space):
        raise TypeError(f"space must be a graphbo.Space, got {type(space).__name__}")
    variables: dict[str, Any] = {}
    for name, var in zip(space.names, space.declared_variables):
        where = f"variable {short_repr(name)}"
        if isinstance(var, Binary):
            d: dict[str, Any] = {"type": "binary"}
        elif isinstance(var, Categorical):
            d = {"type": "categorical", "choices": [_plain_value(v, where) for v in var.values]}
        elif isinstance(var, Ordinal):
            bounds = _integer_range_of(var)
            if bounds is not None:
                d = {"type": "integer", "low": bounds[0], "high": bounds[1]}
                if bounds[1] - bounds[0] + 1 > _MAX_ORDINAL:
                    d["encoding"] = "ordinal"  # `auto` would read it back as a rounded range
            else:
                d = {"type": "ordinal", "values": [_plain_value(v, where) for v in var.values]}
                if not var.has_default_weight:
                    d["edge_weight"] = var.edge_weight
        elif isinstance(var, GraphVariable):
            values = [_plain_value(v, where) for v in var.values]
            adj = var.adjacency
            edges = []
            for i in range(len(values)):
                for j in range(i + 1, len(values)):
                    if adj[i, j] > 0:
                        w = float(adj[i, j])
                        edges.append([values[i], values[j]] if w == 1.0 else [values[i], values[j], w])
            d = {"type": "graph", "values": values, "edges": edges}
        elif isinstance(var, IntegerRange):
            d = {"type": "integer", "low": int(var.low), "high": int(var.high)}
            if var.log:
                d["log"] = True
            elif var.high - var.low + 1 <= _MAX_ORDINAL:
                d["encoding"] = "range"  # `auto` would read it back as an ordinal
        elif isinstance(var, Continuous):
            d = {"type": "continuous", "low": float(var.low), "high": float(var.high)}
            if var.log:
                d["log"] = True
        elif isinstance(var, Variable):
            raise SpaceFileError(f"{where}: a {type(var).__name__} has no space-file type; "
                                 "write it as a graph variable (GraphVariable)")
        else:  # pragma: no cover - Space admits nothing else
            raise SpaceFileError(f"{where}: cannot write {var!r}")
        variables[name] = d
    out: dict[str, Any] = {"version": FORMAT_VERSION, "variables": variables}
    if space.constraints:
        functions = [c.description for c in space.constraints if not c.is_expression]
        if functions:
            raise SpaceFileError(f"constraint {functions[0]!r} is a Python function, which a space file cannot hold; "
                                 "write it as an expression over the variable names")
        out["constraints"] = [c.description for c in space.constraints]
    if space.conditions:
        out["conditions"] = {child: {p: [_plain_value(v, f"condition on {short_repr(child)}") for v in vals]
                                     for p, vals in parents.items()} for child, parents in space.conditions.items()}
    return out


# -- files ----------------------------------------------------------------------------------------
def _format_of(path: str) -> str:
    ext = os.path.splitext(path)[1].lower()
    if ext not in _EXTENSIONS:
        raise SpaceFileError(f"{path}: unknown space-file extension {ext or '(none)'!r}; "
                             "use .yaml, .yml or .json")
    return _EXTENSIONS[ext]


def load_space(path: str | os.PathLike[str]) -> Space:
    """Read a space file (``.yaml``/``.yml`` or ``.json``, by extension).

    YAML is read with PyYAML's safe loader (plain data only; duplicate keys are
    an error), in bounded time and memory (:mod:`graphbo.spaces.reading`; the caps are in
    :mod:`graphbo.spaces.limits`). Raises :class:`SpaceFileError` (a ``ValueError``) naming the
    file, and where applicable the variable and field, for a missing or
    unreadable file, a syntax error or an invalid definition.
    """
    return load_problem(path)[0]


def load_problem(path: str | os.PathLike[str]) -> tuple[Space, dict[str, Any]]:
    """:func:`load_space`, and the problem settings the file gives (:data:`PROBLEM_KEYS`): ``directions`` (a list
    of ``minimize``/``maximize``, at least one) and ``n_constraints`` (an integer >= 0), each checked, with a
    :class:`SpaceFileError` naming the file."""
    from ..outcomes import check_directions

    path = os.fspath(path)
    fmt = _format_of(path)
    text = read_text(path)
    data = parse_json(text, path) if fmt == "json" else parse_yaml(text, path)
    if data is None:
        raise SpaceFileError(f"{path}: the file is empty")
    space = space_from_dict(data, source=path)
    settings: dict[str, Any] = {}
    if "directions" in data:
        try:
            settings["directions"] = check_directions(data["directions"])
        except (TypeError, ValueError) as exc:
            raise SpaceFileError(f"{path}: {exc}") from None
    if "n_constraints" in data:
        n = data["n_constraints"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise SpaceFileError(f"{path}: n_constraints must be an integer >= 0, got {short_repr(n)}")
        settings["n_constraints"] = n
    return space, settings


def save_space(space: Space, path: str | os.PathLike[str]) -> None:
    """Write ``space`` to ``path`` as YAML or JSON (by extension); :func:`load_space` reads it back equal."""
    path = os.fspath(path)
    fmt = _format_of(path)
    d = space_to_dict(space)
    if fmt == "json":
        text = json.dumps(d, indent=2, allow_nan=False) + "\n"
    else:
        yaml = import_yaml(path)
        text = yaml.safe_dump(d, sort_keys=False, default_flow_style=None, allow_unicode=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
