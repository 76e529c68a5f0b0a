"""GP on a mixed space with an FM kernel, fitted by type-II maximum likelihood (BO-FM Sec. 5).

``y`` is standardised (optionally after a log transform, Sec. 5.3); the
hyper-parameters (kernel parameters, log signal variance, log noise variance,
constant mean) maximise the log marginal likelihood (``prior="none"``, as the
paper's Sec. 5 states it) or the log marginal likelihood plus weak priors
(``prior="weak"``, the default; docs/bofm_benchmarks.md gives the reason and
the measured effect), by L-BFGS-B with autograd gradients from ``n_restarts``
starting points (the previous optimum and random draws), keeping the best.
With ``restart_every = k > 1`` the random restarts run only at the first fit and
at every ``k``-th fit after it; the fits between (*warm* fits) run L-BFGS-B from
the previous optimum alone, and fall back to the full restarts when that fails or
ends worse than the default hyper-parameters (a one-evaluation check).

A restart *fails* when its objective is non-finite or the penalty returned
for a non-PD covariance (:data:`PENALTY`): it is replaced by a fresh random
start (at most ``n_restarts`` replacements). If every restart fails, the fit
falls back to the previous hyper-parameters, else the default ones, else the
default ones with unit noise variance, and logs a warning on the ``graphbo``
logger; it never keeps a penalty state. The kernel's hyper-parameter-free
look-ups (:meth:`FMKernel.pairs`) are made once per fit. Pending points can be
hallucinated at their posterior mean (kriging believer,
:meth:`MixedGP.add_fantasies`).
"""

from __future__ import annotations

import logging
import math
from typing import Any, Callable, Protocol

import numpy as np
import scipy.optimize
import torch

from .._validation import check_bool, check_choice, check_device, check_int
from ..kernels.frequency_modulated import FMKernel
from ..spaces.space import Space
from .base import Posterior, Surrogate
from .gp import robust_cholesky
from .mixed_gp_screening import MixedGPScreening

__all__ = ["MixedGP", "MixedKernel", "PENALTY", "PRIORS"]

logger = logging.getLogger("graphbo.models.mixed_gp")

#: objective value L-BFGS-B sees where the covariance is not PD or the value/gradient is not finite
PENALTY = 1e10
#: ``prior`` choices of :class:`MixedGP`
PRIORS = ("weak", "none")


class MixedKernel(Protocol):
    """What :class:`MixedGP` needs of its kernel: :class:`~graphbo.kernels.FMKernel`, or any kernel with
    its interface (CoCaBO's): hyper-parameters in one unconstrained vector of ``size`` entries, and
    Gram matrices between (discrete index rows, unit continuous rows)."""

    dtype: torch.dtype
    size: int
    P: int  # number of discrete inputs
    Dc: int  # number of continuous inputs

    def __call__(self, params: torch.Tensor, V1: torch.Tensor, C1: torch.Tensor,
                 V2: torch.Tensor | None = None, C2: torch.Tensor | None = None) -> torch.Tensor: ...

    def diag(self, params: torch.Tensor, V: torch.Tensor, *, C: torch.Tensor) -> torch.Tensor: ...

    def default_params(self) -> torch.Tensor: ...

    def random_params(self, rng: np.random.Generator) -> torch.Tensor: ...

    def log_prior(self, params: torch.Tensor) -> torch.Tensor: ...


_KERNEL_ATTRIBUTES = ("dtype", "size", "P", "Dc", "diag", "default_params", "random_params", "log_prior")


