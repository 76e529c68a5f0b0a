"""Neural architecture search on a binary cell (COMBO Sec. 4.4, supplement Sec. 4.4).

A cell has seven states: an input ``IN``, five hidden states ``H1 .. H5`` and
an output ``OUT``. The search space has 31 binary variables:

* 10 *computation-type* bits, two per hidden state, ``Hk_conv`` and
  ``Hk_large``::

      conv  large   operation
      0     0       identity (= max-pool 1x1)
      0     1       max-pool 3x3, stride 1
      1     0       conv 3x3 + batch norm + ReLU
      1     1       conv 5x5 + batch norm + ReLU

* 21 *connectivity* bits, one per pair ``i < j`` of the states in the order
  ``IN, H1, ..., H5, OUT`` (the upper triangle of the 7 x 7 adjacency matrix,
  read row by row: ``IN_H1, IN_H2, ..., IN_OUT, H1_H2, ..., H5_OUT``).

The variables are ordered as in the COMBO reference code: the 10 type bits
first (``H1_conv, H1_large, H2_conv, ...``), then the 21 edges.

A state's input is the sum of the outputs of its predecessors; ``IN`` and
``OUT`` are identities. States that are not on a path from ``IN`` to ``OUT``
are dropped (with their edges). A cell with no path from ``IN`` to ``OUT``
is *invalid*: it is not trained and scores :data:`INVALID_VALUE` (the
reference gives it 10% accuracy, the accuracy of a constant prediction, and a
FLOPs ratio of 1, so ``0.9 + 0.02 = 0.92``).

The network stacks the cell (the same cell at every stage, each with its own
weights)::

    conv3x3(C_in -> C) + BN + ReLU
    cell(C) -> maxpool 2x2 -> conv1x1(C -> 2C)
    cell(2C) -> maxpool 2x2 [-> conv1x1(2C -> 4C) -> cell(4C) -> maxpool 2x2]
    flatten -> linear(-> 10 classes)

with two cells and ``C = 8`` for the grey-scale data sets and three cells and
``C = 16`` for CIFAR-10 (reference code, ``NASBinaryCNN``).

The objective (supplement Eq. (16)) is

    validation error + 0.02 * FLOPs(cell) / FLOPs(most expensive cell),

where the most expensive cell has all 21 edges and conv 5x5 at every hidden
state. FLOPs are counted analytically for one input image (see
:func:`network_flops`).
"""

from __future__ import annotations

import gzip
import os
import time
from pathlib import Path
from typing import Any, Sequence, TypedDict

import numpy as np
import torch
from torch import nn

from ..nas.training.training import count_correct, train_module, window_rule
from ..spaces import Binary, Space
from .base import Benchmark

__all__ = [
    "NASBinary",
    "STATES",
    "EDGES",
    "OPS",
    "INVALID_VALUE",
    "FLOPS_WEIGHT",
    "decode",
    "reduce_cell",
    "network_flops",
]

STATES = ("IN", "H1", "H2", "H3", "H4", "H5", "OUT")
N_STATES = len(STATES)
N_HIDDEN = N_STATES - 2
EDGES = tuple((i, j) for i in range(N_STATES) for j in range(i + 1, N_STATES))  # 21, row-major
N_TYPE_BITS = 2 * N_HIDDEN
N_BITS = N_TYPE_BITS + len(EDGES)  # 31

# (conv bit, large bit) -> operation name
OPS = {(0, 0): "id", (0, 1): "maxpool3", (1, 0): "conv3", (1, 1): "conv5"}
CONV_SIZE = {"conv3": 3, "conv5": 5}

FLOPS_WEIGHT = 0.02  # supplement Eq. (16)
INVALID_ACCURACY = 0.1  # accuracy of a constant prediction, given to invalid cells
INVALID_VALUE = (1.0 - INVALID_ACCURACY) + FLOPS_WEIGHT * 1.0  # reference: FLOPs ratio 1 when invalid

# Training settings of the reference code / supplement Sec. 4.4.2.
BATCH_SIZE = 100
PAPER_EPOCHS = 20
PAPER_REPEATS = 4
WEIGHT_DECAY = 5e-5  # Adam, otherwise PyTorch defaults
LEARNING_RATE = 1e-3  # Adam's default
VALID_BATCH = 1000  # images per forward pass when validating
EARLY_STOP_WINDOW = 10  # stop when the last 10 epochs are all worse than the one 10 epochs before them
N_VALID_LARGE = 10_000  # validation images for MNIST-like data and CIFAR-10

