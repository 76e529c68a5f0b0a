"""NASBOT's kernel on neural architectures (Kandasamy et al. 2018, Eq. 4), at the kernel layer.

    k(G, G') = alpha     * exp(-sum_i beta_i     * d_i(G, G')^p)
             + alpha_bar * exp(-sum_i beta_bar_i * d_bar_i(G, G')^p_bar)

Eq. 4 itself and :func:`project_psd` live in :mod:`graphbo.nas.distance.kernel`;
this module gives them the kernel layer's interface: :func:`otmann_kernel` (torch
tensors in and out) and :class:`OTMANNKernel`, which computes the distances of a
list of architectures once (:meth:`graphbo.nas.distance.otmann.OTMANN.pairwise`)
and then re-evaluates Eq. 4 cheaply for new hyper-parameters.
"""

from __future__ import annotations

from typing import Sequence

import torch

from ..nas.distance import kernel as _eq4
from ..nas.distance.kernel import project_psd
from ..nas.distance.otmann import DEFAULT_NU_STRS, OTMANN
from ..nas.domain.architecture import Architecture

__all__ = ["otmann_kernel", "project_psd", "OTMANNKernel"]


def otmann_kernel(D, D_bar, *, alpha, alpha_bar, beta, beta_bar,
                  p: float = 1.0, p_bar: float = 2.0) -> torch.Tensor:
    """Eq. 4 from precomputed distances, as a float64 tensor.

    :func:`graphbo.nas.distance.kernel.otmann_kernel` with the distances taken as
    tensors (so NumPy inputs give a tensor too).

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
    D = torch.as_tensor(D, dtype=torch.float64)
    D_bar = torch.as_tensor(D_bar, dtype=torch.float64, device=D.device)
    return _eq4.otmann_kernel(D, D_bar, alpha=alpha, alpha_bar=alpha_bar, beta=beta, beta_bar=beta_bar, p=p,
                              p_bar=p_bar)


class OTMANNKernel:
    """Eq. 4 with the distances of a list of architectures computed once.

    Parameters
    ----------
    kind : ``"cnn"`` or ``"mlp"``.
    nu_strs : structural weights (paper: 0.1, 0.2, 0.4, 0.8).
    p, p_bar : powers of ``d`` and ``d_bar`` (paper: 1 and 2).
    otmann : a configured :class:`~graphbo.nas.distance.otmann.OTMANN` (default: the paper's label costs).

    Usage: ``D, Db = kern.distances(X)`` once per new data set (or only the new rows,
    ``kern.distances(X_new, X)``), then ``kern.gram(D, Db, alpha=..., alpha_bar=..., beta=..., beta_bar=...)``
    for each hyper-parameter sample.
    """

    def __init__(self, kind: str, *, nu_strs: Sequence[float] = DEFAULT_NU_STRS,
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
        D, Db = self.otmann.pairwise(archs1, archs2, nu_strs=self.nu_strs)
        return torch.from_numpy(D), torch.from_numpy(Db)

    def gram(self, D, D_bar, *, alpha, alpha_bar, beta, beta_bar, psd: bool = False) -> torch.Tensor:
        """Eq. 4; with ``psd=True`` (square, symmetric inputs only) the result is
        projected to the PSD cone by :func:`project_psd`."""
        K = otmann_kernel(D, D_bar, alpha=alpha, alpha_bar=alpha_bar, beta=beta, beta_bar=beta_bar, p=self.p,
                          p_bar=self.p_bar)
        return project_psd(K) if psd else K

    def __call__(self, archs1, archs2=None, *, alpha=1.0, alpha_bar=1.0, beta, beta_bar,
                 psd: bool = False) -> torch.Tensor:
        """Kernel matrix between two lists of architectures (distances computed here)."""
        D, Db = self.distances(archs1, archs2)
        return self.gram(D, Db, alpha=alpha, alpha_bar=alpha_bar, beta=beta, beta_bar=beta_bar,
                         psd=psd and archs2 is None)
