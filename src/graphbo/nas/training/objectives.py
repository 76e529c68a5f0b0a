"""Architecture objectives: train-and-validate (NASBOT Sec. 5) and a cheap synthetic stand-in.

Both are plain callables ``objective(arch) -> float`` (lower is better) that
accept an :class:`~graphbo.nas.domain.architecture.Architecture` or its dict, and
raise :class:`ValueError` for a network that is invalid or does not fit the
domain.

Domains
-------
``"mlp-reg"``
    MLP regression (decision layers ``linear``); default data: scikit-learn's
    diabetes (:func:`~graphbo.nas.training.training.load_diabetes_data`).
``"mlp-class"``
    MLP classification (decision layers ``softmax``); default data: digits as
    64-d vectors.
``"cnn"``
    CNN classification; default data: digits as ``1 x 8 x 8`` images.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, TypedDict

from ..domain.architecture import Architecture
from .torch_model import _as_arch, decision_layers, layer_output_shapes, task_of, topological_order
from .training import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_EPOCHS,
    DEFAULT_LR,
    TrainingResult,
    TrainValData,
    load_diabetes_data,
    load_digits_data,
    train,
)

__all__ = ["DOMAINS", "NASObjective", "SyntheticArchitectureObjective", "architecture_features"]

# domain -> (architecture kind, task, default input shape, default number of outputs)
DOMAINS: dict[str, tuple[str, str, tuple[int, ...], int]] = {
    "mlp-reg": ("mlp", "regression", (10,), 1),
    "mlp-class": ("mlp", "classification", (64,), 10),
    "cnn": ("cnn", "classification", (1, 8, 8), 10),
}


class _TrainSettings(TypedDict):
    """The keyword arguments a :class:`NASObjective` passes to :func:`~graphbo.nas.training.training.train`."""

    epochs: int
    batch_size: int
    lr: float
    seed: int
    optimizer: str
    weight_decay: float
    patience: int | None
    max_seconds: float | None
    n_threads: int | None
    device: str


#: trainings on the bundled data, shared by the objectives of one process: (settings, network) -> result
_SHARED_RESULTS: dict[tuple, TrainingResult] = {}


def _domain(domain: str) -> tuple[str, str, tuple[int, ...], int]:
    try:
        return DOMAINS[domain]
    except KeyError:
        raise ValueError(f"unknown domain {domain!r}; choose one of {sorted(DOMAINS)}") from None


def _check_fits(arch: Architecture, kind: str, task: str, domain: str) -> None:
    if arch.kind != kind:
        raise ValueError(f"domain {domain!r} needs a {kind.upper()}, got a {arch.kind.upper()}")
    t = task_of(arch)
    if t != task:
        raise ValueError(f"domain {domain!r} is a {task} task but the network's decision layers make it {t}")


class NASObjective:
    """Validation error of a network trained on a data set (NASBOT Sec. 5, App. C.2).

    Parameters
    ----------
    domain : {"mlp-reg", "mlp-class", "cnn"}
    data : TrainValData, optional
        The data to train and validate on (e.g. from
        :func:`~graphbo.nas.training.training.load_csv_data` or
        :func:`~graphbo.nas.training.training.load_image_folder_or_npz`); by default the
        domain's bundled scikit-learn data, split with ``seed``.
    epochs : int, optional
        Default 20 (MLP) or 5 (CNN).
    batch_size, lr, optimizer, weight_decay, patience, max_seconds, n_threads, device
        Passed to :func:`~graphbo.nas.training.training.train`.
    seed : int, default 0
        Seeds the default data split and every training run (the same seed for
        every network, so a network's value is reproducible).
    cache : bool, default True
        Remember the value of each network (by its JSON form). On the bundled
        data (no ``data`` given, no ``max_seconds``), trainings are also shared
        by every objective of the process with the same domain, seed and
        training settings: a comparison trains the initial pool once per seed,
        not once per method. Training is deterministic given the seed, so this
        changes no value.

    Calling the objective returns the minimum validation error over epochs:
    ``1 - accuracy`` (classification) or the MSE of the standardised target
    (regression). :meth:`details` returns the whole
    :class:`~graphbo.nas.training.training.TrainingResult`.
    """

    default_budget = 100
    default_n_initial = 10
    optimum: float | None = None

    def __init__(self, domain: str = "mlp-class", *, data: TrainValData | None = None, epochs: int | None = None,
                 seed: int = 0, batch_size: int = DEFAULT_BATCH_SIZE, lr: float = DEFAULT_LR,
                 optimizer: str = "adam", weight_decay: float = 0.0, patience: int | None = None,
                 max_seconds: float | None = None, n_threads: int | None = 1, device: str = "cpu",
                 cache: bool = True):
        self.kind, self.task, _, _ = _domain(domain)
        self.domain = domain
        self.name = f"nas-{domain}"
        if data is not None:
            if not isinstance(data, TrainValData):
                raise TypeError(f"data must be a TrainValData (see graphbo.nas.training.training loaders), got "
                                f"{type(data).__name__}")
            if data.kind != self.kind or data.task != self.task:
                raise ValueError(f"domain {domain!r} needs {self.task} data for a {self.kind.upper()}; "
                                 f"{data.name!r} is {data.task} data for a {data.kind.upper()}")
        self._data = data
        self.epochs = DEFAULT_EPOCHS[self.kind] if epochs is None else int(epochs)
        self.seed = int(seed)
        self.train_kwargs = _TrainSettings(epochs=self.epochs, batch_size=batch_size, lr=lr, seed=self.seed,
                                           optimizer=optimizer, weight_decay=weight_decay, patience=patience,
                                           max_seconds=max_seconds, n_threads=n_threads, device=device)
        self.cache = bool(cache)
        self._cache: dict[str, TrainingResult] = {}
        # the bundled data sets are a function of the seed: trainings on them are shared by all
        # objectives of one process with the same settings (e.g. the initial pool, which every
        # method of a comparison evaluates for the same seed)
        self._shared_prefix = None if data is not None or max_seconds is not None else (
            domain, tuple(sorted((k, repr(v)) for k, v in self.train_kwargs.items())))

    @property
    def data(self) -> TrainValData:
        """The training/validation data (the default is loaded on first use)."""
        if self._data is None:
            if self.domain == "mlp-reg":
                self._data = load_diabetes_data(self.seed)
            else:
                self._data = load_digits_data(self.seed, images=self.kind == "cnn")
        return self._data

    @property
    def input_shape(self) -> tuple[int, ...]:
        return self.data.input_shape

    @property
    def n_outputs(self) -> int:
        return self.data.n_outputs

    def details(self, arch: Architecture | Mapping[str, Any]) -> TrainingResult:
        """The full training record of a network (cached)."""
        arch = _as_arch(arch)
        _check_fits(arch, self.kind, self.task, self.domain)
        key = arch.to_json()
        if self.cache and key in self._cache:
            return self._cache[key]
        shared = (self._shared_prefix, key) if self.cache and self._shared_prefix is not None else None
        result = _SHARED_RESULTS.get(shared) if shared is not None else None
        if result is None:
            result = train(arch, self.data, **self.train_kwargs)
            if shared is not None:
                _SHARED_RESULTS[shared] = result
        if self.cache:
            self._cache[key] = result
        return result

    def __call__(self, arch: Architecture | Mapping[str, Any]) -> float:
        return float(self.details(arch).error)

    def __getstate__(self) -> dict[str, Any]:  # do not ship the cache to worker processes
        state = dict(self.__dict__)
        state["_cache"] = {}
        return state


def _longest_paths(arch: Architecture, order: list[int], ip: int) -> list[float]:
    lp = [-math.inf] * arch.n_layers
    lp[ip] = 0.0
    for v in order:
        for c in arch.children(v):
            lp[c] = max(lp[c], lp[v] + 1)
    return lp


_RECTIFIERS = ("relu", "crelu", "leaky-relu", "softplus", "elu")
_GOOD_CNN = ("conv3", "res3", "res5")


def architecture_features(arch: Architecture | Mapping[str, Any]) -> dict[str, float]:
    """Structural features the synthetic objective is a function of.

    ``depth``: hops on the longest ``ip -> op`` path. ``log_units``: mean of
    ``log2(units)`` over processing layers with units. ``skips``: edges beyond
    a tree, ``|E| - (|L| - 1)`` (0 for a chain). ``good_fraction``: share of
    processing layers with a favoured label (rectifiers for MLPs; conv3, res3,
    res5 for CNNs; pooling layers are not counted). ``decision``: number of
    decision layers. ``reductions`` (CNN only): most stride-2 layers
    (pooling, or conv/res at stride 2) on any ``ip -> op`` path.
    """
    arch = _as_arch(arch)
    order = topological_order(arch)
    ip = arch.labels.index("ip")
    op = arch.labels.index("op")
    dec = decision_layers(arch)
    proc = [i for i in range(arch.n_layers) if i not in (ip, op) and i not in dec]
    lp = _longest_paths(arch, order, ip)
    units = [u for u in (arch.units[i] for i in proc) if u is not None]
    log_units = (sum(math.log2(max(float(u), 1.0)) for u in units) / len(units)
                 if units else 0.0)
    counted = [i for i in proc if not arch.labels[i].endswith("pool")]
    good = _RECTIFIERS if arch.kind == "mlp" else _GOOD_CNN
    good_fraction = (sum(arch.labels[i] in good for i in counted) / len(counted)) if counted else 0.0
    feats = {
        "depth": float(lp[op]),
        "log_units": float(log_units),
        "skips": float(len(arch.edges) - (arch.n_layers - 1)),
        "good_fraction": float(good_fraction),
        "decision": float(len(dec)),
    }
    if arch.kind == "cnn":
        red = [-math.inf] * arch.n_layers
        red[ip] = 0.0
        for v in order:
            lab = arch.labels[v]
            step = 1.0 if (lab.endswith("pool") or (
                lab.startswith(("conv", "res")) and arch.strides is not None and arch.strides[v] == 2)) else 0.0
            if v != ip:
                red[v] = max(red[p] for p in arch.parents(v)) + step
        feats["reductions"] = float(red[op])
    return feats


class SyntheticArchitectureObjective:
    """A cheap, deterministic architecture objective for tests (not from the paper).

    .. math::

        z(G) = \\sum_k \\big((\\phi_k(G) - t_k) / s_k\\big)^2, \\qquad
        f(G) = z / (1 + z) \\in [0, 1)

    over the features :math:`\\phi_k` of :func:`architecture_features`, with
    targets :math:`t_k` and scales :math:`s_k` (:attr:`TARGETS`):

    ===============  =====  =====  =====
    feature          MLP t  CNN t  scale
    ===============  =====  =====  =====
    depth            12     14     8
    log_units        7      7      2     (128 units per layer)
    skips            3      3      3
    good_fraction    1      1      0.5
    decision         2      2      1.5
    reductions       --     3      2
    ===============  =====  =====  =====

    The minimum 0 is attained exactly by networks with all features on their
    targets (:meth:`optimal_architecture` builds one); the value rises
    smoothly, and saturates slowly, with the distance from that region, so
    networks like the paper's initial pools (deep feed-forward chains with one
    decision layer) score between about 0.6 and 0.9 and skip connections and
    extra decision layers pay off, as NASBOT found for real data (Sec. 5).
    Evaluating takes well under a millisecond. The network is validated as
    :func:`~graphbo.nas.training.torch_model.build_module` would (on the domain's
    default input shape), so invalid networks raise :class:`ValueError` just
    as with :class:`NASObjective`.
    """

    TARGETS = {
        "mlp": {"depth": (12, 8), "log_units": (7, 2), "skips": (3, 3), "good_fraction": (1, 0.5),
                "decision": (2, 1.5)},
        "cnn": {"depth": (14, 8), "log_units": (7, 2), "skips": (3, 3), "good_fraction": (1, 0.5),
                "decision": (2, 1.5), "reductions": (3, 2)},
    }
    optimum = 0.0
    default_budget = 100
    default_n_initial = 10

    def __init__(self, domain: str = "mlp-class", input_shape: tuple[int, ...] | None = None):
        self.kind, self.task, shape, self.n_outputs = _domain(domain)
        self.domain = domain
        self.name = f"synthetic-{domain}"
        self.input_shape = tuple(input_shape) if input_shape is not None else shape

    def __call__(self, arch: Architecture | Mapping[str, Any]) -> float:
        arch = _as_arch(arch)
        _check_fits(arch, self.kind, self.task, self.domain)
        layer_output_shapes(arch, self.input_shape, n_outputs=self.n_outputs)  # validity, as for training
        feats = architecture_features(arch)
        z = sum(((feats[k] - t) / s) ** 2 for k, (t, s) in self.TARGETS[self.kind].items())
        return float(z / (1.0 + z))

    def optimal_architecture(self) -> Architecture:
        """A network with every feature on its target, so its value is 0.

        MLP: ``ip -> 10 x relu(128) -> 2 decision layers -> op`` with skip
        edges 2 -> 6 and 5 -> first decision layer. CNN: ``ip -> conv3, conv3,
        max-pool, res3, res3, max-pool, res3, res3 (stride 2), 4 x conv3 -> 2
        decision layers -> op`` with 128 channels and skip edges 1 -> 3 (into
        the first pooling layer) and 9 -> second decision layer.
        """
        dec = "linear" if self.task == "regression" else "softmax"
        if self.kind == "mlp":
            labels = ["ip"] + ["relu"] * 10 + [dec, dec, "op"]
            units: list[int | None] = [None] + [128] * 10 + [None, None, None]
            edges = [(i, i + 1) for i in range(10)] + [(10, 11), (10, 12), (11, 13), (12, 13), (2, 6), (5, 11)]
            return Architecture(kind="mlp", labels=labels, units=units, edges=edges)
        proc = ["conv3", "conv3", "max-pool", "res3", "res3", "max-pool", "res3", "res3",
                "conv3", "conv3", "conv3", "conv3"]
        labels = ["ip"] + proc + [dec, dec, "op"]
        units = [None] + [None if p == "max-pool" else 128 for p in proc] + [None, None, None]
        strides: list[int | None] = [None] + [None if p == "max-pool" else 1 for p in proc] + [None, None, None]
        strides[8] = 2
        edges = [(i, i + 1) for i in range(12)] + [(12, 13), (12, 14), (13, 15), (14, 15), (1, 3), (9, 14)]
        return Architecture(kind="cnn", labels=labels, units=units, edges=edges, strides=strides)
