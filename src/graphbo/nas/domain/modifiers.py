"""The nine NASBOT network modifiers and the compound mutation operator.

Kandasamy et al., "Neural Architecture Search with Bayesian Optimisation and
Optimal Transport", NeurIPS 2018: Table 2 / Table 6 (the modifiers) and
App. B.2 (the k-step and compound mutation operators).

Every modifier has the signature ``modifier(arch, rng, is_valid=None)`` and
returns a *new* :class:`~graphbo.nas.domain.architecture.Architecture`, or ``None``
when it does not apply to ``arch`` (for instance ``remove_layer`` on a network
without removable layers) or when none of the random candidates it tried gives
a valid network. The input is never mutated; it must itself be a valid
network (:class:`~graphbo.nas.domain.architecture.InvalidArchitectureError` otherwise).

A child is accepted only if it is structurally valid (:func:`well_formed`, i.e.
:meth:`Architecture.validity_error`: one ``ip`` and one ``op``, acyclic, every
layer on an ``ip -> op`` path, decision layers feeding ``op``, consistent CNN
image sizes, convolutions right after the input of a CNN) and passes
``is_valid`` (by default :func:`default_validity`, ``Constraints()``: the
App. B.1 limits). Like the authors' implementation, a modifier draws
its random choice among all the ways it can change the network (in random
order) and returns the first one that gives a valid child; at most
``MAX_TRIES`` candidates are tried.

Paper vs. the authors' code (github.com/kirthevasank/nasbot, read for facts)
are documented per modifier and in ``docs/nasbot_search.md``.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from .architecture import (CNN_CONV_LABELS, CNN_POOL_LABELS, DECISION_LABELS, MLP_RECTIFIERS,
                           MLP_SIGMOIDS, Architecture, InvalidArchitectureError)
from .constraints import Constraints

__all__ = [
    "Validity",
    "MLP_RECTIFIERS", "MLP_SIGMOIDS", "MLP_HIDDEN_LABELS",
    "CNN_CONV_LABELS", "CNN_POOL_LABELS", "CNN_HIDDEN_LABELS", "DECISION_LABELS",
    "CHANGE_FRAC", "STEP_PROBS", "MODIFIER_WEIGHTS", "MAX_TRIES",
    "inc_single", "dec_single", "inc_en_masse", "dec_en_masse", "remove_layer",
    "wedge_layer", "swap_label", "dup_path", "skip", "MODIFIERS",
    "Mutation", "one_step", "sample_num_steps", "mutate", "mutate_with_info",
    "topological_order", "well_formed",
    "default_validity", "resolve_validity", "modifiable_layers", "decision_layers",
]

Validity = Callable[[Architecture], bool]

# -- labels (the label sets are architecture.py's) ----------------------------------
#: hidden MLP labels (``linear`` is always a decision layer, as in the authors' code).
MLP_HIDDEN_LABELS: tuple[str, ...] = MLP_RECTIFIERS + MLP_SIGMOIDS
CNN_HIDDEN_LABELS: tuple[str, ...] = CNN_CONV_LABELS + CNN_POOL_LABELS + ("fc",)

# -- constants -------------------------------------------------------------------
#: units change by 1/8 (Table 6; authors' code ``_DFLT_CHANGE_FRAC = 0.125``).
CHANGE_FRAC = 0.125
#: compound operator: probability of a k-step mutation, k = 1..5 (App. B.2).
STEP_PROBS: tuple[float, ...] = (0.5, 0.25, 0.125, 0.075, 0.05)
#: relative probability of picking each modifier in a one-step mutation. The
#: paper says "picked at random"; these are the authors' code's masses
#: (``_PRIMITIVE_PROB_MASSES``; ``swap_layer``/``branch`` there are
#: ``swap_label``/``dup_path`` here), normalised when used.
MODIFIER_WEIGHTS: Mapping[str, float] = {
    "inc_single": 0.1, "dec_single": 0.1, "inc_en_masse": 0.1, "dec_en_masse": 0.1,
    "swap_label": 0.2, "wedge_layer": 0.1, "remove_layer": 0.1, "dup_path": 0.2, "skip": 0.2,
}
#: candidates a modifier tries before giving up.
MAX_TRIES = 25

# Constants taken from the authors' code (facts, re-expressed here).
_POOL_IN_WEDGE_PROB = 0.05     # a wedged CNN layer is a pooling layer w.p. 0.05 (never right after ip)
_STRIDE2_IN_WEDGE_PROB = 0.05  # a wedged conv layer has stride 2 w.p. 0.05
_STRIDE_FLIP_IN_SWAP_PROB = 0.05  # swap_label flips a conv layer's stride w.p. 0.05
_DUP_PATH_MIN_LEN = 4          # a dup_path path has at least 4 layers unless it reaches op first
_DUP_PATH_STOP_PROB = 0.2      # ... and then stops after each further layer w.p. 0.2
_DUP_PATH_KEEP_PROB = 0.5      # an inner layer of the path is copied w.p. 0.5 (some always are)
_FALLBACK_UNITS = 16           # units of a wedged layer when no neighbour has units

# swap_label candidates and probabilities for CNN layers (authors' code).
_CNN_SWAP: dict[str, tuple[tuple[str, ...], tuple[float, ...]]] = {
    "conv3": (("res3", "res5", "conv5", "conv7", "max-pool", "avg-pool"), (0.25, 0.25, 0.15, 0.25, 0.05, 0.05)),
    "conv5": (("res3", "res5", "conv3", "conv7", "max-pool", "avg-pool"), (0.25, 0.25, 0.2, 0.2, 0.05, 0.05)),
    "conv7": (("res3", "res5", "conv3", "conv5", "max-pool", "avg-pool"), (0.25, 0.25, 0.25, 0.15, 0.05, 0.05)),
    "res3": (("conv3", "conv5", "res5", "res7", "max-pool", "avg-pool"), (0.25, 0.25, 0.15, 0.25, 0.05, 0.05)),
    "res5": (("conv3", "conv5", "res3", "res7", "max-pool", "avg-pool"), (0.25, 0.25, 0.2, 0.2, 0.05, 0.05)),
    "res7": (("conv3", "conv5", "res3", "res5", "max-pool", "avg-pool"), (0.25, 0.25, 0.25, 0.15, 0.05, 0.05)),
    "max-pool": (("avg-pool",), (1.0,)),
    "avg-pool": (("max-pool",), (1.0,)),
}


# ================================================================================
# graph helpers
# ================================================================================
def topological_order(arch: Architecture) -> list[int] | None:
    """Kahn's algorithm, smallest index first; ``None`` if ``arch`` has a cycle."""
    try:
        return arch.topological_order()
    except InvalidArchitectureError:
        return None