class MixedGP(Surrogate):
    """Exact GP with constant mean on (discrete rows, unit continuous rows).

    Parameters
    ----------
    kernel : FMKernel (or a kernel with its interface, :class:`MixedKernel`)
        With one discrete input per discrete variable of ``space`` and one continuous input
        per continuous variable.
    space : Space (for the discrete/continuous column split)
    n_restarts : int, default 10
        ML-II starting points (``>= 1``).
    log_y : bool
        Fit on ``log(y - min(y) + 1e-3 * range)``, for objectives spanning orders of magnitude.
    maxiter : int
        L-BFGS-B iterations per restart (``>= 1``).
    prior : {"weak", "none"}, default "weak"
        ``"none"``: plain type-II maximum likelihood, as BO-FM Sec. 5 states it.
        ``"weak"``: add the weak priors of :meth:`log_prior` (maximum a posteriori).
    restart_every : int, default 1
        Random restarts at every ``restart_every``-th fit only (``1``: at every fit); the
        fits between start from the previous optimum alone (module docstring). How many
        warm fits ran since the last full one is ``warm_fits`` (an optimizer keeps it in
        its state, so a resumed run makes the same choice).
    device : str or torch.device, optional
        Where the model's tensors live (training rows and targets, hyper-parameters, Gram matrix and
        Cholesky factor); the kernel must be on it (``FMKernel(..., device=...)``). ``None``: the
        kernel's device (CPU for a kernel without one). Only the ML-II boundary with SciPy moves
        values: L-BFGS-B's parameter vector goes to the device and the objective's value and
        gradient come back (``.cpu()``); rows given as NumPy arrays or CPU tensors are moved in
        :meth:`split`, and :meth:`posterior` answers on the device.

    Notes
    -----
    After :meth:`fit`, ``fit_info`` says whether the fit was warm, how many restarts ran
    and failed, and which fallback (``None``, ``"previous"``, ``"default"``,
    ``"default-unit-noise"``) was used.
    """

    def __init__(self, kernel: MixedKernel, space: Space, *, n_restarts: int = 10, log_y: bool = False,
                 maxiter: int = 100, prior: str = "weak", restart_every: int = 1,
                 device: torch.device | str | None = None) -> None:
        missing = [a for a in _KERNEL_ATTRIBUTES if not hasattr(kernel, a)] + ([] if callable(kernel) else ["__call__"])
        if missing:
            raise TypeError(f"kernel must be a graphbo.FMKernel or a kernel with its interface (missing {missing}), "
                            f"got {type(kernel).__name__}")
        if not isinstance(space, Space):
            raise TypeError(f"space must be a graphbo.Space, got {type(space).__name__}")
        n_disc, n_cont = len(space.discrete_indices), len(space.continuous_indices)
        if (kernel.P, kernel.Dc) != (n_disc, n_cont):
            raise ValueError(f"kernel has {kernel.P} discrete and {kernel.Dc} continuous inputs, but space has "
                             f"{n_disc} discrete and {n_cont} continuous variables; build the kernel from this space")
        checked: torch.device | None = check_device("device", device)
        on = getattr(kernel, "device", None)
        kernel_device = torch.device("cpu") if on is None else torch.device(on)
        if checked is not None and not _same_device(checked, kernel_device):
            raise ValueError(f"device is {str(checked)!r} but the kernel's tensors are on {str(kernel_device)!r}; "
                             f"build the kernel with device={str(checked)!r}")
        #: the torch device of the model's tensors (the kernel's)
        self.device: torch.device = kernel_device if checked is None else checked
        self.kernel, self.space = kernel, space
        self.n_restarts = check_int("n_restarts", n_restarts, minimum=1)
        self.log_y = check_bool("log_y", log_y)
        self.maxiter = check_int("maxiter", maxiter, minimum=1)
        self.prior = check_choice("prior", prior, PRIORS)
        self.restart_every = check_int("restart_every", restart_every, minimum=1)
        #: warm fits (previous optimum only) since the last fit with random restarts
        self.warm_fits = 0
        self.fit_info: dict[str, Any] = {}
        self.params: torch.Tensor | None = None  # [kernel params, log_amp, log_noise, mean]
        self.dtype = kernel.dtype
        self._y_train = np.zeros(0)
        #: the discrete and continuous column indices as tensors (:meth:`split`)
        self._columns: tuple[torch.Tensor, torch.Tensor] | None = None
        #: :meth:`screening` of the current conditioning (reset by :meth:`_condition`)
        self._screening: MixedGPScreening | None = None

    # -- data transforms ------------------------------------------------------------
    def split(self, rows: np.ndarray | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Discrete index columns (long) and unit continuous columns of mixed rows ``(m, d)``;
        the continuous part keeps the autograd graph of a tensor input."""
        rows = self._as_rows(rows)
        disc, cont = self._column_tensors(rows.device)
        c = self.space.continuous_indices
        # the continuous part is always a copy (the caller's rows are never aliased)
        C = rows[:, int(c[0]):int(c[-1]) + 1].clone() if _consecutive(c) else rows.index_select(1, cont)
        return self._discrete_columns(rows).long(), C

    def _as_rows(self, rows: np.ndarray | torch.Tensor) -> torch.Tensor:
        if not isinstance(rows, torch.Tensor):
            rows = torch.as_tensor(np.asarray(rows, dtype=float), dtype=self.dtype, device=self.device)
        return rows.to(device=self.device, dtype=self.dtype).reshape(-1, len(self.space))

    def _column_tensors(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        if self._columns is None or self._columns[0].device != device:
            # index tensors made once: indexing by a NumPy array converts it on every call
            disc, cont = (torch.as_tensor(np.asarray(ix, dtype=np.int64), device=device)
                          for ix in (self.space.discrete_indices, self.space.continuous_indices))
            self._columns = (disc, cont)
        return self._columns

    def _discrete_columns(self, rows: torch.Tensor) -> torch.Tensor:
        """The discrete columns of ``rows`` (float; a view where they are consecutive, as in most spaces:
        a column gather of a 100,000-row pool is slow)."""
        d = self.space.discrete_indices
        if _consecutive(d):
            return rows[:, int(d[0]):int(d[-1]) + 1]
        return rows.index_select(1, self._column_tensors(rows.device)[0])

    def transform_y(self, y: np.ndarray) -> np.ndarray:
        """Standardised (after the log transform with ``log_y``) values; computed on ``y / max|y|``
        so that values near the float range (1e300) neither overflow nor collapse to a constant."""
        y = np.asarray(y, dtype=float)
        if not np.isfinite(y).all():
            raise ValueError("y must be finite (got inf or nan values)")
        peak = float(np.abs(y).max()) if y.size else 0.0
        self._scale = peak if peak > 0 else 1.0
        u = y / self._scale
        if self.log_y:
            span = max(float(u.max() - u.min()), 1e-12)
            self._ushift = float(u.min()) - 1e-3 * span
            self._shift = self._ushift * self._scale
            u = np.log(u - self._ushift)
        mu, sd = float(u.mean()), float(u.std()) if u.size > 1 else 0.0
        self._umu, self._usd = mu, (sd if sd > 1e-300 else 1.0)
        # the same standardisation on the raw scale (for reports; not used for computing)
        self._mu, self._sd = ((mu + math.log(self._scale), self._usd) if self.log_y
                               else (mu * self._scale, self._usd * self._scale))
        return (u - self._umu) / self._usd

    def transform_outcome(self, v: float) -> float:
        """A raw objective value on the model's standardised scale."""
        u = v / self._scale
        if self.log_y:
            u = math.log(max(u - self._ushift, 1e-300))
        return (u - self._umu) / self._usd

    # -- likelihood -------------------------------------------------------------------
    def _neg_log_posterior(self, theta: torch.Tensor, gram: Callable[[torch.Tensor], torch.Tensor], y) -> torch.Tensor:
        kp, log_amp, log_noise, mean = theta[:-3], theta[-3], theta[-2], theta[-1]
        K = gram(kp)
        n = y.shape[0]
        eye = torch.eye(n, dtype=self.dtype, device=self.device)
        Cov = torch.exp(log_amp) * K + (torch.exp(log_noise) + 1e-6) * eye
        L = robust_cholesky(Cov)
        r = (y - mean)[:, None]
        z = torch.linalg.solve_triangular(L, r, upper=False)
        nll = 0.5 * z.square().sum() + torch.log(torch.diagonal(L)).sum() + 0.5 * n * math.log(2 * math.pi)
        if self.prior == "none":
            return nll
        return nll - self.log_prior(theta)

    def log_prior(self, theta: torch.Tensor) -> torch.Tensor:
        """The weak priors of ``prior="weak"`` (not in the BO-FM paper, whose Sec. 5 fits by marginal
        likelihood alone): the kernel's :meth:`log_prior` (an FM kernel's: ``N(0, 3^2)`` on its
        unconstrained coordinates, or its dimension-scaled priors,
        :meth:`~graphbo.kernels.FMKernel.scaled_centre`), log signal variance ``N(0, 2^2)``, log noise
        variance ``N(-4, 3^2)`` and constant mean ``N(0, 1)`` on the standardised scale; up to an
        additive constant."""
        kp, log_amp, log_noise, mean = theta[:-3], theta[-3], theta[-2], theta[-1]
        return (self.kernel.log_prior(kp) - 0.5 * (log_amp / 2.0) ** 2 - 0.5 * ((log_noise + 4.0) / 3.0) ** 2
                - 0.5 * mean**2)

    @property
    def train_targets(self) -> np.ndarray:
        return self._y_train

    def fit(self, X: np.ndarray, y: np.ndarray, *, rng: np.random.Generator) -> "MixedGP":
        self._y_train = np.asarray(y, dtype=float)
        V, C = self.split(X)
        ys = torch.as_tensor(self.transform_y(y), dtype=self.dtype, device=self.device)
        fm = self.kernel
        if isinstance(fm, FMKernel):  # the hyper-parameter-free look-ups, once for all evaluations
            pairs = fm.pairs(V, C)

            def gram(kp: torch.Tensor) -> torch.Tensor:
                return fm.gram(kp, pairs)
        else:  # any kernel with FMKernel's call signature (e.g. CoCaBO's)

            def gram(kp: torch.Tensor) -> torch.Tensor:
                return self.kernel(kp, V, C)

        def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
            t = torch.tensor(x, dtype=self.dtype, device=self.device, requires_grad=True)
            try:
                val = self._neg_log_posterior(t, gram, ys)
                (g,) = torch.autograd.grad(val, t)
            except RuntimeError:  # non-PD covariance even with jitter (CholeskyError), or a failed solve
                return PENALTY, np.zeros_like(x)
            if not torch.isfinite(val) or not torch.isfinite(g).all():
                return PENALTY, np.zeros_like(x)
            return float(val.detach()), g.cpu().numpy()

        def value(x: np.ndarray) -> float:  # the objective alone, for the fallback chain
            with torch.no_grad():
                try:
                    t = torch.tensor(x, dtype=self.dtype, device=self.device)
                    val = float(self._neg_log_posterior(t, gram, ys))
                except RuntimeError:
                    return math.inf
            return val if math.isfinite(val) and val < PENALTY else math.inf

        self.params = self._optimise(fun, value, rng)
        self._condition(V, C, ys)
        return self

    def _random_start(self, rng: np.random.Generator) -> np.ndarray:
        extra = np.array([0.0, -4.0, 0.0])
        kernel_start = self.kernel.random_params(rng).cpu().numpy()
        return np.concatenate([kernel_start, extra + rng.normal(0, [1.0, 1.0, 0.3])])

    def _optimise(self, fun: Callable[[np.ndarray], tuple[float, np.ndarray]], value: Callable[[np.ndarray], float],
                  rng: np.random.Generator) -> torch.Tensor:
        """Best L-BFGS-B result over the restarts; failed restarts (non-finite or penalty value) are
        replaced by fresh random starts, and if all fail the first candidate of the fallback chain
        (module docstring) whose objective ``value`` is finite is kept."""
        bounds = [(-8.0, 8.0)] * self.kernel.size + [(-6.0, 6.0), (-14.0, 2.0), (-3.0, 3.0)]
        lo, hi = np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])
        default = np.concatenate([self.kernel.default_params().cpu().numpy(), np.array([0.0, -4.0, 0.0])])
        previous = None
        if self.params is not None and self.params.numel() == default.size:
            previous = self.params.detach().cpu().numpy().astype(float)
        has_previous = previous is not None and np.isfinite(previous).all()
        best_x, best_f, n_failed, n_run, replacements = None, math.inf, 0, 0, 0
        warm = has_previous and self.warm_fits + 1 < self.restart_every
        if warm:  # the previous optimum alone, kept if it succeeds and beats the default point
            assert previous is not None
            n_run += 1
            x, f = self._lbfgsb(fun, np.clip(previous, lo, hi), bounds)
            if math.isfinite(f) and f < PENALTY and np.isfinite(x).all() and f <= value(np.clip(default, lo, hi)):
                self.warm_fits += 1
                self.fit_info = {"warm": True, "n_run": 1, "n_failed": 0, "fallback": None, "objective": f}
                return torch.tensor(x, dtype=self.dtype, device=self.device)
            if math.isfinite(f) and f < PENALTY and np.isfinite(x).all():
                best_x, best_f = x, f  # a candidate of the full restarts below
            else:
                n_failed += 1
        self.warm_fits = 0
        queue: list[np.ndarray] = [] if warm else [previous if has_previous and previous is not None else default]
        queue += [self._random_start(rng) for _ in range(self.n_restarts - 1)]
        while queue:
            x0 = np.clip(np.nan_to_num(queue.pop(0), nan=0.0), lo, hi)
            n_run += 1
            x, f = self._lbfgsb(fun, x0, bounds)
            if not (math.isfinite(f) and f < PENALTY and np.isfinite(x).all()):
                n_failed += 1
                if replacements < self.n_restarts:  # a fresh random point instead of the failed restart
                    replacements += 1
                    queue.append(self._random_start(rng))
                continue
            if f < best_f:
                best_x, best_f = x, f
        fallback: str | None = None
        if best_x is None:
            unit_noise = default.copy()
            unit_noise[-2] = 0.0
            for name, cand in (("previous", previous), ("default", default), ("default-unit-noise", unit_noise)):
                if cand is None or not np.isfinite(cand).all():
                    continue
                f = value(np.clip(cand, lo, hi))
                if math.isfinite(f):
                    best_x, best_f, fallback = np.clip(cand, lo, hi), f, name
                    break
            if best_x is None or fallback is None:
                best_x, fallback, best_f = unit_noise, "default-unit-noise", math.nan
            logger.warning("MixedGP: all %d ML-II restarts failed (non-finite or penalty objective); "
                           "falling back to the %s hyper-parameters (objective %s)",
                           n_run, fallback.replace("-", " "), f"{best_f:.6g}")
        self.fit_info = {"warm": False, "n_run": n_run, "n_failed": n_failed, "fallback": fallback,
                         "objective": best_f}
        return torch.tensor(best_x, dtype=self.dtype, device=self.device)

    def _lbfgsb(self, fun: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: np.ndarray,
                bounds: list[tuple[float, float]]) -> tuple[np.ndarray, float]:
        """One bounded L-BFGS-B run from ``x0``: its end point and objective (``inf`` if it raised)."""
        try:
            res = scipy.optimize.minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                                          options={"maxiter": self.maxiter})
            return np.asarray(res.x, dtype=float), float(res.fun)
        except (ValueError, RuntimeError, FloatingPointError):
            return x0, math.inf

    def condition(self, X: np.ndarray, y: np.ndarray) -> "MixedGP":
        """Condition on data ``(X, y)`` under the current hyper-parameters, without refitting them, ready to
        predict; drops any fantasies."""
        self._y_train = np.asarray(y, dtype=float)
        V, C = self.split(X)
        self._condition(V, C, torch.as_tensor(self.transform_y(y), dtype=self.dtype, device=self.device))
        return self

    def _condition(self, V, C, ys) -> None:
        theta = self.params
        assert theta is not None, "condition needs fitted hyper-parameters (fit first)"
        theta = theta.to(self.device)  # set from outside (a restored state) on another device
        kp, amp, noise, mean = theta[:-3], torch.exp(theta[-3]), torch.exp(theta[-2]) + 1e-6, theta[-1]
        n = ys.shape[0]
        K = amp * self.kernel(kp, V, C) + noise * torch.eye(n, dtype=self.dtype, device=self.device)
        self._L = robust_cholesky(K)
        self._alpha = torch.cholesky_solve((ys - mean)[:, None], self._L)
        self._V, self._C, self._ys, self._amp, self._mean, self._kp = V, C, ys, amp, mean, kp
        self._screening = None
        #: how many of the conditioning rows (the last ones) are fantasies (:meth:`add_fantasies`)
        self.n_fantasies = 0

    def add_fantasies(self, X: np.ndarray) -> None:
        """Kriging believer (:meth:`Surrogate.add_fantasies`) at the mixed rows ``X``: they join
        the conditioning set with their posterior mean (standardised scale) as value."""
        V, C = self.split(X)
        with torch.no_grad():
            fantasy, _ = self._predict(V, C)
            n_before = self.n_fantasies
            self._condition(torch.cat([self._V, V]), torch.cat([self._C, C]), torch.cat([self._ys, fantasy]))
        self.n_fantasies = n_before + int(V.shape[0])

    def posterior(self, X: np.ndarray | torch.Tensor) -> Posterior:
        """Posterior (standardised scale, one hyper-parameter sample: shape ``(1, m)``) of the latent
        function at mixed rows ``X``; differentiable in the continuous columns of a tensor ``X``."""
        V, C = self.split(X)
        mean, var = self._predict(V, C)

        def covariance() -> torch.Tensor:
            Kx = self._amp * self.kernel(self._kp, V, C, self._V, self._C)
            w = torch.linalg.solve_triangular(self._L, Kx.T, upper=False)
            return (self._amp * self.kernel(self._kp, V, C, V, C) - w.T @ w)[None]

        return Posterior(mean[None], var[None], covariance_fn=covariance)

    # -- the conditioned model (for its screening, :mod:`graphbo.models.mixed_gp_screening`); the properties
    # -- return the model's own tensors, not copies: read them, never modify them ----------------------------
    def _conditioned(self) -> None:
        if not hasattr(self, "_L"):
            raise RuntimeError("the model has not been conditioned (fit first)")

    @property
    def conditioned_inputs(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The rows the model is conditioned on, fantasies (:meth:`add_fantasies`) last, as :meth:`split` gives
        them: discrete index columns ``(n, P)`` (long) and unit continuous columns ``(n, Dc)``. Read-only."""
        self._conditioned()
        return self._V, self._C

    @property
    def alpha(self) -> torch.Tensor:
        """The weights ``(n, 1)`` of the posterior mean, ``(amp K + noise I)^{-1} (y - m)`` on the standardised
        scale (Rasmussen and Williams 2006, Eq. 2.25: the mean is ``m + amp k(x, X) alpha``). Read-only."""
        self._conditioned()
        return self._alpha

    @property
    def cholesky(self) -> torch.Tensor:
        """The lower Cholesky factor ``(n, n)`` of ``amp K + noise I`` (the training covariance with
        observation noise and 1e-6 jitter). Read-only."""
        self._conditioned()
        return self._L

    @property
    def signal_variance(self) -> torch.Tensor:
        """``amp``, the signal variance (a scalar tensor: ``exp`` of the log signal variance in :attr:`params`)
        the conditioning used; the prior covariance is ``amp k``. Read-only."""
        self._conditioned()
        return self._amp

    @property
    def constant_mean(self) -> torch.Tensor:
        """``m``, the constant prior mean (a scalar tensor, standardised scale) the conditioning used. Read-only."""
        self._conditioned()
        return self._mean

    @property
    def kernel_params(self) -> torch.Tensor:
        """The kernel's hyper-parameters (its unconstrained vector of ``kernel.size`` entries, the head of
        :attr:`params`) the conditioning used. Read-only."""
        self._conditioned()
        return self._kp

    def discrete_part(self, X: np.ndarray | torch.Tensor) -> torch.Tensor:
        """The discrete columns of mixed rows ``X`` ``(m, P)`` as float index values, on the model's device
        (a view of ``X`` where the columns are consecutive and ``X`` is already there)."""
        return self._discrete_columns(self._as_rows(X))

    def screening(self) -> MixedGPScreening | None:
        """The conditioned model's screening (:class:`~graphbo.models.mixed_gp_screening.MixedGPScreening`:
        float32 moments for ModLap and ModDif, a mean lower bound for ModLap, neighbour moments for the
        FM family), made once per conditioning; ``None`` for a kernel outside the Eq. 5 family or
        without discrete variables."""
        if not MixedGPScreening.supports(self.kernel):
            return None
        if self._screening is None:
            self._screening = MixedGPScreening(self)
        return self._screening

    def _predict(self, V: torch.Tensor, C: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Posterior mean and variance ``(m,)`` (standardised scale) of the latent function."""
        Kx = self._amp * self.kernel(self._kp, V, C, self._V, self._C)  # (m, n)
        return self.moments(Kx, self._amp * self.kernel.diag(self._kp, V, C=C))

    def moments(self, Kx: torch.Tensor, prior: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Posterior mean ``m + Kx alpha`` and variance ``prior - ||L^-1 Kx^T||^2`` (floored at 1e-12) of the
        latent function at rows with cross-covariance ``Kx = amp k(x, X)`` ``(m, n)`` to the training rows and
        prior variance ``prior`` ``(m,)``, standardised scale (Rasmussen and Williams 2006, Eq. 2.25-2.26)."""
        mean = (Kx @ self._alpha)[:, 0] + self._mean
        w = torch.linalg.solve_triangular(self._L, Kx.T, upper=False)
        return mean, (prior - w.square().sum(0)).clamp_min(1e-12)


def _consecutive(columns: np.ndarray) -> bool:
    """Whether ``columns`` (increasing) are one run of consecutive column indices (and not empty)."""
    return bool(columns.size) and int(columns[-1]) - int(columns[0]) + 1 == columns.size


def _same_device(a: torch.device, b: torch.device) -> bool:
    """Whether two devices are the same (``cuda`` and ``cuda:0`` are, when 0 is the current CUDA device)."""
    if a.type != b.type:
        return False
    if a.index is None or b.index is None:
        current = torch.cuda.current_device() if a.type == "cuda" else 0
        return (a.index if a.index is not None else current) == (b.index if b.index is not None else current)
    return a.index == b.index
