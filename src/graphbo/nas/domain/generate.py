"""Random valid architectures, for tests, benchmarks and initial pools.

The generator grows a feed-forward backbone (``ip``, processing layers, decision
layer, ``op``) and then adds structure the way NASBOT's modifiers do (Table 6):
duplicated paths (parallel branches), skip connections and extra decision
layers, until the requested number of layers is reached. Every network it
returns passes :meth:`Architecture.validate`; for CNNs, skip connections join
only layers whose image sizes agree, and branches copy the strides and pooling
positions of the path they duplicate.
"""

from __future__ import annotations

import numpy as np

from .architecture import (
    CNN_CONV_LABELS,
    CNN_POOL_LABELS,
    MLP_PROCESSING_LABELS,
    Architecture,
)

__all__ = ["random_architecture", "random_cnn", "random_mlp"]

_CONV_UNITS = (16, 32, 64, 128, 256)
_FC_UNITS = (64, 128, 256, 512)
_MLP_UNITS = (16, 32, 64, 128, 256, 512)


class _Builder:
    def __init__(self, kind: str, rng: np.random.Generator, max_degree: int):
        self.kind = kind
        self.rng = rng
        self.max_degree = max_degree
        self.labels: list[str] = []
        self.units: list[int | None] = []
        self.strides: list[int | None] = []
        self.edges: set[tuple[int, int]] = set()
        self.pre: list[int | None] = []  # CNN image size entering / leaving each layer
        self.post: list[int | None] = []

    def add(self, label, units=None, stride=None, pre=None, post=None) -> int:
        self.labels.append(label)
        self.units.append(units)
        self.strides.append(stride)
        self.pre.append(pre)
        self.post.append(post)
        return len(self.labels) - 1

    def indeg(self, v: int) -> int:
        return sum(1 for _, b in self.edges if b == v)

    def outdeg(self, u: int) -> int:
        return sum(1 for a, _ in self.edges if a == u)

    def can_link(self, u: int, v: int) -> bool:
        return ((u, v) not in self.edges and self.outdeg(u) < self.max_degree
                and self.indeg(v) < self.max_degree)

    def build(self) -> Architecture:
        arch = Architecture(kind=self.kind, labels=self.labels, units=self.units, edges=sorted(self.edges),
                            strides=self.strides if self.kind == "cnn" else None)
        arch.validate()
        return arch


