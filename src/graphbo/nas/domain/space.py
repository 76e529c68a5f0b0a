"""The architecture domain as a search space (NASBOT, Kandasamy et al. 2018, Sec. 5 and App. B.1).

:class:`ArchitectureSpace` is to the NAS optimizers (NASBOT, RAND, EA) what
:class:`graphbo.Space` is to the others: it validates configurations at the
boundary, converts them to and from the rows that optimizers and studies
store, and samples. A configuration is the JSON form of an
:class:`~graphbo.nas.domain.architecture.Architecture`, :meth:`Architecture.to_dict`::

    {"kind": "cnn", "labels": ["ip", "conv3", ..., "softmax", "op"],
     "units": [null, 64, ..., null, null], "edges": [[0, 1], [1, 2], ...],
     "strides": [null, 1, ..., null, null]}          # CNNs only

**Row.** A network is stored as a 1-D ``int64`` row that encodes it exactly
(layer numbering included): ``[1, kind, n_layers, n_edges, labels...,
units..., strides..., edges...]`` with labels as indices into the kind's label
list and ``-1`` for "no units / no stride". Equal rows mean equal networks;
:meth:`key` gives a key that also equates networks that differ only in the
numbering of their layers (see :func:`graphbo.nas.domain.keys.architecture_key`).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from .architecture import CNN_LABELS, MLP_LABELS, Architecture, InvalidArchitectureError
from .constraints import Constraints
from .keys import architecture_key
from .pools import DOMAINS, decision_label, initial_pool, kind_of

__all__ = ["ArchitectureSpace", "ROW_FORMAT"]

#: first entry of every row (the encoding's version)
ROW_FORMAT = 1
_KIND_CODE = {"mlp": 0, "cnn": 1}
_LABELS = {"mlp": MLP_LABELS, "cnn": CNN_LABELS}
_KEYS = ("kind", "labels", "units", "edges", "strides")
#: default number of outputs of each domain's networks (regression 1; digits 10 classes)
_DEFAULT_OUTPUTS = {"mlp-reg": 1, "mlp-class": 10, "cnn": 10}


def _as_generator(seed) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


class ArchitectureSpace:
    """Neural-network architectures of one NASBOT domain.

    Parameters
    ----------
    domain : {"mlp-reg", "mlp-class", "cnn"}
        MLPs for regression (decision layers ``linear``), MLPs for
        classification (``softmax``), or CNNs (``softmax``).
    constraints : Constraints, optional
        Limits every network must satisfy (default: the paper's App. B.1
        limits, ``Constraints()``).
    n_outputs : int, optional
        Outputs of the networks (regression: 1; classification: classes).
        Not part of an architecture; recorded for the objective and the study.
    pool_seed : int, default 0
        Seed of the labels of the initial MLP pool (:func:`graphbo.nas.domain.pools.mlp_pool`).

    Examples
    --------
    >>> from graphbo.nas import ArchitectureSpace
    >>> space = ArchitectureSpace("mlp-class")
    >>> config = space.initial_pool()[0].to_dict()
    >>> space.from_index(space.to_index(config)) == config
    True
    """

    def __init__(self, domain: str = "mlp-class", *, constraints: Constraints | None = None,
                 n_outputs: int | None = None, pool_seed: int = 0):
        if domain not in DOMAINS:
            raise ValueError(f"unknown NAS domain {domain!r}; expected one of {DOMAINS}")
        if constraints is None:
            constraints = Constraints()
        if not isinstance(constraints, Constraints):
            raise TypeError(f"constraints must be a graphbo.nas.Constraints, got {type(constraints).__name__}")
        if n_outputs is None:
            n_outputs = _DEFAULT_OUTPUTS[domain]
        if isinstance(n_outputs, bool) or int(n_outputs) != n_outputs or n_outputs < 1:
            raise ValueError(f"n_outputs must be a positive integer, got {n_outputs!r}")
        if domain == "mlp-reg" and int(n_outputs) != 1:
            raise ValueError(f"a regression domain has 1 output, got n_outputs={n_outputs}")
        self.domain = domain
        self.kind = kind_of(domain)
        self.decision_label = decision_label(domain)
        self.constraints = constraints
        self.n_outputs = int(n_outputs)
        self.pool_seed = int(pool_seed)
        self._labels = _LABELS[self.kind]
        self._label_index = {l: i for i, l in enumerate(self._labels)}
        self._pool: list[Architecture] | None = None
        self._arch_cache: dict[bytes, Architecture] = {}

    # -- the protocol optimizers and studies use -------------------------------------------------
    #: rows are int64 (exact encodings of networks)
    row_dtype = np.int64
    #: the space is infinite for all practical purposes
    size = math.inf
    is_discrete = True

    @property
    def names(self) -> tuple[str, ...]:
        return ("architecture",)

    def __repr__(self) -> str:
        return (f"ArchitectureSpace({self.domain!r}, constraints={self.constraints!r}, "
                f"n_outputs={self.n_outputs})")

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ArchitectureSpace) and self.describe() == other.describe())

    def __hash__(self) -> int:
        return hash((self.domain, self.constraints, self.n_outputs, self.pool_seed))

    def describe(self) -> list[dict[str, Any]]:
        """JSON description (a study refuses to resume with a space that describes differently)."""
        c = self.constraints
        limits = {k: getattr(c, k) for k in c.__dataclass_fields__}
        return [{"name": "architecture", "class": "ArchitectureSpace", "domain": self.domain,
                 "constraints": limits, "n_outputs": self.n_outputs, "pool_seed": self.pool_seed}]

    # -- validation --------------------------------------------------------------------------------
    def architecture(self, config: Mapping[str, Any] | Architecture) -> Architecture:
        """The :class:`Architecture` of a configuration, validated.

        Raises ``ValueError`` (an :class:`~graphbo.nas.domain.architecture.InvalidArchitectureError`
        for invalid networks) naming the problem: a malformed dict, a network of another kind
        or task, a structurally invalid network, or one that breaks the constraints.
        """
        if isinstance(config, Architecture):
            arch = Architecture(kind=config.kind, labels=list(config.labels), units=list(config.units),
                                edges=list(config.edges),
                                strides=None if config.strides is None else list(config.strides))
        else:
            arch = self._parse(config)
        self._check(arch)
        return arch

    def _parse(self, config: Any) -> Architecture:
        if not isinstance(config, Mapping):
            raise ValueError(f"a network is a dict with keys {list(_KEYS[:4])} (and 'strides' for CNNs), "
                             f"got {type(config).__name__}: {config!r:.200}")
        missing = [k for k in _KEYS[:4] if k not in config]
        if missing:
            raise ValueError(f"malformed network: missing key(s) {missing}")
        extra = [k for k in config if k not in _KEYS]
        if extra:
            raise ValueError(f"malformed network: unknown key(s) {extra}; expected {list(_KEYS)}")
        kind = config["kind"]
        if kind != self.kind:
            raise ValueError(f"domain {self.domain!r} takes {self.kind.upper()} networks, got kind {kind!r}")
        labels, units, edges = config["labels"], config["units"], config["edges"]
        strides = config.get("strides")
        for name, value in (("labels", labels), ("units", units), ("edges", edges)):
            if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
                raise ValueError(f"malformed network: {name!r} must be a list, got {value!r:.200}")
        if strides is not None and (isinstance(strides, (str, bytes)) or not isinstance(strides, Sequence)):
            raise ValueError(f"malformed network: 'strides' must be a list or null, got {strides!r:.200}")
        for i, l in enumerate(labels):
            if not isinstance(l, str):
                raise ValueError(f"malformed network: label {i} is {l!r}, not a string")
        pairs = []
        for e in edges:
            if (isinstance(e, (str, bytes)) or not isinstance(e, Sequence) or len(e) != 2
                    or not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in e)):
                raise ValueError(f"malformed network: edge {e!r} is not a pair of layer indices")
            pairs.append((int(e[0]), int(e[1])))
        if self.kind == "mlp" and strides is not None and all(s is None for s in strides):
            strides = None  # an MLP's strides are all None: normalise to None
        return Architecture(kind=kind, labels=list(labels), units=list(units), edges=pairs,
                            strides=None if strides is None else list(strides))

    def _check(self, arch: Architecture) -> None:
        if arch.kind != self.kind:
            raise ValueError(f"domain {self.domain!r} takes {self.kind.upper()} networks, got a {arch.kind.upper()}")
        msg = arch.validity_error()
        if msg is not None:
            raise InvalidArchitectureError(f"invalid network: {msg}")
        wrong = sorted({l for l in arch.labels if l in ("linear", "softmax") and l != self.decision_label})
        if wrong:
            raise InvalidArchitectureError(
                f"domain {self.domain!r} needs {self.decision_label!r} decision layers, got {wrong[0]!r}")
        msg = self.constraints.violation(arch)
        if msg is not None:
            raise InvalidArchitectureError(f"network breaks the search-space constraints: {msg}")

    def validate(self, config: Mapping[str, Any] | Architecture) -> None:
        """Raise ``ValueError`` naming the problem if ``config`` is not a network of this space."""
        self.architecture(config)

    def contains(self, config: Mapping[str, Any] | Architecture) -> bool:
        try:
            self.architecture(config)
        except (ValueError, TypeError):
            return False
        return True

    # -- rows ------------------------------------------------------------------------------------------
    def encode(self, arch: Architecture) -> np.ndarray:
        """The row of a (valid) network."""
        n, E = arch.n_layers, arch.n_edges
        row = np.empty(4 + 3 * n + 2 * E, dtype=np.int64)
        row[:4] = (ROW_FORMAT, _KIND_CODE[arch.kind], n, E)
        row[4:4 + n] = [self._label_index[l] for l in arch.labels]
        row[4 + n:4 + 2 * n] = [-1 if u is None else int(u) for u in arch.units]
        strides = arch.strides or [None] * n
        row[4 + 2 * n:4 + 3 * n] = [-1 if s is None else int(s) for s in strides]
        if E:
            row[4 + 3 * n:] = np.asarray(arch.edges, dtype=np.int64).reshape(-1)
        return row

    def to_index(self, config: Mapping[str, Any] | Architecture) -> np.ndarray:
        """Validate a network and return its row (``ValueError`` with the reason otherwise)."""
        arch = self.architecture(config)
        row = self.encode(arch)
        self._remember(row.tobytes(), arch)
        return row

    def from_index(self, row: Sequence[int] | np.ndarray) -> dict[str, Any]:
        """The configuration (dict) of a row."""
        return _to_dict(self.architecture_at(row))

    def architecture_at(self, row: Sequence[int] | np.ndarray | bytes) -> Architecture:
        """The :class:`Architecture` of a row (one shared, cached object per row: do not edit it)."""
        if isinstance(row, (bytes, bytearray)):
            key = bytes(row)
            r = np.frombuffer(key, dtype=np.int64)
        else:
            r = np.asarray(row, dtype=np.int64).reshape(-1)
            key = r.tobytes()
        hit = self._arch_cache.get(key)
        if hit is not None:
            return hit
        arch = self._decode(r)
        self._remember(key, arch)
        return arch

    def _remember(self, key: bytes, arch: Architecture) -> None:
        if key not in self._arch_cache:
            if len(self._arch_cache) >= 100_000:
                self._arch_cache.clear()
            self._arch_cache[key] = arch

    def _decode(self, r: np.ndarray) -> Architecture:
        if r.size < 4 or r[0] != ROW_FORMAT or r[1] != _KIND_CODE[self.kind]:
            raise ValueError(f"not a row of a {self.kind.upper()} network of this space: {r[:8].tolist()}...")
        n, E = int(r[2]), int(r[3])
        if n < 0 or E < 0 or r.size != 4 + 3 * n + 2 * E:
            raise ValueError(f"malformed network row: {n} layers and {E} edges need {4 + 3 * n + 2 * E} "
                             f"entries, the row has {r.size}")
        lab = r[4:4 + n]
        if np.any((lab < 0) | (lab >= len(self._labels))):
            raise ValueError("malformed network row: label index out of range")
        labels = [self._labels[int(i)] for i in lab]
        units = [None if u < 0 else int(u) for u in r[4 + n:4 + 2 * n]]
        strides = [None if s < 0 else int(s) for s in r[4 + 2 * n:4 + 3 * n]]
        edges = [(int(a), int(b)) for a, b in r[4 + 3 * n:].reshape(-1, 2)]
        return Architecture(kind=self.kind, labels=labels, units=units, edges=edges,
                            strides=strides if self.kind == "cnn" else None)

    # -- keys ------------------------------------------------------------------------------------------
    @staticmethod
    def key(arch: Architecture) -> str:
        """Key equal for networks that differ only by the numbering of their layers
        (Weisfeiler-Lehman hash, :func:`graphbo.nas.domain.keys.architecture_key`)."""
        return arch.cached("wl-key", lambda: architecture_key(arch))

    # -- networks of the domain ----------------------------------------------------------------------------
    def initial_pool(self) -> list[Architecture]:
        """The domain's 10 initial feed-forward networks (App. B.1, Fig. 16/17) that satisfy the
        constraints (all of them with the default constraints)."""
        if self._pool is None:
            pool = initial_pool(self.domain, seed=self.pool_seed)
            self._pool = [a for a in pool if self.constraints.violation(a) is None]
        return list(self._pool)

    def sample_architectures(self, n: int, seed: int | np.random.Generator | None = None, *,
                             max_steps: int = 5) -> list[Architecture]:
        """``n`` random valid networks: a pool network chosen uniformly, mutated by 1 to
        ``max_steps`` (uniform) compound mutations (App. B.2) within the constraints."""
        from .modifiers import mutate

        rng = _as_generator(seed)
        pool = self.initial_pool()
        if not pool:
            raise ValueError("no network of the initial pool satisfies the constraints; cannot sample")
        out: list[Architecture] = []
        while len(out) < n:
            arch = pool[int(rng.integers(len(pool)))]
            for _ in range(int(rng.integers(1, max_steps + 1))):
                child = mutate(arch, rng, is_valid=self.constraints)
                if child is not None:
                    arch = child
            if self.constraints.violation(arch) is None and arch.validity_error() is None:
                out.append(arch)
        return out

    def sample_index(self, n: int, seed: int | np.random.Generator | None = None) -> list[np.ndarray]:
        """Rows of :meth:`sample_architectures` (rows differ in length, so a list)."""
        out = []
        for a in self.sample_architectures(n, seed):
            row = self.encode(a)
            self._remember(row.tobytes(), a)
            out.append(row)
        return out

    def sample(self, n: int = 1, seed: int | np.random.Generator | None = None) -> list[dict[str, Any]]:
        """``n`` random valid networks as configurations."""
        return [_to_dict(a) for a in self.sample_architectures(n, seed)]


def _to_dict(arch: Architecture) -> dict[str, Any]:
    d = {"kind": arch.kind, "labels": list(arch.labels), "units": list(arch.units),
         "edges": [list(e) for e in arch.edges]}
    if arch.strides is not None:
        d["strides"] = list(arch.strides)
    return d
