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

from .space import Space
from .variables import (Binary, Categorical, Continuous, GraphVariable, Integer, IntegerRange, Ordinal, Variable)

__all__ = ["SpaceFileError", "space_from_dict", "space_to_dict", "load_space", "save_space", "SPACE_TYPES",
           "FORMAT_VERSION"]

#: version of the space-file schema
FORMAT_VERSION = 1

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


class SpaceFileError(ValueError):
    """A space definition (a file or a dict) is invalid; the message names the file, variable and field."""


# -- reading --------------------------------------------------------------------------------------
def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, bool, int, float))


def _number(value: Any, where: str, field: str, integer: bool = False) -> float | int:
    """A finite number (numeric strings accepted: PyYAML reads ``1e-4`` as a string)."""
    if isinstance(value, bool) or value is None:
        raise SpaceFileError(f"{where}: {field} must be a number, got {value!r}")
    x = value
    if isinstance(value, str):
        try:
            x = int(value) if integer and value.strip().lstrip("+-").isdigit() else float(value)
        except ValueError:
            raise SpaceFileError(f"{where}: {field} must be a number, got {value!r}") from None
    if not isinstance(x, (int, float)):
        raise SpaceFileError(f"{where}: {field} must be a number, got {value!r}")
    if not math.isfinite(x):
        raise SpaceFileError(f"{where}: {field} must be finite, got {value!r}")
    if integer:
        if float(x) != int(x):
            raise SpaceFileError(f"{where}: {field} must be an integer, got {value!r}")
        return int(x)
    return x


def _bool(value: Any, where: str, field: str) -> bool:
    if not isinstance(value, bool):
        raise SpaceFileError(f"{where}: {field} must be true or false, got {value!r}")
    return value


def _values(value: Any, where: str, field: str) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise SpaceFileError(f"{where}: {field} must be a list of values, got {value!r}")
    if len(value) == 0:
        raise SpaceFileError(f"{where}: {field} is empty")
    seen: dict[Any, Any] = {}
    for v in value:
        if not _is_scalar(v):
            raise SpaceFileError(f"{where}: {field}: value {v!r} is not a string, number, boolean or null")
        if isinstance(v, float) and not math.isfinite(v):
            raise SpaceFileError(f"{where}: {field}: value {v!r} is not finite")
        # 1 == 1.0 == True in Python: two such values could not be told apart in a configuration
        if v in seen:
            dup = seen[v]
            extra = "" if type(dup) is type(v) else f" (equal to {dup!r})"
            raise SpaceFileError(f"{where}: {field}: duplicate value {v!r}{extra}")
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
        raise SpaceFileError(f"{where}: edges must be a list of [u, v] or [u, v, weight], got {edges!r}")
    adj = np.zeros((k, k))

    positions = {v: i for i, v in enumerate(values)}

    def index(v: Any, e: int) -> int:
        if not _is_scalar(v) or v not in positions:
            raise SpaceFileError(f"{where}: edges[{e}]: {v!r} is not one of the values {values!r}")
        return positions[v]

    for e, edge in enumerate(edges):
        if not isinstance(edge, (list, tuple)) or len(edge) not in (2, 3):
            raise SpaceFileError(f"{where}: edges[{e}] must be [u, v] or [u, v, weight], got {edge!r}")
        i, j = index(edge[0], e), index(edge[1], e)
        w = 1.0 if len(edge) == 2 else _number(edge[2], where, f"edges[{e}] weight")
        if i == j:
            raise SpaceFileError(f"{where}: edges[{e}] is a self-loop on {edge[0]!r}")
        if w <= 0:
            raise SpaceFileError(f"{where}: edges[{e}] has weight {w!r}; edge weights must be positive")
        if adj[i, j] != 0:
            raise SpaceFileError(f"{where}: edges[{e}] repeats the edge {edge[0]!r} - {edge[1]!r}")
        adj[i, j] = adj[j, i] = w
    return adj


def _variable(spec: Any, where: str) -> Variable | Continuous:
    if not isinstance(spec, Mapping):
        raise SpaceFileError(f"{where}: the definition must be a mapping with a 'type', got {spec!r}")
    if "type" not in spec:
        raise SpaceFileError(f"{where}: missing field 'type' (one of {', '.join(SPACE_TYPES)})")
    kind = spec["type"]
    if kind not in SPACE_TYPES:
        raise SpaceFileError(f"{where}: unknown type {kind!r}; choose one of {', '.join(SPACE_TYPES)}")
    required, optional = SPACE_TYPES[kind]
    allowed = ("type",) + required + optional
    for key in spec:
        if key not in allowed:
            raise SpaceFileError(f"{where}: unknown key {key!r} for type {kind} (allowed: {', '.join(allowed)})")
    for key in required:
        if key not in spec:
            raise SpaceFileError(f"{where}: missing field {key!r} for type {kind}")
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
                    raise SpaceFileError(f"{where}: edge_weight must be positive, got {spec['edge_weight']!r}")
            return Ordinal(_values(spec["values"], where, "values"), edge_weight=weight)
        if kind == "graph":
            values = _values(spec["values"], where, "values")
            return GraphVariable(values, _graph_adjacency(spec, values, where))
        integer = kind == "integer"
        low = _number(spec["low"], where, "low", integer)
        high = _number(spec["high"], where, "high", integer)
        log = _bool(spec.get("log", False), where, "log")
        if not low < high:
            raise SpaceFileError(f"{where}: low must be < high, got low={spec['low']!r}, high={spec['high']!r}")
        if log and low <= 0:
            raise SpaceFileError(f"{where}: log: true needs low > 0, got low={spec['low']!r}")
        if not integer:
            return Continuous(low, high, log=log)
        encoding = spec.get("encoding", "auto")
        if encoding not in _INTEGER_ENCODINGS:
            raise SpaceFileError(f"{where}: encoding must be one of {', '.join(_INTEGER_ENCODINGS)}, "
                                 f"got {encoding!r}")
        if encoding == "ordinal":
            if log:
                raise SpaceFileError(f"{where}: encoding: ordinal cannot be combined with log: true "
                                     "(a path graph has no scale); use encoding: range")
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
        if key not in ("variables", "version"):
            raise SpaceFileError(f"{src}: unknown top-level key {key!r} (allowed: variables, version)")
    if "version" in d and (isinstance(d["version"], bool) or d["version"] != FORMAT_VERSION):
        raise SpaceFileError(f"{src}: unsupported version {d['version']!r}; this graphbo reads version "
                             f"{FORMAT_VERSION}")
    if "variables" not in d:
        raise SpaceFileError(f"{src}: missing top-level key 'variables'")
    variables = d["variables"]
    if not isinstance(variables, Mapping) or not variables:
        raise SpaceFileError(f"{src}: 'variables' must be a non-empty mapping of variable name -> definition")
    out = {}
    for name, spec in variables.items():
        if not isinstance(name, str) or not name:
            raise SpaceFileError(f"{src}: variable names must be non-empty strings, got {name!r}")
        out[name] = _variable(spec, f"{src}: variable {name!r}")
    return Space(out)


