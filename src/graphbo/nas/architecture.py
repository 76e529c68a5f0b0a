"""A neural network as a labelled DAG of layers (NASBOT, Kandasamy et al. 2018, Sec. 2-3).

Layer ``i`` has a label (``labels[i]``), a unit count (``units[i]``; ``None``
where a layer has none of its own, e.g. ``ip``, ``op``, pooling and softmax
layers) and, for CNNs, a stride (``strides[i]``; ``None`` for MLPs and for
layers without one). ``edges`` are directed ``(parent, child)`` pairs.
There is exactly one ``ip`` and one ``op`` layer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Architecture"]


@dataclass
class Architecture:
    kind: str  # "mlp" or "cnn"
    labels: list[str]
    units: list[int | None]
    edges: list[tuple[int, int]]
    strides: list[int | None] | None = None
    _children: list[list[int]] | None = field(default=None, init=False, repr=False, compare=False)
    _parents: list[list[int]] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.labels = list(self.labels)
        self.units = list(self.units)
        self.edges = sorted({(int(a), int(b)) for a, b in self.edges})
        if self.strides is not None:
            self.strides = list(self.strides)

    @property
    def n_layers(self) -> int:
        return len(self.labels)

    def _adjacency(self) -> None:
        ch: list[list[int]] = [[] for _ in range(self.n_layers)]
        pa: list[list[int]] = [[] for _ in range(self.n_layers)]
        for a, b in self.edges:
            ch[a].append(b)
            pa[b].append(a)
        self._children, self._parents = ch, pa

    def children(self, i: int) -> list[int]:
        if self._children is None:
            self._adjacency()
        return self._children[i]

    def parents(self, i: int) -> list[int]:
        if self._parents is None:
            self._adjacency()
        return self._parents[i]

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
