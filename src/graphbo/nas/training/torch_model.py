"""Realise an :class:`~graphbo.nas.domain.architecture.Architecture` as a PyTorch module.

NASBOT (Kandasamy et al. 2018, Sec. 2, App. A.3, App. B.1) describes a network
as a labelled DAG. :func:`build_module` turns such a DAG into a
:class:`torch.nn.Module`; the rules are:

Inputs of a layer
    The outputs of its parents, concatenated along the feature (MLP) or
    channel (CNN) axis, in increasing parent index. In a CNN, parents with
    images of different sizes cannot be concatenated: :func:`build_module`
    raises :class:`ValueError` (the paper's modifiers never create such a
    network, App. B.2).

MLP layers
    A hidden layer with label ``L`` and ``u`` units is ``Linear(in, u)``
    followed by the activation ``L``: ``relu``, ``leaky-relu`` (slope 0.01),
    ``softplus``, ``elu``, ``logistic`` (sigmoid), ``tanh``, ``linear``
    (none) or ``crelu``. ``crelu`` is ``concat(relu(z), relu(-z))`` of the
    ``u`` pre-activations ``z``, so **a crelu layer outputs 2u features**
    (as TensorFlow's ``crelu``, which the authors used); its parameter count
    is that of a ``u``-unit layer.

CNN layers (all with ReLU activations, App. B.1)
    ``convk``: ``k x k`` convolution (stride 1 or 2, "same" padding
    ``k // 2``, no bias) + batch norm + ReLU, ``u`` output channels.
    ``resk``: a residual block of two ``k x k`` convolutions (App. A.3,
    He et al. 2016 Fig. 2): conv (stride ``s``) + BN + ReLU, conv (stride 1)
    + BN, added to the shortcut, then ReLU. The shortcut is the identity when
    the input already has ``u`` channels and ``s = 1``, otherwise a 1x1
    convolution with stride ``s`` + BN (a projection).
    ``max-pool`` / ``avg-pool``: 2x2 windows at stride 2 (App. B.1); an odd
    size is rounded up (``ceil_mode``), like TensorFlow's "same" pooling.
    A stride-2 layer maps an ``h x w`` image to ``ceil(h/2) x ceil(w/2)``.
    ``fc``: global average pooling of every image-valued parent (as the
    authors' code; it keeps ``fc`` widths independent of the image size),
    concatenation with any vector-valued parents, ``Linear(in, u)`` + ReLU.

Decision layers (the parents of ``op``)
    Each is ``Linear(in, n_outputs)`` (after global average pooling in a
    CNN). Their label fixes the task: all ``softmax`` -> classification, all
    ``linear`` -> regression. ``units`` of a decision layer is ignored: its
    width is ``n_outputs``.

Output layer ``op`` (Sec. 2: it averages the decision layers)
    Regression: the mean of the decision layers' outputs. Classification:
    the **log of the mean of the decision layers' softmax probabilities**,
    ``log((1/D) sum_d softmax(z_d))``. These are log-probabilities, so
    :class:`torch.nn.CrossEntropyLoss` applied to them is the negative
    log-likelihood of the averaged prediction (the softmax of the loss leaves
    log-probabilities unchanged); with one decision layer they are simply
    ``log_softmax(z)``.

Parameters are float32 (the usual precision for training networks).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import torch
from torch import nn
from torch.nn import functional as F

from ..domain.architecture import Architecture

__all__ = [
    "MLP_LABELS",
    "CNN_LABELS",
    "ArchitectureModule",
    "build_module",
    "topological_order",
    "layer_output_shapes",
    "decision_layers",
    "task_of",
]

MLP_LABELS = ("relu", "crelu", "leaky-relu", "softplus", "elu", "logistic", "tanh", "linear")
CNN_LABELS = ("conv3", "conv5", "conv7", "res3", "res5", "res7", "max-pool", "avg-pool", "fc")
DECISION_LABELS = ("softmax", "linear")

_ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {
    "relu": nn.ReLU,
    "leaky-relu": lambda: nn.LeakyReLU(0.01),
    "softplus": nn.Softplus,
    "elu": nn.ELU,
    "logistic": nn.Sigmoid,
    "tanh": nn.Tanh,
    "linear": nn.Identity,
}


def _as_arch(arch: Architecture | Mapping[str, Any]) -> Architecture:
    if isinstance(arch, Architecture):
        return arch
    if isinstance(arch, Mapping):
        return Architecture.from_dict(dict(arch))
    raise TypeError(f"expected an Architecture or its dict, got {type(arch).__name__}")


def topological_order(arch: Architecture) -> list[int]:
    """Layer indices in a topological order (:meth:`Architecture.topological_order`: Kahn's
    algorithm, smallest index first), after checking the edges name layers that exist.

    Raises
    ------
    ValueError
        If an edge names a layer that does not exist or is a self-loop, or the graph has a
        cycle (:class:`InvalidArchitectureError`, a ``ValueError``).
    """
    n = arch.n_layers
    for a, b in arch.edges:
        if not (0 <= a < n and 0 <= b < n):
            raise ValueError(f"edge ({a}, {b}) names a layer outside 0..{n - 1}")
        if a == b:
            raise ValueError(f"edge ({a}, {b}) is a self-loop")
    return arch.topological_order()


def decision_layers(arch: Architecture) -> list[int]:
    """Indices of the decision layers: the parents of the unique ``op`` layer."""
    ops = [i for i, lab in enumerate(arch.labels) if lab == "op"]
    if len(ops) != 1:
        raise ValueError(f"an architecture needs exactly one 'op' layer, found {len(ops)}")
    return sorted(arch.parents(ops[0]))


def task_of(arch: Architecture | Mapping[str, Any]) -> str:
    """``"classification"`` if every decision layer is ``softmax``, ``"regression"`` if every one is ``linear``."""
    arch = _as_arch(arch)
    dec = decision_layers(arch)
    labels = {arch.labels[i] for i in dec}
    if labels == {"softmax"}:
        return "classification"
    if labels == {"linear"}:
        return "regression"
    raise ValueError(
        "decision layers (the parents of 'op') must all be 'softmax' (classification) or all 'linear' "
        f"(regression); got {[(i, arch.labels[i]) for i in dec]}"
    )


def _check_structure(arch: Architecture) -> tuple[int, int, list[int], list[int]]:
    """Basic checks needed to build a module; returns (ip, op, order, decision layers)."""
    if arch.kind not in ("mlp", "cnn"):
        raise ValueError(f"architecture kind must be 'mlp' or 'cnn', got {arch.kind!r}")
    n = arch.n_layers
    if len(arch.units) != n:
        raise ValueError(f"units has {len(arch.units)} entries for {n} layers")
    if arch.strides is not None and len(arch.strides) != n:
        raise ValueError(f"strides has {len(arch.strides)} entries for {n} layers")
    ips = [i for i, lab in enumerate(arch.labels) if lab == "ip"]
    if len(ips) != 1:
        raise ValueError(f"an architecture needs exactly one 'ip' layer, found {len(ips)}")
    order = topological_order(arch)
    dec = decision_layers(arch)
    ip = ips[0]
    op = next(i for i, lab in enumerate(arch.labels) if lab == "op")
    if not dec:
        raise ValueError("the 'op' layer has no parents: a network needs at least one decision layer")
    if arch.parents(ip):
        raise ValueError(f"the 'ip' layer {ip} has parents {arch.parents(ip)}")
    if arch.children(op):
        raise ValueError(f"the 'op' layer {op} has children {arch.children(op)}")
    if ip in dec:
        raise ValueError("the 'ip' layer is connected directly to 'op': no decision layer")
    allowed = MLP_LABELS if arch.kind == "mlp" else CNN_LABELS
    for i, lab in enumerate(arch.labels):
        if i in (ip, op):
            continue
        if not arch.parents(i):
            raise ValueError(f"layer {i} ({lab}) has no parents: it is not reachable from 'ip'")
        if not arch.children(i):
            raise ValueError(f"layer {i} ({lab}) has no children: its output never reaches 'op'")
        if i in dec:
            if lab not in DECISION_LABELS:
                raise ValueError(f"decision layer {i} (a parent of 'op') has label {lab!r}; "
                                 f"expected one of {DECISION_LABELS}")
            continue
        if lab not in allowed:
            raise ValueError(f"layer {i} has label {lab!r}, not a {arch.kind.upper()} processing label "
                             f"{allowed}" + (" (softmax/linear decision layers must feed 'op')"
                                              if lab in DECISION_LABELS else ""))
        needs_units = arch.kind == "mlp" or lab.startswith(("conv", "res")) or lab == "fc"
        if needs_units:
            u = arch.units[i]
            if u is None or int(u) != u or u < 1:
                raise ValueError(f"layer {i} ({lab}) needs a positive integer number of units, got {u!r}")
    task_of(arch)
    return ip, op, order, dec


def _stride(arch: Architecture, i: int) -> int:
    s = None if arch.strides is None else arch.strides[i]
    if s is None:
        return 1
    if s not in (1, 2):
        raise ValueError(f"layer {i} ({arch.labels[i]}) has stride {s!r}; only 1 or 2 are supported")
    return int(s)


def _units(arch: Architecture, i: int) -> int:
    """Layer ``i``'s unit count, which :func:`_check_structure` found to be a positive integer."""
    u = arch.units[i]
    assert u is not None
    return int(u)