# -- writing --------------------------------------------------------------------------------------
def _plain_value(v: Any, where: str) -> Any:
    if isinstance(v, np.generic):
        v = v.item()
    if not _is_scalar(v):
        raise SpaceFileError(f"{where}: value {v!r} ({type(v).__name__}) cannot be written to a space file; "
                             "values must be strings, numbers, booleans or null")
    if isinstance(v, float) and not math.isfinite(v):
        raise SpaceFileError(f"{where}: value {v!r} cannot be written to a space file")
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
    for name, var in zip(space.names, space.variables):
        where = f"variable {name!r}"
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
    return {"version": FORMAT_VERSION, "variables": variables}


# -- files ----------------------------------------------------------------------------------------
def _format_of(path: str) -> str:
    ext = os.path.splitext(path)[1].lower()
    if ext not in _EXTENSIONS:
        raise SpaceFileError(f"{path}: unknown space-file extension {ext or '(none)'!r}; "
                             "use .yaml, .yml or .json")
    return _EXTENSIONS[ext]


def _import_yaml(path: str) -> Any:
    try:
        import yaml
    except ImportError:
        raise SpaceFileError(f"{path}: reading or writing YAML needs PyYAML (pip install pyyaml); "
                             "or write the space as .json") from None
    return yaml


def _no_duplicates(pairs: list[tuple[Any, Any]], path: str) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for k, v in pairs:
        if k in out:
            raise SpaceFileError(f"{path}: duplicate key {k!r}")
        out[k] = v
    return out


def _yaml_loader(yaml: Any, path: str) -> Any:
    """PyYAML's SafeLoader (no Python objects), refusing duplicate keys instead of keeping the last."""

    loader_class: Any = type("_Loader", (yaml.SafeLoader,), {})

    def construct_mapping(loader: Any, node: Any, deep: bool = False) -> dict[Any, Any]:
        loader.flatten_mapping(node)
        pairs = [(loader.construct_object(k, deep=True), loader.construct_object(v, deep=True))
                 for k, v in node.value]
        for (k, _), (key_node, _) in zip(pairs, node.value):
            try:
                hash(k)
            except TypeError:
                raise SpaceFileError(f"{path}: line {key_node.start_mark.line + 1}: a mapping key must be a "
                                     f"scalar, got {k!r}") from None
        seen: dict[Any, Any] = {}
        for (k, v), (key_node, _) in zip(pairs, node.value):
            if k in seen:
                raise SpaceFileError(f"{path}: line {key_node.start_mark.line + 1}: duplicate key {k!r}")
            seen[k] = v
        return seen

    loader_class.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return loader_class


def load_space(path: str | os.PathLike[str]) -> Space:
    """Read a space file (``.yaml``/``.yml`` or ``.json``, by extension).

    YAML is read with PyYAML's safe loader (plain data only; duplicate keys are
    an error). Raises :class:`SpaceFileError` (a ``ValueError``) naming the
    file, and where applicable the variable and field, for a missing or
    unreadable file, a syntax error or an invalid definition.
    """
    path = os.fspath(path)
    fmt = _format_of(path)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        raise SpaceFileError(f"{path}: no such space file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpaceFileError(f"{path}: cannot be read ({exc})") from None
    if fmt == "json":
        try:
            data = json.loads(text, object_pairs_hook=lambda pairs: _no_duplicates(pairs, path))
        except json.JSONDecodeError as exc:
            raise SpaceFileError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    else:
        yaml = _import_yaml(path)
        try:
            data = yaml.load(text, Loader=_yaml_loader(yaml, path))  # a SafeLoader subclass
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc)
            raise SpaceFileError(f"{path}: invalid YAML{at}: {problem}") from None
    if data is None:
        raise SpaceFileError(f"{path}: the file is empty")
    return space_from_dict(data, source=path)


def save_space(space: Space, path: str | os.PathLike[str]) -> None:
    """Write ``space`` to ``path`` as YAML or JSON (by extension); :func:`load_space` reads it back equal."""
    path = os.fspath(path)
    fmt = _format_of(path)
    d = space_to_dict(space)
    if fmt == "json":
        text = json.dumps(d, indent=2, allow_nan=False) + "\n"
    else:
        yaml = _import_yaml(path)
        text = yaml.safe_dump(d, sort_keys=False, default_flow_style=None, allow_unicode=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
