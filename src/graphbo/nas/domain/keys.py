"""Keys of architectures that ignore the numbering of their layers (Weisfeiler-Lehman hashing).

Used to tell whether a network was already evaluated, pending or scored, by
:class:`graphbo.nas.ArchitectureSpace` and the evolutionary acquisition
optimiser (:mod:`graphbo.optim.evolutionary`).
"""

from __future__ import annotations

import hashlib

from .architecture import Architecture

__all__ = ["architecture_key"]


def _digest(obj) -> str:
    return hashlib.blake2b(repr(obj).encode(), digest_size=8).hexdigest()


def _hop_counts(arch: Architecture, source: int, forward: bool) -> list[int]:
    dist = [-1] * arch.n_layers
    dist[source] = 0
    frontier = [source]
    nbrs = arch.children if forward else arch.parents
    while frontier:
        nxt = []
        for i in frontier:
            for j in nbrs(i):
                if dist[j] < 0:
                    dist[j] = dist[i] + 1
                    nxt.append(j)
        frontier = nxt
    return dist


def architecture_key(arch: Architecture) -> str:
    """A key equal for networks that differ only by the numbering of their layers.

    Weisfeiler-Lehman refinement on the labelled DAG: each layer starts from
    (label, units, stride, hops from ip, hops to op) and is repeatedly re-hashed
    with the sorted hashes of its parents and of its children until the
    partition stops refining (at once if the start hashes are all distinct); the
    key hashes the kind, the sorted final hashes and the sorted edges written as
    pairs of hashes. When all final hashes differ this is a canonical form;
    otherwise non-isomorphic networks with equal keys are possible in principle,
    as with any WL test, and it only means a candidate is skipped.
    """
    n = arch.n_layers
    strides = arch.strides or [None] * n
    labels = arch.labels
    d_ip = _hop_counts(arch, labels.index("ip"), True) if "ip" in labels else [0] * n
    d_op = _hop_counts(arch, labels.index("op"), False) if "op" in labels else [0] * n
    sig = [_digest((labels[i], arch.units[i], strides[i], d_ip[i], d_op[i])) for i in range(n)]
    n_classes = len(set(sig))
    for _ in range(n):
        if n_classes == n:
            break
        new = [_digest((sig[i], sorted(sig[p] for p in arch.parents(i)),
                        sorted(sig[c] for c in arch.children(i)))) for i in range(n)]
        k = len(set(new))
        sig = new
        if k == n_classes:
            break
        n_classes = k
    return _digest((arch.kind, n, sorted(sig), sorted((sig[a], sig[b]) for a, b in arch.edges)))
