"""Discrete variables, each carrying the graph over its values.

COMBO (Oh et al., 2019, Sec. 2.1) gives every combinatorial variable a
sub-graph whose vertices are the variable's values: a complete graph for a
categorical variable, a path for an ordinal one, or any user-given graph.
The search space is the graph Cartesian product of these sub-graphs.

Each variable validates its own definition here, once, and caches the
eigensystem of its graph Laplacian ``L = D - A`` (Sec. 2.2, Prop. 2.3.1 of
the supplement): the full product graph is never formed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Hashable, Iterable, Sequence, Sized

import numpy as np

from .._validation import check_bool, check_float, check_int
from .limits import MAX_VALUES, short_repr

__all__ = ["Variable", "Binary", "Categorical", "Ordinal", "GraphVariable", "GraphSpectrum", "Continuous",
           "IntegerRange", "Integer", "AnyVariable", "path_edge_weight", "SMOOTH_STEPS"]


@dataclass(frozen=True)
class GraphSpectrum:
    """Eigensystem of a graph Laplacian: ``L = U diag(eigenvalues) U^T``.

    Attributes
    ----------
    eigenvalues : ndarray, shape (k,)
        Ascending, the first is 0 for a connected graph.
    eigenvectors : ndarray, shape (k, k)
        Orthonormal columns.
    """

    eigenvalues: np.ndarray
    eigenvectors: np.ndarray


def _check_values(values: Iterable[Any], kind: str, arg: str = "values") -> tuple[Any, ...]:
    """``values`` (the argument ``arg`` of ``kind``) as a non-empty tuple of distinct hashable values.

    At most :data:`~graphbo.spaces.limits.MAX_VALUES`: the variable's graph is a dense ``k x k`` matrix.
    """
    if isinstance(values, (str, bytes)):
        raise ValueError(f"{kind}: {arg} must be a sequence of values, got the string {short_repr(values)}")
    if isinstance(values, (dict, set, frozenset)) or not isinstance(values, Iterable):
        raise TypeError(f"{kind}: {arg} must be a sequence of values (a list or tuple), "
                        f"got {short_repr(values)} ({type(values).__name__})")
    if isinstance(values, Sized):  # a range of 10^12 integers is refused before it is copied
        _check_count(kind, arg, len(values))
    values = tuple(values)
    _check_count(kind, arg, len(values))
    if len(values) == 0:
        raise ValueError(f"{kind}: {arg} is empty (the list of values is empty)")
    seen: dict[Any, bool] = {}
    for v in values:
        if not isinstance(v, Hashable):
            raise ValueError(f"{kind}: value {short_repr(v)} is not hashable")
        if v in seen:
            raise ValueError(f"{kind}: duplicate value {short_repr(v)}")
        seen[v] = True
    return values


def _check_count(kind: str, arg: str, k: int) -> None:
    if k > MAX_VALUES:
        raise ValueError(f"{kind}: {arg} has {k:,} values; a discrete variable has at most {MAX_VALUES} "
                         f"(its graph is a dense k x k matrix, {k:,} x {k:,} here; graphbo.spaces.limits.MAX_VALUES). "
                         "Use a Continuous variable or an Integer range instead")


def _is_connected(adjacency: np.ndarray) -> bool:
    k = adjacency.shape[0]
    reached = np.zeros(k, dtype=bool)
    reached[0] = True
    frontier = [0]
    while frontier:
        v = frontier.pop()
        for u in np.flatnonzero(adjacency[v] > 0):
            if not reached[u]:
                reached[u] = True
                frontier.append(int(u))
    return bool(reached.all())


class Variable:
    """A discrete variable: an ordered tuple of values and a weighted graph on them.

    Subclasses fix the graph; :class:`GraphVariable` takes any adjacency.
    The variable's name is given by the :class:`~graphbo.Space` that holds it.
    """

    kind = "discrete"

    def __init__(self, values: Sequence[Any], adjacency: np.ndarray, *, name: str | None = None):
        self.name = name
        self.values = values
        self.adjacency = adjacency
        self._index = {v: i for i, v in enumerate(values)}

    # -- values -------------------------------------------------------------
    @property
    def n_values(self) -> int:
        return len(self.values)

    def index_of(self, value: Any) -> int:
        """Index of ``value``; raises ``ValueError`` naming the variable if absent."""
        try:
            return self._index[value]
        except (KeyError, TypeError):
            raise ValueError(
                f"variable {self.name!r}: value {short_repr(value)} is not one of {short_repr(list(self.values))}"
            ) from None

    def value_at(self, index: int) -> Any:
        return self.values[int(index)]

    # -- graph --------------------------------------------------------------
    @cached_property
    def laplacian(self) -> np.ndarray:
        """Graph Laplacian ``L = D - A`` (COMBO Sec. 2.2)."""
        laplacian: np.ndarray = np.diag(self.adjacency.sum(axis=1)) - self.adjacency
        return laplacian

    @cached_property
    def spectrum(self) -> GraphSpectrum:
        """Eigensystem of the Laplacian, computed once and cached."""
        lam, u = np.linalg.eigh(self.laplacian)
        lam = np.clip(lam, 0.0, None)  # L is PSD; remove round-off below zero
        return GraphSpectrum(eigenvalues=lam, eigenvectors=u)

    @cached_property
    def neighbor_lists(self) -> tuple[np.ndarray, ...]:
        """For each value index, the indices of its graph neighbours."""
        return tuple(np.flatnonzero(self.adjacency[i] > 0) for i in range(self.n_values))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self.values)!r})"


class Categorical(Variable):
    """Unordered choices; their graph is complete (every pair differs by one edit).

    With only categorical variables, the graph distance of the product graph
    equals the Hamming distance (COMBO supplement, Thm 1.1.1).
    """

    kind = "categorical"

    def __init__(self, choices: Sequence[Any]) -> None:
        values = _check_values(choices, "Categorical", "choices")
        k = len(values)
        super().__init__(values, np.ones((k, k)) - np.eye(k))


class Binary(Categorical):
    """A binary variable with values ``False`` and ``True`` (0 and 1 are accepted)."""

    kind = "binary"

    def __init__(self) -> None:
        super().__init__((False, True))

    def __repr__(self) -> str:
        return "Binary()"


#: Paths of up to this many steps keep unit edges; longer ones are rescaled (:func:`path_edge_weight`).
SMOOTH_STEPS = 10


def path_edge_weight(n_values: int) -> float:
    """Default edge weight of an ordinal path graph over ``n_values`` values.

    On a path with edge weight ``w`` the Laplacian is ``w L_1`` (``L_1`` the unit path's), so the
    diffusion kernel ``exp(-beta w L_1)`` behaves like a heat kernel run for time ``beta w``: values
    ``s`` steps apart are correlated as ``exp(-s^2 / (4 beta w))`` (the continuum limit of the path,
    COMBO Sec. 2.2 with ``L -> -d^2/dx^2``), a length of ``sqrt(2 beta w)`` steps. COMBO's sampler
    caps ``beta`` at ``100 = SMOOTH_STEPS^2`` (supplement Sec. 2.3), so with unit edges no kernel is
    smooth over more than about 14 steps, and a function on ``0 .. 199`` can only be modelled as
    rough. The weight ``w = max(1, (k - 1)^2 / SMOOTH_STEPS^2)`` keeps unit edges for paths of at
    most ``SMOOTH_STEPS`` steps (every result on such spaces is unchanged) and otherwise makes
    ``beta w`` reach ``(k - 1)^2``: the smoothest kernel then spans ``sqrt(2)`` times the whole
    range at any ``k``, and ``beta`` means the same fraction of the range on every long path.
    """
    steps = max(int(n_values) - 1, 1)
    return max(1.0, (steps / SMOOTH_STEPS) ** 2)


class Ordinal(Variable):
    """Ordered values on a path graph ``v0 - v1 - ... - v(k-1)``.

    Parameters
    ----------
    values : sequence
        The ordered values.
    edge_weight : float, optional
        Weight of every path edge. It scales the Laplacian's eigenvalues and so
        the effective diffusion rate. By default :func:`path_edge_weight`: 1 for
        paths of at most 10 steps, ``((k - 1) / 10)^2`` for longer ones, so that
        the diffusion kernel can be smooth over the whole range. (graphbo 0.1
        used 1 for every path; pass ``edge_weight=1.0`` for that. The COMBO
        reference code uses ``k - 1`` for its discretised continuous benchmarks.)
    """

    kind = "ordinal"

    def __init__(self, values: Sequence[Any], edge_weight: float | None = None) -> None:
        values = _check_values(values, "Ordinal")
        k = len(values)
        if edge_weight is None:
            weight = path_edge_weight(k)
        else:
            weight = check_float("edge_weight", edge_weight, minimum=0.0, strict_minimum=True)
        adj = np.zeros((k, k))
        idx = np.arange(k - 1)
        adj[idx, idx + 1] = weight
        adj[idx + 1, idx] = weight
        self.edge_weight = weight
        super().__init__(values, adj)

    @property
    def has_default_weight(self) -> bool:
        """Whether the edge weight is the default :func:`path_edge_weight` of this length."""
        return self.edge_weight == path_edge_weight(self.n_values)


class GraphVariable(Variable):
    """Values on any connected undirected graph, weighted edges allowed.

    Parameters
    ----------
    values : sequence
        The vertices' values.
    adjacency : array-like, shape (k, k)
        Symmetric, non-negative, zero diagonal; ``adjacency[i, j] > 0`` is the
        weight of the edge between ``values[i]`` and ``values[j]``.
    """

    kind = "graph"

    def __init__(self, values: Sequence[Any], adjacency: Any) -> None:
        values = _check_values(values, "GraphVariable")
        try:
            adj = np.asarray(adjacency, dtype=float)
        except (TypeError, ValueError):
            raise TypeError(f"GraphVariable: adjacency must be a (k, k) array of edge weights (numbers), "
                            f"got {short_repr(adjacency)}") from None
        k = len(values)
        if adj.shape != (k, k):
            raise ValueError(f"GraphVariable: adjacency has shape {adj.shape}, expected ({k}, {k})")
        if not np.all(np.isfinite(adj)):
            raise ValueError("GraphVariable: adjacency has non-finite entries")
        if np.any(adj < 0):
            i, j = np.argwhere(adj < 0)[0]
            raise ValueError(
                f"GraphVariable: negative edge weight {float(adj[i, j]):g} between {short_repr(values[i])} "
                f"and {short_repr(values[j])}"
            )
        if not np.allclose(adj, adj.T):
            i, j = np.argwhere(~np.isclose(adj, adj.T))[0]
            raise ValueError(
                f"GraphVariable: adjacency is not symmetric: A[{short_repr(values[i])}, {short_repr(values[j])}] = "
                f"{float(adj[i, j]):g} "
                f"but A[{short_repr(values[j])}, {short_repr(values[i])}] = {float(adj[j, i]):g}"
            )
        if np.any(np.diag(adj) != 0):
            i = int(np.flatnonzero(np.diag(adj))[0])
            raise ValueError(f"GraphVariable: self-loop on value {short_repr(values[i])}; the diagonal must be zero")
        if k > 1 and not _is_connected(adj):
            raise ValueError("GraphVariable: the graph is disconnected; every value must be reachable")
        super().__init__(values, 0.5 * (adj + adj.T))


class Continuous:
    """A real variable on ``[low, high]``, scaled to ``[0, 1]`` internally (BO-FM, Sec. 2).

    Parameters
    ----------
    low, high : float
        Bounds, ``low < high``.
    log : bool, default False
        Scale logarithmically (``low > 0``): the unit coordinate is
        ``(log x - log low) / (log high - log low)``.
    """

    kind = "continuous"
    n_values = 0  # not a finite graph

    def __init__(self, low: float, high: float, *, log: bool = False) -> None:
        kind = "Integer" if isinstance(self, IntegerRange) else type(self).__name__
        low, high = _bound(kind, "low", low), _bound(kind, "high", high)
        if not low < high:
            raise ValueError(f"{kind}: need finite low < high, got low={low!r}, high={high!r}")
        log = check_bool("log", bool(log) if isinstance(log, np.bool_) else log)
        if log and low <= 0:
            raise ValueError(f"{kind}: log scale needs low > 0, got low={low!r}")
        self.name: str | None = None
        self.low, self.high, self.log = low, high, log
        self._lo: float = float(np.log(low)) if log else low
        self._hi: float = float(np.log(high)) if log else high

    def to_unit(self, value: Any) -> float:
        """Unit coordinate of ``value``; ``ValueError`` naming the variable if out of bounds."""
        try:
            x = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"variable {self.name!r}: value {short_repr(value)} is not a number") from None
        if not (self.low <= x <= self.high):
            raise ValueError(f"variable {self.name!r}: value {short_repr(value)} is outside "
                             f"[{self.low:g}, {self.high:g}]")
        t = np.log(x) if self.log else x
        return float(np.clip((t - self._lo) / (self._hi - self._lo), 0.0, 1.0))

    def from_unit(self, u: float) -> float:
        t = self._lo + float(np.clip(u, 0.0, 1.0)) * (self._hi - self._lo)
        return float(np.clip(np.exp(t) if self.log else t, self.low, self.high))

    def snap(self, u: np.ndarray) -> np.ndarray:
        """Canonical unit coordinates (identity for real variables)."""
        snapped: np.ndarray = np.clip(u, 0.0, 1.0)
        return snapped

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.low:g}, {self.high:g}{', log=True' if self.log else ''})"


class IntegerRange(Continuous):
    """An integer variable treated as continuous with rounding (for wide or log-scaled ranges)."""

    kind = "integer"

    def __init__(self, low: int, high: int, *, log: bool = False) -> None:
        low, high = _integer_bound("low", low, high), _integer_bound("high", high, low)
        super().__init__(low, high, log=log)

    def to_unit(self, value: Any) -> float:
        numeric = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
        if not numeric or not float(value).is_integer():
            raise ValueError(f"variable {self.name!r}: value {short_repr(value)} is not an integer")
        return super().to_unit(value)

    def from_unit(self, u: float) -> int:
        return int(round(super().from_unit(u)))

    def snap(self, u: np.ndarray) -> np.ndarray:
        """Unit coordinates of the nearest integers, so equal configurations have equal rows."""
        u = np.clip(np.asarray(u, dtype=float), 0.0, 1.0)
        t = self._lo + u * (self._hi - self._lo)
        x = np.clip(np.round(np.exp(t) if self.log else t), self.low, self.high)
        tx = np.log(x) if self.log else x
        snapped: np.ndarray = (tx - self._lo) / (self._hi - self._lo)
        return snapped

    def __repr__(self) -> str:
        return f"Integer({int(self.low)}, {int(self.high)}{', log=True' if self.log else ''})"


def Integer(low: int, high: int, *, log: bool = False, max_ordinal: int = 64) -> "Ordinal | IntegerRange":
    """An integer variable on ``low .. high``.

    Narrow linear ranges (at most ``max_ordinal`` values) become an
    :class:`Ordinal` path graph over the integers, so COMBO and the graph
    kernels see them as discrete; wider or log-scaled ranges become an
    :class:`IntegerRange`, a continuous variable rounded to the nearest integer.
    """
    low, high = _integer_bound("low", low, high), _integer_bound("high", high, low)
    if not low <= high:
        raise ValueError(f"Integer: need integer bounds low <= high, got low={low!r}, high={high!r}")
    log = check_bool("log", bool(log) if isinstance(log, np.bool_) else log)
    max_ordinal = check_int("max_ordinal", max_ordinal, minimum=1)
    if not log and high - low + 1 <= max_ordinal:
        _check_count("Integer", "low .. high", high - low + 1)
        return Ordinal(range(low, high + 1))
    return IntegerRange(low, high, log=log)


def _bound(kind: str, name: str, value: Any) -> float:
    """A finite bound as a float; ``TypeError`` / ``ValueError`` naming ``kind``'s argument ``name``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{kind}: {name} must be a number, got {short_repr(value)} ({type(value).__name__})")
    if not math.isfinite(float(value)):
        raise ValueError(f"{kind}: need finite low < high, got {name}={value!r}")
    return float(value)


def _integer_bound(name: str, value: Any, other: Any) -> int:
    """An integer bound of :func:`Integer` (integral floats such as ``4.0`` accepted)."""
    x = _bound("Integer", name, value)
    if x != int(x):
        low, high = (value, other) if name == "low" else (other, value)
        raise ValueError(f"Integer: need integer bounds low <= high, got low={low!r}, high={high!r} "
                         f"({name} is not an integer)")
    return int(x)


#: any variable a :class:`~graphbo.Space` holds: a discrete one (with a graph) or a continuous one
AnyVariable = Variable | Continuous
