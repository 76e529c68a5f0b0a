"""Joint optimisation of a NASNet-style block and its SGD hyper-parameters (BO-FM Sec. 5.3, supp. D.2).

The search space has 18 variables: 12 discrete ones describing one block
(8,153,726,976 blocks, the paper's count) and the 6 continuous
hyper-parameters of SGD with a step learning-rate schedule.

The block
---------
A block takes two inputs, ``S_-1`` and ``S_0``, and computes four states
``S_1 .. S_4``. State ``S_k`` picks two earlier states ``(i, j)``, ``i < j < k``,
and two operations, and sums the results::

    S_k = op_k1(S_i) + op_k2(S_j)

``S_1`` always reads ``(S_-1, S_0)``; the pair of ``S_4`` may not be
``(S_-1, S_0)`` (supp. D.2: "to avoid the identity block"). The block has two
outputs: ``S_4`` and one of ``S_1, S_2, S_3``. The eight operations are those
of supp. D.2; "separable" convolutions are 4-group convolutions, as in the
authors' code, and every convolution is pre-activated (batch norm, ReLU, conv)::

    id, conv1x1, conv3x3, conv5x5, sepconv3x3, sepconv5x5, maxpool3x3, maxpool5x5

(max-pools have stride 1 and keep the resolution). The discrete variables and
their graphs (supp. D.2) are:

* ``s1_op1, s1_op2, ..., s4_op2``: 8 :class:`Categorical` over the 8
  operations (complete graphs);
* ``s2_inputs, s3_inputs, s4_inputs``: 3 :class:`GraphVariable` over input
  pairs with 3, 6 and 9 vertices; two pairs are adjacent when they share one
  state and their other states differ by one (``(-1,0) ~ (-1,1)``,
  ``(-1,1) ~ (0,1)``, ``(0,2) ~ (1,2)``, but not ``(-1,0) ~ (0,1)``). Values are
  the strings ``"(i,j)"``;
* ``output``: an :class:`Ordinal` over ``1, 2, 3`` (a path graph), the state
  given out next to ``S_4``.

The continuous variables (supp. Table 4) are ``lr`` in ``[1e-3, 0.1]`` (log),
``momentum`` in ``[0.8, 1]``, ``weight_decay`` in ``[1e-6, 1e-2]`` (log),
``lr_gamma`` (the reduction factor) in ``[0.1, 0.9]`` and ``milestone1_ratio``,
``milestone2_ratio`` in ``[0, 1]``.

The network and its training
----------------------------
Supp. D.2: the block is stacked 3 times with down-sampling in between::

    conv3x3 (C_in -> 16)                     -> x_-1 = x_0
    for c in (8, 16, 32):
        [max-pool 2x2 on each stream, except before the first block]
        conv1x1 (-> c) on each stream
        (x_-1, x_0) <- block(x_-1, x_0)       # its two outputs
    max-pool 2x2 on each, concatenate, conv1x1 (2c -> c), ReLU, batch norm, linear (-> 10)

Every block has its own weights. Weights are initialised as in the authors'
code (Kaiming-normal convolutions and linear layer, zero biases, batch-norm
scales uniform on ``[0, 1]``). Training is plain SGD (cross entropy, batch
size 32, the given momentum and weight decay) for ``E`` epochs with the step
schedule of supp. Table 5: the learning rate of (1-based) epoch ``t`` is ::

    l            if t <= E r1
    l gamma      if E r1 < t <= E (r1 + (1 - r1) r2)
    l gamma^2    otherwise

The validation error of the final model (evaluation mode) is averaged over
``n_repeats`` trainings from different initialisations, and the objective is ::

    f = validation error + 0.02 * FLOPs / max FLOPs,

with the maximum over the space attained by the block whose eight operations
are all ``conv5x5`` (the authors' choice; all states are computed by that
block). FLOPs are counted analytically for one image with the counting rules of
``pthflops``, which the authors used (see :func:`network_flops`); states that
feed neither output are not computed and not counted.

Data
----
By default scikit-learn's bundled 8 x 8 digits (1797 images, no download): a
``RandomState(seed)`` permutation, the first half trained on, the second half
for validation (the authors split FashionMNIST's 60,000 training images into
two halves the same way). With ``data_path=`` the FashionMNIST training files
in the standard idx format (``train-images-idx3-ubyte[.gz]`` and
``train-labels-idx1-ubyte[.gz]``) are read from disk (see :func:`read_idx`)
and trained on with the authors' augmentation (random 28 x 28 crop after
zero-padding 4, random horizontal flip).
"""

