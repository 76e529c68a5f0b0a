"""Train a realised architecture and return its validation error (NASBOT, Sec. 5, App. C.2).

Data
----
Every loader returns a :class:`TrainValData`: float32 inputs, targets
(int64 class indices or float32 values), a **fixed train/validation split**
drawn from ``seed`` (``numpy.random.RandomState(seed).permutation``) and the
task. Inputs are standardised with training-set statistics (per feature for
vectors, per channel for images); regression targets are standardised too,
as in the paper (Sec. 5: "the input and output variables were normalised to
have zero mean and unit variance"), so a constant predictor scores about 1.

* :func:`load_digits_data` -- scikit-learn's bundled 8x8 digits (1797
  images, 10 classes): ``(1, 8, 8)`` images for CNNs or 64-d vectors for MLPs.
* :func:`load_diabetes_data` -- scikit-learn's bundled diabetes regression
  data (442 samples, 10 features).
* :func:`load_csv_data` -- a CSV file with a header row.
* :func:`load_image_folder_or_npz` -- an ``.npz`` file with arrays ``x`` and
  ``y`` (optionally ``x_valid``/``y_valid``), or a folder of images with one
  sub-folder per class.

Training
--------
:func:`train_module` is the one training loop of graphbo's NAS code: the
architecture objectives (:func:`train`, below) and the NAS benchmarks
(:mod:`graphbo.benchmarks.nas_binary`, :mod:`graphbo.benchmarks.nas_sgd`)
all train through it, each with its own network, data, optimiser settings,
learning-rate schedule, augmentation, validation metric and stopping rule.

:func:`train_and_evaluate` trains with Adam (default learning rate 1e-3) on
mini-batches, evaluates the validation set after every epoch and returns the
**minimum validation error over the epochs**, as the paper does ("computed the
validation set MSE every 100 iterations; from this we returned the minimum",
App. C.2). The paper trained with plain SGD at step size 1e-5 (MLP) / 1e-4
(CNN) for 20,000-24,000 iterations on GPUs; that is far too slow for CPU
evaluations of seconds, so Adam and a few epochs are the default here
(``optimizer="sgd"`` gives plain SGD). The error is ``1 - accuracy`` for
classification and the **MSE of the standardised target** for regression
(the paper's metric).
"""

from __future__ import annotations

import csv
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import torch
from torch import nn

from ...threads import limit_threads
from ..domain.architecture import Architecture
from .torch_model import build_module, task_of

__all__ = [
    "TrainValData",
    "TrainingResult",
    "LoopResult",
    "train_module",
    "patience_rule",
    "window_rule",
    "count_correct",
    "sum_squared_error",
    "train",
    "train_and_evaluate",
    "load_digits_data",
    "load_diabetes_data",
    "load_csv_data",
    "load_image_folder_or_npz",
    "DEFAULT_EPOCHS",
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_LR",
    "DEFAULT_VALID_FRACTION",
]

DEFAULT_EPOCHS = {"mlp": 20, "cnn": 5}
DEFAULT_BATCH_SIZE = 64
DEFAULT_LR = 1e-3
DEFAULT_VALID_FRACTION = 0.2
_EVAL_BATCH = 1024
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".pgm", ".ppm")


# ---------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------


