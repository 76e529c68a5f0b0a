"""BOCS-SA: Bayesian optimisation of combinatorial structures (Baptista & Poloczek, ICML 2018).

The BOCS baseline of COMBO (Oh et al., NeurIPS 2019, Sec. 4; "BOCS-SDP /
BOCS-SA3" in its tables) for spaces of binary variables:

1. Surrogate (the BOCS paper's statistical model): a polynomial of order 2 in ``x in {0, 1}^d``,
   ``f(x) = a0 + sum_i a_i x_i + sum_{i<j} a_ij x_i x_j``, fitted by Bayesian
   linear regression with the horseshoe prior (Carvalho, Polson & Scott,
   2010) and sampled by the Gibbs sampler of Makalic & Schmidt ("A simple
   sampler for the horseshoe estimator", 2016), which introduces the
   auxiliary inverse-gamma variables ``nu_j`` and ``xi`` so that every
   conditional is a standard distribution.
2. Acquisition (the BOCS paper's acquisition function, SA variant): Thompson sampling: one posterior sample of
   the coefficients per iteration; minimise the sampled polynomial plus
   ``lam * ||x||_1`` by simulated annealing, several independent restarts.

As in the BOCS code (github.com/baptistar/BOCS, ``LinReg`` / ``bhs``), the
responses are centred and the intercept is their mean, the covariates are
not standardised, and coefficients of features that are zero on every
training point are set to 0.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from .._validation import check_float, check_int
from ..exceptions import SpaceExhaustedError
from ..spaces.space import Space
from ..spaces.variables import Binary
from .base import Configs, Optimizer

__all__ = ["BOCS", "HorseshoeGibbs", "quadratic_features"]


def quadratic_features(X: np.ndarray) -> np.ndarray:
    """Linear and pairwise features ``[x_1..x_d, x_i x_j (i<j)]`` of binary rows, shape ``(n, d + d(d-1)/2)``.

    The pairs are in lexicographic order ``(0,1), (0,2), ..., (d-2,d-1)``.
    """
    X = np.asarray(X, dtype=float)
    i, j = np.triu_indices(X.shape[1], k=1)
    return np.concatenate([X, X[:, i] * X[:, j]], axis=1)


class HorseshoeGibbs:
    """Gibbs sampler for linear regression with the horseshoe prior (Makalic & Schmidt, 2016).

    Model: ``y = X b + e``, ``e ~ N(0, sigma2 I)``, ``b_j ~ N(0, sigma2 tau2 lambda2_j)``,
    ``lambda_j, tau ~ C+(0, 1)`` written as ``lambda2_j | nu_j ~ IG(1/2, 1/nu_j)``,
    ``nu_j ~ IG(1/2, 1)``, ``tau2 | xi ~ IG(1/2, 1/xi)``, ``xi ~ IG(1/2, 1)``, and
    ``p(sigma2) ~ 1/sigma2``. One sweep draws ``b``, ``sigma2``, ``lambda2``, ``tau2``,
    ``nu``, ``xi`` from their full conditionals. ``b`` is drawn with the
    method of Rue (2001) when ``p <= n`` and of Bhattacharya, Chakraborty &
    Mallick (2016) when ``p > n`` (both exact).

    The state persists between calls of :meth:`run`, so a chain can be
    continued after data are added (warm start). The state has one entry per
    feature of the full model; a call may restrict the sweep to a subset of
    features (``active``), the others keeping their values.
    """

    def __init__(self, p: int, rng: np.random.Generator):
        self.p = p
        self.rng = rng
        self.reset()

    def reset(self) -> None:
        """Start values of BOCS's ``bhs``: ``sigma2 = tau2 = xi = 1``, ``nu = 1``, ``lambda2 ~ U(0, 1)``."""
        self.beta = np.zeros(self.p)
        self.sigma2 = 1.0
        self.lambda2 = self.rng.random(self.p)
        self.tau2 = 1.0
        self.nu = np.ones(self.p)
        self.xi = 1.0
        self.n_sweeps = 0

    def run(self, X: np.ndarray, y: np.ndarray, *, n_sweeps: int, active: np.ndarray | None = None) -> np.ndarray:
        """Run ``n_sweeps`` Gibbs sweeps on data ``(X, y)`` (``X`` has the active columns only); return ``beta``."""
        rng = self.rng
        n, p = X.shape
        act = np.arange(self.p) if active is None else np.asarray(active)
        b = self.beta[act].copy()
        lam2, nu = self.lambda2[act].copy(), self.nu[act].copy()
        sigma2, tau2, xi = self.sigma2, self.tau2, self.xi
        XtX = X.T @ X if p <= n else None
        Xty = X.T @ y
        tiny, huge = 1e-150, 1e150
        for _ in range(n_sweeps):
            # b | rest ~ N(A^-1 X'y / sigma2, A^-1),  A = X'X / sigma2 + diag(1 / d),  d = sigma2 tau2 lam2
            d = np.clip(sigma2 * tau2 * lam2, tiny, huge)
            if p <= n:
                assert XtX is not None  # computed for p <= n
                A = XtX / sigma2
                A[np.diag_indices(p)] += 1.0 / d
                L_inv = np.linalg.inv(np.linalg.cholesky(A))
                b = L_inv.T @ (L_inv @ (Xty / sigma2) + rng.standard_normal(p))
            else:
                sigma = math.sqrt(sigma2)
                Phi = X / sigma
                u = np.sqrt(d) * rng.standard_normal(p)
                v = Phi @ u + rng.standard_normal(n)
                DPt = Phi.T * d[:, None]
                M = Phi @ DPt
                M[np.diag_indices(n)] += 1.0
                b = u + DPt @ np.linalg.solve(M, y / sigma - v)
            e = y - X @ b
            bl = b * b / lam2
            sigma2 = 1.0 / rng.gamma((n + p) / 2.0, 1.0 / (e @ e / 2.0 + bl.sum() / tau2 / 2.0))
            lam2 = np.clip(1.0 / rng.exponential(1.0 / (1.0 / nu + b * b / (2.0 * tau2 * sigma2))), tiny, huge)
            tau2 = min(max(1.0 / rng.gamma((p + 1) / 2.0, 1.0 / (1.0 / xi + (b * b / lam2).sum() / (2.0 * sigma2))),
                           tiny), huge)
            nu = 1.0 / rng.exponential(1.0 / (1.0 + 1.0 / lam2))
            xi = 1.0 / rng.exponential(1.0 / (1.0 + 1.0 / tau2))
        self.beta[act], self.lambda2[act], self.nu[act] = b, lam2, nu
        self.sigma2, self.tau2, self.xi = sigma2, tau2, xi
        self.n_sweeps += n_sweeps
        return b

    @property
    def finite(self) -> bool:
        return bool(
            np.isfinite(self.beta).all() and np.isfinite(self.lambda2).all() and np.isfinite(self.nu).all()
            and math.isfinite(self.sigma2) and math.isfinite(self.tau2) and math.isfinite(self.xi)
        )


