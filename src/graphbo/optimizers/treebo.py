"""TreeBO (Jenatton, Archambeau, González & Seeger, ICML 2017), NASBOT's feed-forward baseline.

NASBOT (Kandasamy et al. 2018, Sec. 5 and App. C.1) compares against "TreeBO
(Jenatton et al., 2017): a BO method for tree structured spaces. TreeBO only
searches over feed forward architectures". Like NASBOT's authors, who wrote
their own version, graphbo implements the model from the paper's description.

**The tree.** A feed-forward network (a chain ``ip -> h_1 -> ... -> h_d ->
decision -> op``) is a path in a tree: the root's children are the depths
``d``; node ``i`` ("the network has at least ``i`` hidden layers") holds layer
``i``'s variables ``v_i``: its label (MLP: the seven activations; CNN: conv,
res, pooling or fc), its unit count (a grid between the space's
``min_units`` and ``max_units``, log scale) and, for CNN conv/res layers, its
stride. Layer ``i``'s node lies on the path of every depth ``d >= i``, so its
variables are *shared* by those leaves. Only chains are searched: NASBOT's
domains also contain networks with skip connections and several decision
layers, which TreeBO never suggests (networks that are not chains may still be
told, e.g. through ``initial_configs``; the model leaves them out).

**The model** (Jenatton et al. 2017, Sec. 3: independent GPs at the leaves plus a
linear model whose weights live on the tree's shared nodes). With ``phi_i(x)``
the features of layer ``i`` (a constant 1, the label one-hot, the scaled
log-units, the stride bit)::

    f(x) = b + sum_{i <= d(x)} r_i^T phi_i(x) + g_{d(x)}(x),
    b ~ N(0, s0^2),  r_i ~ N(0, diag(s_group^2)),  g_d ~ GP(0, k_d) independent per depth d,
    k_d(x, x') = sf^2 exp(-1/2 sum_{i <= d} sum_group ||phi_i^group(x) - phi_i^group(x')||^2 / l_group^2)

(in ``k_d`` the groups are label, units and stride: the constant is equal within a leaf).

Integrating out ``b`` and the shared weights ``r_i`` gives the kernel

    k(x, x') = s0^2 + sum_{i <= min(d, d')} sum_group s_group^2 <phi_i^group(x), phi_i^group(x')>
               + [d = d'] k_d(x, x'),

so two networks share information through every layer position they both have
(the constant feature makes ``s_depth^2 min(d, d')`` a Brownian-motion kernel in
the depth), and networks of the same depth also through the leaf GP. As NASBOT's
reimplementation does (App. C.1: "we construct the entire kernel matrix and
perform standard GP inference"), the full kernel matrix is formed instead of the
paper's tree-structured inference; the posterior is the same.

Simplifications, and where this differs from the paper:

* the leaf GPs share one set of hyper-parameters (``sf``, one length-scale per
  feature group), and the linear weights of all nodes share one prior variance
  per feature group; all are fitted by maximising the marginal likelihood of the
  standardised values plus a weak log-normal prior (type-II MAP, deterministic
  restarts);
* the acquisition is expected improvement (computed as log-EI,
  :class:`graphbo.acquisition.ei.LogExpectedImprovement`), maximised over the tree
  by random sampling (depth uniform, then each layer's variables uniform) and
  rounds of local perturbation of the best candidates (a layer's units one grid
  step up or down, its label, a CNN conv's stride, a layer inserted or removed),
  not the paper's two-step acquisition;
* the depth ranges up to the space's ``max_layers`` minus the input, decision and
  output layers (NASBOT App. C.1: "We set the depth of the network to 60 as we
  allowed 60 layers"); every suggestion satisfies the space's constraints (App.
  C.1: "We also check for the other constraints").

**Initial design**: ``initial_configs``, then the domain's 10 initial networks
(NASBOT App. B.1; all are chains), then random chains.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import AbstractSet, Sequence

import numpy as np
import torch
from scipy.optimize import minimize as scipy_minimize

from .._validation import check_int, check_optional_int
from ..acquisition.ei import LogExpectedImprovement
from ..models.base import Posterior, Surrogate
from ..models.gp import robust_cholesky
from ..nas.domain.architecture import (CNN_CONV_LABELS, CNN_POOL_LABELS, CNN_PROCESSING_LABELS,
                                       DECISION_LABELS, MLP_PROCESSING_LABELS, Architecture)
from ..nas.domain.space import ArchitectureSpace
from .base import DEFAULT_MAX_TRAIN, Configs, _Excluded, check_max_train
from .nasbot import NASOptimizer

__all__ = ["Chain", "FeedForwardTree", "TreeGP", "TreeBO", "chain_of"]


@dataclass(frozen=True, kw_only=True)
class Chain:
    """The hidden layers of a feed-forward network, input to output.

    ``units[i]`` is ``None`` for a pooling layer; ``strides`` is ``None`` for MLPs
    and, for CNNs, 1 or 2 for conv/res layers and ``None`` for the others.
    """

    labels: tuple[str, ...]
    units: tuple[int | None, ...]
    strides: tuple[int | None, ...] | None = None

    @property
    def depth(self) -> int:
        return len(self.labels)


def chain_of(arch: Architecture) -> Chain | None:
    """The :class:`Chain` of a feed-forward network (any layer numbering), or ``None`` if ``arch``
    is not a chain ``ip -> hidden layers -> one decision layer -> op``."""
    n = arch.n_layers
    if n < 3 or arch.n_edges != n - 1:
        return None
    order = arch.topological_order()
    if set(arch.edges) != {(order[k], order[k + 1]) for k in range(n - 1)}:
        return None
    if arch.labels[order[0]] != "ip" or arch.labels[order[-1]] != "op" \
            or arch.labels[order[-2]] not in DECISION_LABELS:
        return None
    hidden = order[1:-2]
    if any(arch.labels[u] in DECISION_LABELS for u in hidden):
        return None
    # pooling layers always halve: their stride (None or 2) is not a variable
    strides = None if arch.strides is None else tuple(
        None if arch.labels[u] in CNN_POOL_LABELS else arch.strides[u] for u in hidden)
    return Chain(labels=tuple(arch.labels[u] for u in hidden), units=tuple(arch.units[u] for u in hidden),
                 strides=strides)


def _default_units_grid(low: int, high: int) -> list[int]:
    """Powers of two and 1.5 times powers of two in ``[low, high]`` (8, 12, 16, 24, ..., 1024 by default)."""
    grid = sorted({v for k in range(31) for v in (2 ** k, 3 * 2 ** k // 2) if low <= v <= high})
    return grid or [low]


class FeedForwardTree:
    """The tree-structured space of feed-forward networks of an :class:`ArchitectureSpace`.

    Parameters
    ----------
    space : ArchitectureSpace
    max_depth : int, optional
        Most hidden layers (default: ``max_layers - 3`` of the space's constraints, 57 for the
        paper's 60 layers; 57 if the space has no layer limit).
    units_grid : sequence of int, optional
        Unit counts a layer may take (default: powers of two and 1.5 x powers of two within
        ``[min_units, max_units]``).
    """

    def __init__(self, space: ArchitectureSpace, *, max_depth: int | None = None,
                 units_grid: Sequence[int] | None = None):
        c = space.constraints
        low = c.min_units if c.min_units is not None else 1
        high = c.max_units if c.max_units is not None else 1024
        limit = (c.max_layers if c.max_layers is not None else 60) - 3
        self.min_depth = max(1, (c.min_layers or 0) - 3)
        if limit < self.min_depth:
            raise ValueError(f"the space's constraints leave no room for a hidden layer (max_layers={c.max_layers})")
        self.max_depth = check_int("max_depth", max_depth, minimum=self.min_depth, maximum=limit) \
            if max_depth is not None else limit
        if units_grid is None:
            grid = _default_units_grid(low, high)
        else:
            if isinstance(units_grid, (str, bytes)) or not isinstance(units_grid, Sequence) or not units_grid:
                raise ValueError(f"units_grid must be a non-empty list of integers, got {units_grid!r}")
            grid = sorted({check_int("units_grid", u, minimum=low, maximum=high) for u in units_grid})
        self.space = space
        self.kind = space.kind
        self.units_grid = np.asarray(grid, dtype=np.int64)
        self.labels: tuple[str, ...] = MLP_PROCESSING_LABELS if self.kind == "mlp" else CNN_PROCESSING_LABELS
        self._label_index = {l: i for i, l in enumerate(self.labels)}
        self._log_low, self._log_high = math.log2(low), math.log2(max(high, low + 1))
        # feature groups of a layer: constant (depth), label one-hot, log-units, stride (CNN)
        sizes = {"depth": 1, "label": len(self.labels), "units": 1}
        if self.kind == "cnn":
            sizes["stride"] = 1
        self.groups = tuple(sizes)
        self.group_slices: dict[str, slice] = {}
        start = 0
        for g, k in sizes.items():
            self.group_slices[g] = slice(start, start + k)
            start += k
        self.n_features = start

    # -- chains <-> networks --------------------------------------------------------------
    def to_architecture(self, chain: Chain) -> Architecture:
        """The network ``ip -> chain -> decision layer -> op`` (layers numbered along the chain)."""
        labels = ["ip", *chain.labels, self.space.decision_label, "op"]
        units: list[int | None] = [None, *chain.units, None, None]
        edges = [(i, i + 1) for i in range(len(labels) - 1)]
        strides = None if self.kind == "mlp" else [None, *(chain.strides or ()), None, None]
        return Architecture(kind=self.kind, labels=labels, units=units, edges=edges, strides=strides)

    def valid(self, chain: Chain) -> bool:
        """Whether the network of ``chain`` is in the space (structure and constraints)."""
        return self.min_depth <= chain.depth <= self.max_depth and self.space.contains(self.to_architecture(chain))

    # -- features ---------------------------------------------------------------------------
    def encode(self, chains: Sequence[Chain]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(features, depths)``: features ``(m, max_depth, n_features)`` (zero beyond each
        chain's depth) and depths ``(m,)``."""
        m, D = len(chains), max([self.max_depth] + [c.depth for c in chains])
        F = np.zeros((m, D, self.n_features))
        depths = np.zeros(m, dtype=np.int64)
        s = self.group_slices
        span = self._log_high - self._log_low
        for j, c in enumerate(chains):
            depths[j] = c.depth
            for i, lab in enumerate(c.labels):
                F[j, i, s["depth"].start] = 1.0
                F[j, i, s["label"].start + self._label_index[lab]] = 1.0
                u = c.units[i]
                if u is not None:
                    F[j, i, s["units"].start] = (math.log2(u) - self._log_low) / span
                if self.kind == "cnn" and c.strides is not None and c.strides[i] == 2:
                    F[j, i, s["stride"].start] = 1.0
        return torch.as_tensor(F), torch.as_tensor(depths)

    # -- sampling and perturbation (the acquisition optimiser's moves) ------------------------------
    def _allowed_labels(self, prev: str | None) -> tuple[str, ...]:
        if self.kind == "mlp":
            return self.labels
        if prev is None:  # the input layer feeds a convolution
            return CNN_CONV_LABELS
        if prev == "fc":  # nothing but fc after the image is flattened
            return ("fc",)
        return self.labels

    def _layer(self, label: str, rng: np.random.Generator) -> tuple[int | None, int | None]:
        units = None if label in CNN_POOL_LABELS else int(self.units_grid[rng.integers(self.units_grid.size)])
        stride = (int(rng.integers(1, 3)) if label in CNN_CONV_LABELS else None) if self.kind == "cnn" else None
        return units, stride

    def _make(self, labels: list[str], units: list[int | None], strides: list[int | None]) -> Chain:
        return Chain(labels=tuple(labels), units=tuple(units), strides=tuple(strides) if self.kind == "cnn" else None)

    def sample(self, rng: np.random.Generator) -> Chain:
        """A random chain down the tree: depth uniform, then each layer's label, units and stride uniform
        (CNN: the first layer a conv/res layer, only fc layers after an fc layer)."""
        d = int(rng.integers(self.min_depth, self.max_depth + 1))
        labels: list[str] = []
        units: list[int | None] = []
        strides: list[int | None] = []
        for _ in range(d):
            allowed = self._allowed_labels(labels[-1] if labels else None)
            lab = allowed[int(rng.integers(len(allowed)))]
            u, s = self._layer(lab, rng)
            labels.append(lab)
            units.append(u)
            strides.append(s)
        return self._make(labels, units, strides)

    def _well_formed(self, labels: list[str]) -> bool:
        prev = None
        for lab in labels:
            if lab not in self._allowed_labels(prev):
                return False
            prev = lab
        return self.min_depth <= len(labels) <= self.max_depth

    def perturb(self, chain: Chain, rng: np.random.Generator) -> Chain | None:
        """One local move in the tree (``None`` if the drawn move is not possible here): a layer's
        units one grid step up or down, a layer's label, a conv's stride, a layer inserted (a copy of
        a neighbour) or removed."""
        labels: list[str] = list(chain.labels)
        units: list[int | None] = list(chain.units)
        strides: list[int | None] = list(chain.strides) if chain.strides is not None else [None] * chain.depth
        d = chain.depth
        moves = ["units", "label", "insert", "remove"] + (["stride"] if self.kind == "cnn" else [])
        move = moves[int(rng.integers(len(moves)))]
        i = int(rng.integers(d))
        if move == "units":
            u = units[i]
            if u is None:
                return None
            k = int(np.argmin(np.abs(self.units_grid - u)))
            k = min(max(k + (1 if rng.random() < 0.5 else -1), 0), self.units_grid.size - 1)
            if int(self.units_grid[k]) == units[i]:
                return None
            units[i] = int(self.units_grid[k])
        elif move == "label":
            choices = [l for l in self._allowed_labels(labels[i - 1] if i else None) if l != labels[i]]
            if not choices:
                return None
            labels[i] = choices[int(rng.integers(len(choices)))]
            if self.kind == "cnn" and ((units[i] is None) != (labels[i] in CNN_POOL_LABELS)
                                       or (strides[i] is None) != (labels[i] in CNN_CONV_LABELS)):
                units[i], strides[i] = self._layer(labels[i], rng)  # the new kind of layer's variables
        elif move == "stride":
            if labels[i] not in CNN_CONV_LABELS:
                return None
            strides[i] = 3 - int(strides[i] or 1)
        elif move == "insert":
            if d >= self.max_depth:
                return None
            labels.insert(i, labels[i])
            units.insert(i, units[i])
            strides.insert(i, 1 if strides[i] is not None else None)  # a copy that does not halve again
        else:  # remove
            if d <= self.min_depth:
                return None
            del labels[i], units[i], strides[i]
        if not self._well_formed(labels):
            return None
        return self._make(labels, units, strides)


class TreeGP(Surrogate):
    """The TreeBO surrogate on :class:`Chain` inputs (module docstring: the kernel and its fit).

    ``y`` is standardised; :meth:`transform_outcome` maps a value onto that scale.
    Type-II MAP hyper-parameters (one posterior "sample", ``S = 1``).
    """

    def __init__(self, tree: FeedForwardTree, n_restarts: int = 3):
        self.tree = tree
        self.n_restarts = n_restarts
        # log-parameters: s0^2, s_group^2 (per group), sf^2, l_group (per group), noise^2
        G = len(tree.groups)
        # the constant feature is equal for networks of one depth: it has no length-scale
        self._ls_groups = tuple(g for g in tree.groups if g != "depth")
        self._names = (["log_s0"] + [f"log_s_{g}" for g in tree.groups] + ["log_sf"]
                       + [f"log_l_{g}" for g in self._ls_groups] + ["log_noise"])
        # prior means: modest linear and leaf variances (the data are standardised), length-scales
        # of a few feature units (a label change is a distance of sqrt(2)), small noise
        self._prior_mean = np.array([math.log(0.5)] + [math.log(0.05)] * G + [math.log(0.5)]
                                    + [math.log(2.0)] * (G - 1) + [math.log(0.05)])
        self._prior_sd = 2.0
        self.theta: np.ndarray | None = None
        self._y = np.zeros(0)
        self._mu, self._sd = 0.0, 1.0

    # -- kernel ------------------------------------------------------------------------------
    def _unpack(self, theta: torch.Tensor) -> dict[str, torch.Tensor]:
        return {n: theta[i] for i, n in enumerate(self._names)}

    def _scaled(self, F: torch.Tensor, p: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """Features scaled for the linear part (by ``s_group``) and the leaf GP (by ``1 / l_group``),
        flattened to ``(m, D * n_features)``."""
        lin_parts, inv_parts = [], []
        for g, sl in self.tree.group_slices.items():
            k = sl.stop - sl.start
            lin_parts.append(torch.exp(0.5 * p[f"log_s_{g}"]).expand(k))
            inv_parts.append(torch.exp(-p[f"log_l_{g}"]).expand(k) if g in self._ls_groups
                             else torch.zeros(k, dtype=F.dtype))
        lin = torch.cat(lin_parts)
        inv = torch.cat(inv_parts)
        return (F * lin).flatten(1), (F * inv).flatten(1)

    def _kernel(self, F1, d1, F2, d2, p) -> torch.Tensor:
        A1, B1 = self._scaled(F1, p)
        A2, B2 = self._scaled(F2, p)
        sq = (B1 * B1).sum(1)[:, None] + (B2 * B2).sum(1)[None, :] - 2.0 * B1 @ B2.T
        leaf = torch.exp(p["log_sf"] - 0.5 * sq.clamp_min(0.0)) * (d1[:, None] == d2[None, :])
        return torch.exp(p["log_s0"]) + A1 @ A2.T + leaf

    def _kernel_diag(self, F, d, p) -> torch.Tensor:
        A, _ = self._scaled(F, p)
        return torch.exp(p["log_s0"]) + (A * A).sum(1) + torch.exp(p["log_sf"])

    # -- fit -----------------------------------------------------------------------------------
    def _neg_log_posterior(self, theta: torch.Tensor, F, d, y) -> torch.Tensor:
        p = self._unpack(theta)
        n = y.shape[0]
        K = self._kernel(F, d, F, d, p) + (torch.exp(p["log_noise"]) + 1e-8) * torch.eye(n, dtype=F.dtype)
        L = torch.linalg.cholesky(K)
        alpha = torch.cholesky_solve(y[:, None], L)[:, 0]
        nll = 0.5 * (y @ alpha) + torch.log(torch.diagonal(L)).sum() + 0.5 * n * math.log(2 * math.pi)
        prior = 0.5 * (((theta - torch.as_tensor(self._prior_mean)) / self._prior_sd) ** 2).sum()
        return nll + prior

    def fit(self, X: Sequence[Chain], y: np.ndarray, *, rng: np.random.Generator | None = None) -> "TreeGP":
        """Type-II MAP fit on chains ``X`` and values ``y`` (L-BFGS-B from the prior mean and
        ``n_restarts - 1`` fixed other starts, so the fit does not depend on ``rng``)."""
        y = np.asarray(y, dtype=float)
        if len(X) != y.size or y.size == 0:
            raise ValueError(f"X and y must be non-empty and of equal length, got {len(X)} and {y.size}")
        self._X = list(X)
        self._y = y.copy()
        self._mu = float(y.mean())
        self._sd = float(y.std()) if y.size > 1 and y.std() > 0 else 1.0
        F, d = self.tree.encode(self._X)
        ys = torch.as_tensor((y - self._mu) / self._sd)
        starts = [self._prior_mean.copy()]
        G = len(self.tree.groups)
        for k in range(1, self.n_restarts):
            s = self._prior_mean.copy()
            s[1 + G + 1:1 + G + 1 + G - 1] += math.log(3.0) * (1 if k % 2 else -1) * ((k + 1) // 2)  # length-scales
            s[1:1 + G] += math.log(4.0) * (1 if k % 2 == 0 else -1)  # linear weights' variance
            starts.append(s)
        best: tuple[float, np.ndarray] | None = None

        def objective(t: np.ndarray) -> tuple[float, np.ndarray]:
            th = torch.tensor(t, requires_grad=True)
            try:
                v = self._neg_log_posterior(th, F, d, ys)
            except RuntimeError:  # not positive definite
                return 1e10, np.zeros_like(t)
            v.backward()
            assert th.grad is not None  # backward() filled it
            g = th.grad.numpy().copy()
            return float(v.detach()), np.nan_to_num(g)

        bounds = [(-12.0, 6.0)] * len(self._names)
        for s in starts:
            res = scipy_minimize(objective, s, jac=True, method="L-BFGS-B", bounds=bounds,
                                 options={"maxiter": 200})
            if best is None or res.fun < best[0]:
                best = (float(res.fun), np.asarray(res.x))
        assert best is not None
        self.theta = best[1]
        self._condition(self._X, ys)
        return self

    def _condition(self, X: Sequence[Chain], ys: torch.Tensor) -> None:
        assert self.theta is not None
        p = self._unpack(torch.as_tensor(self.theta))
        F, d = self.tree.encode(X)
        K = self._kernel(F, d, F, d, p) + (torch.exp(p["log_noise"]) + 1e-8) * torch.eye(len(X), dtype=F.dtype)
        self._L = robust_cholesky(K)
        self._alpha = torch.cholesky_solve(ys[:, None], self._L)[:, 0]
        self._train = (F, d)
        self._ys = ys

    # -- the surrogate protocol ------------------------------------------------------------------
    def posterior(self, X: Sequence[Chain]) -> Posterior:
        """Latent mean and variance at the chains ``X`` (standardised scale), shape ``(1, m)``."""
        if self.theta is None:
            raise RuntimeError("the model has not been fitted")
        p = self._unpack(torch.as_tensor(self.theta))
        F, d = self.tree.encode(X)
        Ft, dt = self._train
        if F.shape[1] != Ft.shape[1]:  # a chain deeper than max_depth: pad both to one width
            D = max(F.shape[1], Ft.shape[1])
            F = torch.nn.functional.pad(F, (0, 0, 0, D - F.shape[1]))
            Ft = torch.nn.functional.pad(Ft, (0, 0, 0, D - Ft.shape[1]))
        Ks = self._kernel(Ft, dt, F, d, p)  # (n, m)
        mean = Ks.T @ self._alpha
        v = torch.linalg.solve_triangular(self._L, Ks, upper=False)
        var = (self._kernel_diag(F, d, p) - (v * v).sum(0)).clamp_min(1e-12)
        return Posterior(mean[None, :], var[None, :])

    def add_fantasies(self, X: Sequence[Chain]) -> None:
        """Kriging believer: condition on ``X`` at the posterior mean (hyper-parameters unchanged)."""
        X = list(X)
        if not X:
            return
        mean = self.posterior(X).mean[0]
        self._condition(self._X + X, torch.cat([self._ys, mean]))

    @property
    def train_targets(self) -> np.ndarray:
        return self._y.copy()

    def transform_outcome(self, value: float) -> float:
        return (float(value) - self._mu) / self._sd

    @property
    def hyperparameters(self) -> dict[str, float]:
        """The fitted hyper-parameters by name (logarithms of variances and length-scales)."""
        if self.theta is None:
            return {}
        return {n: float(v) for n, v in zip(self._names, self.theta)}


class TreeBO(NASOptimizer):
    """TreeBO on the feed-forward networks of an :class:`ArchitectureSpace` (method ``"treebo"``).

    Parameters
    ----------
    space : ArchitectureSpace or str
    seed : int, optional
    n_initial : int, default 10
        ``initial_configs``, then the domain's initial pool (App. B.1), then random chains.
    initial_configs : list of dict, optional
    max_depth : int, optional
        Most hidden layers (default: the space's ``max_layers - 3``).
    units_grid : sequence of int, optional
        Unit counts searched (default: powers of two and 1.5 x powers of two in the space's range).
    n_candidates : int, default 500
        Random chains scored per suggestion.
    n_local_rounds : int, default 3
        Rounds of local perturbation of the ``n_parents`` best candidates (and the 3 best told
        networks in the first round), ``n_neighbours`` moves each.
    n_parents, n_neighbours : int, defaults 10 and 20
    n_restarts : int, default 3
        Starts of the hyper-parameter fit.
    max_train : int or None, default 500
        Most told chains the GP is fitted on (``>= 20``; ``None``: all of them). Beyond it the fit
        uses the best ones, the most recent ones and a seeded uniform sample of the others
        (:func:`~graphbo.optimizers.base.training_subset`), so a suggestion costs the same at
        10,000 told networks as at ``max_train`` (docs/reliability.md, "Load"). Every evaluated
        network stays excluded from the suggestions, and EI's incumbent is the best of all the told
        chains. :attr:`last_training_indices` holds the chains of the last fit (indices into the told
        chains, in order; networks that are not chains are not modelled).

    Attributes
    ----------
    model : TreeGP
    tree : FeedForwardTree
    last_acquisition_value : float or None
        log-EI of the last model-based suggestion.
    """

    #: the chain values it keeps are those told at the time: one objective only
    supports_outcomes = False

    name = "treebo"

    def __init__(self, space: ArchitectureSpace | str, *, seed: int | None = None, n_initial: int = 10,
                 initial_configs: Configs | None = None, max_depth: int | None = None,
                 units_grid: Sequence[int] | None = None, n_candidates: int = 500, n_local_rounds: int = 3,
                 n_parents: int = 10, n_neighbours: int = 20, n_restarts: int = 3,
                 max_train: int | None = DEFAULT_MAX_TRAIN):
        self.n_candidates = check_int("n_candidates", n_candidates, minimum=1)
        self.n_local_rounds = check_int("n_local_rounds", n_local_rounds, minimum=0)
        self.n_parents = check_int("n_parents", n_parents, minimum=1)
        self.n_neighbours = check_int("n_neighbours", n_neighbours, minimum=1)
        n_restarts = check_int("n_restarts", n_restarts, minimum=1)
        self.max_train = check_max_train(max_train)
        check_optional_int("max_depth", max_depth, minimum=1)
        if isinstance(space, str):
            try:
                space = ArchitectureSpace(space)
            except ValueError as exc:
                raise ValueError(f"space must be a graphbo.nas.ArchitectureSpace or a domain name ({exc})") from None
        if not isinstance(space, ArchitectureSpace):
            raise TypeError(f"space must be a graphbo.nas.ArchitectureSpace, got {type(space).__name__}")
        self.tree = FeedForwardTree(space, max_depth=max_depth, units_grid=units_grid)
        self.model = TreeGP(self.tree, n_restarts=n_restarts)
        self.last_acquisition_value: float | None = None
        #: the told chains and their values, in order, and the chains of the evaluated and failed networks:
        #: kept up to date by tell and mark_failed, so an ask decodes no told network again
        self._told_chains: list[Chain] = []
        self._told_chain_values: list[float] = []
        self._done_chains: set[Chain] = set()
        super().__init__(space, seed=seed, n_initial=n_initial, initial_configs=initial_configs)

    # -- initial design: the pool, then random chains --------------------------------------------
    def _initial_design(self, rows: list[np.ndarray], n_initial: int) -> list[np.ndarray]:
        keys = {self._row_key(r) for r in rows}
        for a in self.space.initial_pool():
            if len(rows) >= n_initial:
                break
            r = self.space.to_index(a)
            if self._row_key(r) not in keys:
                keys.add(self._row_key(r))
                rows.append(r)
        tries = 0
        while len(rows) < n_initial and tries < 100 * n_initial:
            tries += 1
            c = self.tree.sample(self.rng)
            if self.tree.valid(c):
                r = self.space.to_index(self.tree.to_architecture(c))
                if self._row_key(r) not in keys:
                    keys.add(self._row_key(r))
                    rows.append(r)
        return rows

    # -- suggestions ------------------------------------------------------------------------------
    def _chains_of_rows(self, rows) -> list[Chain]:
        out = []
        for r in rows:
            c = chain_of(self.space.architecture_at(r))
            if c is not None:
                out.append(c)
        return out

    def _observe(self, row: np.ndarray, value: float) -> None:
        super()._observe(row, value)
        c = chain_of(self._archs[-1])
        if c is not None:
            self._told_chains.append(c)
            self._told_chain_values.append(value)

    def _note_done(self, row: np.ndarray) -> None:
        super()._note_done(row)
        c = chain_of(self.space.architecture_at(row))
        if c is not None:
            self._done_chains.add(c)

    def _excluded_chains(self) -> AbstractSet[Chain]:
        """Chains of the evaluated, failed and pending networks: a view of the kept set and the pending ones."""
        return _Excluded(self._done_chains, set(self._chains_of_rows(list(self._pending.values()))))

    def _random_chain(self, excluded: AbstractSet[Chain]) -> np.ndarray:
        for _ in range(1000):
            c = self.tree.sample(self.rng)
            if c not in excluded and self.tree.valid(c):
                return self.space.to_index(self.tree.to_architecture(c))
        raise RuntimeError("could not find a feed-forward network that was not evaluated yet in 1000 random draws")

    def _suggest(self) -> np.ndarray:
        excluded = self._excluded_chains()
        if len(self._told_chains) < 2:
            self.last_acquisition_value = None
            return self._random_chain(excluded)
        X, y = self._told_chains, np.asarray(self._told_chain_values, dtype=float)
        train = self._training_indices(y)  # every told chain up to max_train (its docstring)
        self.model.fit([X[i] for i in train], y[train], rng=self.rng)
        with torch.no_grad():
            self.model.add_fantasies(self._chains_of_rows(list(self._pending.values())))
            # incumbent: the best told chain's value, of all of them (training_subset always keeps it)
            acquisition = LogExpectedImprovement(self.model)
            best_chain, value = self._maximise(acquisition, X, y, excluded)
        if best_chain is None:
            self.last_acquisition_value = None
            return self._random_chain(excluded)
        self.last_acquisition_value = value
        return self.space.to_index(self.tree.to_architecture(best_chain))

    def _maximise(self, acquisition, X: list[Chain], y: np.ndarray,
                  excluded: AbstractSet[Chain]) -> tuple[Chain | None, float]:
        """Random chains, then rounds of local moves from the best ones; the best valid new chain."""
        rng, tree = self.rng, self.tree
        scored: dict[Chain, float] = {}

        def score(cands: list[Chain]) -> None:
            new = list(dict.fromkeys(c for c in cands if c not in scored and c not in excluded))
            if new:
                for c, s in zip(new, acquisition(new).numpy().tolist()):
                    scored[c] = float(s)

        score([tree.sample(rng) for _ in range(self.n_candidates)])
        parents = [X[i] for i in np.argsort(y, kind="stable")[:3]]
        for _ in range(self.n_local_rounds):
            top = sorted(scored, key=scored.__getitem__, reverse=True)[:self.n_parents]
            moves = []
            for p in parents + top:
                for _ in range(self.n_neighbours):
                    c = tree.perturb(p, rng)
                    if c is not None:
                        moves.append(c)
            score(moves)
            parents = []
        for c in sorted(scored, key=scored.__getitem__, reverse=True):
            if tree.valid(c):
                return c, scored[c]
        return None, -math.inf
