"""A neural network as a labelled DAG of layers (NASBOT, Kandasamy et al. 2018, Sec. 2-3).

Layer ``i`` has a label (``labels[i]``), a unit count (``units[i]``; ``None``
where a layer has none of its own, e.g. ``ip``, ``op``, pooling and decision
layers) and, for CNNs, a stride (``strides[i]``; ``None`` for MLPs and for
layers without one). ``edges`` are directed ``(parent, child)`` pairs.
There is exactly one ``ip`` and one ``op`` layer.

Label sets (paper Sec. 2.2 and App. A.3):

* MLP processing layers: the rectifiers ``relu, crelu, leaky-relu, softplus,
  elu`` and the sigmoids ``logistic, tanh``. The decision layers are
  ``linear`` (regression: a linear map to one scalar) or ``softmax``
  (classification); a network uses one kind only. As in the authors' code,
  ``linear`` is always a decision layer, never a hidden layer.
* CNN processing layers: ``conv3, conv5, conv7``, ``res3, res5, res7``,
  ``max-pool, avg-pool`` and ``fc``; the decision layers are ``softmax``.
* Both: ``ip`` and ``op``.

The object is treated as immutable once built: derived quantities (topological
order, masses, path lengths, image sizes) are computed on first use and cached.
Build a new ``Architecture`` instead of editing one in place (or call
:meth:`clear_cache`).
"""

from __future__ import annotations

import heapq
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Protocol, TypeGuard, TypeVar

import numpy as np

__all__ = [
    "Architecture",
    "InvalidArchitectureError",
    "MLP_RECTIFIERS",
    "MLP_SIGMOIDS",
    "MLP_PROCESSING_LABELS",
    "MLP_LABELS",
    "CNN_CONV_LABELS",
    "CNN_POOL_LABELS",
    "CNN_PROCESSING_LABELS",
    "CNN_LABELS",
    "DECISION_LABELS",
    "ZETA",
    "MIN_NON_PROCESSING_MASS",
    "FC_MASS_COEFF",
    "RES_MASS_FACTOR",
    "label_group",
    "structural_groups",
]

# -- label sets ------------------------------------------------------------------
MLP_RECTIFIERS: tuple[str, ...] = ("relu", "crelu", "leaky-relu", "softplus", "elu")
MLP_SIGMOIDS: tuple[str, ...] = ("logistic", "tanh")
MLP_PROCESSING_LABELS: tuple[str, ...] = MLP_RECTIFIERS + MLP_SIGMOIDS
MLP_LABELS: tuple[str, ...] = MLP_PROCESSING_LABELS + ("linear", "softmax", "ip", "op")

CNN_CONV_LABELS: tuple[str, ...] = ("conv3", "conv5", "conv7", "res3", "res5", "res7")
CNN_POOL_LABELS: tuple[str, ...] = ("max-pool", "avg-pool")
CNN_PROCESSING_LABELS: tuple[str, ...] = CNN_CONV_LABELS + CNN_POOL_LABELS + ("fc",)
CNN_LABELS: tuple[str, ...] = CNN_PROCESSING_LABELS + ("softmax", "ip", "op")

DECISION_LABELS: tuple[str, ...] = ("softmax", "linear")
_IO_LABELS = ("ip", "op")
_T = TypeVar("_T")
_MISSING: Any = object()  # no value kept under a key (:meth:`Architecture.cached`)
_KINDS = ("mlp", "cnn")

# -- layer-mass constants (Sec. 3 and App. A.3; the minimum is from the authors' code) --
ZETA = 0.1  # ip, op (each) and all decision layers (together) get ZETA x processing mass
MIN_NON_PROCESSING_MASS = 100.0  # ... but at least this much (authors' code)
FC_MASS_COEFF = 0.1  # CNN fc layers: mass multiplied by 0.1 (App. A.3)
RES_MASS_FACTOR = 2.0  # a res-k block is two conv-k layers (App. A.3)

# structural-penalty groups (App. A.3): path lengths counted through these layers only
_STRUCTURAL_GROUPS = {
    "cnn": ("all", "conv", "pool", "fc"),
    "mlp": ("all", "rectifier", "sigmoid"),
}


def label_group(kind: str, label: str) -> str | None:
    """Structural group of a label: ``conv``/``pool``/``fc`` (CNN), ``rectifier``/``sigmoid`` (MLP)."""
    if kind == "cnn":
        if label in CNN_CONV_LABELS:
            return "conv"
        if label in CNN_POOL_LABELS:
            return "pool"
        if label == "fc":
            return "fc"
        return None
    if label in MLP_RECTIFIERS:
        return "rectifier"
    if label in MLP_SIGMOIDS:
        return "sigmoid"
    return None


