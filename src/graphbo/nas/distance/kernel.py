"""NASBOT's kernel on architectures, Eq. 4 of Kandasamy et al. (2018), written once.

    k(G, G') = alpha     * exp(-sum_i beta_i     * d_i(G, G')^p)
             + alpha_bar * exp(-sum_i beta_bar_i * d_bar_i(G, G')^p_bar)

``d_i`` and ``d_bar_i`` are the OTMANN distance and its normalised version for
the structural weights ``nu_str,i`` (:meth:`graphbo.nas.distance.otmann.OTMANN.pairwise`,
:class:`graphbo.nas.distance.otmann_batch.BatchOTMANN`); the paper uses
``p = 1`` and ``p_bar = 2``.

:func:`otmann_kernel` is Eq. 4. It is the composition of its two halves, which
are public for callers that keep the exponents (the GP's slice sampler updates
one ``beta_i`` at a time):

* :func:`kernel_exponents`: ``S = sum_i beta_i d_i^p`` and ``S_bar = sum_i beta_bar_i d_bar_i^p_bar``;
* :func:`kernel_from_exponents`: ``alpha exp(-S) + alpha_bar exp(-S_bar)``.

Every function takes NumPy arrays or torch tensors: given tensors it computes
with torch on the distances' device and returns a tensor, otherwise it
computes with NumPy and returns an array. The hyper-parameters may be batched
(``S`` posterior samples): ``alpha, alpha_bar`` of shape ``(S,)``, ``beta,
beta_bar`` of shape ``(S, m)``; the kernel is then ``(S, n1, n2)``.

Eq. 4 is not known to be positive semi-definite (Sec. 4.1); :func:`project_psd`
repairs an indefinite Gram matrix by clipping its negative eigenvalues, as the
authors' GP does before its Cholesky factorisation.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["otmann_kernel", "kernel_exponents", "kernel_from_exponents", "powered", "project_psd"]


def _is_torch(*xs: Any) -> bool:
    return any(isinstance(x, torch.Tensor) for x in xs)


def _as_tensor(x: Any, device: torch.device | None = None) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x.to(dtype=torch.float64, device=device if device is not None else x.device)
    return torch.as_tensor(np.asarray(x, dtype=float), dtype=torch.float64, device=device)


def _as_arrays(*xs: Any) -> tuple[Any, ...]:
    """All of ``xs`` as float64 tensors on the first one's device when any is a tensor, else as
    float64 NumPy arrays."""
    if _is_torch(*xs):
        first = _as_tensor(xs[0])
        return (first,) + tuple(_as_tensor(x, first.device) for x in xs[1:])
    return tuple(np.asarray(x, dtype=float) for x in xs)


def powered(D: Any, p: float) -> Any:
    """``D ** p`` (negative round-off clipped to 0 first); ``D`` itself when ``p == 1``."""
    if p == 1:
        return D
    if isinstance(D, torch.Tensor):
        return D.clamp_min(0) ** p
    return np.maximum(D, 0.0) ** p


def kernel_exponents(D: Any, D_bar: Any, *, beta: Any, beta_bar: Any, p: float = 1.0, p_bar: float = 2.0
                     ) -> tuple[Any, Any]:
    """The exponents of Eq. 4: ``(sum_i beta_i d_i^p, sum_i beta_bar_i d_bar_i^p_bar)``.

    ``D, D_bar`` are ``(m, n1, n2)``; ``beta, beta_bar`` are ``(m,)`` or ``(S, m)``.
    Each exponent is ``(n1, n2)``, or ``(S, n1, n2)`` for batched weights. Pass
    ``p = p_bar = 1`` for distances already raised to their powers (:func:`powered`).
    """
    torch_in = _is_torch(D, D_bar)  # the weights follow the distances' type
    D, D_bar, b, bb = (_as_arrays(D, D_bar, beta, beta_bar) if torch_in
                       else _as_arrays(D, D_bar) + _as_arrays(beta, beta_bar))
    if D.ndim != 3 or D.shape != D_bar.shape:
        raise ValueError(f"D and D_bar must both be (m, n1, n2); got {tuple(D.shape)} and {tuple(D_bar.shape)}")
    m = D.shape[0]
    if b.ndim not in (1, 2) or bb.ndim not in (1, 2) or b.shape[-1] != m or bb.shape[-1] != m:
        raise ValueError(f"beta and beta_bar need {m} entries (one per nu_str), or (S, {m}); "
                         f"got {tuple(b.shape)}, {tuple(bb.shape)}")
    Dp, Dbp = powered(D, p), powered(D_bar, p_bar)
    if isinstance(Dp, torch.Tensor):
        return (torch.tensordot(b, Dp, dims=([b.dim() - 1], [0])),
                torch.tensordot(bb, Dbp, dims=([bb.dim() - 1], [0])))
    return np.tensordot(b, Dp, axes=(b.ndim - 1, 0)), np.tensordot(bb, Dbp, axes=(bb.ndim - 1, 0))


def _scaled(E: Any, a: Any) -> Any:
    """``E * a``, in place when the product keeps ``E``'s shape (``E`` is a temporary)."""
    if isinstance(E, torch.Tensor):
        return E.mul_(a) if torch.broadcast_shapes(E.shape, a.shape) == E.shape else E * a
    if np.broadcast_shapes(E.shape, a.shape) == E.shape:
        E *= a
        return E
    return E * a


