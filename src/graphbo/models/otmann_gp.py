"""NASBOT's surrogate: a GP on architectures with the OTMANN kernel, by posterior sampling.

Kandasamy et al. (NeurIPS 2018), Sec. 4.1. The kernel is Eq. 4,

    k(G, G') = alpha exp(-sum_i beta_i d_i(G, G')^p) + alpha_bar exp(-sum_i beta_bar_i d_bar_i(G, G')^p_bar),

over the OTMANN distances ``d_i`` and their normalised versions ``d_bar_i`` for
``nu_str,i`` in {0.1, 0.2, 0.4, 0.8}, ``p = 1``, ``p_bar = 2``. The
distances between evaluated networks are computed once, when a network joins
the data (:class:`graphbo.nas.distance.otmann_batch.DistanceCache`, new rows only);
changing the hyper-parameters only re-exponentiates them (Sec. 4.1).

**Hyper-parameters** (11 in the paper, plus the constant mean here):
``alpha``, ``alpha_bar``, ``beta_i``, ``beta_bar_i`` (``i = 1..4``), the noise
variance ``eta^2`` and the constant prior mean ``mu``. As in the paper, they
get uniform priors and are sampled from their posterior under the GP marginal
likelihood; the sampler is graphbo's univariate slice sampler
(:func:`graphbo.models.slice_sampling.slice_sample`), one coordinate at a time,
in Gibbs sweeps (kernel coordinates in a fresh random order, then the noise,
then the mean). The priors are uniform on the log scale for the positive
parameters, on the ranges the authors' code uses (read for facts in
``kirthevasank/nasbot`` ``nn/nn_gp.py`` and Dragonfly's ``nn/nn_gp.py`` /
``gp/gp_core.py``), with ``Var(y)`` the variance of the observations:

=====================  ====================================
``alpha, alpha_bar``   ``[0.01, 100] x Var(y)``
``beta_i`` (``d``)     ``[1e-9, 1e-3]`` (``d`` is in mass units)
``beta_bar_i``         ``[0.1, 100]`` (``d_bar`` lies in [0, 1])
``eta^2``              ``[0.005, 0.2] x Var(y)``
``mu`` (uniform)       ``median(y) +- 3 w``, ``w = (range(y)/2 + std(y)) / 2``
=====================  ====================================

The first fit runs ``n_burn`` burn-in sweeps; every fit keeps ``n_samples``
consecutive sweeps, warm-started from the last sample of the previous fit (as
graphbo's COMBO does). Values are standardised internally (median, standard
deviation); samples are stored in the units of ``y``.

**Indefinite Gram matrices.** Eq. 4 is not known to be positive
semi-definite. Each Gram matrix the model uses (in the likelihood and for
prediction) is checked with a Cholesky factorisation of ``K + 1e-10 tr(K) I``;
when that fails, ``K`` is replaced by its projection on the PSD cone (negative
eigenvalues clipped to 0, :func:`graphbo.kernels.otmann.project_psd`), as the
authors' GP does (``project_first``). The noise variance is added after the
repair.

**Prediction**: posterior mean and variance of the latent function at a batch
of networks, for all posterior samples at once (``(S, k)`` arrays), by the GP
equations with the prior variance ``k(G, G) = alpha + alpha_bar`` of Eq. 4
(``d_i(G, G) = 0``). The variance is floored at ``1e-12 (alpha + alpha_bar)``.
The joint covariance has exactly these variances on its diagonal and is PSD.
When the training Gram matrix was repaired, the cross-covariances of the
unrepaired Eq. 4 no longer fit it, and ``k(X*, X*) - k*^T (K + eta^2 I)^{-1} k*``
can have negative eigenvalues and a negative diagonal (the variance, floored,
then differed from it); such a matrix is replaced by the PSD covariance with the
floored variances and the nearest-PSD correlations
(:func:`_covariance_with_variances`). A PSD one is kept as it is.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import torch
from scipy.linalg.lapack import dpotrf, dtrtrs

from .._validation import check_choice, check_float, check_floats, check_int, check_pair
from ..nas.distance.kernel import kernel_exponents, kernel_from_exponents, otmann_kernel, powered, project_psd
from ..nas.distance.otmann import DEFAULT_NU_STRS, OTMANN
from ..nas.distance.otmann_batch import BatchOTMANN, DistanceCache, exact_key
from ..nas.domain.architecture import Architecture
from .base import Posterior, Surrogate
from .slice_sampling import slice_sample

__all__ = ["OTMANNGP", "OTMANNHyperSample", "PSD_CHECK_TOL"]

_LOG_2PI = math.log(2 * math.pi)
#: relative diagonal shift of the Cholesky test for positive semi-definiteness
PSD_CHECK_TOL = 1e-10


@dataclass(kw_only=True)
class OTMANNHyperSample:
    """One posterior sample of the hyper-parameters, in the units of the observations."""

    mean: float
    log_alpha: float
    log_alpha_bar: float
    log_noise: float
    log_beta: np.ndarray  # (m,)
    log_beta_bar: np.ndarray  # (m,)

    def copy(self) -> "OTMANNHyperSample":
        return OTMANNHyperSample(mean=self.mean, log_alpha=self.log_alpha, log_alpha_bar=self.log_alpha_bar,
                                 log_noise=self.log_noise,
                                 log_beta=self.log_beta.copy(), log_beta_bar=self.log_beta_bar.copy())

    def to_dict(self) -> dict[str, Any]:
        return {"mean": float(self.mean), "log_alpha": float(self.log_alpha),
                "log_alpha_bar": float(self.log_alpha_bar), "log_noise": float(self.log_noise),
                "log_beta": [float(v) for v in self.log_beta],
                "log_beta_bar": [float(v) for v in self.log_beta_bar]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "OTMANNHyperSample":
        return cls(mean=float(d["mean"]), log_alpha=float(d["log_alpha"]), log_alpha_bar=float(d["log_alpha_bar"]),
                   log_noise=float(d["log_noise"]), log_beta=np.asarray(d["log_beta"], dtype=float),
                   log_beta_bar=np.asarray(d["log_beta_bar"], dtype=float))

    @property
    def alpha(self) -> float:
        return math.exp(self.log_alpha)

    @property
    def alpha_bar(self) -> float:
        return math.exp(self.log_alpha_bar)

    @property
    def noise(self) -> float:
        return math.exp(self.log_noise)

    @property
    def beta(self) -> np.ndarray:
        return np.exp(self.log_beta)

    @property
    def beta_bar(self) -> np.ndarray:
        return np.exp(self.log_beta_bar)


def _psd_repair(K: np.ndarray) -> np.ndarray:
    """``K`` itself if ``K + 1e-10 tr(K) I`` has a Cholesky factor (a cheap test), else
    :func:`~graphbo.kernels.otmann.project_psd` of ``K`` (negative eigenvalues clipped to 0)."""
    n = K.shape[0]
    if n == 0:
        return K
    C = K.copy()
    C.flat[::n + 1] += PSD_CHECK_TOL * max(1.0, float(np.trace(K)))
    _, info = dpotrf(C, lower=1, clean=0, overwrite_a=1)
    if info == 0:
        return K
    return np.array(project_psd(K), dtype=float)  # a new array even when project_psd keeps K


def _covariance_with_variances(cov: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
    """``cov`` (``(S, k, k)``) itself when it is PSD and its diagonal is not below ``var`` (``(S, k)``,
    > 0; the posterior variances, computed separately); otherwise a PSD covariance whose diagonal
    is exactly ``var``.

    The repair: the correlations ``cov_ij / sqrt(var_i var_j)`` (unit diagonal, clipped to
    [-1, 1]) are projected on the PSD cone (:func:`~graphbo.nas.distance.kernel.project_psd`,
    which keeps a PSD matrix as it is) and rescaled to a unit diagonal, then scaled back by
    the standard deviations. A covariance that disagrees with ``var`` by more than round-off
    while PSD is returned as it is, so that the disagreement stays visible.
    """
    sym = 0.5 * (cov + cov.transpose(-1, -2))
    diag = torch.diagonal(sym, dim1=-2, dim2=-1)
    if bool((diag >= var * (1 - 1e-9)).all()):
        lam = torch.linalg.eigvalsh(sym)
        if bool((lam[..., 0] >= -1e-10 * lam.abs().amax(dim=-1).clamp_min(1e-300)).all()):
            return cov
    d = var.sqrt()
    outer = d.unsqueeze(-1) * d.unsqueeze(-2)
    R = sym / outer
    eye = torch.eye(R.shape[-1], dtype=R.dtype, device=R.device).expand_as(R).bool()
    R = torch.where(eye, torch.ones_like(R), R.clamp(-1.0, 1.0))
    R = project_psd(R)
    s = torch.diagonal(R, dim1=-2, dim2=-1).clamp_min(0).sqrt()
    lost = s < 1e-8  # a row the projection emptied: uncorrelated with the rest (keeps R PSD)
    s = torch.where(lost, torch.ones_like(s), s)
    R = R / (s.unsqueeze(-1) * s.unsqueeze(-2))
    R = torch.where(lost.unsqueeze(-1) | lost.unsqueeze(-2), torch.zeros_like(R), R)
    R = torch.where(eye, torch.ones_like(R), 0.5 * (R + R.transpose(-1, -2)))
    return R * outer


class OTMANNGP(Surrogate):
    """GP regression on neural architectures with the Eq. 4 kernel and posterior sampling.

    Parameters
    ----------
    kind : {"cnn", "mlp"}
    nu_strs : sequence of float
        Structural weights of the OTMANN distances (paper: 0.1, 0.2, 0.4, 0.8).
    p, p_bar : float
        Powers of ``d`` and ``d_bar`` in Eq. 4 (paper: 1 and 2).
    otmann : OTMANN, optional
        The distance (default: the paper's label costs for ``kind``).
    n_burn : int, default 100
        Burn-in sweeps at the first fit.
    n_samples : int, default 10
        Posterior samples kept per fit (consecutive sweeps).
    alpha_bounds, noise_bounds : (float, float)
        Prior ranges of ``alpha`` / ``alpha_bar`` and of the noise variance, as
        multiples of ``Var(y)`` (defaults ``(0.01, 100)``, ``(0.005, 0.2)``).
    beta_bounds, beta_bar_bounds : (float, float)
        Prior ranges of ``beta_i`` and ``beta_bar_i`` (``(1e-9, 1e-3)``, ``(0.1, 100)``).

    Attributes
    ----------
    samples : list of OTMANNHyperSample
        The kept posterior samples (units of ``y``).
    timing : dict
        Seconds spent, cumulatively: ``"distances"`` (OTMANN), ``"sampling"``
        (slice sampling), ``"prediction"`` (kernel algebra of :meth:`predict`).
    clock : callable
        The clock of :attr:`timing` (default ``time.perf_counter``; ``time.process_time``
        for CPU seconds).
    """

    def __init__(self, kind: str, *, nu_strs: Sequence[float] = DEFAULT_NU_STRS, p: float = 1.0,
                 p_bar: float = 2.0, otmann: OTMANN | None = None, n_burn: int = 100, n_samples: int = 10,
                 alpha_bounds: tuple[float, float] = (0.01, 100.0),
                 noise_bounds: tuple[float, float] = (0.005, 0.2),
                 beta_bounds: tuple[float, float] = (1e-9, 1e-3),
                 beta_bar_bounds: tuple[float, float] = (0.1, 100.0)) -> None:
        kind = check_choice("kind", kind, ("cnn", "mlp"))
        nu_strs = check_floats("nu_strs", nu_strs, minimum=0.0)
        p = check_float("p", p, minimum=0.0, strict_minimum=True)
        p_bar = check_float("p_bar", p_bar, minimum=0.0, strict_minimum=True)
        if otmann is not None and not isinstance(otmann, OTMANN):
            raise TypeError(f"otmann must be None or a graphbo.nas.distance.otmann.OTMANN, got {type(otmann).__name__}")
        if otmann is not None and otmann.kind != kind:
            raise ValueError(f"otmann compares {otmann.kind} networks, but kind is {kind!r}")
        n_burn = check_int("n_burn", n_burn, minimum=0)
        n_samples = check_int("n_samples", n_samples, minimum=1)
        alpha_bounds, noise_bounds, beta_bounds, beta_bar_bounds = (
            check_pair(name, value, minimum=0.0, strict_minimum=True, increasing=True)
            for name, value in (("alpha_bounds", alpha_bounds), ("noise_bounds", noise_bounds),
                                ("beta_bounds", beta_bounds), ("beta_bar_bounds", beta_bar_bounds)))
        self.kind = kind
        self.otmann = otmann if otmann is not None else OTMANN(kind)
        self.nu_strs = nu_strs
        self.m = len(self.nu_strs)
        self.p, self.p_bar = p, p_bar
        self.n_burn, self.n_samples = n_burn, n_samples
        self.batch = BatchOTMANN(self.otmann, nu_strs=self.nu_strs)
        self.cache = DistanceCache(self.batch)
        m = self.m
        la, ln, lb, lbb = (np.log(alpha_bounds), np.log(noise_bounds), np.log(beta_bounds),
                           np.log(beta_bar_bounds))
        # coordinates: [log alpha, log alpha_bar, log beta (m), log beta_bar (m), log noise, mean]
        self._lo = np.concatenate([[la[0], la[0]], np.full(m, lb[0]), np.full(m, lbb[0]), [ln[0], -np.inf]])
        self._hi = np.concatenate([[la[1], la[1]], np.full(m, lb[1]), np.full(m, lbb[1]), [ln[1], np.inf]])
        self.state: OTMANNHyperSample | None = None
        self.samples: list[OTMANNHyperSample] = []
        self.timing = {"distances": 0.0, "sampling": 0.0, "prediction": 0.0}
        self.clock = time.perf_counter
        self._archs: list[Architecture] = []
        self._y = np.zeros(0)
        self._extra: list[Architecture] = []
        self._y_extra = np.zeros((0, 0))
        self._ready = False

    # -- data and distances ------------------------------------------------------------------
    @property
    def n_data(self) -> int:
        return len(self._archs)

    def _sync(self, archs: Sequence[Architecture]) -> None:
        """Make the distance cache hold exactly ``archs`` (appending new ones; a list that
        does not extend the cached one starts a new cache)."""
        cached = self.cache.keys
        keys = [exact_key(a) for a in archs]
        if keys[:len(cached)] != cached:
            self.cache = DistanceCache(self.batch)
            cached = self.cache.keys
        t0 = self.clock()
        self.cache.extend(list(archs)[len(cached):])
        self.timing["distances"] += self.clock() - t0

    def distances(self, archs: Sequence[Architecture]) -> tuple[np.ndarray, np.ndarray]:
        """``(D, D_bar)``, each ``(m, len(archs), n)``: the networks against the conditioning
        set (the data, then any networks added by :meth:`condition`)."""
        t0 = self.clock()
        D, Db = self.cache.rows(archs)
        if self._extra:
            De, Dbe = self.batch.cross(archs, self._extra)
            D = np.concatenate([D, De], axis=2)
            Db = np.concatenate([Db, Dbe], axis=2)
        self.timing["distances"] += self.clock() - t0
        return D, Db

    # -- standardisation ----------------------------------------------------------------------------
    @staticmethod
    def _scale(y: np.ndarray) -> tuple[float, float]:
        c = float(np.median(y))
        s = float(np.std(y)) if y.size > 1 else 0.0
        if not s > 1e-12 * max(1.0, abs(c)):
            s = 1.0
        return c, s

    def _mean_bounds(self, ys: np.ndarray) -> tuple[float, float]:
        """Uniform prior of the standardised mean: ``+- 3 w`` around the median (0)."""
        half_range = 0.5 * float(ys.max() - ys.min()) if ys.size else 1.0
        w = 0.5 * (half_range + 1.0)
        return -3.0 * w, 3.0 * w

    def _to_theta(self, st: OTMANNHyperSample, c: float, s: float) -> np.ndarray:
        ls2 = 2.0 * math.log(s)
        return np.concatenate([[st.log_alpha - ls2, st.log_alpha_bar - ls2], st.log_beta, st.log_beta_bar,
                               [st.log_noise - ls2, (st.mean - c) / s]])

    def _from_theta(self, th: np.ndarray, c: float, s: float) -> OTMANNHyperSample:
        m = self.m
        ls2 = 2.0 * math.log(s)
        return OTMANNHyperSample(mean=float(c + s * th[-1]), log_alpha=float(th[0] + ls2),
                                 log_alpha_bar=float(th[1] + ls2), log_noise=float(th[-2] + ls2),
                                 log_beta=th[2:2 + m].copy(), log_beta_bar=th[2 + m:2 + 2 * m].copy())

    # -- fitting ---------------------------------------------------------------------------------
    def fit(self, X: Sequence[Architecture], y: np.ndarray | Sequence[float], *, rng: np.random.Generator,
            n_sweeps: int | None = None) -> "OTMANNGP":
        """Sample the hyper-parameters' posterior given networks ``X`` and values ``y``
        (``n_burn`` extra sweeps at the first fit), then condition on the data."""
        archs = list(X)
        y = np.asarray(y, dtype=float).reshape(-1)
        if len(archs) != y.size or not archs:
            raise ValueError(f"fit: {len(archs)} networks and {y.size} values")
        if not np.all(np.isfinite(y)):
            raise ValueError("fit: the values must be finite")
        self._sync(archs)
        t0 = self.clock()
        c, s = self._scale(y)
        ys = (y - c) / s
        lo, hi = self._lo.copy(), self._hi.copy()
        lo[-1], hi[-1] = self._mean_bounds(ys)
        first = self.state is None
        if self.state is None:
            th = 0.5 * (lo + hi)
            th[-1] = 0.0
        else:
            th = np.clip(self._to_theta(self.state, c, s), lo, hi)
        sweeper = _Sweeper(self, self.cache.D, self.cache.D_bar, ys, lo, hi, rng)
        n = (self.n_burn if first else 0) + (self.n_samples if n_sweeps is None else int(n_sweeps))
        kept: list[np.ndarray] = []
        for k in range(n):
            th = sweeper.sweep(th)
            if k >= n - self.n_samples:
                kept.append(th.copy())
        self.timing["sampling"] += self.clock() - t0
        self.samples = [self._from_theta(t, c, s) for t in kept]
        self.state = self.samples[-1].copy()
        self._archs = archs
        self._y = y
        self._condition_on()
        return self

    def condition(self, X: Sequence[Architecture], y: np.ndarray | Sequence[float], *,
                  samples: Sequence[OTMANNHyperSample] | None = None) -> "OTMANNGP":
        """Condition on networks ``X`` with values ``y`` under the current posterior samples, without
        sampling, ready to predict; drops any fantasies. ``samples`` (restoring a saved state) replace
        the current ones first, copied, and the chain's state becomes a copy of the last."""
        archs = list(X)
        self._sync(archs)
        self._archs = archs
        self._y = np.asarray(y, dtype=float).reshape(-1)
        if samples is not None:
            self.samples = [s.copy() for s in samples]
            self.state = self.samples[-1].copy() if self.samples else None
        self._condition_on()
        return self

    def restore_samples(self, samples: Sequence[OTMANNHyperSample], state: OTMANNHyperSample | None) -> None:
        """Take posterior ``samples`` and the chain's ``state`` from a saved state (a resumed run); the model
        predicts again once conditioned on its data (:meth:`condition`, :meth:`fit`)."""
        self.samples = list(samples)
        self.state = state
        self._ready = False

    @property
    def is_conditioned(self) -> bool:
        """Whether the model is conditioned on its data under its current samples, ready to predict: not
        before the first :meth:`fit` or :meth:`condition`, nor after :meth:`restore_samples`."""
        return self._ready

    # -- conditioning and prediction ----------------------------------------------------------------
    def _kernel(self, D: np.ndarray, Db: np.ndarray, samples: Sequence[OTMANNHyperSample]) -> np.ndarray:
        """Eq. 4 (:func:`~graphbo.nas.distance.kernel.otmann_kernel`) for every sample:
        ``(S, n1, n2)`` (units of ``y``)."""
        return otmann_kernel(D, Db, alpha=np.array([s.alpha for s in samples]),
                             alpha_bar=np.array([s.alpha_bar for s in samples]),
                             beta=np.stack([s.beta for s in samples]), beta_bar=np.stack([s.beta_bar for s in samples]),
                             p=self.p, p_bar=self.p_bar)

    def _condition_on(self, extra: Sequence[Architecture] = (), y_extra: np.ndarray | None = None) -> None:
        """Condition on the data plus ``extra`` networks with values ``y_extra`` (``(S, p)``, one
        row per posterior sample: the kriging believer's fantasies), ready to predict."""
        if not self.samples:
            raise RuntimeError("condition called before fit (or without samples)")
        extra = list(extra)
        S = len(self.samples)
        D, Db = self.cache.D, self.cache.D_bar
        y = np.broadcast_to(self._y, (S, self._y.size))
        if extra:
            if y_extra is None:
                raise ValueError("condition: values of the extra networks are needed")
            y_extra = np.asarray(y_extra, dtype=float).reshape(S, len(extra))
            t0 = self.clock()
            Dx, Dbx = self.cache.rows(extra)
            De, Dbe = self.batch.pairwise(extra)
            self.timing["distances"] += self.clock() - t0
            n = D.shape[1]
            p = len(extra)
            D2 = np.zeros((self.m, n + p, n + p))
            Db2 = np.zeros((self.m, n + p, n + p))
            D2[:, :n, :n], Db2[:, :n, :n] = D, Db
            D2[:, n:, :n], Db2[:, n:, :n] = Dx, Dbx
            D2[:, :n, n:], Db2[:, :n, n:] = Dx.transpose(0, 2, 1), Dbx.transpose(0, 2, 1)
            D2[:, n:, n:], Db2[:, n:, n:] = De, Dbe
            D, Db = D2, Db2
            y = np.concatenate([y, y_extra], axis=1)
        self._extra = extra
        self._y_extra = y_extra if extra and y_extra is not None else np.zeros((S, 0))
        K = self._kernel(D, Db, self.samples)
        N = K.shape[1]
        L = np.empty_like(K)
        a = np.empty((S, N))
        for i, smp in enumerate(self.samples):
            C = _psd_repair(K[i])
            if C is K[i]:
                C = C.copy()
            C.flat[::N + 1] += smp.noise
            Li, info = dpotrf(C, lower=1, clean=1, overwrite_a=1)
            if info != 0:  # pragma: no cover - the noise keeps C positive definite
                C = _psd_repair(K[i]) + (smp.noise + 1e-8 * float(np.trace(K[i])) / N) * np.eye(N)
                Li = np.linalg.cholesky(C)
            L[i] = Li
            r = y[i] - smp.mean
            z, _ = dtrtrs(Li, r, lower=1)
            a[i], _ = dtrtrs(Li, z, lower=1, trans=1)
        self._L = torch.from_numpy(L)
        self._a = a
        self._prior_var = np.array([s.alpha + s.alpha_bar for s in self.samples])
        self._means = np.array([s.mean for s in self.samples])
        self._ready = True

    @property
    def train_targets(self) -> np.ndarray:
        return self._y

    def add_fantasies(self, X: Sequence[Architecture]) -> None:
        """Kriging believer (:meth:`Surrogate.add_fantasies`): each posterior sample is conditioned
        on its own posterior mean at the pending networks ``X``, after any earlier fantasies."""
        archs = list(X)
        if not archs:
            return
        fantasy = self.posterior(archs).mean.numpy()  # (S, p)
        self._condition_on(self._extra + archs, np.concatenate([self._y_extra, fantasy], axis=1))

    def posterior(self, X: Sequence[Architecture]) -> Posterior:
        """Posterior of the latent function (no noise) at networks ``X`` for every posterior
        sample, ``(S, k)`` in the units of ``y``; the joint covariance is formed when asked for."""
        mean, var = self._predict(list(X))
        archs = list(X)

        def covariance() -> torch.Tensor:
            S, k = mean.shape
            if k == 0:
                return torch.zeros(S, 0, 0, dtype=torch.float64)
            D, Db = self.distances(archs)
            Ks = torch.from_numpy(self._kernel(D, Db, self.samples))  # (S, k, N)
            Dxx, Dbxx = self.batch.pairwise(archs)
            prior = torch.from_numpy(self._kernel(Dxx, Dbxx, self.samples))  # (S, k, k)
            V = torch.linalg.solve_triangular(self._L, Ks.transpose(1, 2), upper=False)  # (S, N, k)
            return _covariance_with_variances(prior - V.transpose(1, 2) @ V, var_t)

        var_t = torch.from_numpy(var)
        return Posterior(torch.from_numpy(mean), var_t, covariance_fn=covariance)

    def _predict(self, archs: list[Architecture]) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and variance (of the latent function, no noise) at ``archs`` for
        every posterior sample: two ``(S, k)`` arrays in the units of ``y``."""
        if not self._ready:
            raise RuntimeError("posterior called before fit")
        S = len(self.samples)
        if not archs:
            return np.zeros((S, 0)), np.zeros((S, 0))
        D, Db = self.distances(archs)
        t0 = self.clock()
        Ks = self._kernel(D, Db, self.samples)  # (S, k, N)
        mean = np.einsum("skn,sn->sk", Ks, self._a) + self._means[:, None]
        V = torch.linalg.solve_triangular(self._L, torch.from_numpy(Ks).transpose(1, 2), upper=False)
        var = self._prior_var[:, None] - V.square().sum(1).numpy()
        np.maximum(var, 1e-12 * self._prior_var[:, None], out=var)
        self.timing["prediction"] += self.clock() - t0
        return mean, var

    def training_gram(self, repaired: bool = True) -> np.ndarray:
        """Eq. 4 Gram matrices of the data for every kept sample, ``(S, n, n)`` (units of ``y``);
        with ``repaired``, as used by the model (projected on the PSD cone where needed)."""
        K = self._kernel(self.cache.D, self.cache.D_bar, self.samples)
        if repaired:
            K = np.stack([_psd_repair(k) for k in K])
        return K


class _Sweeper:
    """Gibbs sweeps of univariate slice sampling over the standardised coordinates
    ``[log alpha, log alpha_bar, log beta (m), log beta_bar (m), log noise, mean]``.

    While a kernel coordinate is sampled, the other terms of the exponents are
    fixed, so each density evaluation costs one ``n x n`` exponential, two
    Cholesky factorisations (the PSD test and the covariance) and a solve. The
    noise and the mean leave ``K`` unchanged: one eigendecomposition of the
    (repaired) ``K`` per sweep makes each of their evaluations ``O(n)``.
    """

    def __init__(self, gp: OTMANNGP, D: np.ndarray, Db: np.ndarray, y: np.ndarray, lo: np.ndarray,
                 hi: np.ndarray, rng: np.random.Generator):
        self.m = gp.m
        self.Dp, self.Dbp = powered(D, gp.p), powered(Db, gp.p_bar)
        self.y = y
        self.n = y.size
        self.lo, self.hi, self.rng = lo, hi, rng
        self._diag = np.arange(self.n) * (self.n + 1)
        self._const = -0.5 * self.n * _LOG_2PI

    def _loglik(self, K: np.ndarray, noise: float, mean: float) -> float:
        C = _psd_repair(K)  # K is always a temporary here: modified in place
        C.flat[self._diag] += noise
        L, info = dpotrf(C, lower=1, clean=0, overwrite_a=1)
        if info != 0:  # pragma: no cover - noise > 0 keeps a repaired K positive definite
            return -math.inf
        z, _ = dtrtrs(L, self.y - mean, lower=1)
        return -0.5 * float(z @ z) - float(np.log(np.diagonal(L)).sum()) + self._const

    def loglik_given_gram(self, K: np.ndarray) -> Callable[[float, float], float]:
        """``(noise, mean) -> log N(y; mean 1, K + noise I)`` for a fixed PSD Gram matrix ``K``, from one
        eigendecomposition ``K = V diag(lam) V^T``: ``-1/2 sum_i r_i^2 / (lam_i + noise) - 1/2 sum_i
        log(lam_i + noise) - n/2 log(2 pi)`` with ``r = V^T (y - mean 1)``. The same value as
        :meth:`_loglik` at a fraction of the cost for the noise and mean updates, which leave ``K`` fixed."""
        lam, V = np.linalg.eigh(0.5 * (K + K.T))
        lam = np.maximum(lam, 0.0)
        vy = V.T @ self.y
        v1 = V.T @ np.ones(self.n)
        const = self._const

        def ll(noise_var: float, mu: float) -> float:
            d = lam + noise_var
            r = vy - mu * v1
            return -0.5 * float((r * r / d).sum()) - 0.5 * float(np.log(d).sum()) + const

        return ll

    def sweep(self, th: np.ndarray) -> np.ndarray:
        m = self.m
        th = th.copy()
        lo, hi = self.lo, self.hi
        # Eq. 4's exponents (the distances are already powered); the exponentials are kept for the
        # coordinate updates below, which change one term at a time
        S1, S2 = kernel_exponents(self.Dp, self.Dbp, beta=np.exp(th[2:2 + m]), beta_bar=np.exp(th[2 + m:2 + 2 * m]),
                                  p=1.0, p_bar=1.0)
        E1, E2 = np.exp(-S1), np.exp(-S2)
        noise, mean = math.exp(th[-2]), th[-1]
        state = {"E1": E1, "E2": E2, "S1": S1, "S2": S2}
        last = self._loglik(kernel_from_exponents(S1, S2, alpha=math.exp(th[0]), alpha_bar=math.exp(th[1])), noise,
                            mean)
        if not math.isfinite(last):  # pragma: no cover
            raise RuntimeError("the GP likelihood is not finite at the current hyper-parameters")

        logp: Callable[..., float]
        for j in self.rng.permutation(2 + 2 * m):
            j = int(j)
            a, ab = math.exp(th[0]), math.exp(th[1])
            if j == 0:
                def logp(x, E1=state["E1"], E2=state["E2"], ab=ab):
                    if not lo[0] <= x <= hi[0]:
                        return -math.inf
                    return self._loglik(math.exp(x) * E1 + ab * E2, noise, mean)
            elif j == 1:
                def logp(x, E1=state["E1"], E2=state["E2"], a=a):
                    if not lo[1] <= x <= hi[1]:
                        return -math.inf
                    return self._loglik(a * E1 + math.exp(x) * E2, noise, mean)
            elif j < 2 + m:
                i = j - 2
                rest = state["S1"] - math.exp(th[j]) * self.Dp[i]

                def logp(x, rest=rest, i=i, j=j, E2=state["E2"], a=a, ab=ab):
                    if not lo[j] <= x <= hi[j]:
                        return -math.inf
                    return self._loglik(a * np.exp(-(rest + math.exp(x) * self.Dp[i])) + ab * E2, noise, mean)
            else:
                i = j - 2 - m
                rest = state["S2"] - math.exp(th[j]) * self.Dbp[i]

                def logp(x, rest=rest, i=i, j=j, E1=state["E1"], a=a, ab=ab):
                    if not lo[j] <= x <= hi[j]:
                        return -math.inf
                    return self._loglik(a * E1 + ab * np.exp(-(rest + math.exp(x) * self.Dbp[i])), noise, mean)

            # the density at the current point is the last coordinate's accepted value
            new, last = slice_sample(logp, float(th[j]), rng=self.rng, logp_x0=last)
            th[j] = new
            if 2 <= j < 2 + m:
                i = j - 2
                state["S1"] = rest + math.exp(new) * self.Dp[i]
                state["E1"] = np.exp(-state["S1"])
            elif j >= 2 + m:
                i = j - 2 - m
                state["S2"] = rest + math.exp(new) * self.Dbp[i]
                state["E2"] = np.exp(-state["S2"])

        # noise and mean: K fixed, one eigendecomposition
        K = _psd_repair(kernel_from_exponents(state["S1"], state["S2"], alpha=math.exp(th[0]),
                                              alpha_bar=math.exp(th[1])))
        ll = self.loglik_given_gram(K)

        def logp_noise(x):
            if not lo[-2] <= x <= hi[-2]:
                return -math.inf
            return ll(math.exp(x), th[-1])

        th[-2], _ = slice_sample(logp_noise, float(th[-2]), rng=self.rng)

        def logp_mean(x):
            if not lo[-1] <= x <= hi[-1]:
                return -math.inf
            return ll(math.exp(th[-2]), x)

        th[-1], _ = slice_sample(logp_mean, float(th[-1]), rng=self.rng)
        return th