@dataclass(kw_only=True)
class TrainValData:
    """A fixed train/validation split.

    Attributes
    ----------
    x_train, x_valid : ndarray, float32
        ``(N, features)`` for MLPs, ``(N, channels, height, width)`` for CNNs.
    y_train, y_valid : ndarray
        int64 class indices ``0..K-1`` (classification) or float32 values,
        shape ``(N,)`` or ``(N, targets)`` (regression, standardised).
    task : {"classification", "regression"}
    name : str
    classes : list, optional
        The original class labels, ``classes[k]`` for index ``k``.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_valid: np.ndarray
    y_valid: np.ndarray
    task: str
    name: str = "data"
    classes: list[Any] | None = None
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.task not in ("classification", "regression"):
            raise ValueError(f"task must be 'classification' or 'regression', got {self.task!r}")
        self.x_train = np.ascontiguousarray(self.x_train, dtype=np.float32)
        self.x_valid = np.ascontiguousarray(self.x_valid, dtype=np.float32)
        ydt = np.int64 if self.task == "classification" else np.float32
        self.y_train = np.ascontiguousarray(self.y_train, dtype=ydt)
        self.y_valid = np.ascontiguousarray(self.y_valid, dtype=ydt)
        if self.x_train.shape[1:] != self.x_valid.shape[1:]:
            raise ValueError(f"training inputs {self.x_train.shape} and validation inputs {self.x_valid.shape} "
                             "have different shapes")
        for xs, ys, part in ((self.x_train, self.y_train, "training"), (self.x_valid, self.y_valid, "validation")):
            if xs.shape[0] != ys.shape[0]:
                raise ValueError(f"{part} data has {xs.shape[0]} inputs but {ys.shape[0]} targets")
            if xs.shape[0] == 0:
                raise ValueError(f"the {part} set is empty")
            if not np.all(np.isfinite(xs)):
                raise ValueError(f"{part} inputs contain NaN or infinite values")
        if self.x_train.ndim not in (2, 4):
            raise ValueError(f"inputs must be (N, features) or (N, channels, height, width), got {self.x_train.shape}")
        if self.task == "classification":
            k = self.n_outputs
            for ys, part in ((self.y_train, "training"), (self.y_valid, "validation")):
                if ys.ndim != 1 or ys.min() < 0 or ys.max() >= k:
                    raise ValueError(f"{part} class labels must be integers in 0..{k - 1}")

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(int(v) for v in self.x_train.shape[1:])

    @property
    def n_outputs(self) -> int:
        if self.task == "classification":
            if self.classes is not None:
                return len(self.classes)
            return int(max(self.y_train.max(), self.y_valid.max())) + 1
        return 1 if self.y_train.ndim == 1 else int(self.y_train.shape[1])

    @property
    def kind(self) -> str:
        """``"mlp"`` for vector inputs, ``"cnn"`` for images."""
        return "mlp" if self.x_train.ndim == 2 else "cnn"


def _split(n: int, seed: int, valid_fraction: float) -> tuple[np.ndarray, np.ndarray]:
    if not 0.0 < valid_fraction < 1.0:
        raise ValueError(f"valid_fraction must be in (0, 1), got {valid_fraction!r}")
    n_valid = int(round(valid_fraction * n))
    if n_valid < 1 or n - n_valid < 1:
        raise ValueError(f"cannot split {n} samples with valid_fraction={valid_fraction}")
    perm = np.random.RandomState(int(seed)).permutation(n)
    return perm[n_valid:], perm[:n_valid]


def _standardise(train: np.ndarray, valid: np.ndarray, axis: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray, dict]:
    mean = train.mean(axis=axis, keepdims=True)
    std = train.std(axis=axis, keepdims=True)
    std = np.where(std > 1e-8, std, 1.0)
    return (train - mean) / std, (valid - mean) / std, {"mean": mean.squeeze(), "std": std.squeeze()}


def _make(x: np.ndarray, y: np.ndarray, task: str, seed: int, valid_fraction: float, name: str,
          classes: list | None = None, split: tuple[np.ndarray, np.ndarray] | None = None) -> TrainValData:
    x = np.asarray(x, dtype=np.float64)
    if split is None:
        tr, va = _split(x.shape[0], seed, valid_fraction)
        x_tr, x_va, y_tr, y_va = x[tr], x[va], y[tr], y[va]
    else:
        (x_tr, y_tr), (x_va, y_va) = (x, y), split
        x_va = np.asarray(x_va, dtype=np.float64)
    axis = (0,) if x.ndim == 2 else (0, 2, 3)
    x_tr, x_va, xstats = _standardise(x_tr, x_va, axis)
    info: dict[str, Any] = {"x_stats": xstats, "seed": seed}
    if task == "regression":
        y_tr = np.asarray(y_tr, dtype=np.float64)
        y_va = np.asarray(y_va, dtype=np.float64)
        y_tr, y_va, ystats = _standardise(y_tr, y_va, (0,))
        info["y_stats"] = ystats
    return TrainValData(x_train=x_tr, y_train=y_tr, x_valid=x_va, y_valid=y_va, task=task, name=name, classes=classes,
                        info=info)


def load_digits_data(seed: int = 0, *, images: bool = False,
                     valid_fraction: float = DEFAULT_VALID_FRACTION) -> TrainValData:
    """scikit-learn's bundled 8x8 digits, 10 classes (no download).

    Parameters
    ----------
    seed : int
        Fixes the train/validation split.
    images : bool
        ``True``: ``(1, 8, 8)`` images for CNNs; ``False``: 64-d vectors for MLPs.
    valid_fraction : float
        Share of the 1797 samples held out (default 0.2: 1438 train, 359 validation).
    """
    from sklearn.datasets import load_digits

    d = load_digits()
    x = d.images[:, None].astype(np.float64) if images else d.data.astype(np.float64)
    return _make(x, d.target.astype(np.int64), "classification", seed, valid_fraction,
                 "digits-images" if images else "digits", classes=list(range(10)))


def load_diabetes_data(seed: int = 0, valid_fraction: float = DEFAULT_VALID_FRACTION) -> TrainValData:
    """scikit-learn's bundled diabetes regression data (442 x 10), inputs and target standardised."""
    from sklearn.datasets import load_diabetes

    d = load_diabetes()
    return _make(d.data, d.target, "regression", seed, valid_fraction, "diabetes")


