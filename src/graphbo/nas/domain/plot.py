"""A picture of a network without Graphviz: a layered drawing with matplotlib.

:meth:`Architecture.to_dot` gives Graphviz text; this module draws the same
network directly to a PNG (or any matplotlib format) for reports, on machines
without the ``dot`` program. Layers are placed in rows by their longest path
from the input layer (so every edge points downwards), left to right in
topological order within a row; input and output layers are pink and decision
layers green, as in the NASBOT paper's figures (Fig. 3, 16 and 17).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..._lazy import require
from .architecture import _IO_LABELS, DECISION_LABELS, Architecture

__all__ = ["layer_rows", "draw_architecture"]

_COLORS = {"io": "#f4b6c2", "decision": "#b6e3b6", "other": "#f2f2f2"}


def layer_rows(arch: Architecture) -> list[int]:
    """Row of each layer: the number of edges on its longest path from the input layer."""
    order = arch.topological_order()
    row = [0] * len(arch.labels)
    children: dict[int, list[int]] = {i: [] for i in range(len(arch.labels))}
    for a, b in arch.edges:
        children[a].append(b)
    for i in order:
        for c in children[i]:
            row[c] = max(row[c], row[i] + 1)
    return row


def draw_architecture(arch: Architecture | Mapping[str, Any], path: str | None = None, *, title: str | None = None,
                      ax: Any = None) -> Any:
    """Draw ``arch`` (an :class:`Architecture` or its dict form); save it to ``path`` if given.

    Returns the matplotlib figure. Needs matplotlib (``pip install "graphbo[report]"``).
    """
    matplotlib = require("matplotlib", "drawing an architecture", extra="report")
    if ax is None and path is not None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    if not isinstance(arch, Architecture):
        arch = Architecture.from_dict(dict(arch))
    rows = layer_rows(arch)
    n_rows = max(rows) + 1
    order = {layer: k for k, layer in enumerate(arch.topological_order())}
    by_row: dict[int, list[int]] = {}
    for i in sorted(range(len(rows)), key=lambda i: order[i]):
        by_row.setdefault(rows[i], []).append(i)
    width = max(len(v) for v in by_row.values())
    pos = {}
    for r, layers in by_row.items():
        for k, i in enumerate(layers):
            pos[i] = ((k + 0.5) * width / len(layers), -r)

    own = ax is None
    if own:
        fig, ax = plt.subplots(figsize=(max(3.0, 2.0 * width), max(3.0, 0.62 * n_rows + 0.8)))
    else:
        fig = ax.figure
    for a, b in arch.edges:
        (x0, y0), (x1, y1) = pos[a], pos[b]
        skip = rows[b] - rows[a] > 1  # bend edges that jump rows so they do not run through boxes
        ax.annotate("", xy=(x1, y1 + 0.22), xytext=(x0, y0 - 0.22),
                    arrowprops=dict(arrowstyle="->", color="#555555", lw=0.8, shrinkA=0, shrinkB=0,
                                    connectionstyle="arc3,rad=-0.35" if skip else "arc3"))
    for i, label in enumerate(arch.labels):
        kind = "io" if label in _IO_LABELS else "decision" if label in DECISION_LABELS else "other"
        x, y = pos[i]
        ax.text(x, y, arch.layer_description(i), ha="center", va="center", fontsize=8,
                bbox=dict(boxstyle="round,pad=0.3", fc=_COLORS[kind], ec="#444444", lw=0.6))
    ax.set_xlim(0, width)
    ax.set_ylim(-n_rows + 0.4, 0.6)
    ax.axis("off")
    if title:
        ax.set_title(title, fontsize=9)
    if own:
        fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
        if own:
            plt.close(fig)
    return fig