# Per-data-set settings: channels, height, width, base width, number of cells,
# normalisation mean/std (per channel), validation size.
class _DataSettings(TypedDict):
    """A data set's image shape, network width and depth, normalisation and validation size."""

    shape: tuple[int, int, int]  # (channels, height, width)
    n_ch_base: int
    n_cells: int
    mean: tuple[float, ...]  # per channel
    std: tuple[float, ...]
    n_valid: int


_DATA: dict[str, _DataSettings] = {
    "digits": _DataSettings(shape=(1, 8, 8), n_ch_base=8, n_cells=2, mean=(0.5,), std=(0.5,), n_valid=597),
    "mnist": _DataSettings(shape=(1, 28, 28), n_ch_base=8, n_cells=2, mean=(0.5,), std=(0.5,), n_valid=N_VALID_LARGE),
    "fashion-mnist": _DataSettings(shape=(1, 28, 28), n_ch_base=8, n_cells=2, mean=(0.5,), std=(0.5,),
                                   n_valid=N_VALID_LARGE),
    "cifar10": _DataSettings(
        shape=(3, 32, 32), n_ch_base=16, n_cells=3,
        mean=(0.4914, 0.4822, 0.4465), std=(0.2023, 0.1994, 0.2010), n_valid=N_VALID_LARGE,
    ),
}
DIGITS_EPOCHS = 10  # default training length on the small digits data set


# ---------------------------------------------------------------------------
# Decoding and validity
# ---------------------------------------------------------------------------


def decode(bits: Sequence[int]) -> tuple[list[str], np.ndarray]:
    """Operation names of ``H1 .. H5`` and the raw 7 x 7 adjacency matrix of 31 bits."""
    b = np.asarray(bits, dtype=np.int64).reshape(-1)
    if b.shape[0] != N_BITS or np.any((b != 0) & (b != 1)):
        raise ValueError(f"NASBinary: expected {N_BITS} bits of 0/1, got {bits!r}")
    ops = [OPS[(int(b[2 * k]), int(b[2 * k + 1]))] for k in range(N_HIDDEN)]
    adj = np.zeros((N_STATES, N_STATES), dtype=np.int64)
    for (i, j), e in zip(EDGES, b[N_TYPE_BITS:]):
        adj[i, j] = e
    return ops, adj


def _reachable(adj: np.ndarray, start: int, forward: bool) -> set[int]:
    seen, stack = {start}, [start]
    while stack:
        v = stack.pop()
        nbrs = np.flatnonzero(adj[v] if forward else adj[:, v])
        for u in nbrs:
            if int(u) not in seen:
                seen.add(int(u))
                stack.append(int(u))
    return seen


def reduce_cell(adj: np.ndarray) -> np.ndarray | None:
    """Keep only states on a path ``IN -> OUT``; ``None`` when there is no such path (invalid cell)."""
    adj = np.asarray(adj, dtype=np.int64)
    from_in = _reachable(adj, 0, forward=True)
    if N_STATES - 1 not in from_in:
        return None
    to_out = _reachable(adj, N_STATES - 1, forward=False)
    keep = np.zeros(N_STATES, dtype=bool)
    keep[list(from_in & to_out)] = True
    return adj * np.outer(keep, keep)


def _active(adj: np.ndarray) -> list[int]:
    """States (other than IN) that receive an input in a reduced cell, in topological (index) order."""
    return [j for j in range(1, N_STATES) if adj[:, j].any()]


# ---------------------------------------------------------------------------
# FLOPs
# ---------------------------------------------------------------------------