def _class_indices(y: Sequence[Any] | np.ndarray) -> tuple[np.ndarray, list[Any]]:
    classes, idx = np.unique(np.asarray(y), return_inverse=True)
    return idx.astype(np.int64).reshape(-1), [c.item() if hasattr(c, "item") else c for c in classes]


def load_csv_data(path: str | os.PathLike, target_column: str | int, *, task: str = "regression",
                  seed: int = 0, valid_fraction: float = DEFAULT_VALID_FRACTION,
                  delimiter: str = ",") -> TrainValData:
    """A CSV file with a header row; every column but the target is a numeric feature.

    Parameters
    ----------
    path : path
    target_column : str or int
        The target's header name, or its 0-based column index.
    task : {"regression", "classification"}
        For classification the target may hold any labels (strings or
        numbers); they are mapped to ``0..K-1`` in sorted order.
    seed, valid_fraction
        The fixed split (see :func:`load_digits_data`).
    """
    if task not in ("classification", "regression"):
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
    path = Path(path).expanduser()
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f, delimiter=delimiter) if r and any(c.strip() for c in r)]
    if len(rows) < 3:
        raise ValueError(f"{path}: need a header row and at least two data rows")
    header = [h.strip() for h in rows[0]]
    if isinstance(target_column, int):
        if not 0 <= target_column < len(header):
            raise ValueError(f"{path}: target column index {target_column} outside 0..{len(header) - 1}")
        t = target_column
    else:
        if target_column not in header:
            raise ValueError(f"{path}: no column named {target_column!r}; columns are {header}")
        t = header.index(target_column)
    data = rows[1:]
    for k, r in enumerate(data, start=2):
        if len(r) != len(header):
            raise ValueError(f"{path}, line {k}: {len(r)} fields, the header has {len(header)}")
    feat_cols = [j for j in range(len(header)) if j != t]
    if not feat_cols:
        raise ValueError(f"{path}: no feature columns besides the target")
    x = np.empty((len(data), len(feat_cols)), dtype=np.float64)
    for k, r in enumerate(data):
        for m, j in enumerate(feat_cols):
            try:
                x[k, m] = float(r[j])
            except ValueError:
                raise ValueError(f"{path}, line {k + 2}: column {header[j]!r} holds {r[j]!r}, not a number") from None
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{path}: features contain NaN or infinite values")
    raw_y = [r[t].strip() for r in data]
    if task == "regression":
        try:
            y = np.array([float(v) for v in raw_y], dtype=np.float64)
        except ValueError:
            raise ValueError(f"{path}: regression target {header[t]!r} holds non-numeric values") from None
        if not np.all(np.isfinite(y)):
            raise ValueError(f"{path}: target {header[t]!r} contains NaN or infinite values")
        return _make(x, y, task, seed, valid_fraction, path.stem)
    try:
        yv: list[Any] = [float(v) for v in raw_y]
    except ValueError:
        yv = raw_y
    y, classes = _class_indices(yv)
    return _make(x, y, task, seed, valid_fraction, path.stem, classes=classes)


