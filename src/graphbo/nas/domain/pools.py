"""The initial pools of NASBOT (Kandasamy et al. 2018, App. B.1, Fig. 16 and 17).

NASBOT, its EA acquisition optimiser and the baselines all start from 10
feed-forward networks per domain:

* CNNs (Fig. 16): "the first 3 networks have structure similar to the VGG nets
  and the remaining have blocked feed forward structures as in He et al."
  Following the authors' code (``get_vgg_net``, ``get_blocked_cnn``,
  ``get_resnet_cnn``) these are VGG-13/16/19-like nets (2, 3, 4 conv3 layers
  in each of the three deep blocks; VGG-19 is the third network, as Sec. 5 of
  the paper says), six blocked conv3 nets (3 blocks x 1..5 layers, 4 blocks x
  4 layers) and one blocked ``res3`` net (3 blocks x 2 layers).
* MLPs (Fig. 17): ten blocked MLPs (blocks x layers per block: 3x2, 4x2, 5x2,
  3x4, 6x2, 8x2, 6x3, 10x2, 4x6, 8x3 as in the authors' code); blocks
  alternate a rectifier and a sigmoid label, "decided arbitrarily" (the code
  shuffles the labels at random; here with a fixed seed).

The authors' code ships 12 CNNs (one more VGG net and a non feed-forward
"multidepth" example); the paper uses 10 feed-forward ones, so the VGG net with
one conv3 layer per block and the multidepth example are left out.

Domains: ``"cnn"`` (decision layer ``softmax``), ``"mlp-class"`` (``softmax``)
and ``"mlp-reg"`` (``linear``). The number of outputs (classes, or 1 for
regression) is not part of the architecture; the model builder sets it.
"""

from __future__ import annotations

import numpy as np

from .architecture import MLP_RECTIFIERS, MLP_SIGMOIDS, Architecture

__all__ = [
    "DOMAINS", "decision_label", "kind_of", "initial_pool", "cnn_pool", "mlp_pool",
    "vgg_net", "blocked_cnn", "blocked_mlp", "block_units",
    "CNN_POOL_SPECS", "MLP_POOL_SPECS",
]

DOMAINS: tuple[str, ...] = ("mlp-reg", "mlp-class", "cnn")

#: (n_blocks, layers per block) of the ten blocked MLPs (authors' code, get_initial_mlp_pool).
MLP_POOL_SPECS: tuple[tuple[int, int], ...] = (
    (3, 2), (4, 2), (5, 2), (3, 4), (6, 2), (8, 2), (6, 3), (10, 2), (4, 6), (8, 3))
#: the ten CNNs: ("vgg", conv3 layers per deep block) or
#: ("blocked"/"resnet", n_blocks, layers per block, n_fc).
CNN_POOL_SPECS: tuple[tuple, ...] = (
    ("vgg", 2), ("vgg", 3), ("vgg", 4),
    ("blocked", 3, 1, 1), ("blocked", 3, 2, 1), ("blocked", 3, 3, 1), ("blocked", 3, 4, 1),
    ("blocked", 3, 5, 1), ("blocked", 4, 4, 1),
    ("resnet", 3, 2, 1))


def _check_domain(domain: str) -> None:
    if domain not in DOMAINS:
        raise ValueError(f"unknown NAS domain {domain!r}; expected one of {DOMAINS}")


def decision_label(domain: str) -> str:
    """``"linear"`` for ``"mlp-reg"``, ``"softmax"`` for ``"mlp-class"`` and ``"cnn"``."""
    _check_domain(domain)
    return "linear" if domain == "mlp-reg" else "softmax"


def kind_of(domain: str) -> str:
    """The :class:`Architecture` kind of a domain: ``"cnn"`` or ``"mlp"``."""
    _check_domain(domain)
    return "cnn" if domain == "cnn" else "mlp"


def block_units(n_blocks: int) -> list[int]:
    """Units of successive blocks: 64, doubling per block, capped at 512 (authors' code)."""
    out, u = [], 64
    for _ in range(n_blocks):
        out.append(u)
        u = min(2 * u, 512)
    return out


def _feed_forward_edges(n: int) -> list[tuple[int, int]]:
    return [(i, i + 1) for i in range(n - 1)]


# -- CNNs -------------------------------------------------------------------------
def vgg_net(convs_per_block: int) -> Architecture:
    """A VGG-like chain: conv3 64 x2, pool, conv3 128 x2, pool, then three blocks of
    ``convs_per_block`` conv3 layers (128, 256, 512 filters) each followed by a
    max-pool, then fc 128, 256, 512, softmax (authors' code, ``get_vgg_net``).
    ``convs_per_block=4`` is VGG-19-like (16 conv + 3 fc layers)."""
    labels = ["ip", "conv3", "conv3", "max-pool", "conv3", "conv3", "max-pool"]
    units: list[int | None] = [None, 64, 64, None, 128, 128, None]
    for filters in (128, 256, 512):
        labels += ["conv3"] * convs_per_block + ["max-pool"]
        units += [filters] * convs_per_block + [None]
    labels += ["fc", "fc", "fc", "softmax", "op"]
    units += [128, 256, 512, None, None]
    strides = [1 if lab.startswith("conv") else None for lab in labels]
    return Architecture(kind="cnn", labels=labels, units=units, edges=_feed_forward_edges(len(labels)), strides=strides)