from __future__ import annotations

import gzip
import itertools
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence, TypedDict

import numpy as np
import torch
from torch import nn

from ..nas.training.training import count_correct, train_module
from ..pruners import TrialPruned, report, should_prune
from ..spaces import Categorical, Continuous, GraphVariable, Ordinal, Space
from .base import Benchmark
from .nas_binary import FLOPS_WEIGHT, _load_data

__all__ = [
    "NASSGD",
    "Block",
    "OPERATIONS",
    "N_STATES",
    "BLOCK_CHANNELS",
    "HYPERPARAMETERS",
    "input_pairs",
    "pair_label",
    "input_pair_adjacency",
    "scheduled_lr",
    "network_flops",
    "max_flops",
    "read_idx",
    "load_fashion_mnist",
]

#: the eight operations of supp. D.2 (the authors' order)
OPERATIONS = ("id", "conv1x1", "conv3x3", "conv5x5", "sepconv3x3", "sepconv5x5", "maxpool3x3", "maxpool5x5")
# name -> (kind, kernel size, groups)
_OP_SPEC = {
    "id": ("id", 1, 1),
    "conv1x1": ("conv", 1, 1),
    "conv3x3": ("conv", 3, 1),
    "conv5x5": ("conv", 5, 1),
    "sepconv3x3": ("conv", 3, 4),
    "sepconv5x5": ("conv", 5, 4),
    "maxpool3x3": ("pool", 3, 1),
    "maxpool5x5": ("pool", 5, 1),
}
HEAVIEST_OP = "conv5x5"
N_STATES = 4
OUTPUT_STATES = (1, 2, 3)
STEM_CHANNELS = 16
#: channels of the three stacked blocks
BLOCK_CHANNELS = (8, 16, 32)
N_CLASSES = 10
BATCH_SIZE = 32
VALID_BATCH = 1000  # images per forward pass when validating

#: supp. Table 4: name -> (low, high, log scale)
HYPERPARAMETERS = {
    "lr": (1e-3, 1e-1, True),
    "momentum": (0.8, 1.0, False),
    "weight_decay": (1e-6, 1e-2, True),
    "lr_gamma": (0.1, 0.9, False),
    "milestone1_ratio": (0.0, 1.0, False),
    "milestone2_ratio": (0.0, 1.0, False),
}

PAPER_EPOCHS = 25  # supp. Table 5 caption
PAPER_REPEATS = 4  # supp. D.2, "averaged over 4 validation errors"
DIGITS_EPOCHS = 8
DIGITS_REPEATS = 1

class _DataLayout(TypedDict):
    shape: tuple[int, int, int]  # (channels, height, width)
    pool_padding: int  # of the down-sampling max-pools


class _DataSettings(_DataLayout, total=False):
    """A data set's layout and, where fixed, its normalisation (otherwise the training pixels' statistics)."""

    mean: float
    std: float


# per data set: image shape, padding of the down-sampling max-pools, normalisation
_DATA: dict[str, _DataSettings] = {
    "digits": _DataSettings(shape=(1, 8, 8), pool_padding=0),
    # FashionMNIST: the authors' normalisation constants and padded down-sampling (28 -> 15 -> 8 -> 4)
    "fashion-mnist": _DataSettings(shape=(1, 28, 28), pool_padding=1, mean=0.1307, std=0.3081),
}


# ---------------------------------------------------------------------------
# The discrete space
# ---------------------------------------------------------------------------


def pair_label(pair: Sequence[int]) -> str:
    """The value naming an input pair: ``(-1, 2) -> "(-1,2)"``."""
    i, j = (int(v) for v in pair)
    return f"({i},{j})"