def load_image_folder_or_npz(path: str | os.PathLike, *, seed: int = 0,
                             valid_fraction: float = DEFAULT_VALID_FRACTION) -> TrainValData:
    """Images for CNN classification, from an ``.npz`` file or a folder.

    ``.npz`` file
        Arrays ``x`` -- shape ``(N, H, W)`` (one channel) or ``(N, C, H, W)``
        (channels first) -- and ``y`` -- ``(N,)`` class labels of any kind.
        With arrays ``x_valid`` and ``y_valid`` as well, those are the
        validation set and no split is drawn. ``uint8`` pixels are divided by 255.
    Folder
        One sub-folder per class (its name is the label), holding image files
        (png, jpg, bmp, gif, tif, webp, pgm/ppm) of equal size; read with
        Pillow, as grey-scale if every image is, otherwise as RGB.

    Inputs are standardised per channel with training statistics; the split
    is drawn from ``seed``.
    """
    path = Path(path).expanduser()
    if path.is_dir():
        x, y_raw = _read_image_folder(path)
        y, classes = _class_indices(y_raw)
        return _make(x, y, "classification", seed, valid_fraction, path.name, classes=classes)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file or folder")
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    for key in ("x", "y"):
        if key not in arrays:
            raise ValueError(f"{path}: the .npz needs arrays 'x' and 'y'; found {sorted(arrays)}")
    has_valid = "x_valid" in arrays or "y_valid" in arrays
    if has_valid and not ("x_valid" in arrays and "y_valid" in arrays):
        raise ValueError(f"{path}: give both 'x_valid' and 'y_valid', or neither")

    def images(a: np.ndarray, key: str) -> np.ndarray:
        scale = 255.0 if a.dtype == np.uint8 else 1.0
        a = np.asarray(a, dtype=np.float64) / scale
        if a.ndim == 3:
            a = a[:, None]
        if a.ndim != 4:
            raise ValueError(f"{path}: array {key!r} must be (N, H, W) or (N, C, H, W), got shape {a.shape}")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{path}: array {key!r} contains NaN or infinite values")
        return a

    x = images(arrays["x"], "x")
    y_all = np.asarray(arrays["y"]).reshape(-1)
    if has_valid:
        xv = images(arrays["x_valid"], "x_valid")
        yv = np.asarray(arrays["y_valid"]).reshape(-1)
        idx, classes = _class_indices(np.concatenate([y_all, yv]))
        if xv.shape[1:] != x.shape[1:]:
            raise ValueError(f"{path}: 'x' images {x.shape[1:]} and 'x_valid' images {xv.shape[1:]} differ")
        if len(y_all) != len(x) or len(yv) != len(xv):
            raise ValueError(f"{path}: 'x'/'y' or 'x_valid'/'y_valid' lengths differ")
        return _make(x, idx[:len(y_all)], "classification", seed, valid_fraction, path.stem, classes=classes,
                     split=(xv, idx[len(y_all):]))
    if len(y_all) != len(x):
        raise ValueError(f"{path}: {len(x)} images but {len(y_all)} labels")
    y, classes = _class_indices(y_all)
    return _make(x, y, "classification", seed, valid_fraction, path.stem, classes=classes)