def _hops(arch: Architecture, source: int, forward: bool) -> list[float]:
    """Shortest number of hops from ``source`` (forward) or to it (backward)."""
    dist = [math.inf] * arch.n_layers
    dist[source] = 0
    queue = deque([source])
    nbrs = arch.children if forward else arch.parents
    while queue:
        i = queue.popleft()
        for j in nbrs(i):
            if dist[j] == math.inf:
                dist[j] = dist[i] + 1
                queue.append(j)
    return dist


def _reachable(arch: Architecture, source: int, forward: bool) -> set[int]:
    seen = {source}
    stack = [source]
    nbrs = arch.children if forward else arch.parents
    while stack:
        for j in nbrs(stack.pop()):
            if j not in seen:
                seen.add(j)
                stack.append(j)
    return seen


def decision_layers(arch: Architecture) -> list[int]:
    """The decision layers (``softmax`` / ``linear``; in a valid network, the parents of ``op``)."""
    return arch.decision_layers()


def _is_conv(label: str) -> bool:
    return label in CNN_CONV_LABELS


def _is_pool(label: str) -> bool:
    return label in CNN_POOL_LABELS


def _halves_image(arch: Architecture, i: int) -> bool:
    lab = arch.labels[i]
    return _is_pool(lab) or (_is_conv(lab) and arch.strides is not None and arch.strides[i] == 2)


def _image_sizes(arch: Architecture) -> tuple[list[int | None], list[int | None]]:
    """(entering, leaving) downsampling factor of each layer of a valid CNN
    (``None`` once flattened by fc / softmax / op)."""
    post = arch.image_sizes()
    pre: list[int | None] = [None] * arch.n_layers
    for i in range(arch.n_layers):
        ps = arch.parents(i)
        pre[i] = 1 if not ps else post[ps[0]]
    return pre, post


