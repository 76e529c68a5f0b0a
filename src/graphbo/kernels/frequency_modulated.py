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
from typing import Sequence

import numpy as np
import torch

from ..spaces.variables import GraphSpectrum

__all__ = ["FMKernel", "KERNELS"]

KERNELS = ("modlap", "moddif", "general", "fnn", "prodlap", "addlap", "proddif", "adddif")


class FMKernel:
    """An FM (or comparison) kernel on a mixed space, chosen by name.

    Parameters
    ----------
    name : one of :data:`KERNELS`
    spectra : eigensystems of the discrete variables' graphs, in row order
    n_continuous : number of continuous inputs
    n_terms : number of terms ``N`` of the ``general`` family
    """

    def __init__(self, name: str, spectra: Sequence[GraphSpectrum], n_continuous: int, n_terms: int = 3,
                 dtype: torch.dtype = torch.float64):
        name = name.lower()
        if name not in KERNELS:
            raise ValueError(f"unknown kernel {name!r}; choose one of {KERNELS}")
        self.name, self.dtype = name, dtype
        self.P, self.Dc = len(spectra), int(n_continuous)
        self.n_terms = int(n_terms)
        self.lam = [torch.tensor(s.eigenvalues, dtype=dtype) for s in spectra]
        self.U = [torch.tensor(s.eigenvectors, dtype=dtype) for s in spectra]
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
                    groups.append((float(lam[start:i].mean()), torch.tensor(Ug @ Ug.T, dtype=dtype)))
                    start = i
            self.eigenspaces.append(groups)
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

    # -- parameters ---------------------------------------------------------------
    def default_params(self) -> torch.Tensor:
        return torch.zeros(self.size, dtype=self.dtype)

    def random_params(self, rng: np.random.Generator) -> torch.Tensor:
        """A random starting point for ML-II restarts (log-scales drawn from N(0, 1))."""
        return torch.tensor(rng.normal(0.0, 1.0, self.size), dtype=self.dtype)

    def unpack(self, params: torch.Tensor) -> dict[str, torch.Tensor]:
        out, k = {}, 0
        for name, size in self.layout:
            out[name] = params[k:k + size]
            k += size
        return out

    def log_prior(self, params: torch.Tensor) -> torch.Tensor:
        """Weak priors: ``N(0, 3^2)`` on every unconstrained coordinate (keeps ML-II away from degenerate fits)."""
        return -0.5 * (params / 3.0).square().sum()

    # -- kernel -------------------------------------------------------------------
    def __call__(self, params: torch.Tensor, V1: torch.Tensor, C1: torch.Tensor,
                 V2: torch.Tensor | None = None, C2: torch.Tensor | None = None) -> torch.Tensor:
        """Gram matrix ``(n1, n2)`` between (discrete index rows, unit continuous rows)."""
        V2 = V1 if V2 is None else V2
        C2 = C1 if C2 is None else C2
        p = self.unpack(params)
        if self.Dc:
            theta = torch.exp(p["log_theta"])
            # explicit differences (not the |a|^2 + |b|^2 - 2ab expansion): r = 0 must be exactly 0,
            # since the general family raises r^2 to small powers
            r2 = ((C1[:, None, :] - C2[None, :, :]) / theta).square().sum(-1)
        else:
            r2 = torch.zeros(V1.shape[0], V2.shape[0], dtype=self.dtype)
        if self.P == 0:
            return torch.exp(-0.5 * r2)
        if self.name in ("prodlap", "proddif", "addlap", "adddif"):
            g = self._graph_kernel(p, V1, V2)
            rbf = torch.exp(-0.5 * r2)
            if self.name.startswith("prod"):
                return rbf * g
            w = torch.sigmoid(p["logit_mix"])
            return w * rbf + (1 - w) * g
        if self.name == "fnn":
            knn = self._nn_kernel(p, C1, C2)
        K = torch.ones(V1.shape[0], V2.shape[0], dtype=self.dtype)
        for q in range(self.P):
            beta = torch.exp(p["log_beta"][q])
            if self.name == "fnn":
                norm = (1.0 / (1.0 + beta * self.lam[q])).mean()
            else:
                alpha = torch.exp(p["log_alpha"][q])
                ar2 = alpha * r2
                norm = self._modulate(p, beta * self.lam[q], torch.zeros((), dtype=self.dtype)).mean()
            acc = torch.zeros_like(K)
            v1, v2 = V1[:, q], V2[:, q]
            for lam_j, P_j in self.eigenspaces[q]:
                if self.name == "fnn":
                    f = 1.0 / (2.0 + beta * lam_j - knn)
                else:
                    f = self._modulate(p, beta * lam_j, ar2)
                acc = acc + f * P_j[v1][:, v2]
            K = K * acc / norm
        return K

    def diag(self, params: torch.Tensor, V: torch.Tensor, C: torch.Tensor) -> torch.Tensor:
        """``k(x, x)`` for each row, without forming the Gram matrix (``r = 0``)."""
        p = self.unpack(params)
        m = V.shape[0]
        if self.P == 0:
            return torch.ones(m, dtype=self.dtype)
        if self.name in ("prodlap", "proddif", "addlap", "adddif"):
            g = torch.ones(m, dtype=self.dtype)
            for q in range(self.P):
                beta = torch.exp(p["log_beta"][q])
                lam = self.lam[q]
                gv = 1.0 / (1.0 + beta * lam) if self.name.endswith("lap") else torch.exp(-beta * lam)
                g = g * (self.U[q][V[:, q]].square() * (gv / gv.mean())).sum(-1)
            if self.name.startswith("prod"):
                return g
            w = torch.sigmoid(p["logit_mix"])
            return w + (1 - w) * g
        if self.name == "fnn":
            s = torch.exp(p["log_sigma"])
            x = torch.cat([torch.ones(m, 1, dtype=self.dtype), 2 * C - 1], 1)
            nx = 1 + 2 * (x * s * x).sum(1)
            knn = (2 / math.pi) * torch.asin((2 * (x * s * x).sum(1) / nx).clamp(-1.0, 1.0))
        out = torch.ones(m, dtype=self.dtype)
        zero = torch.zeros((), dtype=self.dtype)
        for q in range(self.P):
            lam, U = self.lam[q], self.U[q]
            beta = torch.exp(p["log_beta"][q])
            if self.name == "fnn":
                F = 1.0 / (2.0 + beta * lam - knn[:, None])
                norm = (1.0 / (1.0 + beta * lam)).mean()
            else:
                F = self._modulate(p, beta * lam, zero)
                norm = F.mean()
            out = out * (U[V[:, q]].square() * F).sum(-1) / norm
        return out

    def _modulate(self, p, bl: torch.Tensor, ar2: torch.Tensor) -> torch.Tensor:
        """``f`` elementwise (broadcasting) from ``beta * lambda`` and ``alpha * r^2``."""
        if self.name == "modlap":
            return 1.0 / (1.0 + bl + ar2)
        if self.name == "moddif":
            return torch.exp(-(1.0 + ar2) * bl)
        # general family, Prop. 1: sum_n w_n (1 + beta lambda + (alpha r^2)^(tau/2))^-n
        tau = 2.0 * torch.sigmoid(p["logit_tau"][0])
        a_tau = torch.where(ar2 > 0, ar2.clamp_min(1e-300) ** (tau / 2.0), torch.zeros_like(ar2))
        inv = 1.0 / (1.0 + bl + a_tau)
        w = torch.exp(p["log_w"])
        out, power = 0.0, inv
        for n in range(self.n_terms):
            out = out + w[n] * power
            power = power * inv
        return out

    def _graph_kernel(self, p, V1: torch.Tensor, V2: torch.Tensor) -> torch.Tensor:
        K = torch.ones(V1.shape[0], V2.shape[0], dtype=self.dtype)
        for q in range(self.P):
            beta = torch.exp(p["log_beta"][q])
            g = 1.0 / (1.0 + beta * self.lam[q]) if self.name.endswith("lap") else torch.exp(-beta * self.lam[q])
            table = (self.U[q] * (g / g.mean())) @ self.U[q].T
            K = K * table[V1[:, q]][:, V2[:, q]]
        return K

    def _nn_kernel(self, p, C1: torch.Tensor, C2: torch.Tensor) -> torch.Tensor:
        """Neural-network (arcsine) kernel on inputs mapped to ``[-1, 1]`` with a bias coordinate."""
        s = torch.exp(p["log_sigma"])
        x1 = torch.cat([torch.ones(C1.shape[0], 1, dtype=self.dtype), 2 * C1 - 1], 1)
        x2 = torch.cat([torch.ones(C2.shape[0], 1, dtype=self.dtype), 2 * C2 - 1], 1)
        cross = 2 * (x1 * s) @ x2.T
        n1 = 1 + 2 * (x1 * s * x1).sum(1)
        n2 = 1 + 2 * (x2 * s * x2).sum(1)
        return (2 / math.pi) * torch.asin((cross / torch.sqrt(n1[:, None] * n2[None, :])).clamp(-1.0, 1.0))