def _read_image_folder(root: Path) -> tuple[np.ndarray, list[str]]:
    try:
        from PIL import Image
    except ImportError as exc:  # pragma: no cover
        raise ImportError("reading an image folder needs Pillow: pip install pillow") from exc
    class_dirs = sorted(p for p in root.iterdir() if p.is_dir())
    if len(class_dirs) < 2:
        raise ValueError(f"{root}: need one sub-folder per class (at least two)")
    files: list[tuple[Path, str]] = []
    for d in class_dirs:
        for f in sorted(d.iterdir()):
            if f.is_file() and f.suffix.lower() in _IMAGE_SUFFIXES:
                files.append((f, d.name))
    if not files:
        raise ValueError(f"{root}: no image files in its sub-folders")
    imgs = []
    for f, _ in files:
        with Image.open(f) as im:
            im.load()
            imgs.append(im.copy())
    grey = all(im.mode in ("L", "1", "I;16", "I", "F") for im in imgs)
    arrays = []
    size = None
    for (f, _), im in zip(files, imgs):
        a = np.asarray(im.convert("L" if grey else "RGB"), dtype=np.float64) / 255.0
        if size is None:
            size = a.shape[:2]
        elif a.shape[:2] != size:
            raise ValueError(f"{f}: image size {a.shape[1]}x{a.shape[0]} differs from {size[1]}x{size[0]}")
        arrays.append(a[None] if grey else a.transpose(2, 0, 1))
    return np.stack(arrays), [label for _, label in files]


# ---------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------


@dataclass(kw_only=True)
class TrainingResult:
    """Outcome of :func:`train`.

    Attributes
    ----------
    error : float
        The minimum validation error over the epochs.
    history : list of float
        Validation error after every epoch.
    best_epoch : int
        1-based epoch of ``error``.
    epochs_run : int
    seconds : float
        Wall time of building, training and validating.
    n_parameters : int
    stopped : str
        ``"epochs"``, ``"early-stopping"`` or ``"time"``.
    """

    error: float
    history: list[float]
    best_epoch: int
    epochs_run: int
    seconds: float
    n_parameters: int
    stopped: str


#: what :func:`train_module` does with a last mini-batch of one sample (batch norm cannot train on one)
LAST_BATCH = ("fold", "skip", "keep")


@dataclass(kw_only=True)
class LoopResult:
    """Outcome of :func:`train_module`.

    Attributes
    ----------
    model : nn.Module
        The trained network (in evaluation mode if it was validated).
    history : list of float
        The validation values, one per epoch (or a single one, of the final
        model, with ``validate_every_epoch=False``; none if training diverged).
    stopped : str
        ``"epochs"``, ``"early-stopping"``, ``"time"`` or ``"diverged"``.
    """

    model: nn.Module
    history: list[float]
    stopped: str


def patience_rule(patience: int, higher_is_better: bool = False) -> Callable[[Sequence[float]], bool]:
    """Early stopping: stop once the best value (its first occurrence) is ``patience`` epochs old."""

    def stop(history: Sequence[float]) -> bool:
        best = max(history) if higher_is_better else min(history)
        return len(history) - 1 - list(history).index(best) >= patience

    return stop


def window_rule(window: int, higher_is_better: bool = False) -> Callable[[Sequence[float]], bool]:
    """Early stopping: stop when the last ``window`` values are all strictly worse than the one before them."""

    def stop(history: Sequence[float]) -> bool:
        if len(history) <= window:
            return False
        ref = history[-window - 1]
        last = history[-window:]
        return all(v < ref for v in last) if higher_is_better else all(v > ref for v in last)

    return stop


def count_correct(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, batch_size: int = _EVAL_BATCH,
                  device: str | torch.device | None = None, finite_only: bool = False) -> int:
    """Inputs ``x`` whose arg-max output is the label ``y``, in chunks of ``batch_size`` (moved to
    ``device``); with ``finite_only``, a row of outputs that is not finite counts as wrong.
    Call it in evaluation mode without gradients (as :func:`train_module` does)."""
    correct = 0
    for s in range(0, x.shape[0], batch_size):
        xb = x[s:s + batch_size]
        out = model(xb if device is None else xb.to(device))
        ok = out.argmax(1) == y[s:s + batch_size].to(out.device)
        if finite_only:
            ok &= torch.isfinite(out).all(1)
        correct += int(ok.sum())
    return correct


