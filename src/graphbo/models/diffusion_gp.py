"""COMBO's surrogate: a GP with the ARD diffusion kernel, fitted by slice sampling.

Hyper-parameters (supplement Sec. 2): constant mean ``m``, signal variance
``sigma_f^2``, noise variance ``sigma_n^2`` and one ``beta_i`` per variable.
Their posterior under the priors of Sec. 2.2 is sampled with univariate
slice sampling (Sec. 2.3) in the order ``m``, ``sigma_f^2``, ``sigma_n^2``,
then the ``beta_i`` in a freshly shuffled order. The first fit runs
``n_burn`` burn-in sweeps; every fit then keeps ``n_samples`` consecutive
sweeps, warm-started from the last sample of the previous fit.

Predictions are made for every kept sample at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import torch

from scipy.linalg.lapack import dpotrf, dtrtrs

from .._validation import check_choice, check_float, check_int
from ..kernels.diffusion import _TINY, GraphDiffusionKernel
from ..spaces.variables import GraphSpectrum
from .base import Posterior, Surrogate
from .diffusion_gp_screening import DiffusionGPScreening
from .gp import robust_cholesky
from .priors import (
    LOG_BETA_UPPER,
    LOG_LOWER,
    LOG_NOISE_UPPER,
    log_horseshoe_upper,
    log_horseshoe_upper_of_log,
    log_prior_log_signal_variance,
    log_prior_mean,
    log_signal_variance_support,
)
from .slice_sampling import slice_sample

#: ``beta_prior`` choices of :class:`DiffusionGP`
BETA_PRIORS = ("horseshoe", "reference")

__all__ = ["DiffusionGP", "HyperSample"]

_LOG_2PI = math.log(2 * math.pi)
_ADAPT_EVERY = 10  # burn-in sweeps between width adaptations
_WIDTH_PER_JUMP = 6.0  # bracket width per mean absolute move of a coordinate (about the slice's width)
# relative to 1 (the log-scale coordinates); the mean's scales with std(y). Widths only grow from the reference's
# unit bracket: a narrower one, fitted to the mode the chain is in, stops the doubling from reaching other modes
# (Ising, 20 seeds: mean best 0.51 with widths free to shrink to 1e-3, 0.31 with unit widths; docs/measurements.md),
# while the savings come from widening (wMaxSAT28: 5.4 -> 2.6 likelihoods per update either way).
_WIDTH_RANGE = (1.0, 50.0)
#: values of log beta_j over which a warped variable's graph step integrates beta_j (DiffusionGP._sample_warps):
#: the sampler's support for log beta, [LOG_LOWER, log 100], in 25 steps of 0.7 (a factor of 2 in beta)
_WARP_GRID = np.linspace(LOG_LOWER, LOG_BETA_UPPER, 25)
#: smallest entry of ``K`` for which a sweep divides a factor out of ``K`` instead of summing the other factors' logs:
#: every entry is then a normal float (no underflow, no subnormal), so the quotient is ``K_rest`` to a few ulps
_SAFE_PRODUCT = 1e-250
#: a first fit on at least this many observations (a told history: an earlier study's trials, a worker joining
#: a study) burns in for at most :data:`LARGE_FIRST_FIT_BURN_IN` sweeps instead of ``n_burn``. At n = 400 on
#: wMaxSAT28 (10 seeds, 1,000 held-out configurations) 30 sweeps fitted models as good as 100 (Spearman 0.533
#: against 0.533, paired difference +0.000 +- 0.020; log predictive density -0.003 +- 0.017) in 9.2 s instead of
#: 23.0 s (benchmarks/combo_burn_in.py --alternative short; docs/measurements.md, "A first fit on a told history")
LARGE_FIRST_FIT = 200
LARGE_FIRST_FIT_BURN_IN = 30


def _logsumexp(a: np.ndarray) -> float:
    """``log sum exp a`` (``-inf`` when every entry is)."""
    top = float(np.max(a))
    return top if not math.isfinite(top) else top + math.log(float(np.exp(a - top).sum()))


@dataclass(kw_only=True)
class HyperSample:
    """One posterior sample of the GP hyper-parameters."""

    mean: float
    log_amp: float  # log sigma_f^2
    log_noise: float  # log sigma_n^2
    log_beta: np.ndarray  # (d,)

    def copy(self) -> "HyperSample":
        return HyperSample(mean=self.mean, log_amp=self.log_amp, log_noise=self.log_noise,
                           log_beta=self.log_beta.copy())


class DiffusionGP(Surrogate):
    """GP regression on a graph Cartesian product with posterior sampling.

    Parameters
    ----------
    kernel : GraphDiffusionKernel
    n_burn : int
        Burn-in sweeps at the first fit (paper: 100; ``>= 0``); a first fit on at least
        :data:`LARGE_FIRST_FIT` (200) observations, a told history, runs at most
        :data:`LARGE_FIRST_FIT_BURN_IN` (30) of them.
    n_samples : int
        Sweeps kept per fit (paper: 10, no thinning; ``>= 1``).
    tau_beta, tau_noise : float
        Horseshoe global shrinkage for ``beta_i`` (paper: 5) and for the noise
        variance (paper: sqrt(0.05)); both ``> 0``.
    beta_prior : {"horseshoe", "reference"}, default "horseshoe"
        The density the slice sampler uses for ``log beta_i``. ``"horseshoe"``: the Horseshoe
        proxy of Eq. (11) as the paper states it, a density on ``beta_i``, sampled on
        ``log beta_i`` with its Jacobian (:func:`~graphbo.models.priors.log_horseshoe_upper_of_log`).
        ``"reference"``: the proxy evaluated at ``beta_i = exp(log beta_i)`` with no Jacobian, as
        the authors' code does (and so the paper's tables): an improper density on ``log beta_i``
        that grows as ``beta_i`` falls, so with little data the samples sit near the lower bound
        (``beta_i ~ 1e-3`` or less), where every variable's factor is almost the identity and the
        GP predicts its mean away from the data. docs/combo_prior.md has the measurements.
    warps : dict of int to GraphSpectrum, optional
        A second graph for some variables (:mod:`graphbo.models.ordinal_warp`: a log-spaced path
        for an ordinal), keyed by the variable's position. Each such variable uses one of its two
        graphs, chosen by a Gibbs step with the other hyper-parameters fixed (uniform prior over
        the two; :meth:`_sample_warps`) at every fit, before the kept sweeps, so every sample of
        a fit shares the choice. :attr:`warp` holds it (``True``: the second graph).
    """

    def __init__(
        self,
        kernel: GraphDiffusionKernel,
        *,
        n_burn: int = 100,
        n_samples: int = 10,
        tau_beta: float = 5.0,
        tau_noise: float = math.sqrt(0.05),
        beta_prior: str = "horseshoe",
        warps: Mapping[int, GraphSpectrum] | None = None,
    ) -> None:
        if not isinstance(kernel, GraphDiffusionKernel):
            raise TypeError(f"kernel must be a graphbo.GraphDiffusionKernel, got {type(kernel).__name__}")
        self.kernel = kernel
        warps = {} if warps is None else dict(warps)
        bad = [i for i, sp in warps.items() if not (isinstance(i, (int, np.integer)) and 0 <= i < kernel.d
                                                   and len(sp.eigenvalues) == kernel.n_values[i])]
        if bad:
            raise ValueError(f"warps: positions {bad} are not variables of the kernel with as many values")
        #: variables with a second graph, and that graph's spectrum
        self.warp_positions = np.array(sorted(warps), dtype=np.int64)
        self._warp_spectra = [warps[int(i)] for i in self.warp_positions]
        self._base_spectra = kernel.spectra
        #: the current choice per warped variable (``True``: its second graph), shared by the samples of a fit
        self.warp = np.zeros(len(self.warp_positions), dtype=bool)
        self._kernels: dict[bytes, GraphDiffusionKernel] = {self.warp.tobytes(): kernel}
        self.n_burn = check_int("n_burn", n_burn, minimum=0)
        self.n_samples = check_int("n_samples", n_samples, minimum=1)
        self.tau_beta = check_float("tau_beta", tau_beta, minimum=0.0, strict_minimum=True)
        self.tau_noise = check_float("tau_noise", tau_noise, minimum=0.0, strict_minimum=True)
        self.beta_prior = check_choice("beta_prior", beta_prior, BETA_PRIORS)
        self.state: HyperSample | None = None
        self.samples: list[HyperSample] = []
        #: slice-sampling bracket widths of (mean, log sigma_f^2, log sigma_n^2, log beta_1..d), adapted between fits
        self.widths: np.ndarray | None = None
        self._t: dict[str, Any] = dict(dtype=kernel.dtype, device=kernel.device)
        self._y_train = np.zeros(0)
        self._screening: DiffusionGPScreening | None = None

    # -- fitting --------------------------------------------------------------
    def fit(self, X: np.ndarray, y: np.ndarray, *, rng: np.random.Generator) -> "DiffusionGP":
        """Draw posterior samples of the hyper-parameters given data ``(X, y)``."""
        X = np.asarray(X, dtype=np.int64)
        y = np.asarray(y, dtype=float)
        if X.shape[0] != y.shape[0] or X.shape[0] < 1:
            raise ValueError(f"fit: X has {X.shape[0]} rows and y {y.shape[0]} entries")
        d = self.kernel.d
        first = self.state is None
        if first:
            var_y = float(np.var(y)) if y.size > 1 else 1.0
            var_y = max(var_y, 1e-8)
            self.state = HyperSample(
                mean=float(np.mean(y)),
                log_amp=math.log(0.5 * var_y),  # as in the reference initialisation
                log_noise=float(np.clip(math.log(1e-3 * var_y), LOG_LOWER + 1.0, LOG_NOISE_UPPER - 1.0)),
                log_beta=np.zeros(d),
            )
        state = self.state
        assert state is not None  # set above on the first fit; the sweeper updates it in place
        sweeper = _Sweeper(self, X, y, rng, self._widths(d, y))
        self.samples = []
        n_burn = 0 if not first else (min(self.n_burn, LARGE_FIRST_FIT_BURN_IN) if X.shape[0] >= LARGE_FIRST_FIT
                                       else self.n_burn)
        for s in range(n_burn + self.n_samples):
            if s == n_burn and self.warp_positions.size:
                # the graphs' Gibbs step, once per fit, after the first fit's burn-in
                self._sample_warps(X, y, rng)
                if sweeper.kernel is not self.kernel:
                    sweeper = _Sweeper(self, X, y, rng, sweeper.widths)
            sweeper.sweep()
            if s >= n_burn:
                self.samples.append(state.copy())
            elif (s + 1) % _ADAPT_EVERY == 0:  # burn-in: new widths between blocks of sweeps
                sweeper.widths = sweeper.adapted_widths()
        # widths for the next fit, from this fit's moves (fixed within a fit: each update stays a valid slice step)
        self.widths = sweeper.adapted_widths()
        self.condition(X, y)
        return self

    def _kernel_for(self, warp: np.ndarray) -> GraphDiffusionKernel:
        """The kernel with each warped variable on the graph ``warp`` chooses (built once per choice)."""
        key = np.asarray(warp, dtype=bool).tobytes()
        if key not in self._kernels:
            spectra = list(self._base_spectra)
            for pos, use, alt in zip(self.warp_positions, warp, self._warp_spectra):
                if use:
                    spectra[int(pos)] = alt
            k = self.kernel
            self._kernels[key] = GraphDiffusionKernel(spectra, dtype=k.dtype, device=k.device,
                                                      unit_diagonal=k.unit_diagonal_argument, form=k.form)
        return self._kernels[key]

    def set_warp(self, warp: np.ndarray) -> None:
        """Use the graphs ``warp`` chooses (``True``: a warped variable's second graph); for a resumed state."""
        warp = np.asarray(warp, dtype=bool).reshape(-1)
        if warp.shape != self.warp.shape:
            raise ValueError(f"warp: expected {self.warp.size} choices, got {warp.size}")
        self.warp = warp.copy()
        self.kernel = self._kernel_for(self.warp)

    def _sample_warps(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> bool:
        """A block Gibbs step per warped variable ``j``, in a random order, on its graph ``g`` and ``beta_j``
        together, the other hyper-parameters fixed.

        ``g`` is drawn from ``p(g | rest) ~ int p(y | g, u, rest) p(u) du`` over ``u = log beta_j``
        (uniform prior over the two graphs; ``p(u)`` the density the slice sampler uses for ``log beta_j``,
        with the Jacobian under ``beta_prior="horseshoe"``), the integral a sum over the 25 values of
        :data:`_WARP_GRID`; then ``u`` from that grid's conditional weights under the drawn graph.
        Integrating ``beta_j`` out matters: a ``beta_j`` sampled under one graph rarely suits the other,
        so a step that kept it would seldom leave the first graph. The slice sampler's sweeps that
        follow move ``beta_j`` off the grid.

        **An approximation**: the step draws ``u`` on the grid whatever the current state, so it
        leaves the grid-discretised posterior invariant, not the continuous one the sweeps sample,
        and the grid's sum errs by about a nat at ``n = 150``. An independence Metropolis-Hastings
        step (proposal from the grid weights, uniform within a cell) would make it exact; not done.
        Returns whether the kernel changed.
        """
        changed = False
        try:
            changed = self._warp_steps(X, y, rng)
        finally:  # whatever happens, the kernel is the chosen graphs' (an exception mid-step left a trial one)
            self.kernel = self._kernel_for(self.warp)
        return changed

    def _warp_steps(self, X: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> bool:
        """The loop of :meth:`_sample_warps`."""
        st = self.state
        assert st is not None
        density = log_horseshoe_upper_of_log if self.beta_prior == "horseshoe" else log_horseshoe_upper
        step = float(_WARP_GRID[1] - _WARP_GRID[0])
        changed = False
        for j in rng.permutation(self.warp_positions.size):
            pos = int(self.warp_positions[j])
            grids = []
            for use in (False, True):
                warp = self.warp.copy()
                warp[j] = use
                self.kernel = self._kernel_for(warp)
                sweeper = _Sweeper(self, X, y, rng)
                log_rest = np.zeros((sweeper.n, sweeper.n))
                for i in range(self.kernel.d):
                    if i != pos:
                        log_rest += sweeper._log_factor(i, st.log_beta[i])
                lik = sweeper._beta_likelihood_of_log(pos, log_rest, st.mean, math.exp(st.log_amp),
                                                      math.exp(st.log_noise))
                grids.append(np.array([density(float(b), tau=self.tau_beta, upper=LOG_BETA_UPPER) + lik(float(b))
                                       for b in _WARP_GRID]))
            marginals = np.array([_logsumexp(g) + math.log(step) for g in grids])
            if not np.isfinite(marginals).any():  # neither graph gives a positive-definite Gram: keep the choice
                self.kernel = self._kernel_for(self.warp)
                continue
            top = marginals.max()
            p_second = float(np.exp(marginals[1] - top) / np.exp(marginals - top).sum())
            use_second = bool(rng.random() < p_second)
            g = grids[int(use_second)]
            weights = np.exp(g - g.max())
            st.log_beta[pos] = float(_WARP_GRID[int(rng.choice(_WARP_GRID.size, p=weights / weights.sum()))])
            changed |= use_second != bool(self.warp[j])
            self.warp[j] = use_second
            self.kernel = self._kernel_for(self.warp)
        return changed

    def _widths(self, d: int, y: np.ndarray) -> np.ndarray:
        """The bracket widths for this fit: the adapted ones, or 1 (the mean's: ``y``'s standard deviation).

        Adapted widths (from the last fit, or from a stored state) are clipped to ``_WIDTH_RANGE`` on the
        current data's scale, so a width learnt on other data (a constant start, a resumed study) cannot
        pin a coordinate; non-finite ones are reset.
        """
        scale = np.ones(3 + d)
        scale[0] = max(float(np.std(y)), 1e-8) if y.size > 1 else 1.0
        if self.widths is not None and self.widths.shape == (3 + d,):
            widths = np.where(np.isfinite(self.widths) & (self.widths > 0), self.widths, scale)
            return np.clip(widths, _WIDTH_RANGE[0] * scale, _WIDTH_RANGE[1] * scale)
        return scale

    def condition(self, X: np.ndarray, y: np.ndarray, *,
                  samples: Sequence[HyperSample] | None = None) -> "DiffusionGP":
        """Condition on data ``(X, y)`` under the current hyper-parameter samples, without sampling, ready to
        predict; drops any fantasies. ``samples`` replace the current ones first.

        ``y`` has shape ``(n,)``, or ``(S, n)`` for values that differ per sample
        (fantasies of pending points, :meth:`add_fantasies`). The real data of
        :attr:`train_targets` is the ``(n,)`` ``y`` of the last call that had one.
        """
        self.samples = list(self.samples if samples is None else samples)
        if not self.samples:
            raise RuntimeError("DiffusionGP.condition: no hyper-parameter samples; fit the model first (or give "
                               "samples)")
        X = np.asarray(X, dtype=np.int64)
        y = np.asarray(y, dtype=float)
        if y.ndim == 1:
            self._y_train = y
        self._Xc, self._yc = X, y
        self._prepare_prediction(
            torch.as_tensor(X, device=self.kernel.device),
            torch.as_tensor(y, **self._t),
        )
        return self

    @property
    def train_targets(self) -> np.ndarray:
        return self._y_train

    def add_fantasies(self, X: np.ndarray) -> None:
        """Kriging believer (:meth:`Surrogate.add_fantasies`): each posterior sample is
        conditioned on its own posterior mean at the pending rows ``X``."""
        P = np.asarray(X, dtype=np.int64).reshape(-1, self.kernel.d)
        if P.shape[0] == 0:
            return
        fantasy = self.posterior(P).mean.cpu().numpy()  # (S, p)
        S = fantasy.shape[0]
        y_all = np.concatenate([np.broadcast_to(self._yc, (S, self._yc.shape[-1])), fantasy], axis=1)
        y_train = self._y_train
        self.condition(np.concatenate([self._Xc, P]), y_all)
        self._y_train = y_train

    # -- prediction -----------------------------------------------------------
    def _prepare_prediction(self, Xt: torch.Tensor, yt: torch.Tensor) -> None:
        t = self._t
        S = len(self.samples)
        log_beta = torch.tensor(np.stack([s.log_beta for s in self.samples]), **t)
        self._mean = torch.tensor([s.mean for s in self.samples], **t)
        self._amp = torch.exp(torch.tensor([s.log_amp for s in self.samples], **t))
        noise = torch.exp(torch.tensor([s.log_noise for s in self.samples], **t))
        W = self.kernel.log_block_diagonal(log_beta)  # (S, D, D)
        O = self.kernel.one_hot(Xt)  # (n, D)
        n = O.shape[0]
        self._W = W
        self._B = (W @ O.T).permute(1, 0, 2).reshape(self.kernel.D, S * n)  # (D, S*n)
        self._log_diag = torch.diagonal(W, dim1=1, dim2=2).T.contiguous()  # (D, S)
        K = self.kernel.from_log(O @ self._B.reshape(self.kernel.D, S, n).permute(1, 0, 2))  # (S, n, n)
        C = self._amp[:, None, None] * K + noise[:, None, None] * torch.eye(n, **t)
        L = robust_cholesky(C)
        #: largest diagonal entry of the factored matrix (jitter included) and the noise, per sample: the variance bound
        self._c_max = L.square().sum(-1).amax(-1)  # (S,)
        self._noise = noise
        resid = (yt.expand(S, n) - self._mean[:, None])[..., None]
        self._alpha = torch.cholesky_solve(resid, L)  # (S, n, 1)
        self._Linv_T = torch.linalg.solve_triangular(L, torch.eye(n, **t).expand(S, n, n), upper=False).transpose(1, 2)
        self._n = n
        self._screening = None

    def _cross(self, O: torch.Tensor) -> torch.Tensor:
        """``amp * k(x, x_i)`` between one-hot candidates ``O`` ``(m, D)`` and the data, ``(S, m, n)``."""
        S, n, m = len(self.samples), self._n, O.shape[0]
        return self.kernel.from_log((O @ self._B).reshape(m, S, n).transpose(0, 1)) * self._amp[:, None, None]

    def posterior(self, X: np.ndarray | torch.Tensor, chunk: int | None = None) -> Posterior:
        """Posterior of the latent function at index rows ``X`` for every sample (``S x m``).

        The variance excludes observation noise. Candidates are processed in
        chunks (by default ``65536 // n``, between 128 and 1024 rows), which
        keeps the ``(S, chunk, n)`` blocks in cache. The joint covariance is
        formed only when asked for.
        """
        Xt, chunk = self.candidates(X, chunk)
        means, variances = [], []
        for start in range(0, Xt.shape[0], chunk):
            Oc = self.kernel.one_hot(Xt[start:start + chunk])
            Kx = self._cross(Oc)  # (S, m, n)
            mu = (Kx @ self._alpha)[..., 0] + self._mean[:, None]
            V = Kx @ self._Linv_T
            var = (self.prior_variance(Oc) - V.square().sum(-1)).clamp_min(self.variance_floor)
            means.append(mu)
            variances.append(var)
        if not means:
            empty = torch.zeros(len(self.samples), 0, **self._t)
            return Posterior(empty, empty.clone(),
                             covariance_fn=lambda: torch.zeros(len(self.samples), 0, 0, **self._t))

        def covariance() -> torch.Tensor:
            O = self.kernel.one_hot(Xt)
            prior = self.kernel.from_log(O @ self._W @ O.T) * self._amp[:, None, None]  # (S, m, m)
            V = self._cross(O) @ self._Linv_T
            return prior - V @ V.transpose(1, 2)

        return Posterior(torch.cat(means, dim=1), torch.cat(variances, dim=1), covariance_fn=covariance)

    def screening(self) -> DiffusionGPScreening | None:
        """The conditioned model's screening (:class:`~graphbo.models.diffusion_gp_screening.DiffusionGPScreening`:
        cheap bounds of the posterior mean and variance for pruning candidates), made once per conditioning;
        ``None`` with the kernel's ``"matern52"`` form, whose bounds would be the exact posterior's."""
        if not DiffusionGPScreening.supports(self.kernel):
            return None
        self._conditioned()
        if self._screening is None:
            self._screening = DiffusionGPScreening(self)
        return self._screening

    # -- the conditioned model (for its screening, :mod:`graphbo.models.diffusion_gp_screening`); the
    # -- properties return the model's own tensors, not copies: read them, never modify them -----------------
    def candidates(self, X: np.ndarray | torch.Tensor, chunk: int | None = None) -> tuple[torch.Tensor, int]:
        """Index rows ``X`` as a tensor on the kernel's device, and the chunk size for ``n`` data points
        (``chunk``, or by default ``65536 // n`` between 128 and 1024 rows)."""
        if not self.samples:
            raise RuntimeError("posterior called before fit")
        if chunk is None:
            chunk = int(np.clip(65536 // max(self._n, 1), 128, 1024))
        return torch.as_tensor(np.asarray(X, dtype=np.int64), device=self.kernel.device), chunk

    def prior_variance(self, O: torch.Tensor) -> torch.Tensor:
        """``amp * k(x, x)`` of one-hot rows ``O`` (:meth:`GraphDiffusionKernel.one_hot`) for every sample,
        ``(S, m)``."""
        return self.kernel.from_log(O @ self._log_diag).T * self._amp[:, None]

    @property
    def variance_floor(self) -> float:
        """The smallest posterior variance the model reports: ``1e-12`` of the smallest signal variance."""
        return 1e-12 * float(self._amp.min())

    def _conditioned(self) -> None:
        if not hasattr(self, "_B"):
            raise RuntimeError("the model has not been conditioned (fit first)")

    @property
    def n_conditioned(self) -> int:
        """``n``, the number of rows the model is conditioned on, fantasies (:meth:`add_fantasies`) included."""
        self._conditioned()
        return self._n

    @property
    def log_tables(self) -> torch.Tensor:
        """Each sample's block-diagonal log factor tables ``W`` ``(S, D, D)``
        (:meth:`GraphDiffusionKernel.log_block_diagonal`): ``log k(x, x') = o(x) W o(x')^T`` for one-hot rows
        ``o``. Read-only."""
        self._conditioned()
        return self._W

    @property
    def log_cross_factors(self) -> torch.Tensor:
        """``(D, S n)``: each sample's log tables times the one-hot conditioned rows, laid side by side, so that
        ``O @ log_cross_factors`` is ``log k(x, x_i)`` of one-hot rows ``O``, ``(m, S n)`` (sample by sample,
        ``n`` columns each). Read-only."""
        self._conditioned()
        return self._B

    @property
    def alpha(self) -> torch.Tensor:
        """The weights ``(S, n, 1)`` of the posterior mean, ``(amp K + noise I)^{-1} (y - m)`` per sample (the
        mean is ``m + amp k(x, X) alpha``). Read-only."""
        self._conditioned()
        return self._alpha

    @property
    def signal_variance(self) -> torch.Tensor:
        """``amp`` ``(S,)``, each sample's signal variance. Read-only."""
        self._conditioned()
        return self._amp

    @property
    def constant_mean(self) -> torch.Tensor:
        """``m`` ``(S,)``, each sample's constant prior mean. Read-only."""
        self._conditioned()
        return self._mean

    @property
    def noise_variance(self) -> torch.Tensor:
        """Each sample's noise variance ``(S,)``. Read-only."""
        self._conditioned()
        return self._noise

    @property
    def max_conditioned_diagonal(self) -> torch.Tensor:
        """``max_j C_jj`` ``(S,)`` of each sample's factored matrix ``C = amp K + noise I`` (its jitter
        included). Read-only."""
        self._conditioned()
        return self._c_max

    @property
    def beta_posterior_mean(self) -> np.ndarray:
        """Mean of ``beta_i`` over the kept samples (which variables the model finds smooth)."""
        return np.mean([np.exp(s.log_beta) for s in self.samples], axis=0)

    @property
    def relevance_posterior_mean(self) -> np.ndarray:
        """Posterior mean of each variable's relevance ``1 - rho_i`` (0: no effect, 1: all values differ).

        ``rho_i`` is the mean correlation between distinct values of variable ``i`` under its
        kernel factor (:meth:`GraphDiffusionKernel.mean_correlation`): unlike ``beta_i``, it grows
        with the variable's importance and reads the same for graphs of any size.
        """
        d = self.kernel.d
        return np.mean([[1.0 - self.kernel.mean_correlation(i, float(s.log_beta[i])) for i in range(d)]
                        for s in self.samples], axis=0)


def _scaled(K: np.ndarray, scale: float) -> Callable[[np.ndarray], float]:
    """The ``gram`` argument of :meth:`_Sweeper._cholesky` for ``C = scale K + noise I``."""
    def fill(out: np.ndarray) -> float:
        np.copyto(out, K)
        return scale
    return fill


class _Sweeper:
    """One Gibbs-style sweep of univariate slice sampling over all hyper-parameters.

    Runs in NumPy with LAPACK's ``dpotrf``: the matrices are ``n x n`` with
    ``n`` the number of evaluations, where per-call overhead dominates and
    NumPy is faster than torch. ``K`` of the training inputs is kept and
    updated one factor at a time: while ``beta_i`` is sampled, the product of
    the other factors ``K_rest`` is fixed, and each density evaluation only
    recomputes variable ``i``'s factor and one ``n x n`` product.

    Savings that leave the chain's law unchanged (each density is the same function):

    * a factor with two values, ``a`` on the diagonal and ``b`` off it (binary and
      categorical variables: complete graphs), is ``a E_i + b (1 - E_i)`` with ``E_i`` the
      0/1 matrix of equal values, so ``K_rest * k_i`` is ``a`` and ``b`` times ``K_rest``'s parts on
      equal and on differing values: two scalings of fixed matrices per evaluation, no gather;
    * the constant mean changes only the residual, so its density needs one Cholesky
      factor per sweep (supplement Eq. 7 is quadratic in ``m`` given ``C``);
    * each update starts from the log-likelihood of the current state, known from the
      update before it, instead of recomputing it;
    * ``K_rest`` is ``K`` divided by the factor's current values, not ``exp`` of a sum of logs, while every
      entry of ``K`` is a normal float (``_SAFE_PRODUCT``); once one is not, the sweep goes on in logs.
      A sweep starts from the last one's ``K`` when the betas are the same (each sweep of a fit rounds
      it a few ulps further: about ``1e-13`` relative after 10 sweeps);
    * the ``n x n`` work matrices are allocated once per sweeper and LAPACK factors the Gram matrix in
      one of them: a fresh ``n x n`` array per density costs more in page faults than the arithmetic.
    """

    def __init__(self, gp: DiffusionGP, X: np.ndarray, y: np.ndarray, rng: np.random.Generator,
                 widths: np.ndarray | None = None):
        self.gp, self.X, self.y, self.rng = gp, X, y, rng
        #: bracket width per coordinate (mean, log amp, log noise, log beta_i); fixed during a sweep
        self.widths = np.ones(3 + gp.kernel.d) if widths is None else np.asarray(widths, dtype=float).copy()
        self._moves: list[list[float]] = [[] for _ in range(3 + gp.kernel.d)]
        self.kernel = gp.kernel
        self.n = X.shape[0]
        self.y_mean, self.y_min, self.y_max = float(y.mean()), float(y.min()), float(y.max())
        self.y_var = float(y.var()) if y.size > 1 else 1.0
        self._diag = np.arange(self.n) * (self.n + 1)
        #: E_i (equal values of variable i, bool n x n) for two-valued factors
        self._equal = {i: X[:, i][:, None] == X[:, i][None, :]
                       for i in range(self.kernel.d) if self.kernel.is_two_valued(i)}
        self._lik: float | None = None  # log-likelihood of the current state, when known
        #: smallest entry of K for which the beta updates divide a factor out of K (``inf``: always sum logs)
        self.safe_product = _SAFE_PRODUCT
        #: (log beta, K) at the end of the last sweep that kept K; None after a sweep that summed logs
        self._carried: tuple[np.ndarray, np.ndarray] | None = None
        self._seen: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # per variable: values seen, and each row's
        n = self.n
        self._gram = np.empty((n, n))  # C, factored in place by _cholesky
        self._work = np.empty((n, n))
        self._same = np.empty((n, n))  # K_rest (or K) on the pairs of equal values of a two-valued variable
        self._differ = np.empty((n, n))  # ... and on the other pairs

    def _factor(self, i: int, log_beta_i: float) -> np.ndarray:
        """``k_i`` over the training pairs, ``(n, n)``, from the table of the values seen only."""
        if i not in self._seen:
            self._seen[i] = np.unique(self.X[:, i], return_inverse=True)
        values, inverse = self._seen[i]
        return self.kernel.factor_table(i, log_beta_i, values=values)[inverse][:, inverse]

    def _two_values(self, i: int, log_beta_i: float) -> tuple[float, float]:
        """Diagonal and off-diagonal entries of a two-valued factor (closed form), floored at the table floor."""
        a, b = self.kernel.two_values(i, log_beta_i)
        return max(a, _TINY), max(b, _TINY)

    def _log_factor(self, i: int, log_beta_i: float) -> np.ndarray:
        """``log k_i`` over the training pairs, ``(n, n)``."""
        if i in self._equal:
            a, b = self._two_values(i, log_beta_i)
            out = self._equal[i] * (math.log(a) - math.log(b))
            out += math.log(b)
            return out
        return np.log(np.maximum(self._factor(i, log_beta_i), _TINY))

    def _loglik(self, mean: float, amp: float, noise: float, K: np.ndarray) -> float:
        """Supplement Eq. (7) with C = amp * K + noise * I."""
        return self._loglik_of(mean, noise, _scaled(K, amp))

    def _cholesky(self, noise: float, gram: Callable[[np.ndarray], float]) -> tuple[np.ndarray, float] | None:
        """``(L, s)`` with ``L`` the lower Cholesky factor of ``G + (noise / s) I``, where ``C = s G + noise I``;
        one jitter retry.

        ``gram(out)`` writes ``G`` into the work matrix it is given and returns the scale ``s`` (a factor
        left out of ``G`` saves a pass over it); the factor is formed in that matrix, so it is valid
        until the next call. ``log det C = n log s + 2 sum log diag L``.
        """
        # G is symmetric, so its transpose is the same matrix in Fortran order: LAPACK factors it in place
        G = self._gram
        scale = gram(G)
        G.flat[self._diag] += noise / scale
        L, info = dpotrf(G.T, lower=1, clean=0, overwrite_a=1)
        if info != 0:
            scale = gram(G)
            G.flat[self._diag] += noise / scale + 1e-6 * float(np.mean(np.diagonal(G)))
            L, info = dpotrf(G.T, lower=1, clean=0, overwrite_a=1)
            if info != 0:
                return None
        return L, scale

    def _loglik_of(self, mean: float, noise: float, gram: Callable[[np.ndarray], float]) -> float:
        """Eq. (7) with ``C = s G + noise I``, where ``gram(out)`` writes ``G`` into ``out`` and returns ``s``."""
        factor = self._cholesky(noise, gram)
        if factor is None:
            return -math.inf
        L, scale = factor
        z, _ = dtrtrs(L, self.y - mean, lower=1)
        return (-0.5 * float(z @ z) / scale - float(np.log(np.diagonal(L)).sum()) - 0.5 * self.n * math.log(scale)
                - 0.5 * self.n * _LOG_2PI)

    def adapted_widths(self) -> np.ndarray:
        """Widths from the moves since the last adaptation: ``_WIDTH_PER_JUMP`` times the mean absolute move,
        averaged in log scale with the current width, within ``_WIDTH_RANGE`` (never below the unit bracket)."""
        out = self.widths.copy()
        scale = np.ones_like(out)
        scale[0] = max(float(np.std(self.y)), 1e-8) if self.y.size > 1 else 1.0
        for c, moves in enumerate(self._moves):
            if not moves:
                continue
            mean_move = float(np.mean(moves))
            target = _WIDTH_PER_JUMP * mean_move if mean_move > 0 else 0.5 * out[c]
            target = min(max(target, _WIDTH_RANGE[0] * scale[c]), _WIDTH_RANGE[1] * scale[c])
            out[c] = math.sqrt(out[c] * target)
            moves.clear()
        return out

    def _update(self, coord: int, logp_prior: Callable[[float], float], lik: Callable[[float], float],
                x0: float) -> float:
        """One slice-sampling update of coordinate ``coord`` with density ``prior + likelihood``, at its
        width; tracks the likelihood and records the move."""
        liks: dict[float, float] = {}

        def logp(x: float) -> float:
            lp = logp_prior(x)
            if lp == -math.inf:
                return lp
            liks[x] = lik(x)
            return lp + liks[x]

        start = None if self._lik is None else logp_prior(x0) + self._lik
        if start is not None:
            liks[x0] = self._lik  # type: ignore[assignment]
        x1, _ = slice_sample(logp, x0, rng=self.rng, width=float(self.widths[coord]),
                             logp_x0=start if start is not None and math.isfinite(start) else None)
        self._lik = liks.get(x1, self._lik)
        self._moves[coord].append(abs(x1 - x0))
        return x1

    def sweep(self) -> None:
        st = self.gp.state
        assert st is not None  # DiffusionGP.fit initialises it before sweeping
        gp = self.gp
        if self._carried is not None and np.array_equal(self._carried[0], st.log_beta):
            K = self._carried[1]  # the last sweep's K, for the same betas
        else:
            log_k = np.zeros((self.n, self.n))
            for i in range(self.kernel.d):
                log_k += self._log_factor(i, st.log_beta[i])
            K = self.kernel.from_log_numpy(log_k)
        self._carried = None

        # 1. constant mean, supplement Eq. (9); Eq. (7) is quadratic in m given one Cholesky factor
        if not (self.y_min <= st.mean <= self.y_max):
            st.mean = self.y_mean
            self._lik = None
        factor = self._cholesky(math.exp(st.log_noise), _scaled(K, math.exp(st.log_amp)))
        if factor is not None:
            L, scale = factor
            zy, _ = dtrtrs(L, self.y, lower=1)
            z1, _ = dtrtrs(L, np.ones(self.n), lower=1)
            const = -float(np.log(np.diagonal(L)).sum()) - 0.5 * self.n * (math.log(scale) + _LOG_2PI)

            def lik_mean(m: float) -> float:
                z = zy - m * z1
                return -0.5 * float(z @ z) / scale + const

            self._lik = lik_mean(st.mean)
            st.mean = self._update(0,
                                   lambda m: log_prior_mean(m, y_mean=self.y_mean, y_min=self.y_min, y_max=self.y_max),
                                   lik_mean, st.mean)
        else:  # the current state's C is not positive definite even with jitter: the plain density
            self._lik = None
            st.mean = self._update(0,
                                   lambda m: log_prior_mean(m, y_mean=self.y_mean, y_min=self.y_min, y_max=self.y_max),
                                   lambda m: self._loglik(m, math.exp(st.log_amp), math.exp(st.log_noise), K),
                                   st.mean)

        # 2. signal variance, supplement Eq. (10)
        k_min, k_max = float(K.min()), float(K.max())
        if log_prior_log_signal_variance(st.log_amp, y_var=self.y_var, k_min=k_min, k_max=k_max) == -math.inf:
            # The support moved past the chain (the betas changed K): restart at the data's scale,
            # sigma_f^2 * mean(diag K) = var(y), clipped into the support. The support's middle is
            # no restart point: with K_min near its 1e-100 floor it lies ~115 nats above the data.
            lo, hi = log_signal_variance_support(self.y_var, k_min=k_min, k_max=k_max)
            data_scale = math.log(max(self.y_var, 1e-12)) - math.log(float(np.mean(np.diagonal(K))))
            st.log_amp = min(max(data_scale, lo), hi)
            self._lik = None
        st.log_amp = self._update(1,
                                  lambda a: log_prior_log_signal_variance(a, y_var=self.y_var, k_min=k_min,
                                                                          k_max=k_max),
                                  lambda a: self._loglik(st.mean, math.exp(a), math.exp(st.log_noise), K),
                                  st.log_amp)
        amp = math.exp(st.log_amp)

        # 3. noise variance, Horseshoe proxy (Eq. 11) with tau = sqrt(0.05)
        st.log_noise = self._update(2, lambda v: log_horseshoe_upper(v, tau=gp.tau_noise, upper=LOG_NOISE_UPPER),
                                    lambda v: self._loglik(st.mean, amp, math.exp(v), K), st.log_noise)
        noise = math.exp(st.log_noise)

        # 4. each beta_i, Horseshoe proxy with tau = 5 (on beta_i, or as the reference code on log beta_i), in a
        # shuffled order. K is updated by dividing out and multiplying in one factor while its entries are normal
        # floats; once one is not (an underflow would lose K_rest), the other factors' logs are summed instead
        beta_density = log_horseshoe_upper_of_log if gp.beta_prior == "horseshoe" else log_horseshoe_upper
        prior_of_beta = lambda b: beta_density(b, tau=gp.tau_beta, upper=LOG_BETA_UPPER)  # noqa: E731
        # (the Matern form is not a product of factors: always in logs)
        in_logs = False
        for i in self.rng.permutation(self.kernel.d):
            coord, b0 = 3 + int(i), float(st.log_beta[i])
            if not in_logs and (self.kernel.form != "diffusion" or self._underflows(K)):
                in_logs = True
                logK = sum(self._log_factor(j, st.log_beta[j]) for j in range(self.kernel.d))
            if in_logs:
                log_rest = logK - self._log_factor(i, b0)
                st.log_beta[i] = self._update(coord, prior_of_beta,
                                              self._beta_likelihood_of_log(i, log_rest, st.mean, amp, noise), b0)
                logK = log_rest
                logK += self._log_factor(i, st.log_beta[i])
            elif i in self._equal:
                # K_rest on equal / differing pairs is K there over a or b: scale K's parts instead of forming it
                a0, c0 = self._two_values(i, b0)
                same = np.multiply(K, self._equal[i], out=self._same)
                differ = np.subtract(K, same, out=self._differ)
                st.log_beta[i] = self._update(coord, prior_of_beta,
                                              self._two_valued_likelihood(i, same, differ, a0, c0, st.mean, amp, noise),
                                              b0)
                a1, c1 = self._two_values(i, float(st.log_beta[i]))
                np.multiply(same, a1 / a0, out=K)
                K += np.multiply(differ, c1 / c0, out=self._work)
            else:
                K_rest = np.divide(K, np.maximum(self._factor(i, b0), _TINY), out=self._same)
                st.log_beta[i] = self._update(coord, prior_of_beta,
                                              self._beta_likelihood(i, K_rest, st.mean, amp, noise), b0)
                np.multiply(K_rest, np.maximum(self._factor(i, float(st.log_beta[i])), _TINY), out=K)
        if not in_logs:  # K is that of the betas now: the next sweep starts from it
            self._carried = (st.log_beta.copy(), K)

    def _underflows(self, K: np.ndarray) -> bool:
        """Whether an entry of ``K`` is below :attr:`safe_product` (the beta updates then sum logs)."""
        return float(K.min()) < self.safe_product

    def _beta_likelihood_of_log(self, i: int, log_rest: np.ndarray, mean: float, amp: float, noise: float
                                ) -> Callable[[float], float]:
        """Eq. (7) as a function of ``log beta_i``, the other factors' logs summed in ``log_rest``."""
        if self.kernel.form == "diffusion":
            return self._beta_likelihood(i, np.exp(log_rest), mean, amp, noise)

        def gram(b: float) -> Callable[[np.ndarray], float]:
            def fill(out: np.ndarray) -> float:
                out[...] = self.kernel.from_log_numpy(log_rest + self._log_factor(i, b))
                return amp
            return fill

        return lambda b: self._loglik_of(mean, noise, gram(b))

    def _beta_likelihood(self, i: int, K_rest: np.ndarray, mean: float, amp: float, noise: float
                         ) -> Callable[[float], float]:
        """Eq. (7) as a function of ``log beta_i``, the other factors fixed in ``K_rest``."""
        if i not in self._equal:
            def gram(b: float) -> Callable[[np.ndarray], float]:
                def fill(out: np.ndarray) -> float:
                    np.multiply(K_rest, np.maximum(self._factor(i, b), _TINY), out=out)
                    return amp
                return fill

            return lambda b: self._loglik_of(mean, noise, gram(b))
        if K_rest is self._same or K_rest is self._differ:
            K_rest = K_rest.copy()
        same = np.multiply(K_rest, self._equal[i], out=self._same)
        differ = np.subtract(K_rest, same, out=self._differ)
        return self._two_valued_likelihood(i, same, differ, 1.0, 1.0, mean, amp, noise)

    def _two_valued_likelihood(self, i: int, same: np.ndarray, differ: np.ndarray, a0: float, c0: float,
                               mean: float, amp: float, noise: float) -> Callable[[float], float]:
        """Eq. (7) as a function of ``log beta_i`` for a two-valued factor (``a`` on equal values, ``c`` off them):
        ``amp K_rest k_i = amp (a / a0) same + amp (c / c0) differ``, where ``same`` and ``differ`` are
        ``a0 K_rest`` and ``c0 K_rest`` on the pairs of equal and of differing values, 0 elsewhere."""
        def lik(b: float) -> float:
            a, c = self._two_values(i, b)

            def fill(out: np.ndarray) -> float:
                # amp K_rest k_i = s_same same + s_differ differ, written as the larger scale times
                # (one part + ratio * the other): two passes, and a ratio <= 1 cannot overflow
                s_same, s_differ = amp * (a / a0), amp * (c / c0)
                if s_same >= s_differ:
                    np.multiply(differ, s_differ / s_same, out=out)
                    out += same
                    return s_same
                np.multiply(same, s_same / s_differ, out=out)
                out += differ
                return s_differ

            return self._loglik_of(mean, noise, fill)

        return lik