def _shape(shape: tuple[int, ...] | None) -> tuple[int, ...]:
    """A parent's output shape, set before its children's (topological order)."""
    assert shape is not None
    return shape


def _half(h: int) -> int:
    return (h + 1) // 2


def layer_output_shapes(arch: Architecture | Mapping[str, Any],
                        input_shape: int | Sequence[int], *, n_outputs: int) -> list[tuple[int, ...]]:
    """Per-sample output shape of every layer: ``(features,)`` or ``(channels, height, width)``.

    Checks everything :func:`build_module` needs (structure, labels, units,
    strides, equal image sizes of concatenated parents) and raises
    :class:`ValueError` naming the offending layer otherwise.
    """
    arch = _as_arch(arch)
    ip, op, order, dec = _check_structure(arch)
    in_shape = _input_shape(arch, input_shape)
    if int(n_outputs) != n_outputs or n_outputs < 1:
        raise ValueError(f"n_outputs must be a positive integer, got {n_outputs!r}")
    shapes: list[tuple[int, ...] | None] = [None] * arch.n_layers
    for i in order:
        lab = arch.labels[i]
        if i == ip:
            shapes[i] = in_shape
            continue
        ps = [_shape(shapes[p]) for p in sorted(arch.parents(i))]
        if i == op:
            shapes[i] = (int(n_outputs),)
            continue
        if arch.kind == "mlp":
            if i in dec:
                shapes[i] = (int(n_outputs),)
            else:
                u = _units(arch, i)
                shapes[i] = (2 * u,) if lab == "crelu" else (u,)
            continue
        # CNN
        images = [s for s in ps if len(s) == 3]
        sizes = sorted({s[1:] for s in images})
        if len(sizes) > 1:
            detail = ", ".join(f"{p}: {_shape(shapes[p])[1]}x{_shape(shapes[p])[2]}"
                               for p in sorted(arch.parents(i)) if len(_shape(shapes[p])) == 3)
            raise ValueError(f"layer {i} ({lab}) concatenates parents with different image sizes ({detail}); "
                             "images can only be concatenated when their sizes agree")
        if lab in ("fc",) or i in dec:
            shapes[i] = (int(n_outputs),) if i in dec else (_units(arch, i),)
            continue
        if len(images) != len(ps):
            vec = [p for p in sorted(arch.parents(i)) if len(_shape(shapes[p])) == 1]
            raise ValueError(f"layer {i} ({lab}) needs images but parents {vec} output vectors (fc layers)")
        c_in = sum(s[0] for s in images)
        h, w = sizes[0]
        if lab.endswith("pool"):
            shapes[i] = (c_in, _half(h), _half(w))
        else:
            s = _stride(arch, i)
            if s == 2:
                h, w = _half(h), _half(w)
            shapes[i] = (_units(arch, i), h, w)
    return [_shape(s) for s in shapes]  # every layer lies on a path from ip (checked): all are set