def _parse_pair(label: str) -> tuple[int, int]:
    i, j = label.strip("()").split(",")
    return int(i), int(j)


def input_pairs(state: int) -> list[tuple[int, int]]:
    """The allowed input pairs of ``S_state`` (``2 <= state <= 4``), in lexicographic order.

    Pairs ``(i, j)`` with ``-1 <= i < j < state``; for the last state ``(-1, 0)``
    is excluded (supp. D.2).
    """
    if not 2 <= state <= N_STATES:
        raise ValueError(f"NASSGD: input pairs are chosen for states 2..{N_STATES}, got {state!r}")
    pairs = list(itertools.combinations(range(-1, state), 2))
    if state == N_STATES:
        pairs.remove((-1, 0))
    return pairs


def input_pair_adjacency(pairs: Sequence[tuple[int, int]]) -> np.ndarray:
    """Adjacency of the input-pair graph (supp. D.2).

    Two pairs are adjacent when exactly one state is common to both and the
    two remaining states differ by one.
    """
    k = len(pairs)
    adj = np.zeros((k, k))
    for a in range(k):
        for b in range(a + 1, k):
            p, q = set(pairs[a]), set(pairs[b])
            if len(p & q) != 1:
                continue
            (x,), (y,) = p - q, q - p
            if abs(x - y) == 1:
                adj[a, b] = adj[b, a] = 1.0
    return adj


def _build_space() -> Space:
    variables: dict[str, Any] = {}
    for name, (low, high, log) in HYPERPARAMETERS.items():
        variables[name] = Continuous(low, high, log=log)
    for k in range(1, N_STATES + 1):
        for m in (1, 2):
            variables[f"s{k}_op{m}"] = Categorical(OPERATIONS)
    for k in range(2, N_STATES + 1):
        pairs = input_pairs(k)
        variables[f"s{k}_inputs"] = GraphVariable([pair_label(p) for p in pairs], input_pair_adjacency(pairs))
    variables["output"] = Ordinal(OUTPUT_STATES)
    return Space(variables)


@dataclass(frozen=True, kw_only=True)
class Block:
    """A decoded block.

    Attributes
    ----------
    ops : tuple of 4 (str, str)
        The two operations of ``S_1 .. S_4``.
    inputs : tuple of 4 (int, int)
        The two input states of ``S_1 .. S_4`` (``-1`` and ``0`` are the block's inputs).
    output : int
        The state given out next to ``S_4`` (1, 2 or 3).
    """

    ops: tuple[tuple[str, str], ...]
    inputs: tuple[tuple[int, int], ...]
    output: int

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "Block":
        ops = tuple((str(config[f"s{k}_op1"]), str(config[f"s{k}_op2"])) for k in range(1, N_STATES + 1))
        inputs = ((-1, 0),) + tuple(_parse_pair(str(config[f"s{k}_inputs"])) for k in range(2, N_STATES + 1))
        return cls(ops=ops, inputs=inputs, output=int(config["output"]))

    def live_states(self) -> list[int]:
        """States (1-based, ascending) on which an output of the block depends."""
        needed = {self.output, N_STATES}
        for k in range(N_STATES, 0, -1):
            if k in needed:
                needed.update(s for s in self.inputs[k - 1] if s >= 1)
        return sorted(needed)


def _heaviest_block() -> Block:
    """All eight operations ``conv5x5``; every state live (``S_k`` reads ``(S_k-2, S_k-1)``, output ``S_3``)."""
    return Block(ops=((HEAVIEST_OP, HEAVIEST_OP),) * N_STATES,
                 inputs=tuple((k - 2, k - 1) for k in range(1, N_STATES + 1)), output=N_STATES - 1)


# ---------------------------------------------------------------------------
# Learning-rate schedule and FLOPs
# ---------------------------------------------------------------------------


