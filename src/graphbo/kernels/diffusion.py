"""ARD diffusion kernel on a graph Cartesian product (COMBO, Oh et al. 2019).

For sub-graphs ``G_1 .. G_d`` with Laplacian eigensystems
``L(G_i) = U_i diag(lambda_i) U_i^T``, the ARD diffusion kernel on the
product graph (Eq. 5) factorises over variables (Eq. 8 of the supplement):

    K(v, v') = prod_i  k_i(v_i, v'_i),
    k_i(a, b) = [U_i exp(-beta_i Lambda_i) U_i^T]_{ab} / Psi_i,
    Psi_i    = mean_j exp(-beta_i lambda_ij)          (remark under Eq. 8).

On graphs whose heat-kernel diagonal is not constant (a path: an ordinal variable, and most
user graphs) graphbo uses the factor's unit-diagonal form

    k_i(a, b) / sqrt(k_i(a, a) k_i(b, b))                        (graphbo; Psi_i cancels)

because the diagonal is the prior variance: on a path the two end values get up to twice the
variance of the middle ones (heat is reflected at the ends), so with ``d`` ordinal variables a
corner of the space has up to ``2^d`` times the prior variance and EI is drawn to corners.
Binary and categorical variables (complete graphs) already have a constant diagonal and are
left as the paper has them, bit for bit.

``form="matern52"`` reads ``d(v, v') = -log K(v, v')`` as a squared distance (on binary and
categorical variables the weighted Hamming distance ``sum_i w_i [v_i != v'_i]``) and applies the
Matern-5/2 profile to its square root (the form of Optuna's GPSampler on categories):

    K_M(v, v') = (1 + sqrt(5 d) + 5 d / 3) exp(-sqrt(5 d))               (Rasmussen and Williams, Eq. 4.17)

It decays as ``exp(-sqrt(5 d))`` instead of ``exp(-d)``, so configurations many changes apart stay
correlated. It is positive definite wherever every factor is infinitely divisible (complete graphs:
binary and categorical variables), because the Matern profile is a mixture of ``exp(-s d)`` over
``s > 0`` and ``exp(-s d)`` is again a diffusion kernel there; elsewhere the model's Cholesky jitter
guards it.

Each factor is a look-up in a small ``|V_i| x |V_i|`` table, so the
logarithm of a Gram matrix is a sum of look-ups. With one-hot encodings
``O`` (``n x D``, ``D = sum_i |V_i|``) and the block-diagonal matrix ``W`` whose
i-th block is ``log k_i``, ``log K(X1, X2) = O1 W O2^T``: two dense matrix
products, with no loop over pairs or variables. Changing ``beta_i`` changes
one block of ``W`` and one factor of ``K``.
"""

from __future__ import annotations

import math
from typing import Sequence, TypedDict

import numpy as np
import torch

from .._validation import check_choice, check_device, check_dtype
from ..spaces.variables import GraphSpectrum
from ._checks import check_spectra

__all__ = ["GraphDiffusionKernel", "KERNEL_FORMS", "log_floor", "has_constant_heat_diagonal"]

#: ``form`` choices of :class:`GraphDiffusionKernel`: the diffusion kernel itself, or the Matern-5/2
#: profile of its distance ``-log K``
KERNEL_FORMS = ("diffusion", "matern52")

_TINY = 1e-300  # floor for float64 table entries before the logarithm (exp(-beta L) is entrywise positive)


def log_floor(dtype: torch.dtype) -> float:
    """The floor for factor-table entries before their logarithm, in ``dtype``.

    ``exp(-beta L)`` is entrywise positive, but entries far below the largest one are
    rounding noise (and can come out zero or negative), so they are floored before the
    logarithm. The floor must be representable: ``1e-300`` in float64 (kept for identical
    results), the smallest normal number (about ``1.2e-38``) in float32, where ``1e-300``
    would round to 0 and ``log 0 = -inf`` would turn the one-hot products into ``0 * -inf = NaN``.
    """
    return max(_TINY, float(torch.finfo(dtype).tiny))