def modifiable_layers(arch: Architecture) -> list[int]:
    """Layers whose number of units the unit modifiers may change (conv, res and
    fc layers of a CNN; hidden layers of an MLP), in topological order."""
    order = topological_order(arch) or list(range(arch.n_layers))
    return [i for i in order
            if arch.units[i] is not None and arch.labels[i] not in ("ip", "op")
            and not _is_pool(arch.labels[i]) and arch.labels[i] not in DECISION_LABELS]


# ================================================================================
# validity
# ================================================================================
def well_formed(arch: Architecture) -> bool:
    """Structural validity (:meth:`Architecture.validity_error` without limits):
    one ``ip`` and one ``op``, acyclic, every layer on an ``ip -> op`` path,
    decision layers feeding ``op`` only, units exactly where layers have them,
    and for CNNs strides, convolutions right after ``ip`` and consistent image
    sizes. Every modifier output has it, whatever ``is_valid`` says."""
    return arch.validity_error() is None


def default_validity() -> Validity:
    """Structural validity plus the App. B.1 limits: ``Constraints()`` (at most 60
    layers, 200 edges, in/out degree 5, units in [8, 1024], mass <= 1e8)."""
    return Constraints()


def resolve_validity(is_valid: Validity | None) -> Validity:
    """``is_valid`` itself, or :func:`default_validity` when ``None``."""
    return default_validity() if is_valid is None else is_valid


def _breaks_simple_limits(a: Architecture, c: Constraints) -> bool:
    """Cheap pre-filter for a :class:`Constraints` check: layer, edge, degree and
    unit limits (the full structural check costs far more, and near the layer
    limit most candidates that add layers fail on these)."""
    if c.max_layers is not None and a.n_layers > c.max_layers:
        return True
    if c.max_edges is not None and len(a.edges) > c.max_edges:
        return True
    if c.max_in_degree is not None or c.max_out_degree is not None:
        n = a.n_layers
        indeg, outdeg = [0] * n, [0] * n
        for x, y in a.edges:
            outdeg[x] += 1
            indeg[y] += 1
        if c.max_in_degree is not None and max(indeg) > c.max_in_degree:
            return True
        if c.max_out_degree is not None and max(outdeg) > c.max_out_degree:
            return True
    for u in a.units:
        if u is not None and ((c.max_units is not None and u > c.max_units)
                              or (c.min_units is not None and u < c.min_units)):
            return True
    return False


def _checker(is_valid: Validity | None) -> Validity:
    valid = resolve_validity(is_valid)
    if isinstance(valid, Constraints):
        return lambda a: not _breaks_simple_limits(a, valid) and well_formed(a) and bool(valid(a))
    return lambda a: well_formed(a) and bool(valid(a))


def _require_valid(arch: Architecture) -> None:
    msg = arch.validity_error()
    if msg is not None:
        raise InvalidArchitectureError(f"cannot modify an invalid network: {msg}")


# ================================================================================
# building children
# ================================================================================
def _derive(arch: Architecture, labels=None, units=None, edges=None, strides=None) -> Architecture:
    """A new Architecture sharing nothing mutable with ``arch``."""
    return Architecture(
        kind=arch.kind,
        labels=list(arch.labels if labels is None else labels),
        units=list(arch.units if units is None else units),
        edges=list(arch.edges if edges is None else edges),
        strides=(None if arch.strides is None else list(arch.strides)) if strides is None else list(strides),
    )


def _round_half_up(x: float) -> int:
    return int(math.floor(x + 0.5))


def _scaled_units(u: int, up: bool) -> int:
    """``u`` changed by 1/8 (rounded), and by at least one unit."""
    if up:
        return max(u + 1, _round_half_up(u * (1 + CHANGE_FRAC)))
    return min(u - 1, _round_half_up(u * (1 - CHANGE_FRAC)))


def _units_of(arch: Architecture, layers: Iterable[int]) -> list[int]:
    """The unit counts of those of ``layers`` that have units, in order."""
    return [n for n in (arch.units[i] for i in layers) if n is not None]


def _nearby_units(arch: Architecture, u: int, v: int | None = None) -> int:
    """Units for a new layer between ``u`` and ``v``: the mean of their units
    (Table 6, wedge_layer); failing that, of the nearest unit-carrying ancestors
    of ``u``, then descendants of ``v`` (the authors' code looks up the same way);
    else ``_FALLBACK_UNITS``."""
    vals = _units_of(arch, (i for i in (u, v) if i is not None))
    if vals:
        return _round_half_up(sum(vals) / len(vals))
    for start, nbrs in ((u, arch.parents), (v if v is not None else u, arch.children)):
        seen = {start}
        frontier = [start]
        while frontier:
            nxt = sorted({j for i in frontier for j in nbrs(i)} - seen)
            seen.update(nxt)
            vals = _units_of(arch, nxt)
            if vals:
                return _round_half_up(sum(vals) / len(vals))
            frontier = nxt
    return _FALLBACK_UNITS