def network_flops(ops: Sequence[str], adj: np.ndarray, *, shape=(1, 8, 8), n_ch_base: int = 8,
                  n_cells: int = 2, n_classes: int = 10) -> int:
    """FLOPs of one forward pass of one image through the stacked network.

    Counting rules (those of ``pthflops`` 0.2, which the reference used, with a
    multiply-add counted once): a ``k x k`` convolution with bias costs
    ``(C_in k^2 + 1)`` per output element; batch norm and ReLU cost 2 per
    element; a ``k x k`` max-pool costs ``k^2 - 1`` per output element; a
    linear layer costs ``in * out``; summing ``m`` inputs of a state costs
    ``m - 1`` per element; identities are free.

    Parameters
    ----------
    ops : sequence of 5 str
        Operation of ``H1 .. H5`` (``"id"``, ``"maxpool3"``, ``"conv3"``, ``"conv5"``).
    adj : ndarray (7, 7)
        A *reduced* adjacency matrix (see :func:`reduce_cell`).
    """
    c_in, h, w = shape
    c = n_ch_base
    total = (c_in * 9 + 1) * c * h * w + 4 * c * h * w  # stem conv3x3 + BN + ReLU
    for stage in range(n_cells):
        hw = h * w
        for j in _active(adj):
            m = int(adj[:, j].sum())
            total += (m - 1) * c * hw  # sum of the inputs
            if j == N_STATES - 1:
                continue
            op = ops[j - 1]
            if op in CONV_SIZE:
                k = CONV_SIZE[op]
                total += (c * k * k + 1) * c * hw + 4 * c * hw
            elif op == "maxpool3":
                total += 8 * c * hw
        h, w = h // 2, w // 2
        total += 3 * c * h * w  # maxpool 2x2
        if stage < n_cells - 1:
            total += (c + 1) * (2 * c) * h * w  # conv1x1 c -> 2c
            c *= 2
    total += c * h * w * n_classes  # classifier
    return int(total)


# ---------------------------------------------------------------------------
# The network
# ---------------------------------------------------------------------------