def scheduled_lr(epoch: int, lr: float, *, gamma: float, ratio1: float, ratio2: float, total_epochs: int) -> float:
    """Learning rate of the 0-based ``epoch`` (supp. Table 5).

    With ``t = epoch + 1`` and ``E = total_epochs``: ``lr`` for ``t <= E r1``,
    ``lr gamma`` for ``E r1 < t <= E (r1 + (1 - r1) r2)`` and ``lr gamma^2`` after.
    """
    t = epoch + 1
    first = total_epochs * ratio1
    second = total_epochs * (ratio1 + (1.0 - ratio1) * ratio2)
    if t <= first:
        return lr
    if t <= second:
        return lr * gamma
    return lr * gamma * gamma


def _pool_out(h: int, padding: int) -> int:
    return (h + 2 * padding - 2) // 2 + 1


def _op_flops(op: str, c: int, hw: int) -> int:
    kind, k, groups = _OP_SPEC[op]
    if kind == "conv":  # batch norm (2/elem) + ReLU (2/elem) + conv ((c k^2 / groups + 1)/output)
        return 2 * c * hw + 2 * c * hw + (c * k * k // groups + 1) * c * hw
    if kind == "pool":
        return (k * k - 1) * c * hw
    return 0


def network_flops(block: Block, *, shape: Sequence[int] = (1, 8, 8), pool_padding: int = 0,
                  n_classes: int = N_CLASSES) -> int:
    """FLOPs of one forward pass of one image through the stacked network.

    Counting rules of ``pthflops`` (one multiply-add is one FLOP): a
    convolution costs ``C_in k^2 / groups + 1`` (bias) per output element;
    batch norm and ReLU 2 per element; a ``k x k`` max-pool ``k^2 - 1`` per
    output element; an addition 1 per element; a linear layer ``in`` per
    output; identities and concatenation are free. Only states an output
    depends on are counted (they are the only ones computed).
    """
    c_in, h, w = (int(v) for v in shape)
    total = (c_in * 9 + 1) * STEM_CHANNELS * h * w  # stem conv3x3
    c_prev = STEM_CHANNELS
    live = block.live_states()
    for i, c in enumerate(BLOCK_CHANNELS):
        if i > 0:
            h, w = _pool_out(h, pool_padding), _pool_out(w, pool_padding)
            total += 2 * 3 * c_prev * h * w  # two 2x2 max-pools
        hw = h * w
        total += 2 * (c_prev + 1) * c * hw  # two conv1x1
        for k in live:
            op1, op2 = block.ops[k - 1]
            total += _op_flops(op1, c, hw) + _op_flops(op2, c, hw) + c * hw  # two ops and their sum
        c_prev = c
    h, w = _pool_out(h, 0), _pool_out(w, 0)
    total += 2 * 3 * c_prev * h * w  # two 2x2 max-pools
    total += (2 * c_prev + 1) * c_prev * h * w + 4 * c_prev * h * w  # conv1x1 + ReLU + batch norm
    total += c_prev * h * w * n_classes  # linear
    return int(total)


def max_flops(shape: Sequence[int] = (1, 8, 8), *, pool_padding: int = 0, n_classes: int = N_CLASSES) -> int:
    """FLOPs of the heaviest network of the space: every operation ``conv5x5``."""
    return network_flops(_heaviest_block(), shape=shape, pool_padding=pool_padding, n_classes=n_classes)


# ---------------------------------------------------------------------------
# The network
# ---------------------------------------------------------------------------


def _make_op(op: str, c: int) -> nn.Module:
    kind, k, groups = _OP_SPEC[op]
    if kind == "conv":
        return nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(),
                             nn.Conv2d(c, c, kernel_size=k, padding=k // 2, groups=groups, bias=True))
    if kind == "pool":
        return nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)
    return nn.Identity()


class _BlockModule(nn.Module):
    def __init__(self, block: Block, channels: int):
        super().__init__()
        self.block = block
        self.live = block.live_states()
        self.ops = nn.ModuleDict({f"s{k}_op{m}": _make_op(block.ops[k - 1][m - 1], channels)
                                  for k in self.live for m in (1, 2)})

    def forward(self, x_prev, x_cur):
        acts = {-1: x_prev, 0: x_cur}
        for k in self.live:
            i, j = self.block.inputs[k - 1]
            acts[k] = self.ops[f"s{k}_op1"](acts[i]) + self.ops[f"s{k}_op2"](acts[j])
        return acts[self.block.output], acts[N_STATES]


class _Network(nn.Module):
    def __init__(self, block: Block, shape: Sequence[int], pool_padding: int, n_classes: int = N_CLASSES):
        super().__init__()
        c_in, h, w = (int(v) for v in shape)
        self.stem = nn.Conv2d(c_in, STEM_CHANNELS, kernel_size=3, padding=1, bias=True)
        self.pools = nn.ModuleList()
        self.pre = nn.ModuleList()
        self.blocks = nn.ModuleList()
        c_prev = STEM_CHANNELS
        for i, c in enumerate(BLOCK_CHANNELS):
            if i > 0:
                self.pools.append(nn.MaxPool2d(2, stride=2, padding=pool_padding))
                h, w = _pool_out(h, pool_padding), _pool_out(w, pool_padding)
            self.pre.append(nn.ModuleList([nn.Conv2d(c_prev, c, 1, bias=True), nn.Conv2d(c_prev, c, 1, bias=True)]))
            self.blocks.append(_BlockModule(block, c))
            c_prev = c
        self.last_pool = nn.MaxPool2d(2, stride=2)
        h, w = _pool_out(h, 0), _pool_out(w, 0)
        self.last_conv = nn.Conv2d(2 * c_prev, c_prev, 1, bias=True)
        self.last_bn = nn.BatchNorm2d(c_prev)
        self.fc = nn.Linear(c_prev * h * w, n_classes)
        self._initialise()

    def _initialise(self):
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_normal_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.uniform_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        a = b = self.stem(x)
        for i, block in enumerate(self.blocks):
            if i > 0:
                pool = self.pools[i - 1]
                a, b = pool(a), pool(b)
            a, b = self.pre[i][0](a), self.pre[i][1](b)
            a, b = block(a, b)
        x = torch.cat([self.last_pool(a), self.last_pool(b)], dim=1)
        x = self.last_bn(torch.relu(self.last_conv(x)))
        return self.fc(torch.flatten(x, 1))


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------

_IDX_TYPES: dict[int, np.dtype[Any]] = {
    0x08: np.dtype(np.uint8), 0x09: np.dtype(np.int8), 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8"),
}


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an idx file (the MNIST/FashionMNIST format), gzip-compressed when it ends in ``.gz``.

    The header is two zero bytes, a type byte (``0x08`` unsigned byte, ...),
    the number of dimensions, then each dimension as a big-endian 32-bit
    integer; the data follow in C order.
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        raise ValueError(f"{path}: not an idx file (bad magic number {raw[:4]!r})")
    dtype, ndim = _IDX_TYPES[raw[2]], raw[3]
    start = 4 + 4 * ndim
    if len(raw) < start:
        raise ValueError(f"{path}: idx header is truncated")
    dims = [int.from_bytes(raw[4 + 4 * d: 8 + 4 * d], "big") for d in range(ndim)]
    expected = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    if len(raw) - start != expected:
        raise ValueError(f"{path}: idx header says shape {tuple(dims)} ({expected} bytes of data), "
                         f"the file has {len(raw) - start}")
    return np.frombuffer(raw, dtype=dtype, offset=start).reshape(dims).astype(dtype.newbyteorder("="))


def _find_idx(root: Path, stems: Sequence[str]) -> Path:
    for folder in (root, root / "raw", root / "FashionMNIST" / "raw"):
        for stem in stems:
            for name in (stem, stem + ".gz"):
                if (folder / name).is_file():
                    return folder / name
    raise FileNotFoundError(f"NASSGD: none of {list(stems)} (or .gz) found in {root}, {root / 'raw'} "
                            f"or {root / 'FashionMNIST' / 'raw'}")


def load_fashion_mnist(data_path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """FashionMNIST training images ``(N, 1, 28, 28)`` in ``[0, 1]`` and labels, from idx files.

    ``data_path`` is a folder holding ``train-images-idx3-ubyte[.gz]`` and
    ``train-labels-idx1-ubyte[.gz]`` (directly, in ``raw/`` or in
    ``FashionMNIST/raw/`` as torchvision stores them).
    """
    root = Path(data_path).expanduser()
    if not root.is_dir():
        raise FileNotFoundError(f"NASSGD: data_path {str(root)!r} is not a folder")
    x = read_idx(_find_idx(root, ["train-images-idx3-ubyte", "train-images.idx3-ubyte"]))
    y = read_idx(_find_idx(root, ["train-labels-idx1-ubyte", "train-labels.idx1-ubyte"]))
    if x.ndim != 3 or x.shape[1:] != (28, 28) or x.dtype != np.uint8:
        raise ValueError(f"NASSGD: expected 28 x 28 unsigned-byte images, got shape {x.shape} of {x.dtype}")
    if y.ndim != 1 or y.shape[0] != x.shape[0]:
        raise ValueError(f"NASSGD: {x.shape[0]} images but labels of shape {y.shape}")
    if y.size and (y.min() < 0 or y.max() >= N_CLASSES):
        raise ValueError(f"NASSGD: labels must lie in 0..{N_CLASSES - 1}, got {int(y.min())}..{int(y.max())}")
    return (x.astype(np.float32) / 255.0)[:, None], y.astype(np.int64)


def _augment(xb: torch.Tensor, gen: torch.Generator, pad: int, fill: float) -> torch.Tensor:
    """Random crop of the input size after padding by ``pad`` with ``fill``, then a random horizontal flip."""
    n, c, h, w = xb.shape
    padded = torch.nn.functional.pad(xb, (pad, pad, pad, pad), value=fill)
    dy = torch.randint(0, 2 * pad + 1, (n,), generator=gen)
    dx = torch.randint(0, 2 * pad + 1, (n,), generator=gen)
    flip = torch.rand(n, generator=gen) < 0.5
    rows = (dy[:, None] + torch.arange(h)[None, :])[:, :, None]  # (n, h, 1)
    cols = dx[:, None] + torch.arange(w)[None, :]
    cols = torch.where(flip[:, None], cols.flip(1), cols)[:, None, :]  # (n, 1, w)
    idx_n = torch.arange(n)[:, None, None]
    return torch.stack([padded[idx_n, ch, rows, cols] for ch in range(c)], dim=1)


# ---------------------------------------------------------------------------
# The benchmark
# ---------------------------------------------------------------------------


class NASSGD(Benchmark):
    """A NASNet-style block and SGD hyper-parameters, jointly (BO-FM Sec. 5.3 and supp. D.2).

    ``f = validation error + 0.02 * FLOPs / max FLOPs``, minimised over the
    18-variable mixed space described in the module docstring.

    Parameters
    ----------
    data_path : path, optional
        A folder with FashionMNIST's ``train-images-idx3-ubyte[.gz]`` and
        ``train-labels-idx1-ubyte[.gz]`` (directly, in ``raw/`` or in
        ``FashionMNIST/raw/``). Without it, scikit-learn's bundled 8 x 8 digits
        are used.
    seed : int, default 0
        Fixes the train/validation split and, with the repeat number, the
        initialisation, batch order and augmentation of every training run.
        The same initialisation and batch order are used for every
        configuration with the same block (common random numbers).
    epochs : int, optional
        ``E``: the training length of an evaluation and of the learning-rate
        schedule (supp. Table 5). Default 8 on digits, 25 (the paper's) on
        FashionMNIST or with ``paper_settings``. :meth:`evaluate` can train
        for fewer epochs (a multi-fidelity budget) on the same schedule.
    n_repeats : int, optional
        Trainings from different initialisations averaged per evaluation;
        default 1 on digits, 4 (the paper's) on FashionMNIST or with ``paper_settings``.
    paper_settings : bool, default False
        25 epochs and 4 repeats.
    augment : bool, optional
        Random crops and flips during training (the authors' FashionMNIST
        augmentation); default on for FashionMNIST, off for digits.
    n_threads : int, default 1
        Torch threads during an evaluation (restored afterwards).
    device : str, default "cpu"
        Torch device. Results are bit-reproducible on CPU only.
    """

    name = "nas-sgd"
    default_budget = 200  # ModLap(200), Fig. 4
    default_n_initial = 10
    optimum = None

    def __init__(self, data_path: str | os.PathLike | None = None, *, seed: int = 0, epochs: int | None = None,
                 n_repeats: int | None = None, paper_settings: bool = False, augment: bool | None = None,
                 n_threads: int = 1, device: str = "cpu"):
        self.data = "digits" if data_path is None else "fashion-mnist"
        big = paper_settings or self.data != "digits"
        if epochs is None:
            epochs = PAPER_EPOCHS if big else DIGITS_EPOCHS
        if n_repeats is None:
            n_repeats = PAPER_REPEATS if big else DIGITS_REPEATS
        for label, v in (("epochs", epochs), ("n_repeats", n_repeats), ("n_threads", n_threads)):
            if isinstance(v, bool) or int(v) != v or v < 1:
                raise ValueError(f"NASSGD: {label} must be a positive integer, got {v!r}")
        self.data_path = data_path
        self.seed = int(seed)
        self.epochs = int(epochs)
        self.n_repeats = int(n_repeats)
        self.augment = (self.data != "digits") if augment is None else bool(augment)
        self.n_threads = int(n_threads)
        self.device = device
        cfg = _DATA[self.data]
        self.shape = cfg["shape"]
        self.pool_padding = cfg["pool_padding"]
        self.space = _build_space()
        self.max_flops = max_flops(self.shape, pool_padding=self.pool_padding)
        self._data = None  # loaded lazily
        self._fill = 0.0
        self._cache: dict[tuple, dict[str, Any]] = {}

    # -- structure ----------------------------------------------------------
    def block(self, config: Mapping[str, Any]) -> Block:
        """The block a configuration describes."""
        self.space.validate(config)
        return Block.from_config(config)

    def flops(self, config: Mapping[str, Any]) -> int:
        """FLOPs of the network a configuration builds (see :func:`network_flops`)."""
        return network_flops(self.block(config), shape=self.shape, pool_padding=self.pool_padding)

    def flops_penalty(self, config: Mapping[str, Any]) -> float:
        """``0.02 * FLOPs / max FLOPs``."""
        return FLOPS_WEIGHT * self.flops(config) / self.max_flops

    # -- evaluation ---------------------------------------------------------
    @property
    def max_fidelity(self) -> int:
        """:attr:`epochs`: the full fidelity of the multi-fidelity protocol (:mod:`graphbo.benchmarks.fidelity`)."""
        return self.epochs

    def __call__(self, config: Mapping[str, Any]) -> float:
        return self.evaluate(config)["value"]

    def evaluate_index(self, row) -> float:
        return self.evaluate(self.space.from_index(row))["value"]

    def evaluate(self, config: Mapping[str, Any], epochs: int | None = None) -> dict[str, Any]:
        """Value and details of a configuration.

        Parameters
        ----------
        config : mapping
            A configuration of :attr:`space`.
        epochs : int, optional
            Train for this many epochs (at most :attr:`epochs`) on the schedule
            of :attr:`epochs` epochs, as the authors' BOHB runs did; default
            :attr:`epochs`.

        Returns
        -------
        dict
            ``value``, ``error`` (mean validation error), ``errors`` (per
            repeat), ``flops``, ``flops_ratio``, ``epochs``, ``diverged`` (per
            repeat: the loss became non-finite) and ``seconds``.
        """
        block = self.block(config)
        epochs = self.epochs if epochs is None else epochs
        if isinstance(epochs, bool) or int(epochs) != epochs or not 1 <= epochs <= self.epochs:
            raise ValueError(f"NASSGD: epochs must be an integer in 1..{self.epochs}, got {epochs!r}")
        epochs = int(epochs)
        hp = {name: float(config[name]) for name in HYPERPARAMETERS}
        key = (tuple(config[n] if n not in HYPERPARAMETERS else float(config[n]) for n in self.space.names), epochs)
        if key in self._cache:
            return dict(self._cache[key])
        flops = network_flops(block, shape=self.shape, pool_padding=self.pool_padding)
        ratio = flops / self.max_flops
        t0 = time.perf_counter()

        def curve(error: float, epoch: int) -> bool:
            """The first training's curve, in the value's terms, to a study's pruner; whether to stop."""
            report(error + FLOPS_WEIGHT * ratio, epoch)
            return should_prune()

        runs = [self._train_once(block, hp, epochs, r, curve if r == 0 else None) for r in range(self.n_repeats)]
        err = float(np.mean([e for e, _ in runs]))
        out = {"value": err + FLOPS_WEIGHT * ratio, "error": err, "errors": [e for e, _ in runs],
               "flops": flops, "flops_ratio": ratio, "epochs": epochs, "diverged": [d for _, d in runs],
               "seconds": time.perf_counter() - t0}
        self._cache[key] = out
        return dict(out)

    def _tensors(self):
        if self._data is None:
            if self.data == "digits":
                x, y = _load_data("digits", None)
            else:
                x, y = load_fashion_mnist(self.data_path)
            perm = np.random.RandomState(self.seed).permutation(x.shape[0])
            n_train = x.shape[0] - x.shape[0] // 2  # the second half validates
            tr, va = perm[:n_train], perm[n_train:]
            if self.data == "digits":  # standardise with the training pixels' statistics
                mean, std = float(x[tr].mean()), float(x[tr].std())
            else:
                mean, std = _DATA[self.data]["mean"], _DATA[self.data]["std"]
            self._fill = (0.0 - mean) / std  # a zero pixel after normalisation (padding of the crops)
            x = (x - mean) / std
            self._data = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in (x[tr], y[tr], x[va], y[va]))
        return self._data

    def _train_once(self, block: Block, hp: Mapping[str, float], epochs: int, repeat: int,
                    curve: Any = None) -> tuple[float, bool]:
        """Validation error of the final model of one training run (graphbo.nas.training's loop) and
        whether it diverged (a non-finite loss ends the run; it then scores the majority-class error).

        With ``curve(error, epoch)`` the model is validated after every epoch (validation draws no random
        number, so the run is the same) and ``curve`` is told each error; when it returns ``True`` (a study's
        pruner: :func:`graphbo.should_prune`) the run stops with :class:`graphbo.TrialPruned`. Outside a study
        evaluation ``report`` does nothing and nothing is pruned (graphbo.pruners)."""
        x_tr, y_tr, x_va, y_va = self._tensors()
        run_seed = int(np.random.SeedSequence([self.seed, repeat]).generate_state(1, np.uint64)[0] >> 1)
        dev = torch.device(self.device)
        run = train_module(
            lambda: _Network(block, self.shape, self.pool_padding), x_tr, y_tr,
            validate=lambda model: 1.0 - count_correct(model, x_va, y_va, batch_size=VALID_BATCH, device=dev,
                                                       finite_only=True) / x_va.shape[0],
            loss_fn=nn.CrossEntropyLoss(), epochs=epochs, batch_size=BATCH_SIZE, seed=run_seed,
            optimizer="sgd", lr=hp["lr"], momentum=hp["momentum"], weight_decay=hp["weight_decay"],
            lr_at_epoch=lambda epoch: scheduled_lr(epoch, hp["lr"], gamma=hp["lr_gamma"], ratio1=hp["milestone1_ratio"],
                                                   ratio2=hp["milestone2_ratio"], total_epochs=self.epochs),
            transform=(lambda xb, gen: _augment(xb, gen, 4, self._fill)) if self.augment else None,
            last_batch="skip",  # batch norm needs two samples in training mode
            validate_every_epoch=curve is not None, stop=None if curve is None else lambda h: curve(h[-1], len(h)),
            stop_on_nonfinite_loss=True, n_threads=self.n_threads, device=dev)
        if run.stopped == "early-stopping":
            raise TrialPruned()
        if run.stopped == "diverged":
            return 1.0 - _majority_fraction(y_va), True
        return run.history[-1], False


def _majority_fraction(y: torch.Tensor) -> float:
    """Accuracy of predicting the most frequent label (given to a diverged training)."""
    return float(torch.bincount(y).max()) / y.shape[0]
