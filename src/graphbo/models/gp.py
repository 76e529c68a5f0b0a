"""Cholesky factorisation with jitter retries, shared by graphbo's GP surrogates.

The marginal likelihoods themselves (COMBO supplement Eq. 7) live with their
models: NumPy/LAPACK in COMBO's slice sampler, differentiable torch in BO-FM's ML-II.
"""

from __future__ import annotations

import torch

__all__ = ["robust_cholesky", "CholeskyError"]

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
