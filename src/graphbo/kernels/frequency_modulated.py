"""Frequency-modulated (FM) kernels for mixed spaces (BO-FM, Oh, Gavves, Welling, UAI 2021).

For continuous inputs ``c`` (unit-scaled) and discrete variables ``v_1..v_P``
whose graphs have Laplacian eigensystems ``U^p diag(lambda^p) U^p^T``, an FM
kernel is the product over discrete variables of Eq. (5):

    k((c, v), (c', v')) = prod_p  sum_i U^p[v_p, i] f(lambda^p_i, r | alpha_p, beta_p) U^p[v'_p, i],
    r^2 = ||c - c'||_theta^2 = sum_d (c_d - c'_d)^2 / theta_d^2   (one distance shared by all p).

Modulating functions ``f`` (all take ``r^2``):

* ``modlap`` (Eq. 9):  ``1 / (1 + beta lambda + alpha r^2)``
* ``moddif`` (Eq. 10): ``exp(-(1 + alpha r^2) beta lambda)`` (breaks the
  similarity-measure behaviour of Eq. 3; kept for the comparison)
* ``general`` (Prop. 1 with a discrete measure): ``sum_n w_n (1 + beta lambda + alpha r^tau)^(-n)``,
  ``w_n >= 0``, ``tau in (0, 2]``
* ``fnn`` (Eq. 7): ``1 / (2 + beta lambda - k_NN(c, c'))`` with the neural-network
  kernel ``k_NN`` (Rasmussen & Williams, Eq. 4.29) with diagonal ``Sigma``

and the comparison kernels of supplement E, built from an RBF kernel on ``c``
and a graph kernel ``prod_p U^p g(lambda^p) U^p^T`` with ``g = 1/(1 + beta lambda)``
(Lap) or ``exp(-beta lambda)`` (Dif): ``prodlap``, ``addlap``, ``proddif``, ``adddif``.

Each discrete factor is divided by its value at ``r = 0`` averaged over the
spectrum, ``mean_i f(lambda_i, 0)`` (a positive constant, so positive
definiteness is kept), as COMBO normalises its factors. A space without
continuous variables gives ``r = 0`` (the plain graph kernel); a space
without discrete variables falls back to the RBF kernel on ``c``.

Hyper-parameters live in one unconstrained vector; :meth:`FMKernel.unpack`
maps it to named, constrained tensors, so the kernel is differentiable by
autograd in both its hyper-parameters and its continuous inputs.
"""

from __future__ import annotations

import math
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
import torch

from .._validation import check_choice, check_device, check_dtype, check_int
from ..spaces.variables import GraphSpectrum
from ._checks import check_spectra
from .diffusion import log_floor

__all__ = ["FMKernel", "KernelPairs", "KERNELS", "KERNEL_PRIORS"]

KERNELS = ("modlap", "moddif", "general", "fnn", "prodlap", "addlap", "proddif", "adddif")
#: ``prior`` choices of :class:`FMKernel`
KERNEL_PRIORS = ("weak", "scaled")
#: standard deviation of the weak priors (``prior="weak"``)
WEAK_PRIOR_SD = 3.0
#: standard deviation of the dimension-scaled priors in log space (Hvarfner et al., ICML 2024: ``sqrt(3)``)
SCALED_PRIOR_SD = math.sqrt(3.0)
_FM_FAMILY = ("modlap", "moddif", "general", "fnn")
#: smallest product of factors divided by one factor in :meth:`_FMProduct.backward` (1/eps above the
#: smallest normal number: the quotient keeps full relative precision)
_SAFE_PRODUCT = {dt: torch.finfo(dt).tiny / torch.finfo(dt).eps for dt in (torch.float16, torch.bfloat16,
                                                                           torch.float32, torch.float64)}
#: largest index sets (rows x variables) whose projector grid :meth:`FMKernel._grid_pairs` keeps
_GRID_CACHE_ENTRIES = 1 << 16
#: entries (rows x columns) of one block of :meth:`FMKernel.fm_gram_inplace`: its few buffers stay in cache
_BLOCK_ENTRIES = 32_768