def sum_squared_error(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, batch_size: int = _EVAL_BATCH) -> float:
    """Sum over ``x`` of the squared errors of the outputs (in float64), in chunks of ``batch_size``."""
    sse = 0.0
    for s in range(0, x.shape[0], batch_size):
        d = model(x[s:s + batch_size]) - y[s:s + batch_size]
        sse += float((d.double() ** 2).sum())
    return sse


def _batches(n: int, batch_size: int, last_batch: str) -> list[tuple[int, int]]:
    starts = list(range(0, n, batch_size))
    if starts and n - starts[-1] == 1:
        if last_batch == "fold" and len(starts) > 1:
            starts.pop()  # the last sample joins the previous batch
        elif last_batch == "skip":
            return list(zip(starts[:-1], starts[1:]))
    return list(zip(starts, starts[1:] + [n]))


def train_module(build: Callable[[], nn.Module], x_train: torch.Tensor, y_train: torch.Tensor, *,
                 validate: Callable[[nn.Module], float], loss_fn: nn.Module, epochs: int, batch_size: int,
                 seed: int, shuffle_seed: int | None = None, optimizer: str = "adam", lr: float = DEFAULT_LR,
                 weight_decay: float = 0.0, momentum: float = 0.0,
                 lr_at_epoch: Callable[[int], float] | None = None,
                 transform: Callable[[torch.Tensor, torch.Generator], torch.Tensor] | None = None,
                 last_batch: str = "fold", validate_every_epoch: bool = True,
                 stop: Callable[[Sequence[float]], bool] | None = None, stop_on_nonfinite_loss: bool = False,
                 max_seconds: float | None = None, started_at: float | None = None,
                 n_threads: int | None = 1, device: str | torch.device = "cpu") -> LoopResult:
    """The training loop of every NAS network in graphbo: mini-batch training, then validation.

    Inside :func:`torch.random.fork_rng` (the global torch RNG is restored afterwards)
    and ``graphbo.threads.limit_threads(n_threads)`` (restored too): seed
    torch with ``seed``, ``build()`` the network (moved to ``device``) and an optimiser;
    then for every epoch: set the learning rate to ``lr_at_epoch(epoch)`` (0-based)
    if given, shuffle the training set (a ``torch.Generator`` seeded with
    ``shuffle_seed``, default ``seed``), and for each mini-batch of ``batch_size``:
    index the training tensors (on their own device), ``transform(x_batch,
    generator)`` if given (e.g. augmentation), move the batch to ``device``, and
    take one optimiser step on ``loss_fn``. After every epoch (or, with
    ``validate_every_epoch=False``, once after the last) the network is put in
    evaluation mode and ``validate(model)`` is recorded, without gradients.

    Parameters
    ----------
    build : callable
        Returns the untrained network; called once the RNG is seeded.
    x_train, y_train : Tensor
        The training set; the batches are moved to ``device`` one at a time.
    validate : callable
        ``validate(model) -> float``: the value recorded in :attr:`LoopResult.history`
        (an error, an accuracy, ...).
    optimizer : {"adam", "sgd"}
        ``torch.optim.Adam(lr, weight_decay)`` or ``torch.optim.SGD(lr, momentum, weight_decay)``.
    last_batch : {"fold", "skip", "keep"}
        A last mini-batch of one sample joins the previous batch, is skipped, or is kept.
    stop : callable, optional
        Early stopping, asked after every validation (:func:`patience_rule`, :func:`window_rule`).
    stop_on_nonfinite_loss : bool
        End the training at the first non-finite loss (``stopped == "diverged"``,
        nothing more is validated).
    max_seconds, started_at : float, optional
        A soft time limit: stop after the first epoch that ends more than
        ``max_seconds`` after ``started_at`` (a :func:`time.perf_counter` time;
        default: the start of this call).
    n_threads : int or None
        Torch and BLAS threads during the training (``None``: unchanged).
    """
    t0 = time.perf_counter() if started_at is None else started_at
    if optimizer not in ("adam", "sgd"):
        raise ValueError(f"optimizer must be 'adam' or 'sgd', got {optimizer!r}")
    if last_batch not in LAST_BATCH:
        raise ValueError(f"last_batch must be one of {LAST_BATCH}, got {last_batch!r}")
    dev = torch.device(device)
    history: list[float] = []
    stopped = "epochs"
    with limit_threads(n_threads), torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        model = build().to(dev)
        gen = torch.Generator().manual_seed(int(seed if shuffle_seed is None else shuffle_seed))
        opt: torch.optim.Optimizer
        if optimizer == "adam":
            opt = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
        else:
            opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay)
        n = x_train.shape[0]
        batches = _batches(n, int(batch_size), last_batch)

        def validated() -> float:
            model.eval()
            with torch.no_grad():
                return float(validate(model))

        for epoch in range(int(epochs)):
            if lr_at_epoch is not None:
                rate = lr_at_epoch(epoch)
                for group in opt.param_groups:
                    group["lr"] = rate
            model.train()
            order = torch.randperm(n, generator=gen).to(x_train.device)
            for s, e in batches:
                idx = order[s:e]
                xb = x_train[idx]
                if transform is not None:
                    xb = transform(xb, gen)
                xb, yb = xb.to(dev), y_train[idx].to(dev)
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(model(xb), yb)
                if stop_on_nonfinite_loss and not bool(torch.isfinite(loss)):
                    stopped = "diverged"
                    break
                loss.backward()
                opt.step()
            if stopped == "diverged":
                break
            if validate_every_epoch:
                history.append(validated())
                if stop is not None and stop(history):
                    stopped = "early-stopping"
                    break
            if max_seconds is not None and time.perf_counter() - t0 > max_seconds:
                stopped = "time"
                break
        if not validate_every_epoch and stopped != "diverged":
            history.append(validated())
    return LoopResult(model=model, history=history, stopped=stopped)