def _input_shape(arch: Architecture, input_shape: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(input_shape, int):
        shape: tuple[int, ...] = (input_shape,)
    else:
        shape = tuple(int(v) for v in input_shape)
    if any(v < 1 for v in shape):
        raise ValueError(f"input_shape must be positive, got {input_shape!r}")
    if arch.kind == "mlp" and len(shape) != 1:
        raise ValueError(f"an MLP needs a 1-d input_shape (features,), got {input_shape!r}")
    if arch.kind == "cnn" and len(shape) != 3:
        raise ValueError(f"a CNN needs a 3-d input_shape (channels, height, width), got {input_shape!r}")
    return shape


# ---------------------------------------------------------------------------
# Layer modules
# ---------------------------------------------------------------------------


class _CReLU(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([F.relu(x), F.relu(-x)], dim=1)


class _ConvBNReLU(nn.Sequential):
    def __init__(self, c_in: int, c_out: int, k: int, stride: int):
        super().__init__(
            nn.Conv2d(c_in, c_out, k, stride=stride, padding=k // 2, bias=False),
            nn.BatchNorm2d(c_out),
            nn.ReLU(),
        )


class _ResBlock(nn.Module):
    """Two ``k x k`` convolutions with a skip connection (App. A.3; He et al. 2016, Fig. 2)."""

    def __init__(self, c_in: int, c_out: int, k: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, k, stride=stride, padding=k // 2, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, k, stride=1, padding=k // 2, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        if c_in != c_out or stride != 1:
            self.shortcut: nn.Module = nn.Sequential(
                nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out))
        else:
            self.shortcut = nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + self.shortcut(x))


class _Dense(nn.Module):
    """Global-average-pool image inputs, then a linear map and an activation."""

    def __init__(self, n_in: int, n_out: int, activation: nn.Module):
        super().__init__()
        self.linear = nn.Linear(n_in, n_out)
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.activation(self.linear(x))


class ArchitectureModule(nn.Module):
    """A network realised from an :class:`Architecture` (see the module docstring).

    Attributes
    ----------
    arch : Architecture
    task : {"classification", "regression"}
    input_shape : tuple of int
    n_outputs : int
    shapes : list of tuple
        Per-sample output shape of every layer.
    order : list of int
        The topological order the forward pass follows.

    ``forward(x)`` returns, for a batch ``x`` of shape ``(N, *input_shape)``,
    a tensor ``(N, n_outputs)``: log-probabilities of the averaged softmax
    outputs for classification, the averaged outputs for regression.
    """

    def __init__(self, arch: Architecture, input_shape: int | Sequence[int], *, n_outputs: int):
        super().__init__()
        self.arch = arch
        self.shapes = layer_output_shapes(arch, input_shape, n_outputs=n_outputs)
        self.input_shape = tuple(self.shapes[[i for i, l in enumerate(arch.labels) if l == "ip"][0]])
        self.n_outputs = int(n_outputs)
        self.task = task_of(arch)
        self.ip, self.op, self.order, self.decision = _check_structure(arch)
        self.inputs = {i: sorted(arch.parents(i)) for i in range(arch.n_layers)}
        layers: dict[str, nn.Module] = {}
        for i in self.order:
            if i in (self.ip, self.op):
                continue
            lab = arch.labels[i]
            ps = [self.shapes[p] for p in self.inputs[i]]
            if arch.kind == "mlp" or lab == "fc" or i in self.decision:
                n_in = sum(s[0] for s in ps)  # images are global-average-pooled to their channels
                if i in self.decision:
                    layers[str(i)] = nn.Linear(n_in, self.n_outputs)
                elif lab == "fc":
                    layers[str(i)] = _Dense(n_in, _units(arch, i), nn.ReLU())
                elif lab == "crelu":
                    layers[str(i)] = _Dense(n_in, _units(arch, i), _CReLU())
                else:
                    layers[str(i)] = _Dense(n_in, _units(arch, i), _ACTIVATIONS[lab]())
                continue
            c_in = sum(s[0] for s in ps)
            if lab == "max-pool":
                layers[str(i)] = nn.MaxPool2d(2, 2, ceil_mode=True)
            elif lab == "avg-pool":
                layers[str(i)] = nn.AvgPool2d(2, 2, ceil_mode=True)
            elif lab.startswith("conv"):
                layers[str(i)] = _ConvBNReLU(c_in, _units(arch, i), int(lab[4:]), _stride(arch, i))
            elif lab.startswith("res"):
                layers[str(i)] = _ResBlock(c_in, _units(arch, i), int(lab[3:]), _stride(arch, i))
            else:  # pragma: no cover - labels were checked
                raise ValueError(f"layer {i}: unknown label {lab!r}")
        self.layers = nn.ModuleDict(layers)
        self._flat = {i: arch.kind == "mlp" or arch.labels[i] == "fc" or i in self.decision
                      for i in range(arch.n_layers)}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if tuple(x.shape[1:]) != self.input_shape:
            raise ValueError(f"expected inputs of shape (N, {', '.join(map(str, self.input_shape))}), "
                             f"got {tuple(x.shape)}")
        out: dict[int, torch.Tensor] = {self.ip: x}
        for i in self.order:
            if i in (self.ip, self.op):
                continue
            parts = [out[p] for p in self.inputs[i]]
            if self._flat[i]:
                parts = [t.mean(dim=(2, 3)) if t.dim() == 4 else t for t in parts]
            h = parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)
            out[i] = self.layers[str(i)](h)
        dec = [out[d] for d in self.decision]
        if self.task == "regression":
            return torch.stack(dec, 0).mean(0)
        logp = torch.stack([F.log_softmax(z, dim=1) for z in dec], 0)
        return torch.logsumexp(logp, dim=0) - math.log(len(dec))


def build_module(arch: Architecture | Mapping[str, Any], input_shape: int | Sequence[int], *, n_outputs: int,
                 seed: int | None = None) -> ArchitectureModule:
    """Build the PyTorch network an architecture describes.

    Parameters
    ----------
    arch : Architecture or dict
        A valid network (exactly one ``ip`` and ``op``, every layer on a path
        from ``ip`` to ``op``, decision layers ``softmax`` or ``linear``).
    input_shape : int or sequence of int
        ``(features,)`` for an MLP, ``(channels, height, width)`` for a CNN.
    n_outputs : int
        Classes (classification) or targets (regression); the width of every
        decision layer.
    seed : int, optional
        Seed of the weight initialisation (PyTorch's default schemes); the
        global RNG state is left untouched. ``None`` draws from the global RNG.

    Raises
    ------
    ValueError
        For an invalid network, naming the layer: a cycle, a missing/duplicate
        ``ip``/``op``, an unknown label, a missing unit count, a stride other
        than 1/2, parents with different image sizes, a conv/pool layer fed by
        an ``fc`` layer.
    """
    arch = _as_arch(arch)
    if seed is None:
        return ArchitectureModule(arch, input_shape, n_outputs=n_outputs)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        return ArchitectureModule(arch, input_shape, n_outputs=n_outputs)
