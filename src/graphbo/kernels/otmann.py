"""NASBOT's kernel on neural architectures (Kandasamy et al. 2018, Eq. 4).

    k(G, G') = alpha     * exp(-sum_i beta_i     * d_i(G, G')^p)
             + alpha_bar * exp(-sum_i beta_bar_i * d_bar_i(G, G')^p_bar)

``d_i`` and ``d_bar_i`` are the OTMANN distance and its normalised version for the
structural weights ``nu_str,i`` (paper: 0.1, 0.2, 0.4, 0.8; ``p = 1``, ``p_bar = 2``).
The distances are computed once per pair of networks (:func:`graphbo.nas.distance.otmann.otmann_distances`)
and the kernel is then cheap to re-evaluate for new hyper-parameters.

Eq. 4 is not known to be positive semi-definite (Sec. 4.1); :func:`project_psd`
repairs an indefinite Gram matrix by clipping its negative eigenvalues, as the
authors' GP does before its Cholesky factorisation.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from ..nas.domain.architecture import Architecture
from ..nas.distance.otmann import DEFAULT_NU_STRS, OTMANN

__all__ = ["otmann_kernel", "project_psd", "OTMANNKernel"]


def _as_tensor(x, dtype=torch.float64, device=None) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x.to(dtype=dtype, device=device if device is not None else x.device)
    return torch.as_tensor(np.asarray(x, dtype=float), dtype=dtype, device=device)


def otmann_kernel(D, D_bar, alpha, alpha_bar, beta, beta_bar,
                  p: float = 1.0, p_bar: float = 2.0) -> torch.Tensor:
    """Eq. 4 from precomputed distances.

    Parameters
    ----------
    D, D_bar : ``(m, n1, n2)`` arrays or tensors: ``d_i`` and ``d_bar_i`` for the ``m``
        structural weights (as returned by :func:`~graphbo.nas.distance.otmann.otmann_distances`).
    alpha, alpha_bar : scalars, or ``(S,)`` for ``S`` hyper-parameter samples at once.
    beta, beta_bar : ``(m,)``, or ``(S, m)``; non-negative.
    p, p_bar : powers of the distances (paper: 1 and 2).

    Returns
    -------
    ``(n1, n2)`` float64 tensor, or ``(S, n1, n2)`` when any hyper-parameter is batched.
    """
    D = _as_tensor(D)
    dev = D.device
    D_bar = _as_tensor(D_bar, device=dev)
    if D.dim() != 3 or D.shape != D_bar.shape:
        raise ValueError(f"D and D_bar must both be (m, n1, n2); got {tuple(D.shape)} and {tuple(D_bar.shape)}")
    m = D.shape[0]
    a = _as_tensor(alpha, device=dev)
    ab = _as_tensor(alpha_bar, device=dev)
    b = _as_tensor(beta, device=dev)
    bb = _as_tensor(beta_bar, device=dev)
    if b.shape[-1] != m or bb.shape[-1] != m:
        raise ValueError(f"beta and beta_bar need {m} entries (one per nu_str); got {tuple(b.shape)}, {tuple(bb.shape)}")
    batched = a.dim() > 0 or ab.dim() > 0 or b.dim() > 1 or bb.dim() > 1
    Dp = D if p == 1 else D.clamp_min(0) ** p
    Dbp = D_bar if p_bar == 1 else (D_bar.clamp_min(0) ** p_bar)
    # sum_i beta_i d_i^p  ->  (..., n1, n2)
    s = torch.tensordot(b, Dp, dims=([b.dim() - 1], [0]))
    sb = torch.tensordot(bb, Dbp, dims=([bb.dim() - 1], [0]))
    if batched:
        a = a.reshape(-1, 1, 1)
        ab = ab.reshape(-1, 1, 1)
        if s.dim() == 2:
            s = s.unsqueeze(0)
        if sb.dim() == 2:
            sb = sb.unsqueeze(0)
    return a * torch.exp(-s) + ab * torch.exp(-sb)


def project_psd(K, tol: float = 1e-10):
    """Nearest (Frobenius) positive semi-definite matrix: clip negative eigenvalues to 0.

    ``K`` is a symmetric ``(n, n)`` or batched ``(S, n, n)`` array or tensor (the
    symmetric part is used). A matrix whose smallest eigenvalue is at least
    ``-tol * max(1, max |eigenvalue|)`` is returned unchanged (the very same object
    for an unbatched input), so PSD matrices are never perturbed by round-off; the
    others are replaced by ``V max(Lambda, 0) V^T``. Returns the input's type
    (tensor or NumPy array).
    """
    is_np = not isinstance(K, torch.Tensor)
    T = _as_tensor(K)
    if T.dim() < 2 or T.shape[-1] != T.shape[-2]:
        raise ValueError(f"expected a square matrix or a batch of them, got shape {tuple(T.shape)}")
    S = 0.5 * (T + T.transpose(-1, -2))
    lam, V = torch.linalg.eigh(S)
    scale = lam.abs().amax(dim=-1).clamp_min(1.0)
    ok = lam[..., 0] >= -tol * scale
    if bool(ok.all()):
        return K
    fixed = (V * lam.clamp_min(0).unsqueeze(-2)) @ V.transpose(-1, -2)
    fixed = 0.5 * (fixed + fixed.transpose(-1, -2))
    if T.dim() > 2:
        fixed = torch.where(ok[..., None, None], T, fixed)
    return fixed.numpy() if is_np else fixed.to(dtype=K.dtype)


class OTMANNKernel:
    """Eq. 4 with the distances of a list of architectures computed once.

    Parameters
    ----------
    kind : ``"cnn"`` or ``"mlp"``.
    nu_strs : structural weights (paper: 0.1, 0.2, 0.4, 0.8).
    p, p_bar : powers of ``d`` and ``d_bar`` (paper: 1 and 2).
    otmann : a configured :class:`~graphbo.nas.distance.otmann.OTMANN` (default: the paper's label costs).

    Usage: ``D, Db = kern.distances(X)`` once per new data set (or only the new rows,
    ``kern.distances(X_new, X)``), then ``kern.gram(D, Db, alpha, alpha_bar, beta, beta_bar)``
    for each hyper-parameter sample.
    """

    def __init__(self, kind: str, nu_strs: Sequence[float] = DEFAULT_NU_STRS,
                 p: float = 1.0, p_bar: float = 2.0, otmann: OTMANN | None = None):
        self.kind = kind
        self.nu_strs = tuple(float(v) for v in nu_strs)
        self.p, self.p_bar = float(p), float(p_bar)
        self.otmann = otmann if otmann is not None else OTMANN(kind)
        if self.otmann.kind != kind:
            raise ValueError(f"the OTMANN computer is for {self.otmann.kind} networks, not {kind}")

    @property
    def n_dists(self) -> int:
        return len(self.nu_strs)

    def distances(self, archs1: Sequence[Architecture], archs2: Sequence[Architecture] | None = None
                  ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(D, D_bar)`` as float64 tensors of shape ``(m, n1, n2)``."""
        D, Db = self.otmann.pairwise(archs1, archs2, self.nu_strs)
        return torch.from_numpy(D), torch.from_numpy(Db)

    def gram(self, D, D_bar, alpha, alpha_bar, beta, beta_bar, psd: bool = False) -> torch.Tensor:
        """Eq. 4; with ``psd=True`` (square, symmetric inputs only) the result is
        projected to the PSD cone by :func:`project_psd`."""
        K = otmann_kernel(D, D_bar, alpha, alpha_bar, beta, beta_bar, self.p, self.p_bar)
        return project_psd(K) if psd else K

    def __call__(self, archs1, archs2=None, *, alpha=1.0, alpha_bar=1.0, beta, beta_bar,
                 psd: bool = False) -> torch.Tensor:
        """Kernel matrix between two lists of architectures (distances computed here)."""
        D, Db = self.distances(archs1, archs2)
        return self.gram(D, Db, alpha, alpha_bar, beta, beta_bar, psd=psd and archs2 is None)