class _ConvBNReLU(nn.Sequential):
    def __init__(self, channels: int, k: int):
        super().__init__(
            nn.Conv2d(channels, channels, kernel_size=k, padding=k // 2, bias=True),
            nn.BatchNorm2d(channels),
            nn.ReLU(),
        )


class _Cell(nn.Module):
    def __init__(self, ops: Sequence[str], adj: np.ndarray, channels: int):
        super().__init__()
        self.order = _active(adj)
        self.inputs = {j: [int(i) for i in np.flatnonzero(adj[:, j])] for j in self.order}
        layers: dict[str, nn.Module] = {}
        for j in self.order:
            if j == N_STATES - 1:
                continue
            op = ops[j - 1]
            if op in CONV_SIZE:
                layers[str(j)] = _ConvBNReLU(channels, CONV_SIZE[op])
            elif op == "maxpool3":
                layers[str(j)] = nn.MaxPool2d(kernel_size=3, stride=1, padding=1)
        self.layers = nn.ModuleDict(layers)

    def forward(self, x):
        out = {0: x}
        for j in self.order:
            srcs = self.inputs[j]
            s = out[srcs[0]]
            for i in srcs[1:]:
                s = s + out[i]
            out[j] = self.layers[str(j)](s) if str(j) in self.layers else s
        return out[N_STATES - 1]


class _Network(nn.Module):
    def __init__(self, ops: Sequence[str], adj: np.ndarray, shape: tuple[int, int, int], n_ch_base: int,
                 n_cells: int, n_classes: int = 10) -> None:
        super().__init__()
        c_in, h, w = shape
        c = n_ch_base
        body: list[nn.Module] = [nn.Conv2d(c_in, c, 3, padding=1, bias=True), nn.BatchNorm2d(c), nn.ReLU()]
        for stage in range(n_cells):
            body += [_Cell(ops, adj, c), nn.MaxPool2d(2)]
            h, w = h // 2, w // 2
            if stage < n_cells - 1:
                body.append(nn.Conv2d(c, 2 * c, kernel_size=1, bias=True))
                c *= 2
        self.body = nn.Sequential(*body)
        self.fc = nn.Linear(c * h * w, n_classes)

    def forward(self, x):
        return self.fc(torch.flatten(self.body(x), 1))


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------


def _read_idx(path: Path) -> np.ndarray:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def _find(data_dir: Path, names: Sequence[str]) -> Path:
    for name in names:
        for cand in (data_dir / name, data_dir / (name + ".gz")):
            if cand.is_file():
                return cand
    raise FileNotFoundError(f"NASBinary: none of {list(names)} (or .gz) found in {data_dir}")


def _load_data(data: str, data_dir: str | os.PathLike | None) -> tuple[np.ndarray, np.ndarray]:
    """Training images (N, C, H, W) scaled to [0, 1] and integer labels."""
    if data == "digits":
        try:
            from sklearn.datasets import load_digits
        except ImportError as exc:  # pragma: no cover
            raise ImportError("NASBinary(data='digits') needs scikit-learn: pip install scikit-learn") from exc

        d = load_digits()
        return (d.images / 16.0).astype(np.float32)[:, None], d.target.astype(np.int64)
    if data_dir is None:
        raise ValueError(f"NASBinary: data={data!r} needs data_dir")
    root = Path(data_dir).expanduser()
    if data in ("mnist", "fashion-mnist"):
        x = _read_idx(_find(root, ["train-images-idx3-ubyte", "train-images.idx3-ubyte"]))
        y = _read_idx(_find(root, ["train-labels-idx1-ubyte", "train-labels.idx1-ubyte"]))
        return (x.astype(np.float32) / 255.0)[:, None], y.astype(np.int64)
    # cifar10: the data set's binary batches (cifar-10-binary.tar.gz, extracted): records of one label byte
    # and 3072 pixel bytes (1024 red, 1024 green, 1024 blue, row by row). Not the python version: those
    # batches are pickles, and no unpickler is safe on a file that a study file can point at.
    if (root / "cifar-10-batches-bin").is_dir():
        root = root / "cifar-10-batches-bin"
    xs, ys = [], []
    for k in range(1, 6):
        path = root / f"data_batch_{k}.bin"
        if not path.is_file():
            hint = " (the binary version, cifar-10-binary.tar.gz; the python version's pickles are not read)" \
                if (root / f"data_batch_{k}").is_file() else ""
            raise FileNotFoundError(f"NASBinary: CIFAR-10 batch {path} not found{hint}")
        raw = np.fromfile(path, dtype=np.uint8)
        if raw.size == 0 or raw.size % _CIFAR_RECORD:
            raise ValueError(f"NASBinary: {path} is not a CIFAR-10 binary batch ({raw.size} bytes, not a multiple "
                             f"of {_CIFAR_RECORD})")
        records = raw.reshape(-1, _CIFAR_RECORD)
        if int(records[:, 0].max()) > 9:
            raise ValueError(f"NASBinary: {path} has labels above 9; not a CIFAR-10 binary batch")
        xs.append(records[:, 1:].reshape(-1, 3, 32, 32))
        ys.append(records[:, 0].astype(np.int64))
    return np.concatenate(xs).astype(np.float32) / 255.0, np.concatenate(ys)


#: bytes per image of CIFAR-10's binary batches: the label, then 3 x 32 x 32 pixels
_CIFAR_RECORD = 1 + 3 * 32 * 32


# ---------------------------------------------------------------------------
# The benchmark
# ---------------------------------------------------------------------------


class NASBinary(Benchmark):
    """Binary-cell NAS: validation error plus a FLOPs penalty (COMBO supplement Sec. 4.4).

    Parameters
    ----------
    data : {"digits", "fashion-mnist", "mnist", "cifar10"}, default "digits"
        ``"digits"`` is scikit-learn's bundled 8 x 8 digits (1797 images, no
        download): 1200 for training, 597 for validation. The others are read
        from ``data_dir``; their last 10000 shuffled training images are the
        validation set, the rest is trained on (as the reference code).
    data_dir : path, optional
        For ``"mnist"``/``"fashion-mnist"``: a folder with
        ``train-images-idx3-ubyte[.gz]`` and ``train-labels-idx1-ubyte[.gz]``.
        For ``"cifar10"``: the extracted binary version, ``cifar-10-binary.tar.gz``
        (``data_batch_1.bin .. data_batch_5.bin``, directly or in
        ``cifar-10-batches-bin/``). The python version's batches are pickles, which
        graphbo does not read: a study file names this folder, and no unpickler is
        safe on a file someone else can write.
    seed : int, default 0
        Fixes the train/validation split (``numpy.random.RandomState(seed)``
        permutation, as the reference's seed 0) and, together with the cell,
        the weight initialisation and batch order of every training run.
    epochs : int, optional
        Training epochs; default 10 on digits, 20 otherwise and with ``paper_settings``.
    n_repeats : int, optional
        Independent trainings averaged per evaluation; default 1, 4 with ``paper_settings``.
    paper_settings : bool, default False
        Use the paper's settings: 20 epochs, 4 repeats.
    n_threads : int, default 1
        Torch threads during an evaluation (restored afterwards).
    device : str, default "cpu"
        Torch device for training. Results are bit-reproducible on CPU only.

    Notes
    -----
    Training follows the reference: Adam (lr 1e-3) with weight decay 5e-5,
    batch size 100, default PyTorch initialisation, validation accuracy after
    every epoch, early stopping when the last 10 epochs are all worse than the
    epoch before them, and the best epoch's validation accuracy is the run's
    accuracy. The error is one minus the mean accuracy over the repeats.
    Unlike the reference (which leaves batch norm in training mode), the
    validation pass uses ``model.eval()``.

    The training seed of a run is derived from ``seed``, the repeat number
    and the *reduced* cell, so configurations that describe the same network
    (differing only in dead states or edges) get the same value. Values are
    cached per reduced cell.
    """

    name = "nasbinary"
    default_budget = 260
    default_n_initial = 10
    optimum = None

    def __init__(self, data: str = "digits", *, data_dir: str | os.PathLike | None = None, seed: int = 0,
                 epochs: int | None = None, n_repeats: int | None = None, paper_settings: bool = False,
                 n_threads: int = 1, device: str = "cpu"):
        if data not in _DATA:
            raise ValueError(f"NASBinary: data must be one of {sorted(_DATA)}, got {data!r}")
        if epochs is None:
            epochs = PAPER_EPOCHS if (paper_settings or data != "digits") else DIGITS_EPOCHS
        if n_repeats is None:
            n_repeats = PAPER_REPEATS if paper_settings else 1
        for label, v in (("epochs", epochs), ("n_repeats", n_repeats), ("n_threads", n_threads)):
            if int(v) != v or v < 1:
                raise ValueError(f"NASBinary: {label} must be a positive integer, got {v!r}")
        self.data = data
        self.data_dir = data_dir
        self.seed = int(seed)
        self.epochs = int(epochs)
        self.n_repeats = int(n_repeats)
        self.paper_settings = bool(paper_settings)
        self.n_threads = int(n_threads)
        self.device = device
        cfg = _DATA[data]
        self.shape = cfg["shape"]
        self.n_ch_base = cfg["n_ch_base"]
        self.n_cells = cfg["n_cells"]
        self._cfg = cfg

        names = []
        for k in range(1, N_HIDDEN + 1):
            names += [f"H{k}_conv", f"H{k}_large"]
        names += [f"{STATES[i]}_{STATES[j]}" for i, j in EDGES]
        self.space = Space({n: Binary() for n in names})

        full = np.triu(np.ones((N_STATES, N_STATES), dtype=np.int64), 1)
        self.max_flops = network_flops(["conv5"] * N_HIDDEN, full, shape=self.shape, n_ch_base=self.n_ch_base,
                                       n_cells=self.n_cells)
        self._data = None  # loaded lazily
        self._cache: dict[tuple, dict[str, Any]] = {}

    # -- structure ----------------------------------------------------------
    def cell(self, row) -> tuple[list[str], np.ndarray | None]:
        """Operations of ``H1 .. H5`` and the reduced adjacency (``None`` if invalid) of an index row."""
        ops, adj = decode(row)
        return ops, reduce_cell(adj)

    def is_valid(self, config) -> bool:
        """Whether a config (dict) encodes a valid cell: some path ``IN -> OUT`` exists.

        Regularized evolution on this benchmark keeps only valid cells, as in
        the COMBO supplement 4.4.4; the comparison harness passes this to it.
        """
        return self.cell(self.space.to_index(config))[1] is not None

    def flops(self, row) -> int | None:
        """FLOPs of the network built from ``row``; ``None`` for an invalid cell."""
        ops, adj = self.cell(row)
        if adj is None:
            return None
        return network_flops(ops, adj, shape=self.shape, n_ch_base=self.n_ch_base, n_cells=self.n_cells)

    def flops_penalty(self, row) -> float:
        """``0.02 * FLOPs / max FLOPs`` (``0.02`` for an invalid cell, as the reference)."""
        f = self.flops(row)
        return FLOPS_WEIGHT * (1.0 if f is None else f / self.max_flops)

    def initial_index(self) -> np.ndarray:
        """The 10 hand-picked initial cells of the reference code, shape (10, 31)."""
        chain = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6)]
        two_paths = [(0, 1), (0, 2), (0, 3), (1, 6), (2, 3), (3, 6), (4, 5), (5, 6)]
        full = list(EDGES)
        c5, mp, idn = (1, 1), (0, 1), (0, 0)
        cells = [
            (chain, [c5, idn, idn, idn, idn]),
            (chain, [c5] * 5),
            (chain + [(0, 6)], [idn, c5, c5, c5, c5]),
            (chain + [(0, 6)], [idn, c5, mp, c5, mp]),
            (two_paths, [idn, c5, c5, c5, c5]),
            (two_paths, [idn, c5, mp, c5, mp]),
            (two_paths, [c5] * 5),
            (two_paths, [c5, c5, mp, c5, mp]),
            (full, [c5] * 5),
            (full, [c5, mp, c5, mp, c5]),
        ]
        out = np.zeros((len(cells), N_BITS), dtype=np.int64)
        for r, (edges, types) in enumerate(cells):
            out[r, :N_TYPE_BITS] = np.ravel(types)
            for e in edges:
                out[r, N_TYPE_BITS + EDGES.index(e)] = 1
        return out

    # -- evaluation ---------------------------------------------------------
    def evaluate_index(self, row) -> float:
        return self.evaluate_details(row)["value"]

    def evaluate_details(self, row) -> dict[str, Any]:
        """Value, error, FLOPs, per-repeat accuracies and training time of an index row."""
        ops, adj = self.cell(row)
        if adj is None:
            return {"value": INVALID_VALUE, "valid": False, "error": 1.0 - INVALID_ACCURACY,
                    "flops": None, "flops_ratio": 1.0, "accuracies": [], "seconds": 0.0}
        active = set(_active(adj))
        key_ops = tuple(ops[k - 1] if k in active else "-" for k in range(1, N_STATES - 1))
        key = (key_ops, tuple(int(adj[i, j]) for i, j in EDGES))
        if key in self._cache:
            return dict(self._cache[key])
        flops = network_flops(ops, adj, shape=self.shape, n_ch_base=self.n_ch_base, n_cells=self.n_cells)
        arch_code = 0
        for bit in [int(adj[i, j]) for i, j in EDGES] + [int(o in CONV_SIZE) * 2 + int(o in ("maxpool3", "conv5"))
                                                          for o in key_ops]:
            arch_code = arch_code * 4 + bit
        t0 = time.perf_counter()
        accs = [self._train_once(ops, adj, arch_code, r) for r in range(self.n_repeats)]
        err = 1.0 - float(np.mean(accs))
        ratio = flops / self.max_flops
        out = {"value": err + FLOPS_WEIGHT * ratio, "valid": True, "error": err, "flops": flops,
               "flops_ratio": ratio, "accuracies": accs, "seconds": time.perf_counter() - t0}
        self._cache[key] = out
        return dict(out)

    def _tensors(self):
        if self._data is None:
            x, y = _load_data(self.data, self.data_dir)
            mean = np.asarray(self._cfg["mean"], dtype=np.float32).reshape(1, -1, 1, 1)
            std = np.asarray(self._cfg["std"], dtype=np.float32).reshape(1, -1, 1, 1)
            x = (x - mean) / std
            perm = np.random.RandomState(self.seed).permutation(x.shape[0])
            n_valid = self._cfg["n_valid"]
            tr, va = perm[:-n_valid], perm[-n_valid:]
            self._data = tuple(torch.from_numpy(np.ascontiguousarray(a)) for a in (x[tr], y[tr], x[va], y[va]))
        return self._data

    def _train_once(self, ops, adj, arch_code: int, repeat: int) -> float:
        """Best validation accuracy over the epochs of one training run (graphbo.nas.training's loop)."""
        x_tr, y_tr, x_va, y_va = self._tensors()
        run_seed = int(np.random.SeedSequence([self.seed, arch_code, repeat]).generate_state(1, np.uint64)[0] >> 1)
        dev = torch.device(self.device)
        run = train_module(
            lambda: _Network(ops, adj, self.shape, self.n_ch_base, self.n_cells), x_tr, y_tr,
            validate=lambda model: count_correct(model, x_va, y_va, batch_size=VALID_BATCH, device=dev) / x_va.shape[0],
            loss_fn=nn.CrossEntropyLoss(), epochs=self.epochs, batch_size=BATCH_SIZE, seed=run_seed,
            optimizer="adam", lr=LEARNING_RATE, weight_decay=WEIGHT_DECAY, last_batch="keep",
            stop=window_rule(EARLY_STOP_WINDOW, higher_is_better=True), n_threads=self.n_threads, device=dev)
        return float(max(run.history))