def _validation_error(model: nn.Module, x: torch.Tensor, y: torch.Tensor, task: str) -> float:
    """``1 - accuracy`` (classification) or the mean squared error (regression); ``inf`` if not finite."""
    if task == "classification":
        err = 1.0 - count_correct(model, x, y) / x.shape[0]
    else:
        err = sum_squared_error(model, x, y) / y.numel()
    return err if math.isfinite(err) else math.inf


def train(arch: Architecture | Mapping[str, Any], data: TrainValData, *, epochs: int | None = None,
          batch_size: int = DEFAULT_BATCH_SIZE, lr: float = DEFAULT_LR, seed: int = 0,
          optimizer: str = "adam", weight_decay: float = 0.0, patience: int | None = None,
          max_seconds: float | None = None, n_threads: int | None = 1,
          device: str | torch.device = "cpu") -> TrainingResult:
    """Train ``arch`` on ``data`` and report the validation errors; see :func:`train_and_evaluate`."""
    t0 = time.perf_counter()
    if not isinstance(arch, Architecture):
        arch = Architecture.from_dict(dict(arch))
    if arch.kind != data.kind:
        raise ValueError(f"a {arch.kind.upper()} cannot be trained on {data.name!r}, whose inputs "
                         f"{data.input_shape} need a {data.kind.upper()}")
    arch_task = task_of(arch)
    if arch_task != data.task:
        raise ValueError(f"the architecture's decision layers make it a {arch_task} network but "
                         f"{data.name!r} is a {data.task} task")
    if epochs is None:
        epochs = DEFAULT_EPOCHS[arch.kind]
    for label, v in (("epochs", epochs), ("batch_size", batch_size)):
        if int(v) != v or v < 1:
            raise ValueError(f"{label} must be a positive integer, got {v!r}")
    if not (lr > 0 and math.isfinite(lr)):
        raise ValueError(f"lr must be positive, got {lr!r}")
    if optimizer not in ("adam", "sgd"):
        raise ValueError(f"optimizer must be 'adam' or 'sgd', got {optimizer!r}")
    if patience is not None and (int(patience) != patience or patience < 1):
        raise ValueError(f"patience must be a positive integer or None, got {patience!r}")
    dev = torch.device(device)
    x_tr = torch.from_numpy(data.x_train).to(dev)
    y_tr = torch.from_numpy(data.y_train).to(dev)
    x_va = torch.from_numpy(data.x_valid).to(dev)
    y_va = torch.from_numpy(data.y_valid).to(dev)
    if data.task == "regression" and y_tr.dim() == 1:
        y_tr, y_va = y_tr[:, None], y_va[:, None]
    run = train_module(
        lambda: build_module(arch, data.input_shape, n_outputs=data.n_outputs), x_tr, y_tr,
        validate=lambda model: _validation_error(model, x_va, y_va, data.task),
        loss_fn=nn.CrossEntropyLoss() if data.task == "classification" else nn.MSELoss(),
        epochs=int(epochs), batch_size=int(batch_size), seed=int(seed), shuffle_seed=int(seed) + 1,
        optimizer=optimizer, lr=lr, weight_decay=weight_decay, last_batch="fold",
        stop=None if patience is None else patience_rule(int(patience)),
        max_seconds=max_seconds, started_at=t0, n_threads=None if n_threads is None else int(n_threads),
        device=dev)
    history, model = run.history, run.model
    best = min(history)
    if not math.isfinite(best):
        raise FloatingPointError(f"training diverged: the validation error was never finite ({history})")
    return TrainingResult(error=float(best), history=history, best_epoch=history.index(best) + 1,
                          epochs_run=len(history), seconds=time.perf_counter() - t0,
                          n_parameters=sum(p.numel() for p in model.parameters()), stopped=run.stopped)


