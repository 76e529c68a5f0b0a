"""Exact Gaussian-process algebra shared by graphbo's surrogates.

A GP with constant mean ``m``, covariance ``sigma_f^2 K`` and Gaussian noise
``sigma_n^2`` has the log marginal likelihood of COMBO supplement Eq. (7):

    -1/2 (y - m)^T C^{-1} (y - m) - 1/2 log det C - n/2 log 2 pi,
    C = sigma_f^2 K + sigma_n^2 I.
"""

from __future__ import annotations

import math

import torch

__all__ = ["robust_cholesky", "log_marginal_likelihood", "CholeskyError"]

_JITTERS = (0.0, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3)


class CholeskyError(RuntimeError):
    """The covariance matrix stayed non positive-definite after every jitter retry."""


def robust_cholesky(C: torch.Tensor) -> torch.Tensor:
    """Lower Cholesky factor of ``C`` (batched), retrying with growing diagonal jitter.

    The jitter is ``j * mean(diag(C))`` for ``j`` in 0, 1e-8, ..., 1e-3, applied
    only to the batch members that failed.
    """
    L, info = torch.linalg.cholesky_ex(C)
    if not bool((info > 0).any()):
        return L
    eye = torch.eye(C.shape[-1], dtype=C.dtype, device=C.device)
    scale = torch.diagonal(C, dim1=-2, dim2=-1).mean(-1)
    for j in _JITTERS[1:]:
        bad = info > 0
        Lj, infoj = torch.linalg.cholesky_ex(C + (j * scale)[..., None, None] * eye)
        if C.dim() == 2:
            L, info = Lj, infoj
        else:
            L = torch.where(bad[:, None, None], Lj, L)
            info = torch.where(bad, infoj, info)
        if not bool((info > 0).any()):
            return L
    raise CholeskyError(
        "covariance matrix is not positive definite even with jitter 1e-3 * mean diagonal; "
        f"diagonal range [{float(torch.diagonal(C, dim1=-2, dim2=-1).min()):.3g}, "
        f"{float(torch.diagonal(C, dim1=-2, dim2=-1).max()):.3g}]"
    )


def log_marginal_likelihood(residual: torch.Tensor, C: torch.Tensor) -> float:
    """Eq. (7) for one residual vector ``y - m`` and covariance ``C``; ``-inf`` if ``C`` is not PD."""
    try:
        L = robust_cholesky(C)
    except CholeskyError:
        return -math.inf
    z = torch.linalg.solve_triangular(L, residual[:, None], upper=False)
    n = residual.shape[0]
    val = -0.5 * float(z.square().sum()) - float(torch.log(torch.diagonal(L)).sum()) - 0.5 * n * math.log(2 * math.pi)
    return val
