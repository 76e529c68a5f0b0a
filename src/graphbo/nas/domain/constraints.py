"""Search-space limits for NASBOT (Kandasamy et al. 2018, App. B.1).

A network produced by the evolutionary algorithm's modifiers that breaks one of
these limits is skipped. The defaults are the paper's (App. B.1); the authors'
demo scripts use looser values (out-degree 55, no mass limit, at least 5
layers), which can be set here too.
"""

from __future__ import annotations

from dataclasses import dataclass

from .architecture import Architecture

__all__ = ["Constraints"]


@dataclass(frozen=True, kw_only=True)
class Constraints:
    """Limits on an architecture (App. B.1 defaults).

    Parameters
    ----------
    max_layers : at most this many layers, ip/op/decision layers included (60).
    min_layers : at least this many layers (``None``: no limit; the authors' demos use 5).
    max_mass : total mass ``tm(G)`` (Sec. 3, all layers) at most this (1e8; ``None``: no
        limit). The authors' checker bounds the total mass too.
    min_mass : total mass at least this (``None``: no limit).
    max_in_degree, max_out_degree : per-layer degree limits (5 and 5).
    max_edges : at most this many edges (200).
    max_units, min_units : unit counts of layers that have units lie in
        ``[min_units, max_units]`` (8 and 1024).
    max_halvings : CNNs only: the image may be halved (stride-2 conv or pooling) at
        most this many times along any path (``None``: no limit; an option of the
        authors' checker).
    """

    max_layers: int | None = 60
    min_layers: int | None = None
    max_mass: float | None = 1e8
    min_mass: float | None = None
    max_in_degree: int | None = 5
    max_out_degree: int | None = 5
    max_edges: int | None = 200
    max_units: int | None = 1024
    min_units: int | None = 8
    max_halvings: int | None = None

    def violation(self, arch: Architecture) -> str | None:
        """The first violated limit as a message, or ``None``. The network must be
        structurally valid (:meth:`Architecture.validity_error` checks that first)."""
        n = arch.n_layers
        if self.max_layers is not None and n > self.max_layers:
            return f"{n} layers exceed the maximum of {self.max_layers}"
        if self.min_layers is not None and n < self.min_layers:
            return f"{n} layers are fewer than the minimum of {self.min_layers}"
        if self.max_edges is not None and arch.n_edges > self.max_edges:
            return f"{arch.n_edges} edges exceed the maximum of {self.max_edges}"
        if self.max_in_degree is not None:
            deg = arch.in_degrees()
            i = int(deg.argmax())
            if deg[i] > self.max_in_degree:
                return f"layer {i} ({arch.labels[i]}) has in-degree {deg[i]} > {self.max_in_degree}"
        if self.max_out_degree is not None:
            deg = arch.out_degrees()
            i = int(deg.argmax())
            if deg[i] > self.max_out_degree:
                return f"layer {i} ({arch.labels[i]}) has out-degree {deg[i]} > {self.max_out_degree}"
        for i, u in enumerate(arch.units):
            if u is None:
                continue
            if self.max_units is not None and u > self.max_units:
                return f"layer {i} ({arch.labels[i]}) has {u} units > {self.max_units}"
            if self.min_units is not None and u < self.min_units:
                return f"layer {i} ({arch.labels[i]}) has {u} units < {self.min_units}"
        if self.max_mass is not None or self.min_mass is not None:
            mass = arch.total_mass()
            if self.max_mass is not None and mass > self.max_mass:
                return f"mass {mass:.4g} exceeds the maximum of {self.max_mass:.4g}"
            if self.min_mass is not None and mass < self.min_mass:
                return f"mass {mass:.4g} is below the minimum of {self.min_mass:.4g}"
        if self.max_halvings is not None and arch.kind == "cnn":
            sizes = [s for s in arch.image_sizes() if s is not None]
            worst = max(sizes)
            if worst > 2 ** self.max_halvings:
                return (f"the image is downsampled by {worst} "
                        f"(more than {self.max_halvings} halvings)")
        return None

    def check(self, arch: Architecture) -> str | None:
        """Structural validity and these limits: the first problem found, or ``None``."""
        return arch.validity_error(self)

    def __call__(self, arch: Architecture) -> bool:
        """``True`` if ``arch`` is a valid network within these limits."""
        return arch.validity_error(self) is None