def anneal_binary_quadratic(
    c: float,
    b: np.ndarray,
    Q: np.ndarray,
    rng: np.random.Generator,
    n_restarts: int,
    n_steps: int,
    initial_temperature: float,
    cooling: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Simulated annealing of ``E(x) = c + b.x + x'Qx / 2`` over ``{0,1}^d`` (``Q`` symmetric, zero diagonal).

    All restarts run together. Each starts at a uniformly random ``x``;
    each step cools ``T <- cooling * T``, proposes flipping one uniformly
    chosen bit and accepts with the Metropolis rule, as BOCS's
    ``simulated_annealing``.

    Returns
    -------
    states : ndarray (n_restarts * (n_steps + 1), d) of int64
        The start points and every proposal made.
    energies : ndarray (n_restarts * (n_steps + 1),)
        Their values of ``E``.
    """
    d = b.size
    R = n_restarts
    x = (rng.random((R, d)) < 0.5).astype(float)
    h = b + x @ Q  # local fields: flipping bit i changes E by (1 - 2 x_i) h_i
    E = c + x @ b + 0.5 * np.einsum("ri,ij,rj->r", x, Q, x)
    states = np.empty((n_steps + 1, R, d), dtype=np.int8)
    energies = np.empty((n_steps + 1, R))
    states[0], energies[0] = x, E
    T = initial_temperature
    r_idx = np.arange(R)
    for t in range(1, n_steps + 1):
        T *= cooling
        i = rng.integers(d, size=R)
        s = 1.0 - 2.0 * x[r_idx, i]
        delta = s * h[r_idx, i]
        u = rng.random(R)
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            accept = (delta <= 0) | (u < np.exp(np.minimum(-delta / T, 0.0)))
        prop = x.copy()
        prop[r_idx, i] += s
        states[t], energies[t] = prop, E + delta
        a = np.flatnonzero(accept)
        if a.size:
            x[a] = prop[a]
            E[a] += delta[a]
            h[a] += s[a, None] * Q[i[a]]
    return states.reshape(-1, d).astype(np.int64), energies.reshape(-1)


class BOCS(Optimizer):
    """BOCS-SA with a second-order model (Baptista & Poloczek, 2018), for binary variables.

    Every suggestion continues a horseshoe Gibbs chain on all the data told
    so far, takes its last state as one posterior sample of the model
    coefficients (Thompson sampling), and minimises the sampled model
    ``a0 + a.x + sum_{i<j} a_ij x_i x_j + lam * ||x||_1`` by
    ``sa_restarts`` simulated-annealing runs of ``sa_steps`` steps. It
    returns the best configuration met by the annealing (start points and
    all proposals, by model value) that was not evaluated or asked yet;
    failing that, a uniformly random new configuration.

    Constants and their sources:

    * BOCS (``BOCSpy/BOCS.py``, ``LinReg.py``) runs a fresh chain of 1000
      Gibbs sweeps at every iteration. Here the chain is warm-started:
      ``n_burn`` (1000, BOCS's chain length) sweeps at the first fit, then
      ``n_gibbs`` (100) sweeps per suggestion from the previous state, which
      keeps a suggestion at ``n = 270, d = 28`` well under a second.
    * Simulated annealing as BOCS's ``simulated_annealing``: 5 restarts,
      initial temperature 1.0, cooling factor 0.8 per step, one uniformly
      chosen bit flip per step, random start. BOCS runs as many steps as its
      evaluation budget (a few hundred in its experiments and COMBO's); the
      default here is 300.

    Parameters
    ----------
    space : Space
        Every variable must be a :class:`~graphbo.Binary`.
    seed : int or None
        Seed of every random choice.
    n_initial : int, default 10
        Uniformly random configurations before the model takes over.
    initial_configs : list of dict, optional
        Configurations to ask first (they count towards ``n_initial``).
    lam : float, default 0.0
        Weight of the ``||x||_1`` penalty added to the sampled model
        (BOCS's ``lambda``; the evaluated objective is not changed).
    n_burn, n_gibbs : int, defaults 1000, 100
        Gibbs sweeps at the first fit and per later suggestion.
    sa_restarts, sa_steps : int, defaults 5, 300
        Simulated annealing restarts and steps per restart.
    sa_initial_temperature, sa_cooling : float, defaults 1.0, 0.8
        Annealing schedule of the acquisition optimiser.

    Raises
    ------
    ValueError
        If a variable of ``space`` is not Binary (the message names every such variable).
    """

    name = "bocs"

    def __init__(self, space: Space, *, seed: int | None = None, n_initial: int = 10,
                 initial_configs: Configs | None = None, lam: float = 0.0, n_burn: int = 1000, n_gibbs: int = 100,
                 sa_restarts: int = 5, sa_steps: int = 300, sa_initial_temperature: float = 1.0,
                 sa_cooling: float = 0.8):
        self.lam = check_float("lam", lam)
        self.n_burn = check_int("n_burn", n_burn, minimum=0)
        self.n_gibbs = check_int("n_gibbs", n_gibbs, minimum=0)
        if self.n_burn + self.n_gibbs < 1:
            raise ValueError(f"n_burn + n_gibbs must be >= 1, got {n_burn!r} + {n_gibbs!r}")
        self.sa_restarts = check_int("sa_restarts", sa_restarts, minimum=1)
        self.sa_steps = check_int("sa_steps", sa_steps, minimum=0)
        self.sa_initial_temperature = check_float("sa_initial_temperature", sa_initial_temperature, minimum=0,
                                                  strict_minimum=True)
        self.sa_cooling = check_float("sa_cooling", sa_cooling, minimum=0, strict_minimum=True, maximum=1)
        super().__init__(space, seed=seed, n_initial=n_initial, initial_configs=initial_configs)
        other = [f"{name!r} ({var!r})" for name, var in zip(space.names, space.variables)
                 if not isinstance(var, Binary)]
        if other:
            raise ValueError(f"{type(self).__name__} handles Binary variables only; not Binary: {', '.join(other)}")
        d = len(space)
        self.n_features = d + d * (d - 1) // 2
        self._sampler: HorseshoeGibbs | None = None  # created at the first fit, so the initial design is COMBO's
        #: the last Thompson sample ``[a0, a_1..a_d, a_ij (i<j)]``, or ``None`` before the first fit
        self.alpha: np.ndarray | None = None

    def _fit(self) -> np.ndarray:
        """One posterior sample ``[a0, linear, pairwise]`` given all told data."""
        F = quadratic_features(self.X)
        y = self.y
        a0 = float(y.mean())
        active = np.flatnonzero(np.any(F != 0, axis=0))
        coef = np.zeros(self.n_features)
        if active.size:
            sampler = self._sampler
            first = sampler is None
            if sampler is None:
                sampler = self._sampler = HorseshoeGibbs(self.n_features, self.rng)
            sweeps = self.n_burn + self.n_gibbs if first else self.n_gibbs
            for _ in range(3):
                with np.errstate(all="ignore"):
                    try:
                        b = sampler.run(F[:, active], y - a0, n_sweeps=sweeps, active=active)
                        ok = sampler.finite
                    except np.linalg.LinAlgError:
                        ok = False
                if ok:
                    break
                # numerical breakdown: restart the chain (BOCS re-runs its sampler likewise)
                sampler.reset()
                sweeps = self.n_burn + self.n_gibbs
            else:
                raise RuntimeError("BOCS: the horseshoe Gibbs sampler failed three times")
            coef[active] = b
        return np.concatenate([[a0], coef])

    def _suggest(self) -> np.ndarray:
        exclude = self._exclude
        if len(exclude) >= self.space.size:
            raise SpaceExhaustedError(f"all {self.space.size} configurations have been evaluated")
        if self.n_told == 0:
            return self._distinct_random_rows(1, exclude)[0]
        self.alpha = self._fit()
        d = len(self.space)
        lin = self.alpha[1 : d + 1] + self.lam
        Q = np.zeros((d, d))
        i, j = np.triu_indices(d, k=1)
        Q[i, j] = self.alpha[d + 1 :]
        Q[j, i] = self.alpha[d + 1 :]
        for row in self._ranked_candidates(float(self.alpha[0]), lin, Q):
            if row.tobytes() not in exclude:
                return row.copy()
        return self._distinct_random_rows(1, exclude)[0]

    def _ranked_candidates(self, c: float, b: np.ndarray, Q: np.ndarray) -> np.ndarray:
        """Int64 rows minimising the sampled model ``c + b.x + x'Qx/2``, best first: the annealing's states."""
        states, energies = anneal_binary_quadratic(c, b, Q, self.rng, self.sa_restarts, self.sa_steps,
                                                   self.sa_initial_temperature, self.sa_cooling)
        return states[np.argsort(energies, kind="stable")]

    def _method_state(self) -> dict[str, Any]:
        s = self._sampler
        if s is None:
            return {}
        return {"beta": s.beta.tolist(), "sigma2": s.sigma2, "lambda2": s.lambda2.tolist(), "tau2": s.tau2,
                "nu": s.nu.tolist(), "xi": s.xi, "n_sweeps": s.n_sweeps}

    def _load_method_state(self, state: Mapping[str, Any]) -> None:
        if not state:
            self._sampler = None
            return
        s = HorseshoeGibbs(self.n_features, self.rng)
        s.beta, s.lambda2, s.nu = (np.asarray(state[k], dtype=float) for k in ("beta", "lambda2", "nu"))
        s.sigma2, s.tau2, s.xi = float(state["sigma2"]), float(state["tau2"]), float(state["xi"])
        s.n_sweeps = int(state["n_sweeps"])
        self._sampler = s