def train_and_evaluate(arch: Architecture | Mapping[str, Any], data: TrainValData, *, epochs: int | None = None,
                       batch_size: int = DEFAULT_BATCH_SIZE, lr: float = DEFAULT_LR, seed: int = 0,
                       optimizer: str = "adam", weight_decay: float = 0.0, patience: int | None = None,
                       max_seconds: float | None = None, n_threads: int | None = 1,
                       device: str | torch.device = "cpu") -> float:
    """Train a network and return its validation error (lower is better).

    Parameters
    ----------
    arch : Architecture or dict
        Its kind must match the data (vectors: MLP, images: CNN) and its
        decision layers the task (``softmax``: classification, ``linear``:
        regression).
    data : TrainValData
        From one of the loaders of this module.
    epochs : int, optional
        Passes over the training set; default 20 for MLPs, 5 for CNNs.
    batch_size : int, default 64
    lr : float, default 1e-3
    seed : int, default 0
        Seeds the weight initialisation and the batch order; the global
        torch RNG state is restored afterwards. On CPU the same seed gives the
        same error.
    optimizer : {"adam", "sgd"}, default "adam"
        The paper used plain SGD with tiny steps for ~20K iterations
        (App. C.2); Adam reaches a useful error within a few epochs.
    weight_decay : float, default 0
    patience : int, optional
        Early stopping: stop once the best epoch is ``patience`` epochs old.
    max_seconds : float, optional
        Stop after the first epoch that ends later than this (a soft time
        limit); the best error so far is returned.
    n_threads : int or None, default 1
        Torch intra-op threads during training (restored afterwards); ``None``
        leaves the setting alone.
    device : str, default "cpu"

    Returns
    -------
    float
        The minimum over epochs of the validation error, evaluated after every
        epoch (App. C.2): ``1 - accuracy`` for classification, the mean squared
        error of the standardised target for regression.

    Raises
    ------
    ValueError
        Invalid network, or a network that does not fit the data.
    FloatingPointError
        If every validation error was NaN/infinite (training diverged).
    """
    return train(arch, data, epochs=epochs, batch_size=batch_size, lr=lr, seed=seed, optimizer=optimizer,
                 weight_decay=weight_decay, patience=patience, max_seconds=max_seconds,
                 n_threads=n_threads, device=device).error