def blocked_cnn(n_blocks: int, layers_per_block: int, *, n_fc: int, layer_label: str = "conv3") -> Architecture:
    """A blocked feed-forward CNN as in He et al. (authors' code,
    ``_get_blocked_cnn_params``): conv7 (64 filters, stride 1), max-pool, then
    ``n_blocks`` blocks of ``layers_per_block`` ``layer_label`` layers (64, 128,
    256, 512, ... filters; the first layer of each block has stride 2), avg-pool,
    ``n_fc`` fc layers with twice the last block's filters, softmax."""
    filters = block_units(n_blocks)
    labels = ["ip", "conv7", "max-pool"]
    units: list[int | None] = [None, 64, None]
    strides: list[int | None] = [None, 1, None]
    for b in range(n_blocks):
        labels += [layer_label] * layers_per_block
        units += [filters[b]] * layers_per_block
        strides += [2] + [1] * (layers_per_block - 1)
    labels.append("avg-pool")
    units.append(None)
    strides.append(None)
    labels += ["fc"] * n_fc + ["softmax", "op"]
    units += [2 * filters[-1]] * n_fc + [None, None]
    strides += [None] * (n_fc + 2)
    return Architecture(kind="cnn", labels=labels, units=units, edges=_feed_forward_edges(len(labels)), strides=strides)


def cnn_pool() -> list[Architecture]:
    """The ten initial CNNs (Fig. 16)."""
    out = []
    for spec in CNN_POOL_SPECS:
        if spec[0] == "vgg":
            out.append(vgg_net(spec[1]))
        else:
            _, nb, lpb, nfc = spec
            out.append(blocked_cnn(nb, lpb, n_fc=nfc, layer_label="res3" if spec[0] == "resnet" else "conv3"))
    return out


# -- MLPs -------------------------------------------------------------------------
def blocked_mlp(domain: str, n_blocks: int, *, layers_per_block: int,
                rng: np.random.Generator | None = None, unit_layout: str = "authors") -> Architecture:
    """A blocked feed-forward MLP (authors' code, ``get_blocked_mlp``).

    Block ``b`` has ``layers_per_block`` layers with one label: even blocks cycle
    through a random order of the rectifiers, odd blocks through a random order
    of the sigmoids; then the decision layer (``linear``/``softmax``) and ``op``.

    ``unit_layout="blocked"`` gives block ``b`` the units ``block_units(n)[b]``
    (64, 128, 256, 512, 512, ...), which is what the authors' code intends.
    ``unit_layout="authors"`` (default) reproduces the networks the authors' code
    actually builds: it prepends the per-block unit list to the per-layer list
    and the network constructor keeps only the first ``n_layers`` entries, so
    hidden layer ``j`` (1-based) gets entry ``j`` of
    ``block_units(n) + [units of block b repeated per layer ...]``. Both stay in
    [64, 512], within the App. B.1 limits.
    """
    _check_domain(domain)
    if domain == "cnn":
        raise ValueError("blocked_mlp needs an MLP domain ('mlp-reg' or 'mlp-class')")
    if unit_layout not in ("authors", "blocked"):
        raise ValueError(f"unit_layout must be 'authors' or 'blocked', got {unit_layout!r}")
    rng = np.random.default_rng(0) if rng is None else rng
    rect = [MLP_RECTIFIERS[i] for i in rng.permutation(len(MLP_RECTIFIERS))]
    sig = [MLP_SIGMOIDS[i] for i in rng.permutation(len(MLP_SIGMOIDS))]
    per_block = block_units(n_blocks)
    hidden_labels: list[str] = []
    per_layer: list[int] = []
    n_rect = n_sig = 0
    for b in range(n_blocks):
        if b % 2 == 0:
            lab = rect[n_rect % len(rect)]
            n_rect += 1
        else:
            lab = sig[n_sig % len(sig)]
            n_sig += 1
        hidden_labels += [lab] * layers_per_block
        per_layer += [per_block[b]] * layers_per_block
    n_hidden = len(hidden_labels)
    if unit_layout == "authors":
        hidden_units = (per_block + per_layer)[1:n_hidden + 1]
    else:
        hidden_units = per_layer
    labels = ["ip"] + hidden_labels + [decision_label(domain), "op"]
    units: list[int | None] = [None] + list(hidden_units) + [None, None]
    return Architecture(kind="mlp", labels=labels, units=units, edges=_feed_forward_edges(len(labels)))


def mlp_pool(domain: str = "mlp-reg", seed: int = 0, *, unit_layout: str = "authors") -> list[Architecture]:
    """The ten initial MLPs (Fig. 17) for ``"mlp-reg"`` or ``"mlp-class"``; labels
    are drawn with ``numpy.random.default_rng(seed)`` (the same seed gives the
    same labels in both domains)."""
    rng = np.random.default_rng(seed)
    return [blocked_mlp(domain, nb, layers_per_block=lpb, rng=rng, unit_layout=unit_layout) for nb,
            lpb in MLP_POOL_SPECS]


def initial_pool(domain: str, seed: int = 0) -> list[Architecture]:
    """The initial pool of 10 networks of ``domain`` (``"mlp-reg"``, ``"mlp-class"`` or ``"cnn"``)."""
    _check_domain(domain)
    return cnn_pool() if domain == "cnn" else mlp_pool(domain, seed)