def kernel_from_exponents(S: Any, S_bar: Any, *, alpha: Any, alpha_bar: Any) -> Any:
    """``alpha exp(-S) + alpha_bar exp(-S_bar)``: Eq. 4 from its exponents (see :func:`kernel_exponents`).

    ``alpha, alpha_bar`` are scalars or ``(S,)`` (then the result is ``(S, n1, n2)``).
    The inputs are not modified.
    """
    E: Any
    Eb: Any
    torch_in = _is_torch(S, S_bar)  # the weights follow the exponents' type
    S, S_bar, a, ab = (_as_arrays(S, S_bar, alpha, alpha_bar) if torch_in
                       else _as_arrays(S, S_bar) + _as_arrays(alpha, alpha_bar))
    if torch_in:
        E, Eb = torch.neg(S).exp_(), torch.neg(S_bar).exp_()
    else:
        E, Eb = np.negative(S), np.negative(S_bar)
        np.exp(E, out=E)
        np.exp(Eb, out=Eb)
    if a.ndim > 1 or ab.ndim > 1:
        raise ValueError(f"alpha and alpha_bar must be scalars or (S,); got {tuple(a.shape)}, {tuple(ab.shape)}")
    if a.ndim == 1:
        a = a.reshape(-1, 1, 1)
    if ab.ndim == 1:
        ab = ab.reshape(-1, 1, 1)
    K, Kb = _scaled(E, a), _scaled(Eb, ab)
    if tuple(K.shape) == tuple(np.broadcast_shapes(tuple(K.shape), tuple(Kb.shape))):
        K += Kb
        return K
    return K + Kb


def otmann_kernel(D: Any, D_bar: Any, *, alpha: Any, alpha_bar: Any, beta: Any, beta_bar: Any,
                  p: float = 1.0, p_bar: float = 2.0) -> Any:
    """Eq. 4 from precomputed distances.

    Parameters
    ----------
    D, D_bar : ``(m, n1, n2)`` arrays or tensors: ``d_i`` and ``d_bar_i`` for the ``m``
        structural weights.
    alpha, alpha_bar : scalars, or ``(S,)`` for ``S`` hyper-parameter samples at once.
    beta, beta_bar : ``(m,)``, or ``(S, m)``; non-negative.
    p, p_bar : powers of the distances (paper: 1 and 2).

    Returns
    -------
    ``(n1, n2)``, or ``(S, n1, n2)`` when any hyper-parameter is batched: a float64
    tensor on the distances' device when they are tensors, else a NumPy array.
    """
    S, S_bar = kernel_exponents(D, D_bar, beta=beta, beta_bar=beta_bar, p=p, p_bar=p_bar)
    return kernel_from_exponents(S, S_bar, alpha=alpha, alpha_bar=alpha_bar)


def project_psd(K: Any, tol: float = 1e-10) -> Any:
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