def has_constant_heat_diagonal(spectrum: GraphSpectrum, tol: float = 1e-9) -> bool:
    """Whether ``diag exp(-beta L)`` is the same for every vertex at every ``beta``.

    It is exactly when each eigenspace's projector ``U_l U_l^T`` has a constant diagonal
    (walk-regular graphs, e.g. complete graphs and cycles); a path's has not.
    """
    lam = np.asarray(spectrum.eigenvalues, dtype=float)
    u = np.asarray(spectrum.eigenvectors, dtype=float)
    scale = max(1.0, float(np.abs(lam).max()) if lam.size else 1.0)
    start = 0
    for end in range(1, lam.size + 1):
        if end == lam.size or lam[end] - lam[end - 1] > 1e-8 * scale:
            diag = np.square(u[:, start:end]).sum(axis=1)
            if float(np.ptp(diag)) > tol:
                return False
            start = end
    return True


class _Group(TypedDict):
    """Variables with the same number of values, processed as one batch."""

    members: torch.Tensor  # (g,) positions of the variables
    lam: torch.Tensor  # (g, k) eigenvalues
    u: torch.Tensor  # (g, k, k) eigenvectors
    flat: torch.Tensor  # (g * k * k,) flat positions of their blocks in the D x D matrix
    unit: torch.Tensor  # (g,) bool: the member's factor is scaled to unit diagonal
    any_unit: bool  # some member is (a Python bool: no device synchronisation per call)