def structural_groups(kind: str) -> tuple[str, ...]:
    """The layer groups whose path lengths enter the structural cost (``all`` first)."""
    return _STRUCTURAL_GROUPS[kind]


class Limits(Protocol):
    """What :meth:`Architecture.validity_error` needs of search-space limits such as
    :class:`graphbo.nas.domain.constraints.Constraints` (which imports this module, not the reverse)."""

    def violation(self, arch: "Architecture") -> str | None:
        """Why ``arch`` breaks the limits, or ``None``."""


class InvalidArchitectureError(ValueError):
    """An architecture is not a valid network (or violates the search-space constraints)."""


def _is_int(x: Any) -> TypeGuard[int | np.integer[Any]]:
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _known(x: int | None) -> int:
    """``x``, which the caller knows is set (a count on a validated network)."""
    assert x is not None
    return x


def _has_units(kind: str, label: str) -> bool:
    if kind == "cnn":
        return label in CNN_CONV_LABELS or label == "fc"
    return label in MLP_PROCESSING_LABELS


@dataclass(kw_only=True)
class Architecture:
    kind: str  # "mlp" or "cnn"
    labels: list[str]
    units: list[int | None]
    edges: list[tuple[int, int]]
    strides: list[int | None] | None = None
    _children: list[list[int]] | None = field(default=None, init=False, repr=False, compare=False)
    _parents: list[list[int]] | None = field(default=None, init=False, repr=False, compare=False)
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.labels = list(self.labels)
        self.units = list(self.units)
        self.edges = sorted({(int(a), int(b)) for a, b in self.edges})
        if self.strides is not None:
            self.strides = list(self.strides)

    @property
    def n_layers(self) -> int:
        return len(self.labels)

    @property
    def n_edges(self) -> int:
        return len(self.edges)

    def clear_cache(self) -> None:
        """Forget every derived quantity (call after editing the fields in place)."""
        self._children = self._parents = None
        self._cache.clear()

    def cached(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """A derived quantity kept with the network: ``compute()`` the first time ``key`` is asked, then the
        kept value, until :meth:`clear_cache`. For code that derives quantities of its own from a network
        (distance features, keys), each under a key of its own (a string, or a tuple naming its owner)."""
        hit = self._cache.get(key, _MISSING)
        if hit is _MISSING:
            hit = self._cache[key] = compute()
        return hit

    def _adjacency(self) -> tuple[list[list[int]], list[list[int]]]:
        ch: list[list[int]] = [[] for _ in range(self.n_layers)]
        pa: list[list[int]] = [[] for _ in range(self.n_layers)]
        for a, b in self.edges:
            ch[a].append(b)
            pa[b].append(a)
        self._children, self._parents = ch, pa
        return ch, pa

    def children(self, i: int) -> list[int]:
        ch = self._children
        if ch is None:
            ch, _ = self._adjacency()
        return ch[i]

    def parents(self, i: int) -> list[int]:
        pa = self._parents
        if pa is None:
            _, pa = self._adjacency()
        return pa[i]

    # -- simple queries ------------------------------------------------------------
    @property
    def ip(self) -> int:
        """Index of the input layer."""
        return self.labels.index("ip")

    @property
    def op(self) -> int:
        """Index of the output layer."""
        return self.labels.index("op")

    def decision_layers(self) -> list[int]:
        """Indices of the decision layers (``softmax`` / ``linear``)."""
        return [i for i, l in enumerate(self.labels) if l in DECISION_LABELS]

    def processing_layers(self) -> list[int]:
        """Indices of all layers that are neither ip, op nor decision layers."""
        return [i for i, l in enumerate(self.labels) if l not in DECISION_LABELS and l not in _IO_LABELS]

    @property
    def task(self) -> str:
        """``"classification"`` (softmax decision layers) or ``"regression"`` (linear)."""
        return "regression" if any(l == "linear" for l in self.labels) else "classification"

    def in_degrees(self) -> np.ndarray:
        return np.array([len(self.parents(i)) for i in range(self.n_layers)], dtype=int)

    def out_degrees(self) -> np.ndarray:
        return np.array([len(self.children(i)) for i in range(self.n_layers)], dtype=int)

    def group_of(self, i: int) -> str | None:
        """Structural group of layer ``i`` (see :func:`label_group`)."""
        return label_group(self.kind, self.labels[i])

    # -- graph algorithms ---------------------------------------------------------
    def topological_order(self) -> list[int]:
        """Layers in a topological order (Kahn's algorithm, smallest index first).

        Raises :class:`InvalidArchitectureError` if the graph has a cycle.
        """
        if "topo" not in self._cache:
            n = self.n_layers
            indeg = [len(self.parents(i)) for i in range(n)]
            ready = sorted(i for i in range(n) if indeg[i] == 0)
            order: list[int] = []
            heapq.heapify(ready)
            while ready:
                u = heapq.heappop(ready)
                order.append(u)
                for c in self.children(u):
                    indeg[c] -= 1
                    if indeg[c] == 0:
                        heapq.heappush(ready, c)
            if len(order) < n:
                stuck = sorted(set(range(n)) - set(order))
                raise InvalidArchitectureError(
                    "the graph has a cycle: layers " + ", ".join(f"{i} ({self.labels[i]})" for i in stuck)
                    + " lie on or after a cycle")
            self._cache["topo"] = order
        return list(self._cache["topo"])

    # -- validity --------------------------------------------------------------------
    def validity_error(self, constraints: "Limits | None" = None) -> str | None:
        """Why this is not a valid network, or ``None`` if it is.

        Checks (messages name the offending layer): known kind and labels; list
        lengths; edges in range and not self loops; exactly one ``ip`` and one
        ``op``; no cycle; every layer on a path from ``ip`` to ``op``; at least
        one decision layer, ``op``'s parents are exactly the decision layers and
        each decision layer feeds only ``op``; one kind of decision layer
        (``softmax`` or ``linear`` for MLPs, ``softmax`` for CNNs); unit counts
        present (positive) exactly on layers that have units; for CNNs, strides
        1 or 2 on conv/res layers (pooling: ``None`` or 2, it always halves),
        children of ``ip`` are conv/res layers (authors' rule), and inputs
        concatenated at a layer all have the same image size, with no conv or
        pooling after the image was flattened by an ``fc`` layer. If
        ``constraints`` is given, its limits (App. B.1) are checked too.
        """
        try:
            self._check_structure()
        except InvalidArchitectureError as e:
            return str(e)
        if constraints is not None:
            return constraints.violation(self)
        return None

    def validate(self, constraints: "Limits | None" = None) -> None:
        """Raise :class:`InvalidArchitectureError` with :meth:`validity_error`'s message."""
        msg = self.validity_error(constraints)
        if msg is not None:
            raise InvalidArchitectureError(msg)

    def is_valid(self, constraints: "Limits | None" = None) -> bool:
        return self.validity_error(constraints) is None

    def _layer(self, i: int) -> str:
        return f"layer {i} ({self.labels[i]})"

    def _check_structure(self) -> None:
        if "valid" in self._cache:
            if self._cache["valid"] is not None:
                raise InvalidArchitectureError(self._cache["valid"])
            return
        try:
            self._check_structure_uncached()
        except InvalidArchitectureError as e:
            self._cache["valid"] = str(e)
            raise
        self._cache["valid"] = None

    def _check_structure_uncached(self) -> None:
        E = InvalidArchitectureError
        if self.kind not in _KINDS:
            raise E(f"unknown kind {self.kind!r}; expected one of {_KINDS}")
        n = self.n_layers
        if len(self.units) != n:
            raise E(f"{len(self.units)} unit counts for {n} layers")
        if self.kind == "cnn":
            if self.strides is None:
                raise E("a CNN needs strides (one entry per layer, None where a layer has no stride)")
            if len(self.strides) != n:
                raise E(f"{len(self.strides)} strides for {n} layers")
        elif self.strides is not None and any(s is not None for s in self.strides):
            raise E("an MLP has no strides (strides must be None)")
        allowed = CNN_LABELS if self.kind == "cnn" else MLP_LABELS
        for i, l in enumerate(self.labels):
            if l not in allowed:
                raise E(f"layer {i} has unknown label {l!r} for a {self.kind.upper()}; "
                        f"allowed: {', '.join(allowed)}")
        for a, b in self.edges:
            if not (0 <= a < n and 0 <= b < n):
                raise E(f"edge ({a}, {b}) refers to a layer outside 0..{n - 1}")
            if a == b:
                raise E(f"edge ({a}, {b}) is a self loop")
        for lab in _IO_LABELS:
            k = self.labels.count(lab)
            if k != 1:
                raise E(f"a network needs exactly one {lab!r} layer, found {k}")
        ip, op = self.ip, self.op
        if self.parents(ip):
            raise E(f"the input layer {ip} has parents {self.parents(ip)}")
        if self.children(op):
            raise E(f"the output layer {op} has children {self.children(op)}")
        order = self.topological_order()  # raises on cycles
        # every layer on a path from ip to op
        reach_ip = np.zeros(n, bool)
        reach_ip[ip] = True
        for u in order:
            if reach_ip[u]:
                for c in self.children(u):
                    reach_ip[c] = True
        reach_op = np.zeros(n, bool)
        reach_op[op] = True
        for u in reversed(order):
            if any(reach_op[c] for c in self.children(u)):
                reach_op[u] = True
        for i in range(n):
            if not reach_ip[i]:
                raise E(f"{self._layer(i)} is not reachable from the input layer")
            if not reach_op[i]:
                raise E(f"{self._layer(i)} has no path to the output layer")
        # decision layers
        dec = self.decision_layers()
        if not dec:
            raise E("a network needs at least one decision layer (softmax or linear)")
        kinds = {self.labels[i] for i in dec}
        if self.kind == "cnn" and kinds != {"softmax"}:
            raise E("a CNN's decision layers are softmax layers (found linear)")
        if len(kinds) > 1:
            raise E("decision layers mix softmax and linear; use one kind per network")
        for i in dec:
            if self.children(i) != [op]:
                raise E(f"decision {self._layer(i)} must feed the output layer only, "
                        f"but its children are {self.children(i)}")
        for p in self.parents(op):
            if self.labels[p] not in DECISION_LABELS:
                raise E(f"the output layer's parent {self._layer(p)} is not a decision layer")
        # units
        for i, l in enumerate(self.labels):
            nu = self.units[i]
            if _has_units(self.kind, l):
                if not _is_int(nu) or nu <= 0:
                    raise E(f"{self._layer(i)} needs a positive number of units, got {nu!r}")
            elif nu is not None:
                raise E(f"{self._layer(i)} has no units of its own; units must be None, got {nu!r}")
        if self.kind == "cnn":
            self._check_cnn()

    def _check_cnn(self) -> None:
        E = InvalidArchitectureError
        strides = self.strides
        assert strides is not None  # _check_structure_uncached checked that a CNN has strides
        for i, l in enumerate(self.labels):
            s = strides[i]
            if l in CNN_CONV_LABELS:
                if not _is_int(s) or s not in (1, 2):
                    raise E(f"{self._layer(i)} needs stride 1 or 2, got {s!r}")
            elif l in CNN_POOL_LABELS:
                if s not in (None, 2):
                    raise E(f"pooling {self._layer(i)} always has stride 2 (give None or 2), got {s!r}")
            elif s is not None:
                raise E(f"{self._layer(i)} has no stride; stride must be None, got {s!r}")
        for c in self.children(self.ip):
            if self.labels[c] not in CNN_CONV_LABELS:
                raise E(f"the input layer feeds {self._layer(c)}; children of the input layer "
                        "must be convolutional (conv/res) layers")
        self._image_sizes()  # raises on mismatches

    def _image_sizes(self) -> tuple[list[int | None], list[int | None]]:
        """(input, output) downsampling factor per layer; None once flattened."""
        if "img" in self._cache:
            return self._cache["img"]
        E = InvalidArchitectureError
        strides = self.strides
        assert strides is not None  # a CNN (checked before its image sizes are asked for)
        n = self.n_layers
        pre: list[int | None] = [None] * n
        post: list[int | None] = [None] * n
        for u in self.topological_order():
            l = self.labels[u]
            if l == "ip":
                pre[u] = post[u] = 1
                continue
            sizes = [post[p] for p in self.parents(u)]
            if any(s != sizes[0] for s in sizes):
                desc = ", ".join(f"{p}: {'flat' if post[p] is None else '1/' + str(post[p])}"
                                 for p in self.parents(u))
                raise E(f"{self._layer(u)} concatenates inputs of different image sizes ({desc})")
            s = sizes[0]
            pre[u] = s
            if l in CNN_CONV_LABELS or l in CNN_POOL_LABELS:
                if s is None:
                    raise E(f"{self._layer(u)} comes after an fc layer flattened the image")
                halves = l in CNN_POOL_LABELS or strides[u] == 2
                post[u] = 2 * s if halves else s
            else:  # fc, softmax, op: flat outputs
                post[u] = None
        self._cache["img"] = (pre, post)
        return pre, post

    def image_sizes(self) -> list[int | None]:
        """Each layer's output downsampling factor (CNNs): 1 at the input, doubled by every
        stride-2 convolution and every pooling layer on the way; ``None`` for ``fc``,
        ``softmax`` and ``op`` (flat outputs). The output image has side ``input_side / factor``."""
        if self.kind != "cnn":
            raise InvalidArchitectureError("image sizes are defined for CNNs only")
        self._check_structure()
        return list(self._image_sizes()[1])

    # -- channels and masses (Sec. 3, App. A.3) ------------------------------------------
    def channels(self) -> tuple[list[int | None], list[int | None]]:
        """(incoming, outgoing) channel counts per layer.

        The input layer emits 1 channel (authors' convention, independent of the data);
        a layer with units emits ``units``; a pooling layer emits what it receives;
        decision and output layers emit nothing (``None``). A layer's incoming count is
        the sum over its parents (their outputs are concatenated).
        """
        if "chan" not in self._cache:
            self._check_structure()
            n = self.n_layers
            cin: list[int | None] = [None] * n
            cout: list[int | None] = [None] * n
            for u in self.topological_order():
                l = self.labels[u]
                if l == "ip":
                    cout[u] = 1
                    continue
                if l == "op":
                    continue
                # a parent is ip or a processing layer (decision layers feed op only): it emits channels
                c = sum(_known(cout[p]) for p in self.parents(u))
                cin[u] = c
                if l in DECISION_LABELS:
                    cout[u] = None
                elif l in CNN_POOL_LABELS:
                    cout[u] = c
                else:
                    cout[u] = self.units[u]
            self._cache["chan"] = (cin, cout)
        cin, cout = self._cache["chan"]
        return list(cin), list(cout)

    def layer_masses(self) -> np.ndarray:
        """Layer masses ``lm(u)`` (Sec. 3 with the CNN details of App. A.3).

        * processing layer with units: ``units x incoming channels``; ``res-k``
          layers twice that (two conv-k layers); CNN ``fc`` layers 0.1 times that;
        * pooling layer: its incoming channel count (authors' code);
        * ``ip`` and ``op``: each ``max(ZETA x P, 100)``, ``P`` = total processing mass;
        * decision layers: ``max(ZETA x P, 100)`` shared equally among them.

        Returns a float64 array (read-only view of the cached masses).
        """
        if "mass" not in self._cache:
            cin, _ = self.channels()
            m = np.zeros(self.n_layers)
            for u, l in enumerate(self.labels):
                if l in DECISION_LABELS or l in _IO_LABELS:
                    continue
                if l in CNN_POOL_LABELS:
                    m[u] = cin[u]
                    continue
                m[u] = float(_known(cin[u])) * float(_known(self.units[u]))
                if l.startswith("res"):
                    m[u] *= RES_MASS_FACTOR
                elif l == "fc":
                    m[u] *= FC_MASS_COEFF
            non_proc = max(ZETA * m.sum(), MIN_NON_PROCESSING_MASS)
            dec = self.decision_layers()
            m[dec] = non_proc / len(dec)
            m[[self.ip, self.op]] = non_proc
            m.setflags(write=False)
            self._cache["mass"] = m
        return self._cache["mass"]

    def total_mass(self) -> float:
        """``tm(G)``: sum of all layer masses."""
        return float(self.layer_masses().sum())

    def processing_mass(self) -> float:
        """Sum of the processing layers' masses (what the App. B.1 mass limit bounds)."""
        m = self.layer_masses()
        return float(m[self.processing_layers()].sum())

    # -- path lengths (Sec. 3, App. A.3) -----------------------------------------------
    def path_lengths(self, group: str = "all") -> np.ndarray:
        """Shortest, longest and random-walk path lengths from ``ip`` and to ``op``.

        Returns an ``(n_layers, 6)`` array with columns
        ``[ip-sp, ip-lp, ip-rw, op-sp, op-lp, op-rw]``. With ``group="all"`` a
        path's length is its number of hops; the random-walk length to ``op`` is
        the expected number of hops when each step goes to a uniformly chosen
        child (from ``ip``: to a uniformly chosen parent, walking backwards).
        With a layer group (``conv``, ``pool``, ``fc`` for CNNs; ``rectifier``,
        ``sigmoid`` for MLPs) only hops out of (towards ``op``) or into (from
        ``ip``) a layer of that group count, i.e. the edges of other layers get
        weight 0 (App. A.3). ``O(|E|)`` per group via a topological sweep
        (Algorithm 1).
        """
        groups = structural_groups(self.kind)
        if group not in groups:
            raise ValueError(f"unknown group {group!r} for a {self.kind}; expected one of {groups}")
        g = groups.index(group)
        return self.path_length_features()[:, [g, len(groups) + g, 2 * len(groups) + g,
                                               3 * len(groups) + g, 4 * len(groups) + g,
                                               5 * len(groups) + g]]

    def path_length_features(self) -> np.ndarray:
        """All path lengths of every structural group, ``(n_layers, 6 * n_groups)``.

        Column blocks (each ``n_groups`` wide, groups in :func:`structural_groups`
        order): ip-sp, ip-lp, ip-rw, op-sp, op-lp, op-rw. The OTMANN structural
        cost is the mean absolute difference of these rows (App. A.3).
        """
        if "paths" not in self._cache:
            self._check_structure()
            groups = structural_groups(self.kind)
            G = len(groups)
            n = self.n_layers
            w = np.zeros((n, G))
            w[:, 0] = 1.0
            for i in range(n):
                gi = self.group_of(i)
                if gi is not None and gi in groups:
                    w[i, groups.index(gi)] = 1.0
            order = self.topological_order()
            ip, op = self.ip, self.op
            sp_i = np.zeros((n, G)); lp_i = np.zeros((n, G)); rw_i = np.zeros((n, G))
            for v in order:
                if v == ip:
                    continue
                ps = self.parents(v)
                sp_i[v] = w[v] + sp_i[ps].min(axis=0)
                lp_i[v] = w[v] + lp_i[ps].max(axis=0)
                rw_i[v] = w[v] + rw_i[ps].mean(axis=0)
            sp_o = np.zeros((n, G)); lp_o = np.zeros((n, G)); rw_o = np.zeros((n, G))
            for u in reversed(order):
                if u == op:
                    continue
                cs = self.children(u)
                sp_o[u] = w[u] + sp_o[cs].min(axis=0)
                lp_o[u] = w[u] + lp_o[cs].max(axis=0)
                rw_o[u] = w[u] + rw_o[cs].mean(axis=0)
            feats = np.ascontiguousarray(np.hstack([sp_i, lp_i, rw_i, sp_o, lp_o, rw_o]))
            feats.setflags(write=False)
            self._cache["paths"] = feats
        return self._cache["paths"]

    # -- rendering -------------------------------------------------------------------------
    def layer_description(self, i: int) -> str:
        """Short text for layer ``i``, e.g. ``"3: conv5, 64, /2"`` or ``"7: max-pool"``."""
        parts = [self.labels[i]]
        if self.units[i] is not None:
            parts.append(str(self.units[i]))
        if self.strides is not None and self.strides[i] == 2 and self.labels[i] in CNN_CONV_LABELS:
            parts.append("/2")
        return f"{i}: " + ", ".join(parts)

    def to_dot(self, name: str = "architecture", show_mass: bool = False) -> str:
        """Graphviz DOT text (render with ``dot -Tpdf``). Input/output layers are pink,
        decision layers green, as in the paper's figures. ``show_mass`` adds each
        layer's mass in parentheses (needs a valid network)."""
        masses = self.layer_masses() if show_mass else None
        safe = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in name) or "architecture"
        lines = [f"digraph {safe} {{", "  rankdir=TB;",
                 '  node [shape=box, style="rounded,filled", fillcolor="#f2f2f2", fontname="Helvetica"];']
        for i, l in enumerate(self.labels):
            text = self.layer_description(i)
            if masses is not None:
                text += f"\\n({masses[i]:.0f})"
            text = text.replace('"', '\\"')
            if l in _IO_LABELS:
                color = "#f4b6c2"
            elif l in DECISION_LABELS:
                color = "#b6e3b6"
            else:
                color = "#f2f2f2"
            lines.append(f'  n{i} [label="{text}", fillcolor="{color}"];')
        for a, b in self.edges:
            lines.append(f"  n{a} -> n{b};")
        lines.append("}")
        return "\n".join(lines) + "\n"

    # -- serialisation -----------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        d = {"kind": self.kind, "labels": self.labels, "units": self.units,
             "edges": [list(e) for e in self.edges]}
        if self.strides is not None:
            d["strides"] = self.strides
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Architecture":
        return cls(kind=d["kind"], labels=d["labels"], units=d["units"],
                   edges=[tuple(e) for e in d["edges"]], strides=d.get("strides"))

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> "Architecture":
        return cls.from_dict(json.loads(text))