def _first_valid(candidates, check: Validity) -> Architecture | None:
    """Build children from ``candidates`` (callables) in the given order; return the first valid."""
    for n_tried, build in enumerate(candidates):
        if n_tried >= MAX_TRIES:
            break
        child = build()
        if child is not None and check(child):
            return child
    return None


# ================================================================================
# the nine modifiers
# ================================================================================
def _change_single(arch: Architecture, rng: np.random.Generator, up: bool,
                   is_valid: Validity | None) -> Architecture | None:
    _require_valid(arch)
    check = _checker(is_valid)
    layers = modifiable_layers(arch)

    def build(i: int):
        def _b():
            units = list(arch.units)
            units[i] = _scaled_units(int(units[i]), up)
            return _derive(arch, units=units)
        return _b

    return _first_valid((build(int(i)) for i in rng.permutation(layers)), check)


def inc_single(arch: Architecture, rng: np.random.Generator,
               *, is_valid: Validity | None = None) -> Architecture | None:
    """Pick a layer at random and increase its number of units by 1/8 (at least 1)."""
    return _change_single(arch, rng, True, is_valid)


def dec_single(arch: Architecture, rng: np.random.Generator,
               *, is_valid: Validity | None = None) -> Architecture | None:
    """Pick a layer at random and decrease its number of units by 1/8 (at least 1)."""
    return _change_single(arch, rng, False, is_valid)