def _grow(b: _Builder, main: list[int], n_layers: int, relabel, decision_label: str,
          decision_parents: list[int], op: int) -> None:
    """Add duplicated paths, extra decision layers and skips along the backbone ``main``."""
    rng = b.rng
    guard = 0
    while len(b.labels) < n_layers and guard < 10_000:
        guard += 1
        r = rng.random()
        if r < 0.12 and decision_parents:
            u = decision_parents[rng.integers(len(decision_parents))]
            if b.outdeg(u) >= b.max_degree or b.indeg(op) >= b.max_degree:
                continue
            d = b.add(decision_label)
            b.edges.add((u, d))
            b.edges.add((d, op))
            continue
        # duplicate the backbone path main[i] -> ... -> main[j] (i < j - 1)
        if len(main) < 3:
            break
        i = int(rng.integers(0, len(main) - 2))
        room = n_layers - len(b.labels)
        j_max = min(len(main) - 1, i + 1 + room)
        if j_max < i + 2:
            continue
        j = int(rng.integers(i + 2, j_max + 1))
        u, v = main[i], main[j]
        if b.outdeg(u) >= b.max_degree or b.indeg(v) >= b.max_degree:
            continue
        # copy the inner layers; drop a size-preserving one or wedge in an extra
        # size-preserving one now and then, so branches differ in length
        prev = u
        copied = 0
        for k in range(i + 1, j):
            x = main[k]
            keeps_size = b.kind == "mlp" or b.pre[x] == b.post[x]
            first_after_ip = copied == 0 and b.labels[u] == "ip"
            if (keeps_size and not first_after_ip and rng.random() < 0.2
                    and (copied > 0 or k < j - 1)):
                continue
            w = relabel(x)
            b.edges.add((prev, w))
            prev = w
            copied += 1
            if rng.random() < 0.15 and len(b.labels) + (j - 1 - k) < n_layers and keeps_size:
                w = relabel(x, extra=True)
                b.edges.add((prev, w))
                prev = w
        if prev == u:
            continue
        b.edges.add((prev, v))
    # a few skip connections between compatible backbone layers
    n_skips = int(rng.integers(0, 1 + len(main) // 4))
    for _ in range(n_skips):
        i, j = sorted(rng.choice(len(main) - 1, size=2, replace=False))
        u, v = main[i], main[j]
        if j <= i + 1 or b.labels[v] in ("op",) or b.labels[u] in ("softmax", "linear"):
            continue
        if b.kind == "cnn" and (b.post[u] != b.pre[v] or
                                (b.labels[u] == "ip" and b.labels[v] not in CNN_CONV_LABELS)):
            continue
        if b.can_link(u, v):
            b.edges.add((u, v))


def random_cnn(rng: np.random.Generator | int | None = None, *, n_layers: int = 12,
               max_halvings: int = 5, max_degree: int = 5) -> Architecture:
    """A random valid CNN with exactly ``n_layers`` layers (at least 5)."""
    rng = np.random.default_rng(rng)
    if n_layers < 5:
        raise ValueError("a random CNN needs at least 5 layers (ip, conv, fc, softmax, op)")
    b = _Builder("cnn", rng, max_degree)
    n_fc = int(rng.integers(1, 3)) if n_layers >= 7 else 1
    n_main_spatial = max(1, int(round((n_layers - 3 - n_fc) * rng.uniform(0.45, 0.75))))
    ip = b.add("ip", pre=1, post=1)
    main = [ip]
    size = 1
    halvings = 0
    for k in range(n_main_spatial):
        if k > 0 and rng.random() < 0.25 and halvings < max_halvings:
            lab = str(rng.choice(CNN_POOL_LABELS))
            w = b.add(lab, pre=size, post=2 * size)
            size *= 2
            halvings += 1
        else:
            lab = str(rng.choice(CNN_CONV_LABELS))
            stride = 2 if (rng.random() < 0.15 and halvings < max_halvings) else 1
            w = b.add(lab, units=int(rng.choice(_CONV_UNITS)), stride=stride, pre=size,
                      post=size * stride)
            if stride == 2:
                size *= 2
                halvings += 1
        b.edges.add((main[-1], w))
        main.append(w)
    fcs = []
    for k in range(n_fc):
        w = b.add("fc", units=int(rng.choice(_FC_UNITS)), pre=size if k == 0 else None)
        b.edges.add((main[-1], w))
        main.append(w)
        fcs.append(w)
    sm = b.add("softmax")
    b.edges.add((main[-1], sm))
    op = b.add("op")
    b.edges.add((sm, op))
    main += [sm, op]

    def relabel(x: int, extra: bool = False) -> int:
        lab = b.labels[x]
        if lab in CNN_CONV_LABELS or (extra and lab in CNN_POOL_LABELS):
            size = b.post[x]
            return b.add(str(rng.choice(CNN_CONV_LABELS)), units=int(rng.choice(_CONV_UNITS)),
                         stride=1 if extra else b.strides[x], pre=b.pre[x] if not extra else size,
                         post=size)
        if lab in CNN_POOL_LABELS:
            return b.add(str(rng.choice(CNN_POOL_LABELS)), pre=b.pre[x], post=b.post[x])
        if lab == "fc":
            return b.add("fc", units=int(rng.choice(_FC_UNITS)), pre=b.pre[x])
        return b.add(lab)  # softmax (only reachable via a path ending at op)

    # duplicates stop before the decision layer: main[:-1] ends at softmax, so paths
    # main[i] -> ... -> main[j] with j <= index of softmax copy only processing layers.
    _grow(b, main[:-1], n_layers, relabel, "softmax", fcs, op)
    return b.build()


def random_mlp(rng: np.random.Generator | int | None = None, *, n_layers: int = 10,
               task: str = "regression", max_degree: int = 5) -> Architecture:
    """A random valid MLP with exactly ``n_layers`` layers (at least 4); ``task`` picks the
    decision layers: ``linear`` (regression) or ``softmax`` (classification)."""
    rng = np.random.default_rng(rng)
    if n_layers < 4:
        raise ValueError("a random MLP needs at least 4 layers (ip, hidden, decision, op)")
    dec = {"regression": "linear", "classification": "softmax"}[task]
    b = _Builder("mlp", rng, max_degree)
    n_main = max(1, int(round((n_layers - 3) * rng.uniform(0.45, 0.75))))
    ip = b.add("ip")
    main = [ip]
    for _ in range(n_main):
        w = b.add(str(rng.choice(MLP_PROCESSING_LABELS)), units=int(rng.choice(_MLP_UNITS)))
        b.edges.add((main[-1], w))
        main.append(w)
    hidden = main[1:]
    d = b.add(dec)
    b.edges.add((main[-1], d))
    op = b.add("op")
    b.edges.add((d, op))
    main += [d, op]

    def relabel(x: int, extra: bool = False) -> int:
        return b.add(str(rng.choice(MLP_PROCESSING_LABELS)), units=int(rng.choice(_MLP_UNITS)))

    _grow(b, main[:-1], n_layers, relabel, dec, hidden, op)
    return b.build()


def random_architecture(kind: str, rng: np.random.Generator | int | None = None,
                        *, n_layers: int = 12, **kwargs) -> Architecture:
    """:func:`random_cnn` or :func:`random_mlp` by ``kind``."""
    if kind == "cnn":
        return random_cnn(rng, n_layers=n_layers, **kwargs)
    if kind == "mlp":
        return random_mlp(rng, n_layers=n_layers, **kwargs)
    raise ValueError(f"unknown kind {kind!r}; expected 'mlp' or 'cnn'")