class GraphDiffusionKernel:
    """Normalised ARD diffusion kernel over per-variable graph spectra (COMBO's kernel).

    Not to be confused with :class:`graphbo.integrations.gpytorch.DiffusionKernel`, the
    GPyTorch kernel built on this class for BoTorch models.

    Parameters
    ----------
    spectra : sequence of GraphSpectrum
        One eigensystem per variable, in index-row order (at least one).
    dtype, device : torch dtype and device for all computations (float64, CPU by default).
    unit_diagonal : bool, optional
        Scale each factor to unit diagonal. By default, exactly the variables whose graph's
        heat diagonal is not constant (paths and most user graphs); ``False`` gives supplement
        Eq. 8 as the paper writes it for every variable (graphbo 0.1).
    form : {"diffusion", "matern52"}, default "diffusion"
        ``K`` itself, or the Matern-5/2 profile of ``d = -log K`` (module docstring). The factor
        tables and ``log K`` are the same for both; :meth:`from_log` turns ``log K`` into the kernel.
        ``"matern52"`` needs unit-diagonal factors (``d(v, v) = 0``).

    Notes
    -----
    All methods take ``log_beta`` with a leading batch dimension ``S``
    (posterior samples), shape ``(S, d)``, and index rows as integer tensors.
    The signal variance is not part of this class: the model multiplies by it.
    """

    def __init__(
        self,
        spectra: Sequence[GraphSpectrum],
        *,
        dtype: torch.dtype = torch.float64,
        device: torch.device | str | None = None,
        unit_diagonal: bool | None = None,
        form: str = "diffusion",
    ) -> None:
        spectra = check_spectra("spectra", spectra, min_length=1)
        if unit_diagonal is not None and not isinstance(unit_diagonal, bool):
            raise TypeError(f"unit_diagonal must be None (automatic), True or False, got {unit_diagonal!r}")
        #: ``"diffusion"`` or ``"matern52"`` (:meth:`from_log`)
        self.form: str = check_choice("form", form, KERNEL_FORMS)
        if self.form == "matern52" and unit_diagonal is False:
            raise ValueError("form='matern52' needs unit-diagonal factors (a zero distance from each value to "
                             "itself); leave unit_diagonal at None")
        #: the spectra and the ``unit_diagonal`` argument it was built from (to build a variant of it)
        self.spectra: tuple[GraphSpectrum, ...] = tuple(spectra)
        self.unit_diagonal_argument = unit_diagonal
        unit = [(not has_constant_heat_diagonal(s)) if unit_diagonal is None else unit_diagonal for s in spectra]
        self.dtype: torch.dtype = check_dtype("dtype", dtype)
        checked = check_device("device", device)
        self.device: torch.device = checked if checked is not None else torch.device("cpu")
        self.n_values = np.array([len(s.eigenvalues) for s in spectra], dtype=np.int64)
        self.d = len(spectra)
        self.offsets = np.concatenate([[0], np.cumsum(self.n_values)[:-1]]).astype(np.int64)
        self.D = int(self.n_values.sum())
        # Variables with the same number of values are processed as one batch.
        self._groups: list[_Group] = []
        for k in sorted(set(self.n_values.tolist())):
            members = np.flatnonzero(self.n_values == k)
            lam = torch.tensor(np.stack([spectra[int(i)].eigenvalues for i in members]),
                               dtype=dtype, device=self.device)  # (g, k)
            u = torch.tensor(np.stack([spectra[int(i)].eigenvectors for i in members]),
                             dtype=dtype, device=self.device)  # (g, k, k)
            # flat positions of each member's k x k block inside the D x D block-diagonal matrix
            rows = self.offsets[members][:, None, None] + np.arange(k)[None, :, None]
            cols = self.offsets[members][:, None, None] + np.arange(k)[None, None, :]
            flat = torch.as_tensor(rows * self.D + cols, device=self.device).reshape(-1)
            self._groups.append(_Group(members=torch.as_tensor(members, device=self.device), lam=lam, u=u, flat=flat,
                                       unit=torch.tensor([unit[int(i)] for i in members], device=self.device),
                                       any_unit=any(unit[int(i)] for i in members)))
        self._lam = [np.asarray(s.eigenvalues, dtype=float) for s in spectra]
        self._u = [np.asarray(s.eigenvectors, dtype=float) for s in spectra]
        #: per variable: its factor is scaled to unit diagonal (its graph's heat diagonal is not constant)
        self.unit_diagonal = np.array(unit, dtype=bool)

    # -- per-variable tables ----------------------------------------------
    def factor_table(self, i: int, log_beta_i: float, *, values: np.ndarray | None = None) -> np.ndarray:
        """``k_i`` as a NumPy ``|V_i| x |V_i|`` table for one variable and one ``beta_i``.

        With ``values`` (indices into ``V_i``), only those rows and columns: ``O(m^2 |V_i|)``
        for ``m`` values instead of ``O(|V_i|^3)``, which matters for ordinal variables with
        hundreds of levels of which a run has seen few. Used by the slice sampler, whose tiny
        per-step matrices are cheaper in NumPy than in torch (per-call overhead dominates).
        """
        w = np.exp(-np.exp(log_beta_i) * self._lam[i])
        u = self._u[i] if values is None else self._u[i][np.asarray(values)]
        table: np.ndarray = (u * (w / w.mean())) @ u.T
        if self.unit_diagonal[i]:
            d = np.sqrt(np.clip(np.diagonal(table), _TINY, None))
            table = table / d[:, None] / d[None, :]
        return table

    def is_two_valued(self, i: int) -> bool:
        """Whether variable ``i``'s factor is ``a`` on the diagonal and one value ``b`` off it, for every ``beta_i``.

        True when the Laplacian has a constant eigenvector and one other eigenvalue ``c``
        (complete graphs with equal edge weights: binary and categorical variables), for then
        ``exp(-beta L) = J / k + exp(-beta c) (I - J / k)``; the normalisation and the unit-diagonal
        scaling keep this shape. Read off the spectrum, without forming a table.
        """
        lam, u = self._lam[i], self._u[i]
        k = lam.shape[0]
        if k < 2:
            return False
        first = int(np.argmin(lam))
        rest = np.delete(lam, first)
        scale = max(float(np.abs(lam).max()), 1e-12)
        constant = np.abs(np.abs(u[:, first]) - 1.0 / math.sqrt(k)).max() <= 1e-8
        return bool(constant and np.ptp(rest) <= 1e-10 * scale)

    def two_values(self, i: int, log_beta_i: float) -> tuple[float, float]:
        """``(a, b)``: the diagonal and off-diagonal entries of a two-valued factor (:meth:`is_two_valued`).

        In closed form, without a table: with ``k`` values and ``w = exp(-beta c)`` for the Laplacian's
        nonzero eigenvalue ``c``, ``exp(-beta L) = J / k + w (I - J / k)``, whose diagonal ``(1 + (k - 1) w) / k``
        is also the eigenvalues' mean that :meth:`factor_table` divides by, so ``a = 1`` and
        ``b = (1 - w) / (1 + (k - 1) w)`` (the unit-diagonal scaling leaves both; ``1 - w`` by ``expm1``).
        Equal to the table's entries up to the table's rounding (relative ``1e-11`` where ``b`` is near 1e-5).
        """
        lam = self._lam[i]
        k = lam.shape[0]
        x = math.exp(log_beta_i) * float(lam.max())
        return 1.0, -math.expm1(-x) / (1.0 + (k - 1) * math.exp(-x))

    def mean_correlation(self, i: int, log_beta_i: float) -> float:
        """Mean correlation ``k_i(a, b) / sqrt(k_i(a, a) k_i(b, b))`` over pairs of distinct values ``a != b``.

        1 when the factor is constant (``beta_i -> inf``: the variable does not matter), 0 when
        distinct values are uncorrelated (``beta_i -> 0``: every change of the variable matters).
        Not defined for a one-value variable (returns 1: it cannot matter).
        """
        k = int(self.n_values[i])
        if k < 2:
            return 1.0
        table = self.factor_table(i, log_beta_i)
        d = np.sqrt(np.clip(np.diagonal(table), 1e-300, None))
        corr = table / d[:, None] / d[None, :]
        return float((corr.sum() - np.trace(corr)) / (k * (k - 1)))

    def log_block_diagonal(self, log_beta: torch.Tensor) -> torch.Tensor:
        """``W``: block-diagonal ``(S, D, D)`` matrix of log factor tables (zeros off the blocks)."""
        log_beta = torch.as_tensor(log_beta, dtype=self.dtype, device=self.device)
        S = log_beta.shape[0]
        W = torch.zeros(S, self.D * self.D, dtype=self.dtype, device=self.device)
        floor = log_floor(self.dtype)
        for g in self._groups:
            beta = torch.exp(log_beta[:, g["members"]])  # (S, g)
            w = torch.exp(-beta[..., None] * g["lam"])  # (S, g, k)
            w = w / w.mean(dim=-1, keepdim=True)
            table = torch.einsum("gak,sgk,gbk->sgab", g["u"], w, g["u"])  # (S, g, k, k)
            if g["any_unit"]:
                d = torch.diagonal(table, dim1=-2, dim2=-1).clamp_min(floor).sqrt()  # (S, g, k)
                scaled = table / d[..., :, None] / d[..., None, :]
                table = torch.where(g["unit"][None, :, None, None], scaled, table)
            W[:, g["flat"]] = torch.log(table.clamp_min(floor)).reshape(S, -1)
        return W.reshape(S, self.D, self.D)

    # -- encodings ----------------------------------------------------------
    def one_hot(self, X: torch.Tensor) -> torch.Tensor:
        """One-hot encoding ``(n, D)`` of index rows ``(n, d)``."""
        X = torch.as_tensor(X, device=self.device)
        cols = X + torch.as_tensor(self.offsets, device=self.device)
        O = torch.zeros(X.shape[0], self.D, dtype=self.dtype, device=self.device)
        O.scatter_(1, cols, 1.0)
        return O

    # -- the kernel's form -----------------------------------------------------
    def from_log(self, log_k: torch.Tensor) -> torch.Tensor:
        """The kernel from ``log K`` (any shape): ``exp`` for ``"diffusion"``, the Matern-5/2 profile
        ``(1 + r + r^2 / 3) exp(-r)`` with ``r = sqrt(5 d)``, ``d = -log K >= 0``, for ``"matern52"``."""
        if self.form == "diffusion":
            return torch.exp(log_k)
        r = torch.sqrt(5.0 * (-log_k).clamp_min(0.0))
        return (1.0 + r + r.square() / 3.0) * torch.exp(-r)

    def from_log_numpy(self, log_k: np.ndarray) -> np.ndarray:
        """:meth:`from_log` for a NumPy array (the slice sampler's matrices)."""
        if self.form == "diffusion":
            out: np.ndarray = np.exp(log_k)
            return out
        r = np.sqrt(5.0 * np.maximum(-log_k, 0.0))
        out = (1.0 + r + r * r / 3.0) * np.exp(-r)
        return out

    # -- Gram matrices ------------------------------------------------------
    def log_gram(self, log_beta: torch.Tensor, X1: torch.Tensor, *, X2: torch.Tensor | None = None) -> torch.Tensor:
        """``log K(X1, X2)`` for every sample: shape ``(S, n1, n2)``."""
        W = self.log_block_diagonal(log_beta)
        O1 = self.one_hot(X1)
        O2 = O1 if X2 is None else self.one_hot(X2)
        return O1 @ W @ O2.T

    def gram(self, log_beta: torch.Tensor, X1: torch.Tensor, *, X2: torch.Tensor | None = None) -> torch.Tensor:
        """``K(X1, X2)`` (unit signal variance) for every sample: shape ``(S, n1, n2)``."""
        return self.from_log(self.log_gram(log_beta, X1, X2=X2))

    def log_diag(self, log_beta: torch.Tensor, X: torch.Tensor) -> torch.Tensor:
        """``log K(x, x)`` for each row of ``X``: shape ``(S, n)``."""
        W = self.log_block_diagonal(log_beta)
        return (self.one_hot(X) @ torch.diagonal(W, dim1=1, dim2=2).T).T