class _FMProduct(torch.autograd.Function):
    """``K_t = prod_q sum_{j in q} phi(a_j + b_j x_t) G[j, t] / prod_q norm_q`` for all pairs ``t`` at once.

    ``phi(z) = 1/z`` (ModLap, FNN) or ``exp(-z)`` (ModDif); ``j`` runs over the
    eigenspaces of variable ``q`` (``var[j] = q``). The forward pass is a few
    passes over ``(J, T)`` arrays; the hand-written backward pass needs about a
    third of the passes (and none of the temporary graph) that autograd needs
    for the same chain of element-wise operations, which dominates the cost of
    an ML-II evaluation.
    """

    @staticmethod
    def forward(ctx: Any, a: torch.Tensor, b: torch.Tensor, x: torch.Tensor, norms: torch.Tensor,
                G: torch.Tensor, var: torch.Tensor, exp: bool) -> torch.Tensor:
        F = torch.addcmul(a[:, None], b[:, None], x[None, :])  # z, (J, T)
        if exp:
            F.neg_().exp_()
        else:
            F.reciprocal_()
        FG = F * G
        acc = torch.zeros(norms.shape[0], x.shape[0], dtype=x.dtype, device=x.device).index_add_(0, var, FG)  # (P, T)
        K = acc.prod(0) / norms.prod()
        ctx.exp = exp
        ctx.save_for_backward(b, x, norms, F, FG, acc, K, var)
        return K

    @staticmethod
    def backward(ctx: Any, gK: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        b, x, norms, F, FG, acc, K, var = ctx.saved_tensors
        # product of the other variables' factors: the full product divided by the factor where every
        # full product is a normal number (then no factor is 0 and no partial product underflowed);
        # else by prefix and suffix products (no division by a factor)
        full = K * norms.prod()
        if bool((full.abs() >= _SAFE_PRODUCT[full.dtype]).all()):
            g_acc = (gK * K)[None, :] / acc
        else:
            ones = torch.ones_like(acc[:1])
            others = torch.cat([ones, acc[:-1].cumprod(0)]).mul_(
                torch.cat([acc[1:].flip(0).cumprod(0).flip(0), ones]))
            g_acc = others.mul_(gK / norms.prod())
        g_norms = -(gK * K).sum() / norms if ctx.needs_input_grad[3] else None
        # d f_j G_j / dz = phi'(z) G = -F FG (1/z) or -FG (exp(-z)); the sign is applied below
        H = g_acc.index_select(0, var).mul_(FG)
        if not ctx.exp:
            H.mul_(F)
        ga = -H.sum(1) if ctx.needs_input_grad[0] else None
        gb = -(H @ x) if ctx.needs_input_grad[1] else None
        gx = -(b @ H) if ctx.needs_input_grad[2] else None
        return ga, gb, gx, g_norms, None, None, None


#: :meth:`_FMProduct.apply` with its types (torch leaves ``Function.apply`` untyped)
_fm_product: Callable[..., torch.Tensor] = _FMProduct.apply


class KernelPairs(NamedTuple):
    """What a Gram matrix needs that does not depend on the hyper-parameters (see :meth:`FMKernel.pairs`)."""

    V1: torch.Tensor
    C1: torch.Tensor
    V2: torch.Tensor
    C2: torch.Tensor
    diff: torch.Tensor | None  # continuous differences: (T, Dc) for the FM family, (n1, n2, Dc) otherwise
    G: torch.Tensor | None = None  # (J, T) projector entries of every eigenspace for every pair (FM family)
    i: torch.Tensor | None = None  # (T,) row in the first set of each pair
    j: torch.Tensor | None = None  # (T,) row in the second set of each pair
    where: torch.Tensor | None = None  # (n1, n1) position of each entry among the pairs (symmetric case)


def unpack_params(layout: Sequence[tuple[str, int]], params: torch.Tensor) -> dict[str, torch.Tensor]:
    """Split a flat hyper-parameter vector into named slices, ``layout`` giving (name, size) in order."""
    out, k = {}, 0
    for name, size in layout:
        out[name] = params[k:k + size]
        k += size
    return out


class FMKernel:
    """An FM (or comparison) kernel on a mixed space, chosen by name.

    Parameters
    ----------
    name : one of :data:`KERNELS` (case-insensitive)
    spectra : eigensystems of the discrete variables' graphs, in row order
    n_continuous : number of continuous inputs (``>= 0``)
    n_terms : number of terms ``N`` of the ``general`` family (``>= 1``)
    dtype : torch floating dtype of all computations (float64 by default)
    device : torch device of all computations (``None``: CPU; :func:`~graphbo._validation.check_device`).
        Every tensor the kernel holds or returns lives there; rows passed in must be on it too.
    prior : {"weak", "scaled"}, default "weak"
        The priors of :meth:`log_prior` (used by a MAP fit), the ML-II starting point
        (:meth:`default_params`) and the centre of the random restarts (:meth:`random_params`).
        ``"weak"``: ``N(0, 3^2)`` on every unconstrained coordinate. ``"scaled"``: dimension-scaled
        priors after Hvarfner, Hellsten and Nardi (ICML 2024), :meth:`scaled_centre`.
    """

    def __init__(self, name: str, spectra: Sequence[GraphSpectrum], *, n_continuous: int, n_terms: int = 3,
                 dtype: torch.dtype = torch.float64, device: torch.device | str | None = None,
                 prior: str = "weak") -> None:
        if not isinstance(name, str):
            raise TypeError(f"name must be the kernel's name, one of {list(KERNELS)}, got {name!r} "
                            f"({type(name).__name__})")
        if name.lower() not in KERNELS:
            raise ValueError(f"unknown kernel {name!r}: name must be one of {list(KERNELS)}")
        name = name.lower()
        spectra = check_spectra("spectra", spectra)
        self.name: str = name
        self.dtype: torch.dtype = check_dtype("dtype", dtype)
        checked = check_device("device", device)
        self.device: torch.device = checked if checked is not None else torch.device("cpu")
        dev = self.device
        self.P, self.Dc = len(spectra), check_int("n_continuous", n_continuous, minimum=0)
        self.n_terms = check_int("n_terms", n_terms, minimum=1)
        self.lam = [torch.tensor(s.eigenvalues, dtype=dtype, device=dev) for s in spectra]
        self.U = [torch.tensor(s.eigenvectors, dtype=dtype, device=dev) for s in spectra]
        # Eigenspaces: sum_i U[v,i] f(lambda_i) U[v',i] = sum_j f(lambda_j) P_j[v,v'] over the distinct
        # eigenvalues lambda_j with projectors P_j. A complete graph has only two, so a Gram entry costs
        # two look-ups instead of a sum over all k eigenvalues, and no (m, n, k) tensor is formed.
        self.eigenspaces: list[list[tuple[float, torch.Tensor]]] = []
        for sp in spectra:
            lam, U = np.asarray(sp.eigenvalues), np.asarray(sp.eigenvectors)
            groups: list[tuple[float, torch.Tensor]] = []
            start = 0
            for i in range(1, len(lam) + 1):
                if i == len(lam) or lam[i] - lam[start] > 1e-8 * max(1.0, abs(lam[start])):
                    Ug = U[:, start:i]
                    groups.append((float(lam[start:i].mean()), torch.tensor(Ug @ Ug.T, dtype=dtype, device=dev)))
                    start = i
            self.eigenspaces.append(groups)
        # All eigenspaces of all variables stacked in one list (variable by variable, in order), so a
        # Gram matrix is formed by a handful of batched tensor operations instead of a Python loop
        # over every eigenspace: ``_es_var[j]`` is the variable of eigenspace ``j``, ``_es_lam[j]`` its
        # eigenvalue, and ``_es_tables[q]`` the projectors of variable ``q``, shape ``(J_q, k_q, k_q)``.
        self._es_var = torch.tensor([q for q, g in enumerate(self.eigenspaces) for _ in g], dtype=torch.long,
                                    device=dev)
        self._es_lam = torch.tensor([lam for g in self.eigenspaces for lam, _ in g], dtype=dtype, device=dev)
        self._es_tables = [torch.stack([P for _, P in g]) for g in self.eigenspaces]
        # the same projectors flattened and laid end to end, for one gather of every eigenspace's entries
        # (:meth:`pairs`): entry ``[v, v']`` of eigenspace ``j`` is ``_es_flat[_es_base[j] + v * _es_k[j] + v']``
        self._es_flat = torch.cat([T.reshape(-1) for T in self._es_tables]) if self._es_tables else \
            torch.zeros(0, dtype=dtype, device=dev)
        sizes = [(int(T.shape[0]), int(T.shape[1])) for T in self._es_tables]
        self._es_k = torch.tensor([k for J, k in sizes for _ in range(J)], dtype=torch.long, device=dev)
        self._es_base = torch.tensor(np.cumsum([0] + [k * k for J, k in sizes for _ in range(J)])[:-1],
                                     dtype=torch.long, device=dev)
        # variables grouped by (eigenspaces, values): (variables, eigenvalues (G, J), projectors (G, J, k, k))
        by_shape: dict[tuple[int, int], list[int]] = {}
        for q, size in enumerate(sizes):
            by_shape.setdefault(size, []).append(q)
        self._variable_groups = [
            (torch.tensor(qs, dtype=torch.long, device=dev),
             torch.stack([torch.tensor([lam for lam, _ in self.eigenspaces[q]], dtype=dtype, device=dev) for q in qs]),
             torch.stack([self._es_tables[q] for q in qs])) for qs in by_shape.values()]
        #: each variable's group (row 0) and its position in the group (row 1), shape (2, P)
        slots = np.zeros((2, self.P), dtype=np.int64)
        for g, qs in enumerate(by_shape.values()):
            slots[0, qs], slots[1, qs] = g, np.arange(len(qs))
        self._variable_slots = torch.as_tensor(slots, device=dev)
        # the value of a constant projector (the lambda = 0 eigenspace of a connected graph: 1/k), else None
        self._es_const: list[list[float | None]] = [
            [float(P.mean()) if float((P - P.mean()).abs().max()) <= 1e-13 * float(P.mean().abs()) else None
             for _, P in g] for g in self.eigenspaces]
        # the full spectra, concatenated, for the normalising constants mean_i f(lambda_i, 0)
        self._spec_var = torch.tensor([q for q, lam in enumerate(self.lam) for _ in range(lam.numel())],
                                      dtype=torch.long, device=dev)
        self._spec_lam = torch.cat(self.lam) if self.lam else torch.zeros(0, dtype=dtype, device=dev)
        self._spec_size = torch.tensor([float(lam.numel()) for lam in self.lam], dtype=dtype, device=dev)
        #: where each variable's values start in the spectra laid end to end, shape ``(P + 1,)``
        self._spec_offset = torch.tensor(np.cumsum([0] + [lam.numel() for lam in self.lam]), dtype=torch.long,
                                         device=dev)
        self._spec_bounds = list(zip(self._spec_offset[:-1].tolist(), self._spec_offset[1:].tolist()))
        self._U2 = [U.square() for U in self.U]  # squared eigenvectors, for k(x, x)
        # parameter layout: (name, size)
        layout = [("log_theta", self.Dc), ("log_beta", self.P)]
        if name in ("modlap", "moddif", "general"):
            layout.append(("log_alpha", self.P))
        if name == "general":
            layout += [("log_w", self.n_terms), ("logit_tau", 1)]
        if name == "fnn":
            layout.append(("log_sigma", self.Dc + 1))
        if name in ("addlap", "adddif"):
            layout.append(("logit_mix", 1))
        self.layout = layout
        self.size = sum(k for _, k in layout)
        #: (hyper-parameters' bytes, tables) of the last :meth:`diag_tables` call without autograd
        self._diag_cache: tuple[bytes, torch.Tensor] | None = None
        self._grid_cache: tuple[tuple[Any, ...], tuple[torch.Tensor, torch.Tensor, torch.Tensor]] | None = None
        self.prior: str = check_choice("prior", prior, KERNEL_PRIORS)
        if self.prior == "scaled":
            self._prior_centre, self._prior_sd = self.scaled_centre(), SCALED_PRIOR_SD
        else:
            self._prior_centre, self._prior_sd = torch.zeros(self.size, dtype=dtype, device=dev), WEAK_PRIOR_SD

    @property
    def n_effective(self) -> int:
        """The ``d`` of the dimension-scaled priors: discrete inputs with more than one value, plus continuous ones."""
        return sum(1 for lam in self.lam if lam.numel() > 1) + self.Dc

    def scaled_centre(self) -> torch.Tensor:
        """Centre of the dimension-scaled priors (``prior="scaled"``), in the unconstrained coordinates.

        Hvarfner, Hellsten and Nardi ("Vanilla Bayesian optimization performs great in high dimensions",
        ICML 2024) show that a GP whose priors keep every variable relevant at unit scale assumes, in
        ``d`` dimensions, that almost every pair of points is uncorrelated; the fit then reverts to the
        mean away from the data and BO degenerates into local search. Their remedy scales the prior
        lengthscales with ``sqrt(d)``, so that a prior draw varies by O(1) across the whole space.
        The same idea for an FM kernel, with ``d`` = :attr:`n_effective`:

        * ``log_theta`` (continuous lengthscales): ``sqrt(2) + log(d) / 2``, their lognormal's location;
        * ``log_beta`` (graph smoothness): the ``beta`` at which changing one binary variable keeps the
          factor's correlation ``exp(-1/d)``, so that two random configurations, which differ in about
          ``d/2`` variables, keep ``exp(-1/2)``. The factor of a binary variable (``lambda`` = 0, 2)
          correlates its two values by ``beta / (1 + beta)`` (Lap: ModLap Eq. 9, FNN, ``general``'s
          first term, ProdLap, AddLap) or ``tanh(beta)`` (Dif: ModDif Eq. 10, ProdDif, AddDif), so
          ``beta = e / (1 - e)`` or ``atanh(e)`` with ``e = exp(-1/d)``;
        * ``log_alpha`` (ModLap, ModDif, ``general``): ``-log P``. The continuous distance enters each of
          the ``P`` discrete factors of Eq. 5 through ``alpha r^2``, so the product decays about like
          ``exp(-P alpha r^2)``; ``alpha = 1/P`` leaves the continuous scale to ``theta``;
        * every other coordinate: 0.

        The standard deviation is ``sqrt(3)`` on every coordinate (theirs, :data:`SCALED_PRIOR_SD`).
        """
        d = max(self.n_effective, 1)
        e = math.exp(-1.0 / d)
        beta = math.atanh(e) if self.name.endswith("dif") else e / (1.0 - e)
        centre = {"log_theta": math.sqrt(2.0) + 0.5 * math.log(d), "log_beta": math.log(beta),
                  "log_alpha": -math.log(max(self.P, 1))}
        return torch.cat([torch.full((k,), centre.get(name, 0.0), dtype=self.dtype, device=self.device)
                          for name, k in self.layout])  # the layout always names log_theta and log_beta

    # -- parameters ---------------------------------------------------------------
    def default_params(self) -> torch.Tensor:
        """The ML-II starting point: the priors' centre (zeros with ``prior="weak"``)."""
        return self._prior_centre.clone()

    def random_params(self, rng: np.random.Generator) -> torch.Tensor:
        """A random starting point for ML-II restarts: the priors' centre plus ``N(0, 1)`` on every coordinate."""
        return self._prior_centre + torch.tensor(rng.normal(0.0, 1.0, self.size), dtype=self.dtype, device=self.device)

    def unpack(self, params: torch.Tensor) -> dict[str, torch.Tensor]:
        return unpack_params(self.layout, params)

    def log_prior(self, params: torch.Tensor) -> torch.Tensor:
        """Independent normal priors on the unconstrained coordinates, up to a constant: ``N(0, 3^2)`` with
        ``prior="weak"`` (keeps ML-II away from degenerate fits), ``N(scaled_centre, sqrt(3)^2)`` with ``"scaled"``."""
        return -0.5 * ((params - self._prior_centre) / self._prior_sd).square().sum()

    # -- kernel -------------------------------------------------------------------
    def pairs(self, V1: torch.Tensor, C1: torch.Tensor, *, V2: torch.Tensor | None = None,
              C2: torch.Tensor | None = None) -> KernelPairs:
        """The hyper-parameter-free part of a Gram matrix between two sets of rows.

        ML-II evaluates the Gram matrix of the same rows for many hyper-parameter
        vectors; computing this once (:meth:`gram`) saves the look-ups of every
        evaluation. Differentiable in ``C1`` and ``C2``. Without a second set the
        Gram matrix is symmetric and only its upper triangle is computed.
        """
        symmetric = V2 is None and C2 is None
        V2 = V1 if V2 is None else V2
        C2 = C1 if C2 is None else C2
        if not (self.P and self.name in _FM_FAMILY):
            # explicit differences (not the |a|^2 + |b|^2 - 2ab expansion): r = 0 must be exactly 0
            diff = C1[:, None, :] - C2[None, :, :] if self.Dc else None
            return KernelPairs(V1, C1, V2, C2, diff)
        n1, n2 = V1.shape[0], V2.shape[0]
        if symmetric:
            i, j = torch.triu_indices(n1, n1, device=self.device)
            where = torch.empty(n1, n1, dtype=torch.long, device=self.device)
            t = torch.arange(i.numel(), device=self.device)
            where[i, j] = t
            where[j, i] = t
            G = self._projector_entries(V1, V2, i, j)
        else:
            i, j, G = self._grid_pairs(V1, V2)
            where = None
        diff = C1[i] - C2[j] if self.Dc else None
        return KernelPairs(V1, C1, V2, C2, diff, G, i, j, where)

    def _grid_pairs(self, V1: torch.Tensor, V2: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The pair indices (row-major) and :meth:`_projector_grid` of every pair of ``V1`` and ``V2``.

        BO-FM's acquisition optimiser evaluates the same few rows' discrete parts against the same training
        rows many times while their continuous parts move (L-BFGS-B, :mod:`graphbo.optim.lockstep`), so
        for small sets on the CPU the last result is kept, keyed by the index values themselves (the
        tensors are read-only here)."""
        key = None
        if V1.device.type == "cpu" and V1.numel() <= _GRID_CACHE_ENTRIES and V2.numel() <= _GRID_CACHE_ENTRIES:
            key = (tuple(V1.shape), tuple(V2.shape), V1.numpy().tobytes(), V2.numpy().tobytes())
            if self._grid_cache is not None and self._grid_cache[0] == key:
                return self._grid_cache[1]
        n1, n2 = V1.shape[0], V2.shape[0]
        i = torch.arange(n1, device=self.device).repeat_interleave(n2)
        j = torch.arange(n2, device=self.device).repeat(n1)
        out = (i, j, self._projector_grid(V1, V2))
        if key is not None:
            self._grid_cache = (key, out)
        return out

    def _projector_grid(self, V1: torch.Tensor, V2: torch.Tensor, entries: int = 1 << 22) -> torch.Tensor:
        """:meth:`_projector_entries` for every pair of ``V1`` and ``V2`` in row-major order (pair
        ``t = r n2 + c``), the indices of a block of rows of ``V1`` formed by one broadcast sum (about
        ``entries`` at a time)."""
        var = self._es_var
        J, n1, n2 = int(var.numel()), V1.shape[0], V2.shape[0]
        a = (V1.index_select(1, var) * self._es_k + self._es_base).T.contiguous()  # (J, n1)
        b = V2.index_select(1, var).T.contiguous()  # (J, n2)
        G = torch.empty(J, n1, n2, dtype=self.dtype, device=self.device)
        step = max(1, entries // max(J * n2, 1))
        for s in range(0, n1, step):
            idx = a[:, s:s + step, None] + b[:, None, :]  # (J, rows, n2)
            G[:, s:s + step] = self._es_flat.index_select(0, idx.reshape(-1)).reshape(idx.shape)
        return G.reshape(J, n1 * n2)

    def _projector_entries(self, V1: torch.Tensor, V2: torch.Tensor, i: torch.Tensor, j: torch.Tensor,
                           entries: int = 1 << 22) -> torch.Tensor:
        """``(J, T)``: the projector entry ``P_j[V1[i_t, q], V2[j_t, q]]`` of every eigenspace ``j`` (of
        variable ``q``) for every pair ``t``, by one gather from the flattened projectors per block of pairs
        (about ``entries`` indices at a time, so the index array stays small next to the result)."""
        J, T = int(self._es_var.numel()), int(i.numel())
        G = torch.empty(J, T, dtype=self.dtype, device=self.device)
        var, k, base = self._es_var, self._es_k[:, None], self._es_base[:, None]
        step = max(1, entries // max(J, 1))
        for s in range(0, T, step):
            v1 = V1.index_select(0, i[s:s + step]).index_select(1, var).T  # (J, t): V1's value of each j's variable
            v2 = V2.index_select(0, j[s:s + step]).index_select(1, var).T
            G[:, s:s + step] = self._es_flat[v1.mul_(k).add_(v2).add_(base)]
        return G

    def __call__(self, params: torch.Tensor, V1: torch.Tensor, C1: torch.Tensor,
                 V2: torch.Tensor | None = None, C2: torch.Tensor | None = None) -> torch.Tensor:
        """Gram matrix ``(n1, n2)`` between (discrete index rows, unit continuous rows)."""
        needs_grad = torch.is_grad_enabled() and any(
            t is not None and t.requires_grad for t in (params, C1, C2))
        if not needs_grad and self.P and self.name in _FM_FAMILY:
            return self.fm_gram_inplace(params, V1, C1=C1, V2=V1 if V2 is None else V2, C2=C1 if C2 is None else C2)
        return self.gram(params, self.pairs(V1, C1, V2=V2, C2=C2))

    def gram(self, params: torch.Tensor, pairs: KernelPairs) -> torch.Tensor:
        """Gram matrix ``(n1, n2)`` from :meth:`pairs` (equal to :meth:`__call__` on the same rows)."""
        V1, C1, V2, C2 = pairs.V1, pairs.C1, pairs.V2, pairs.C2
        p = self.unpack(params)
        if self.P and self.name in _FM_FAMILY:
            return self._fm_gram(p, pairs)
        if self.Dc:
            assert pairs.diff is not None  # formed by pairs() whenever there are continuous inputs
            theta = torch.exp(p["log_theta"])
            r2 = (pairs.diff / theta).square().sum(-1)
        else:
            r2 = torch.zeros(V1.shape[0], V2.shape[0], dtype=self.dtype, device=self.device)
        if self.P == 0:
            return torch.exp(-0.5 * r2)
        g = self._graph_kernel(p, V1, V2)
        rbf = torch.exp(-0.5 * r2)
        if self.name.startswith("prod"):
            return rbf * g
        w = torch.sigmoid(p["logit_mix"])
        return w * rbf + (1 - w) * g

    def spectrum_norms(self, p: dict[str, torch.Tensor], beta: torch.Tensor) -> torch.Tensor:
        """``mean_i f(lambda_i, 0)`` over each variable's spectrum, shape ``(P,)``: the normalising constants
        ``norm_q`` of Eq. 5's factors, from the :meth:`unpack`-ed parameters ``p`` and ``beta = exp(log_beta)``."""
        spec_bl = beta[self._spec_var] * self._spec_lam
        if self.name == "fnn":
            f0 = 1.0 / (1.0 + spec_bl)
        else:
            f0 = self._modulate(p, spec_bl, torch.zeros((), dtype=self.dtype, device=self.device))
        zeros = torch.zeros(self.P, dtype=self.dtype, device=self.device)
        return zeros.index_add(0, self._spec_var, f0) / self._spec_size

    def _fm_gram(self, p: dict[str, torch.Tensor], pairs: KernelPairs) -> torch.Tensor:
        """Eq. (5) for all pairs and all eigenspaces at once, differentiable (autograd).

        ``f_j = f(beta_q lambda_j, alpha_q r^2)`` for every eigenspace ``j`` (of variable
        ``q``) and pair, summed per variable against the projector entries, normalised,
        and multiplied over the variables (:class:`_FMProduct`).
        """
        n1, n2 = pairs.V1.shape[0], pairs.V2.shape[0]
        G = pairs.G
        assert G is not None and pairs.i is not None and pairs.j is not None  # pairs() of the FM family
        T = G.shape[1]
        if self.Dc:
            assert pairs.diff is not None
            r2 = (pairs.diff / torch.exp(p["log_theta"])).square().sum(-1)
        else:
            r2 = torch.zeros(T, dtype=self.dtype, device=self.device)
        beta = torch.exp(p["log_beta"])
        norms = self.spectrum_norms(p, beta)
        u = beta[self._es_var] * self._es_lam  # beta_q lambda_j, (J,)
        if self.name == "general":
            f = self._modulate(p, u[:, None], torch.exp(p["log_alpha"])[self._es_var][:, None] * r2)
            acc = torch.zeros(self.P, T, dtype=self.dtype, device=self.device).index_add(0, self._es_var, f * G)
            K = (acc / norms[:, None]).prod(0)
        else:
            # f_j(t) = phi(a_j + b_j x_t): ModLap 1 / (1 + beta lambda + alpha r^2), ModDif
            # exp(-(beta lambda + beta lambda alpha r^2)), FNN 1 / (2 + beta lambda - k_NN)
            if self.name == "fnn":
                x = self._nn_kernel(p, pairs.C1, pairs.C2).reshape(-1)[pairs.i * n2 + pairs.j]
                a, b = 2.0 + u, torch.full_like(u, -1.0)
            elif self.name == "modlap":
                x, a, b = r2, 1.0 + u, torch.exp(p["log_alpha"])[self._es_var]
            else:  # moddif
                x, a = r2, u
                b = u * torch.exp(p["log_alpha"])[self._es_var]
            K = _fm_product(a, b, x, norms, G, self._es_var, self.name == "moddif")
        return K[pairs.where] if pairs.where is not None else K.reshape(n1, n2)

    def fm_gram_inplace(self, params: torch.Tensor, V1: torch.Tensor, *, C1: torch.Tensor, V2: torch.Tensor,
                        C2: torch.Tensor, dtype: torch.dtype | None = None) -> torch.Tensor:
        """Eq. (5) without autograd, variable by variable in preallocated buffers (large prediction batches).

        Equal to :meth:`_fm_gram` up to rounding. The rows of the first set are taken in
        blocks of about :data:`_BLOCK_ENTRIES` entries, so the few ``(block, n2)`` buffers
        stay in cache; the projector entries are gathered by whole rows (``P_j[:, v2]``
        once, then one row per ``v1``), and an eigenspace whose projector is constant
        (the ``lambda = 0`` one of a connected graph, ``1/k`` everywhere) needs no gather.
        For ModLap and FNN, ``1 / norm_q`` is folded into the denominators
        (``f_j / norm_q = 1 / (norm_q z_j)``), so a factor costs no division pass.

        ``dtype`` (default the kernel's): the precision of the buffers and of the result, e.g.
        ``torch.float32`` for a screening pass at about 0.6 of the cost (``MixedGPScreening.screen_moments``).
        """
        p = self.unpack(params)
        n1, n2 = V1.shape[0], V2.shape[0]
        dt = self.dtype if dtype is None else dtype
        out = torch.empty(n1, n2, dtype=dt, device=self.device)
        if n1 == 0 or n2 == 0:
            return out
        with torch.no_grad():
            beta = torch.exp(p["log_beta"])
            norm_list = self.spectrum_norms(p, beta).tolist()
            beta_list = beta.tolist()
            alpha = torch.exp(p["log_alpha"]).tolist() if self.name != "fnn" else None
            theta = torch.exp(p["log_theta"]) if self.Dc else None
            S1 = (C1 / theta).to(dt) if theta is not None else None
            S2 = (C2 / theta).to(dt) if theta is not None else None
            fold = self.name in ("modlap", "fnn")
            # per variable: (beta lambda_j, constant projector value or None, rows P_j[:, v2] or None)
            terms = []
            for q in range(self.P):
                tables = self._es_tables[q]
                consts = self._es_const[q]
                rows2 = tables[:, :, V2[:, q]].to(dt)  # (J_q, k_q, n2)
                terms.append([(beta_list[q] * lam_j, consts[j], None if consts[j] is not None else rows2[j])
                              for j, (lam_j, _) in enumerate(self.eigenspaces[q])])
            # the same bytes per buffer in every precision (twice the entries in float32)
            block = max(1, min(n1, _BLOCK_ENTRIES * 8 // (out.element_size() * n2)))
            V1t = V1.T.contiguous()  # (P, n1): each variable's values of a block are one contiguous slice
            r2_b, buf_b, fj_b, rows_b, acc_b = (torch.empty(block, n2, dtype=dt, device=self.device)
                                                for _ in range(5))
            for s in range(0, n1, block):
                e = min(n1, s + block)
                b = e - s
                r2, buf, fj, rows, acc = r2_b[:b], buf_b[:b], fj_b[:b], rows_b[:b], acc_b[:b]
                K = out[s:e]
                r2.zero_()
                if S1 is not None and S2 is not None:
                    for d in range(self.Dc):
                        torch.sub(S1[s:e, d, None], S2[None, :, d], out=buf)
                        r2.addcmul_(buf, buf)
                if self.name == "fnn":  # f_j = 1 / (2 - k_NN + beta lambda_j)
                    torch.sub(2.0, self._nn_kernel(p, C1[s:e], C2), out=r2)
                for q in range(self.P):
                    nq = norm_list[q]
                    if self.name == "fnn":
                        torch.mul(r2, nq, out=buf)  # norm_q (2 - k_NN)
                    elif self.name == "modlap":  # norm_q (1 + alpha r^2)
                        torch.mul(r2, nq * alpha[q], out=buf).add_(nq)  # type: ignore[index]
                    else:
                        torch.mul(r2, alpha[q], out=buf)  # type: ignore[index]
                    v1 = V1t[q, s:e]
                    first = True
                    for bl, const, table in terms[q]:
                        if fold:  # f_j / norm_q = 1 / (norm_q z_j)
                            f = torch.add(buf, nq * bl, out=fj).reciprocal_()
                        else:
                            f = self._modulate(p, torch.as_tensor(bl, dtype=dt, device=self.device), buf)
                        if const is not None:
                            if first:
                                torch.mul(f, const, out=acc)
                            else:
                                acc.add_(f, alpha=const)
                        else:
                            assert table is not None  # rows are kept exactly where the projector is not constant
                            g = torch.index_select(table, 0, v1, out=rows)
                            if first:
                                torch.mul(f, g, out=acc)
                            else:
                                acc.addcmul_(f, g)
                        first = False
                    if not fold:
                        acc.div_(nq)
                    if q == 0:
                        K.copy_(acc)
                    else:
                        K.mul_(acc)
            return out

    @property
    def projector_tables(self) -> list[torch.Tensor]:
        """Each discrete variable's eigenspace projectors stacked, shape ``(J_q, k_q, k_q)`` (the projectors of
        :attr:`eigenspaces`, in their order): Eq. 5's factor of variable ``q`` is
        ``sum_j f(beta_q lambda_j, alpha_q r^2) P_j / norm_q``. The kernel's own tensors: not to be changed."""
        return self._es_tables

    @property
    def diag_table_bounds(self) -> list[tuple[int, int]]:
        """Where each discrete variable's values lie in :meth:`diag_tables` (and in the spectra laid end to end):
        variable ``q``'s values are ``[a, b)`` of the ``(a, b)`` at position ``q``."""
        return self._spec_bounds

    @property
    def has_neighbour_gram(self) -> bool:
        """Whether :meth:`neighbour_gram` applies: an FM-family kernel (Eq. 5 as a product of
        per-variable factors) with discrete variables."""
        return bool(self.P) and self.name in _FM_FAMILY

    def neighbour_gram(self, params: torch.Tensor, V1: torch.Tensor, *, C1: torch.Tensor, V2: torch.Tensor,
                       C2: torch.Tensor, owner: torch.Tensor, var: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
        """Gram rows ``(N, n2)`` of the graph neighbours of the rows ``(V1, C1)`` against ``(V2, C2)``:
        neighbour ``i`` is row ``owner[i]`` with discrete variable ``var[i]`` set to ``value[i]``, its
        continuous part unchanged. Without autograd.

        Eq. (5) is a product over the discrete variables ``q`` of factors
        ``A_q(x, x')[v, v'] = sum_j f(beta_q lambda_j, alpha_q r^2) P_j[v, v'] / norm_q`` that depend on
        the pair's values of ``q`` and, through ``r = |c - c'|_theta``, on the continuous parts. A
        neighbour shares ``r`` and every factor but one with its row, so its Gram row is the product of
        the row's other factors (prefix and suffix products over ``q``, no division) and one row of the
        table of the changed variable's factor over all its values, ``A_q[:, V2_q]`` per row of
        ``V1``. That costs ``O(n1 n2 sum_q J_q k_q)`` for all neighbours, against
        ``O(N n2 sum_q J_q)`` for :meth:`__call__` on them (``N = n1 sum_q (k_q - 1)`` on complete
        graphs); the values are equal up to rounding.
        """
        if not self.has_neighbour_gram:
            raise ValueError(f"neighbour_gram needs an FM-family kernel with discrete variables, not {self.name!r}")
        p = self.unpack(params)
        n1, n2 = V1.shape[0], V2.shape[0]
        with torch.no_grad():
            beta = torch.exp(p["log_beta"])
            norms = self.spectrum_norms(p, beta)
            if self.name == "fnn":  # f_j = 1 / (2 - k_NN + beta lambda_j)
                x = 2.0 - self._nn_kernel(p, C1, C2)
            elif self.Dc:
                theta = torch.exp(p["log_theta"])
                x = ((C1 / theta)[:, None, :] - (C2 / theta)[None, :, :]).square().sum(-1)
            else:
                x = torch.zeros(n1, n2, dtype=self.dtype, device=self.device)
            alpha = torch.exp(p["log_alpha"]) if self.name != "fnn" else None
            # variables whose graphs have the same numbers of eigenspaces and values (all binary variables,
            # say) are taken together: one batched product per group instead of one per variable
            tables: list[torch.Tensor] = []  # per group, its variables' factor tables (G, n1, k, n2)
            F = torch.empty(self.P, n1, n2, dtype=self.dtype, device=self.device)
            for qs, lam, proj_tables in self._variable_groups:
                bl = (beta[qs][:, None] * lam)[:, :, None, None]  # (G, J, 1, 1)
                if self.name == "fnn":
                    f = 1.0 / (x[None, None] + bl)
                else:
                    ax = alpha[qs][:, None, None, None] * x[None, None]  # type: ignore[index]
                    f = 1.0 / (1.0 + bl + ax) if self.name == "modlap" else self._modulate(p, bl, ax)
                G, J, k = proj_tables.shape[:3]
                # proj[g, j, s, c] = P_j[s, V2[c, q_g]] for the group's variables q_g
                proj = torch.gather(proj_tables, 3, V2[:, qs].T[:, None, None, :].expand(G, J, k, n2))
                # A[g, s, k, c] = sum_j f[g, j, s, c] proj[g, j, k, c] / norm: broadcast products, summed over j
                # in place (einsum's batched products of inner size J ran several times slower here)
                A = f[:, 0, :, None, :] * proj[:, 0, None, :, :]  # (G, n1, k, n2)
                for j in range(1, J):
                    A.addcmul_(f[:, j, :, None, :], proj[:, j, None, :, :])
                A /= norms[qs][:, None, None, None]
                # each row's own factor: A[g, r, V1[r, q_g], :]
                own = V1[:, qs].T[:, :, None, None].expand(G, n1, 1, n2)
                F[qs] = torch.gather(A, 2, own).squeeze(2)
                tables.append(A)
            ones = torch.ones(1, n1, n2, dtype=self.dtype, device=self.device)
            prefix = torch.cumprod(torch.cat([ones, F[:-1]]), 0)  # prod_{q' < q}
            # rev[i] = product of the last i factors, so prod_{q' > q} = rev[P - 1 - q] (read where needed, not
            # flipped back: a flip of the (P, n1, n2) products costs as much as the products)
            rev = torch.cumprod(torch.cat([ones, F.flip(0)[:-1]]), 0)
            out = torch.empty(owner.shape[0], n2, dtype=self.dtype, device=self.device)
            group, slot = self._variable_slots[0][var], self._variable_slots[1][var]
            for g, A in enumerate(tables):
                at = torch.nonzero(group == g).reshape(-1)
                if at.numel():
                    o, q = owner[at], var[at]
                    out[at] = prefix[q, o] * rev[self.P - 1 - q, o] * A[slot[at], o, value[at]]
        return out

    def diag(self, params: torch.Tensor, V: torch.Tensor, *, C: torch.Tensor) -> torch.Tensor:
        """``k(x, x)`` for each row, without forming the Gram matrix (``r = 0``)."""
        p = self.unpack(params)
        m = V.shape[0]
        if self.P == 0:
            return torch.ones(m, dtype=self.dtype, device=self.device)
        if self.name in ("prodlap", "proddif", "addlap", "adddif"):
            g = torch.ones(m, dtype=self.dtype, device=self.device)
            for q in range(self.P):
                beta = torch.exp(p["log_beta"][q])
                lam = self.lam[q]
                gv = 1.0 / (1.0 + beta * lam) if self.name.endswith("lap") else torch.exp(-beta * lam)
                g = g * (self.U[q][V[:, q]].square() * (gv / gv.mean())).sum(-1)
            if self.name.startswith("prod"):
                return g
            w = torch.sigmoid(p["logit_mix"])
            return w + (1 - w) * g
        if self.name != "fnn":
            return self.diag_tables(params, p)[V + self._spec_offset[:-1]].prod(1)
        # FNN: the modulation depends on k_NN(c, c), so on the row
        s = torch.exp(p["log_sigma"])
        x = torch.cat([torch.ones(m, 1, dtype=self.dtype, device=self.device), 2 * C - 1], 1)
        nx = 1 + 2 * (x * s * x).sum(1)
        knn = (2 / math.pi) * torch.asin((2 * (x * s * x).sum(1) / nx).clamp(-1.0, 1.0))
        out = torch.ones(m, dtype=self.dtype, device=self.device)
        for q in range(self.P):
            lam, U = self.lam[q], self.U[q]
            beta = torch.exp(p["log_beta"][q])
            F = 1.0 / (2.0 + beta * lam - knn[:, None])
            norm = (1.0 / (1.0 + beta * lam)).mean()
            out = out * (U[V[:, q]].square() * F).sum(-1) / norm
        return out

    def diag_tables(self, params: torch.Tensor, p: dict[str, torch.Tensor]) -> torch.Tensor:
        """``k(x, x) = prod_q d_q[v_q]`` with ``d_q[v] = sum_i U_q[v, i]^2 f(beta_q lambda_i, 0) / norm_q``
        (not FNN): one table of ``k_q`` values per variable, all laid end to end for one gather (variable
        ``q``'s at :attr:`diag_table_bounds` ``[q]``); ``p`` is :meth:`unpack` of ``params``.

        An acquisition optimisation asks for ``k(x, x)`` a few hundred times under the same
        hyper-parameters, so without autograd the tables of the last ``params`` are kept.
        """
        grad = torch.is_grad_enabled() and params.requires_grad
        key = None if grad else params.detach().cpu().numpy().tobytes()
        cached = self._diag_cache
        if key is not None and cached is not None and cached[0] == key:
            return cached[1]
        beta = torch.exp(p["log_beta"])
        zero = torch.zeros((), dtype=self.dtype, device=self.device)
        F = self._modulate(p, beta[self._spec_var] * self._spec_lam, zero)
        norms = torch.zeros(self.P, dtype=self.dtype, device=self.device).index_add(0, self._spec_var, F)
        norms = norms / self._spec_size
        tables = torch.cat([(self._U2[q] @ F[a:b]) / norms[q] for q, (a, b) in enumerate(self._spec_bounds)])
        if key is not None:
            self._diag_cache = (key, tables)
        return tables

    def _modulate(self, p: dict[str, torch.Tensor], bl: torch.Tensor, ar2: torch.Tensor) -> torch.Tensor:
        """``f`` elementwise (broadcasting) from ``beta * lambda`` and ``alpha * r^2``."""
        if self.name == "modlap":
            return 1.0 / (1.0 + bl + ar2)
        if self.name == "moddif":
            return torch.exp(-(1.0 + ar2) * bl)
        # general family, Prop. 1: sum_n w_n (1 + beta lambda + (alpha r^2)^(tau/2))^-n
        tau = 2.0 * torch.sigmoid(p["logit_tau"][0])
        a_tau = torch.where(ar2 > 0, ar2.clamp_min(log_floor(ar2.dtype)) ** (tau / 2.0), torch.zeros_like(ar2))
        inv = 1.0 / (1.0 + bl + a_tau)
        w = torch.exp(p["log_w"])
        out, power = w[0] * inv, inv * inv  # n_terms >= 1
        for n in range(1, self.n_terms):
            out = out + w[n] * power
            power = power * inv
        return out

    def _graph_kernel(self, p: dict[str, torch.Tensor], V1: torch.Tensor, V2: torch.Tensor) -> torch.Tensor:
        K = torch.ones(V1.shape[0], V2.shape[0], dtype=self.dtype, device=self.device)
        for q in range(self.P):
            beta = torch.exp(p["log_beta"][q])
            g = 1.0 / (1.0 + beta * self.lam[q]) if self.name.endswith("lap") else torch.exp(-beta * self.lam[q])
            table = (self.U[q] * (g / g.mean())) @ self.U[q].T
            K = K * table[V1[:, q]][:, V2[:, q]]
        return K

    def _nn_kernel(self, p: dict[str, torch.Tensor], C1: torch.Tensor, C2: torch.Tensor) -> torch.Tensor:
        """Neural-network (arcsine) kernel on inputs mapped to ``[-1, 1]`` with a bias coordinate."""
        s = torch.exp(p["log_sigma"])
        x1 = torch.cat([torch.ones(C1.shape[0], 1, dtype=self.dtype, device=self.device), 2 * C1 - 1], 1)
        x2 = torch.cat([torch.ones(C2.shape[0], 1, dtype=self.dtype, device=self.device), 2 * C2 - 1], 1)
        cross = 2 * (x1 * s) @ x2.T
        n1 = 1 + 2 * (x1 * s * x1).sum(1)
        n2 = 1 + 2 * (x2 * s * x2).sum(1)
        return (2 / math.pi) * torch.asin((cross / torch.sqrt(n1[:, None] * n2[None, :])).clamp(-1.0, 1.0))