def _en_masse_groups(arch: Architecture) -> list[list[int]]:
    """Contiguous groups of the topologically ordered modifiable layers: halves
    when there are at most 4 of them, quarters when at most 8, else eighths
    (Table 6: "randomly pick 1/8 of the layers (in order) ... for networks with
    eight layers or fewer pick a 1/4 ... for four layers or fewer 1/2")."""
    layers = modifiable_layers(arch)
    m = len(layers)
    n_groups = 2 if m <= 4 else (4 if m <= 8 else 8)
    groups = [layers[(g * m) // n_groups:((g + 1) * m) // n_groups] for g in range(n_groups)]
    return [g for g in groups if g]


def _change_en_masse(arch: Architecture, rng: np.random.Generator, up: bool,
                     is_valid: Validity | None) -> Architecture | None:
    _require_valid(arch)
    check = _checker(is_valid)
    groups = _en_masse_groups(arch)

    def build(group: list[int]):
        def _b():
            units = list(arch.units)
            for i in group:
                units[i] = _scaled_units(int(units[i]), up)
            return _derive(arch, units=units)
        return _b

    return _first_valid((build(groups[g]) for g in rng.permutation(len(groups))), check)


def inc_en_masse(arch: Architecture, rng: np.random.Generator,
                 *, is_valid: Validity | None = None) -> Architecture | None:
    """Increase the units of a random contiguous (topological order) group of
    1/8 of the layers (1/4 for <= 8, 1/2 for <= 4 modifiable layers) by 1/8."""
    return _change_en_masse(arch, rng, True, is_valid)


def dec_en_masse(arch: Architecture, rng: np.random.Generator,
                 *, is_valid: Validity | None = None) -> Architecture | None:
    """Decrease the units of a random contiguous group of layers by 1/8 (see inc_en_masse)."""
    return _change_en_masse(arch, rng, False, is_valid)


def _remove_index(arch: Architecture, d: int, edges: set[tuple[int, int]],
                  strides: list | None) -> Architecture:
    """Drop layer ``d`` (its edges must already be gone from ``edges``)."""
    def ren(i: int) -> int:
        return i - 1 if i > d else i
    keep = [i for i in range(arch.n_layers) if i != d]
    return Architecture(
        kind=arch.kind,
        labels=[arch.labels[i] for i in keep],
        units=[arch.units[i] for i in keep],
        edges=[(ren(a), ren(b)) for a, b in edges],
        strides=None if strides is None else [strides[i] for i in keep],
    )


def remove_layer(arch: Architecture, rng: np.random.Generator,
                 *, is_valid: Validity | None = None) -> Architecture | None:
    """Remove a random layer (Table 6).

    A parent (child) ``u`` whose only child (parent) was the removed layer gets
    an edge to one of its children (from one of its parents); such parents and
    children are paired first, left-overs get a random partner (authors' code).
    Never removed: ip, op, decision layers, and in a CNN an ``fc`` layer whose
    parents are not all ``fc`` (authors' code). In a CNN, removing a layer that
    halves the image (pool, stride-2 conv) gives stride 2 to its children if they
    are all stride-1 convs, else to its parents if they are (authors' code).
    """
    _require_valid(arch)
    check = _checker(is_valid)
    op = arch.op
    decision = set(arch.parents(op))
    cands = []
    for i, lab in enumerate(arch.labels):
        if lab in ("ip", "op", "softmax") or i in decision:
            continue
        if arch.kind == "cnn" and lab == "fc" and any(arch.labels[p] != "fc" for p in arch.parents(i)):
            continue
        cands.append(i)

    def build(d: int):
        def _b():
            parents, children = list(arch.parents(d)), list(arch.children(d))
            strides = None if arch.strides is None else list(arch.strides)
            if arch.kind == "cnn" and _halves_image(arch, d):
                if children and all(_is_conv(arch.labels[c]) and strides[c] == 1 for c in children):
                    for c in children:
                        strides[c] = 2
                elif parents and all(_is_conv(arch.labels[p]) and strides[p] == 1 for p in parents):
                    for p in parents:
                        strides[p] = 2
            must_children = [c for c in children if len(arch.parents(c)) == 1]
            must_parents = [p for p in parents if len(arch.children(p)) == 1]
            must_children = [must_children[j] for j in rng.permutation(len(must_children))]
            must_parents = [must_parents[j] for j in rng.permutation(len(must_parents))]
            edges = {e for e in arch.edges if d not in e}
            while must_children and must_parents:
                edges.add((must_parents.pop(), must_children.pop()))
            for c in must_children:
                edges.add((parents[rng.integers(len(parents))], c))
            for p in must_parents:
                edges.add((p, children[rng.integers(len(children))]))
            return _remove_index(arch, d, edges, strides)
        return _b

    return _first_valid((build(cands[j]) for j in rng.permutation(len(cands))), check)


def wedge_layer(arch: Architecture, rng: np.random.Generator,
                *, is_valid: Validity | None = None) -> Architecture | None:
    """Pick an edge ``(u, v)``, remove it, and add a new layer ``w`` with edges
    ``(u, w), (w, v)`` (Table 6).

    ``w`` gets a random label and, where it has units, the mean of the units of
    ``u`` and ``v``. From the authors' code: edges into ``op`` are never used;
    after an ``fc`` layer the new layer is an ``fc`` with the units of ``u``;
    CNN labels are conv3/5/7, res3/5/7 (a pooling layer w.p. 0.05, never right
    after ``ip``), a new conv has stride 2 w.p. 0.05; MLP labels are the
    rectifiers and sigmoids.
    """
    _require_valid(arch)
    check = _checker(is_valid)
    op = arch.op
    ip = arch.ip
    edges = [e for e in arch.edges if e[1] != op]

    def build(u: int, v: int):
        def _b():
            stride = None
            if arch.kind == "cnn" and arch.labels[u] == "fc":
                label, units = "fc", arch.units[u]
            elif arch.kind == "cnn":
                if u != ip and rng.random() < _POOL_IN_WEDGE_PROB:
                    label = CNN_POOL_LABELS[rng.integers(len(CNN_POOL_LABELS))]
                else:
                    label = CNN_CONV_LABELS[rng.integers(len(CNN_CONV_LABELS))]
                if _is_conv(label):
                    units = _nearby_units(arch, u, v)
                    stride = 2 if rng.random() < _STRIDE2_IN_WEDGE_PROB else 1
                else:
                    units = None
            else:
                pool = MLP_RECTIFIERS + MLP_SIGMOIDS
                label = pool[rng.integers(len(pool))]
                units = _nearby_units(arch, u, v)
            w = arch.n_layers
            new_edges = [e for e in arch.edges if e != (u, v)] + [(u, w), (w, v)]
            strides = None if arch.strides is None else list(arch.strides) + [stride]
            return _derive(arch, labels=list(arch.labels) + [label], units=list(arch.units) + [units],
                           edges=new_edges, strides=strides)
        return _b

    return _first_valid((build(*edges[j]) for j in rng.permutation(len(edges))), check)


def _swap_choice(arch: Architecture, i: int, rng: np.random.Generator) -> str | None:
    lab = arch.labels[i]
    if arch.kind == "mlp":
        if lab in MLP_RECTIFIERS:
            return MLP_SIGMOIDS[rng.integers(len(MLP_SIGMOIDS))]
        if lab in MLP_SIGMOIDS:
            return MLP_RECTIFIERS[rng.integers(len(MLP_RECTIFIERS))]
        return None
    if lab not in _CNN_SWAP:
        return None
    cands, probs = _CNN_SWAP[lab]
    p = np.asarray(probs, dtype=float)
    return cands[rng.choice(len(cands), p=p / p.sum())]


def swap_label(arch: Architecture, rng: np.random.Generator,
               *, is_valid: Validity | None = None) -> Architecture | None:
    """Pick a layer at random and change its label (Table 6).

    As in the authors' code: ip, op, decision, ``fc`` and ``softmax`` layers are
    never swapped; an MLP rectifier becomes a (random) sigmoid and vice versa; a
    CNN conv/res layer becomes another conv/res layer (or, w.p. 0.1, a pooling
    layer, which has no units) with the code's probabilities, and a pooling layer
    the other pooling type. A conv/res replacing a conv/res keeps its stride but
    flips it w.p. 0.05. Beyond the code, a conv replacing a pooling layer gets
    stride 2 (to keep the image size) and the units of its nearest neighbours
    (the code leaves it without units, a conv layer it cannot build).
    """
    _require_valid(arch)
    check = _checker(is_valid)
    decision = set(decision_layers(arch))
    cands = [i for i, lab in enumerate(arch.labels)
             if lab not in ("ip", "op", "fc", "softmax", "linear") and i not in decision]

    def build(i: int):
        def _b():
            new = _swap_choice(arch, i, rng)
            if new is None or new == arch.labels[i]:
                return None
            labels = list(arch.labels)
            units = list(arch.units)
            strides = None if arch.strides is None else list(arch.strides)
            labels[i] = new
            if arch.kind == "cnn":
                old = arch.labels[i]
                if _is_pool(new):
                    units[i], strides[i] = None, None
                elif _is_pool(old):
                    units[i], strides[i] = _nearby_units(arch, i), 2
                elif rng.random() < _STRIDE_FLIP_IN_SWAP_PROB:
                    strides[i] = 1 if strides[i] == 2 else 2
            return _derive(arch, labels=labels, units=units, strides=strides)
        return _b

    return _first_valid((build(cands[j]) for j in rng.permutation(len(cands))), check)


def _start_layer_weights(arch: Architecture, exclude_ip: bool) -> np.ndarray:
    """Start-layer weights for dup_path and skip (authors' code): proportional to
    1 / sqrt(1 + hops from ip), zero for op and decision layers, for ``fc`` and
    ``softmax`` layers (and for ip when ``exclude_ip``)."""
    dist = _hops(arch, arch.ip, forward=True)
    decision = set(decision_layers(arch))
    w = np.zeros(arch.n_layers)
    for i, lab in enumerate(arch.labels):
        if lab in ("op", "softmax", "fc") or i in decision or (exclude_ip and lab == "ip"):
            continue
        w[i] = 1.0 / math.sqrt(1.0 + dist[i])
    return w


def dup_path(arch: Architecture, rng: np.random.Generator,
             *, is_valid: Validity | None = None) -> Architecture | None:
    """Duplicate a random path ``u_1, ..., u_k`` (Table 6): new copies of (some of)
    the inner layers ``u_2..u_{k-1}`` form a chain from ``u_1`` to ``u_k``.

    The path starts at a layer drawn with weight 1/sqrt(1 + hops from ip) (never
    op, fc or decision layers), follows random children, has at least 4 layers
    unless it reaches op, and after that stops w.p. 0.2 per layer. As in the
    authors' code, each inner layer is copied w.p. 0.5, except that these are
    always copied: the first one when the path starts at ip, pooling, stride-2
    and decision layers (so image sizes still match), the first fc, and the last
    one if nothing else was. Copies keep label, units and stride.
    """
    _require_valid(arch)
    check = _checker(is_valid)
    weights = _start_layer_weights(arch, exclude_ip=False)
    if weights.sum() <= 0:
        return None
    ip = arch.ip

    def build() -> Architecture | None:
        start = int(rng.choice(arch.n_layers, p=weights / weights.sum()))
        weights[start] *= 0.9  # as in the code: less likely to start here again
        path = [start]
        while True:
            kids = arch.children(path[-1])
            nxt = int(kids[rng.integers(len(kids))])
            path.append(nxt)
            if arch.labels[nxt] == "op":
                break
            if len(path) >= _DUP_PATH_MIN_LEN and rng.random() < _DUP_PATH_STOP_PROB:
                break
        inner = path[1:-1]
        if not inner:
            return None
        kept: list[int] = []
        fc_seen = False
        for pos, i in enumerate(inner):
            lab = arch.labels[i]
            if pos == 0 and path[0] == ip:
                kept.append(i)
            elif pos == len(inner) - 1 and not kept:
                kept.append(i)
            elif _is_pool(lab) or lab in DECISION_LABELS or _halves_image(arch, i):
                kept.append(i)
            elif lab == "fc" and not fc_seen:
                kept.append(i)
                fc_seen = True
            elif rng.random() < _DUP_PATH_KEEP_PROB:
                kept.append(i)
        n = arch.n_layers
        new = list(range(n, n + len(kept)))
        chain = [path[0]] + new + [path[-1]]
        edges = list(arch.edges) + list(zip(chain[:-1], chain[1:]))
        strides = None if arch.strides is None else list(arch.strides) + [arch.strides[i] for i in kept]
        return _derive(arch, labels=list(arch.labels) + [arch.labels[i] for i in kept],
                       units=list(arch.units) + [arch.units[i] for i in kept],
                       edges=edges, strides=strides)

    return _first_valid((build for _ in range(MAX_TRIES)), check)


def skip(arch: Architecture, rng: np.random.Generator,
         *, is_valid: Validity | None = None) -> Architecture | None:
    """Add an edge ``(u, v)`` with ``u`` topologically before ``v`` and ``(u, v)``
    not already an edge (Table 6).

    From the authors' code: ``u`` is drawn with weight 1/sqrt(1 + hops from ip)
    (never ip, op, fc or decision layers); ``v`` uniformly among layers at least
    two hops further from ip and at least two hops closer to op than ``u`` (by
    shortest paths), never op or a decision layer, in a CNN never a layer whose
    input image is larger than ``u``'s output, and an ``fc`` only if it is a first
    fc layer (its parents are conv/pool). In a CNN, when ``u``'s output image is
    larger than ``v``'s input, the connection goes through a chain of stride-2
    ``avg-pool`` layers (App. B.2). ``v`` must not be an ancestor of ``u``.
    """
    _require_valid(arch)
    check = _checker(is_valid)
    weights = _start_layer_weights(arch, exclude_ip=True)
    if weights.sum() <= 0:
        return None
    ip, op = arch.ip, arch.op
    d_ip = _hops(arch, ip, forward=True)
    d_op = _hops(arch, op, forward=False)
    decision = set(decision_layers(arch))
    sizes = _image_sizes(arch) if arch.kind == "cnn" else None
    edge_set = set(arch.edges)

    def end_candidates(u: int) -> list[int]:
        anc = _reachable(arch, u, forward=False)
        out = []
        for v, lab in enumerate(arch.labels):
            if lab in ("ip", "op", "softmax") or v in decision or v in anc or (u, v) in edge_set:
                continue
            if not (d_ip[v] - 1 > d_ip[u] and d_op[v] + 1 < d_op[u]):
                continue
            if sizes is not None:
                pre, post = sizes
                out_u, in_v = post[u], pre[v]
                if out_u is None or in_v is None or out_u > in_v:
                    continue
                if lab == "fc" and not all(_is_pool(arch.labels[p]) or _is_conv(arch.labels[p])
                                           for p in arch.parents(v)):
                    continue
            out.append(v)
        return out

    def build():
        u = int(rng.choice(arch.n_layers, p=weights / weights.sum()))
        ends = end_candidates(u)
        if not ends:
            return None
        v = ends[rng.integers(len(ends))]
        if sizes is None or sizes[1][u] == sizes[0][v]:
            return _derive(arch, edges=list(arch.edges) + [(u, v)])
        ratio = sizes[0][v] // sizes[1][u]
        n_pool = int(round(math.log2(ratio)))
        if 2 ** n_pool * sizes[1][u] != sizes[0][v]:
            return None
        n = arch.n_layers
        chain = [u] + list(range(n, n + n_pool)) + [v]
        return _derive(arch, labels=list(arch.labels) + ["avg-pool"] * n_pool,
                       units=list(arch.units) + [None] * n_pool,
                       edges=list(arch.edges) + list(zip(chain[:-1], chain[1:])),
                       strides=list(arch.strides) + [None] * n_pool)

    return _first_valid((build for _ in range(MAX_TRIES)), check)


#: The nine modifiers of Table 6, by name.
MODIFIERS: dict[str, Callable[..., Architecture | None]] = {
    "inc_single": inc_single,
    "dec_single": dec_single,
    "inc_en_masse": inc_en_masse,
    "dec_en_masse": dec_en_masse,
    "remove_layer": remove_layer,
    "wedge_layer": wedge_layer,
    "swap_label": swap_label,
    "dup_path": dup_path,
    "skip": skip,
}


# ================================================================================
# mutation operators (App. B.2)
# ================================================================================
@dataclass(frozen=True, kw_only=True)
class Mutation:
    """A mutated network, the number of steps drawn, and the modifiers applied."""

    child: Architecture
    n_steps: int
    applied: tuple[str, ...]


def _normalised(weights: Mapping[str, float]) -> tuple[list[str], np.ndarray]:
    names = [k for k, w in weights.items() if w > 0]
    unknown = set(names) - set(MODIFIERS)
    if unknown:
        raise ValueError(f"unknown modifier(s) {sorted(unknown)}; known: {sorted(MODIFIERS)}")
    if not names:
        raise ValueError("modifier weights must have at least one positive entry")
    p = np.array([weights[k] for k in names], dtype=float)
    return names, p / p.sum()


def one_step(arch: Architecture, rng: np.random.Generator, *, is_valid: Validity | None = None,
             weights: Mapping[str, float] = MODIFIER_WEIGHTS,
             max_tries: int = 10) -> tuple[Architecture, str] | None:
    """One-step mutation operator: apply a modifier picked at random (with
    ``weights``); when it does not apply, pick again, up to ``max_tries`` times.
    Returns ``(child, modifier name)`` or ``None``."""
    names, p = _normalised(weights)
    valid = resolve_validity(is_valid)
    for _ in range(max_tries):
        name = names[int(rng.choice(len(names), p=p))]
        child = MODIFIERS[name](arch, rng, is_valid=valid)
        if child is not None:
            return child, name
    return None


def sample_num_steps(rng: np.random.Generator, step_probs: Sequence[float] = STEP_PROBS) -> int:
    """Draw k in 1..len(step_probs) with probabilities ``step_probs`` (normalised)."""
    p = np.asarray(step_probs, dtype=float)
    if p.ndim != 1 or p.size == 0 or np.any(p < 0) or p.sum() <= 0:
        raise ValueError(f"step_probs must be non-negative with a positive sum, got {step_probs!r}")
    return int(rng.choice(p.size, p=p / p.sum())) + 1


def mutate_with_info(arch: Architecture, rng: np.random.Generator, *, is_valid: Validity | None = None,
                     step_probs: Sequence[float] = STEP_PROBS,
                     weights: Mapping[str, float] = MODIFIER_WEIGHTS,
                     max_tries: int = 10) -> Mutation | None:
    """Compound mutation operator (App. B.2): draw k with ``step_probs`` and apply
    the one-step operator k times in succession. As in the authors' code, when a
    later step finds no valid child the mutation so far is kept; ``None`` only
    if not even the first step succeeded. ``arch`` is not modified."""
    k = sample_num_steps(rng, step_probs)
    valid = resolve_validity(is_valid)
    cur = arch
    applied: list[str] = []
    for _ in range(k):
        res = one_step(cur, rng, is_valid=valid, weights=weights, max_tries=max_tries)
        if res is None:
            break
        cur, name = res
        applied.append(name)
    if not applied:
        return None
    return Mutation(child=cur, n_steps=k, applied=tuple(applied))


def mutate(arch: Architecture, rng: np.random.Generator, *, is_valid: Validity | None = None,
           step_probs: Sequence[float] = STEP_PROBS,
           weights: Mapping[str, float] = MODIFIER_WEIGHTS,
           max_tries: int = 10) -> Architecture | None:
    """:func:`mutate_with_info` returning only the mutated network (or ``None``)."""
    res = mutate_with_info(arch, rng, is_valid=is_valid, step_probs=step_probs, weights=weights, max_tries=max_tries)
    return None if res is None else res.child
