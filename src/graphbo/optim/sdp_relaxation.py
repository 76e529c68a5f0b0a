"""Semidefinite relaxation with randomised rounding for binary quadratic minimisation (BOCS-SDP).

The acquisition step of BOCS-SDP (Baptista & Poloczek, ICML 2018, the SDP variant of the BOCS
acquisition; compared as "BOCS-SDP" in COMBO, Oh et al. NeurIPS 2019, Tables 1-3) minimises a
sampled second-order model over ``x in {0, 1}^d``::

    E(x) = c + b.x + x'Qx / 2,        Q symmetric with zero diagonal.

1. **{-1, 1} form.** With ``x_i = (1 + s_i) / 2`` and a homogenising spin ``t`` (``s_i = z_i t``,
   ``z = (z_1..z_d, t) in {-1, 1}^(d+1)``)::

       E(x) = c0 + z'Cz,   C = [[Q/8, g/2], [g'/2, 0]],   g = b/2 + Q1/4,
       c0 = c + sum(b)/2 + 1'Q1/8.

   ``z`` and ``-z`` give the same ``x``.
2. **Relaxation** (the MAX-CUT SDP of Goemans & Williamson, J. ACM 1995): ``z'Cz = tr(C zz')``;
   replacing ``zz'`` by any ``Z`` with ``Z >= 0`` (PSD) and ``diag(Z) = 1`` gives
   ``p* = min tr(CZ) <= min_z z'Cz``, so ``c0 + p*`` is a lower bound of ``min E``.
3. **Certified bound.** For any ``mu`` with ``C - diag(mu) >= 0``, ``tr(CZ) >= sum(mu)`` on the
   feasible set (weak duality). From the solver's dual ``mu`` the bound
   ``c0 + sum(mu) + (d+1) min(0, lambda_min(C - diag(mu)))`` holds exactly whatever the solver's
   tolerance (shifting ``mu`` by ``lambda_min`` makes it dual feasible).
4. **Rounding** (Goemans & Williamson's random hyperplane): factor ``Z = VV'``, draw ``r ~ N(0, I)``, take
   ``z = sign(Vr)`` and ``x_i = (1 + z_i t) / 2``; the best of
   ``n_roundings`` (BOCS: 100) draws is kept.

The SDP is solved with cvxpy (``pip install "graphbo[bocs]"``; Clarabel, SCS as a fallback),
imported only when a relaxation is solved.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._lazy import require

__all__ = ["SDPRelaxation", "ising_form", "solve_sdp_relaxation", "round_relaxation",
           "minimize_binary_quadratic_sdp", "binary_quadratic_values"]


def load_cvxpy() -> Any:
    """The ``cvxpy`` module, or a one-line :class:`~graphbo._lazy.MissingExtraError` naming the extra that
    installs it."""
    return require("cvxpy", "BOCS-SDP", extra="bocs")


def _check_problem(b: np.ndarray, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    b = np.asarray(b, dtype=float)
    Q = np.asarray(Q, dtype=float)
    if b.ndim != 1 or b.size < 1:
        raise ValueError(f"b must be a non-empty vector, got shape {b.shape}")
    if Q.shape != (b.size, b.size):
        raise ValueError(f"Q must have shape {(b.size, b.size)} to match b, got {Q.shape}")
    if not (np.isfinite(b).all() and np.isfinite(Q).all()):
        raise ValueError("b and Q must be finite")
    if not np.allclose(Q, Q.T, rtol=0, atol=1e-12 * max(1.0, float(np.abs(Q).max()))):
        raise ValueError("Q must be symmetric")
    if np.any(np.diag(Q) != 0):
        raise ValueError("Q must have a zero diagonal (put x_i^2 = x_i terms into b)")
    return b, Q


def binary_quadratic_values(c: float, b: np.ndarray, Q: np.ndarray, *, X: np.ndarray) -> np.ndarray:
    """``E(x) = c + b.x + x'Qx / 2`` for each row of ``X`` (shape ``(n, d)``)."""
    X = np.asarray(X, dtype=float)
    return np.asarray(c + X @ b + 0.5 * np.einsum("ni,ij,nj->n", X, Q, X), dtype=float)


def ising_form(c: float, b: np.ndarray, Q: np.ndarray) -> tuple[np.ndarray, float]:
    """``(C, c0)`` with ``E(x) = c0 + z'Cz`` for ``x_i = (1 + z_i z_d) / 2`` (step 1 of the module text)."""
    b, Q = _check_problem(b, Q)
    d = b.size
    g = b / 2.0 + Q.sum(axis=1) / 4.0
    C = np.zeros((d + 1, d + 1))
    C[:d, :d] = Q / 8.0
    C[:d, d] = C[d, :d] = g / 2.0
    c0 = float(c) + float(b.sum()) / 2.0 + float(Q.sum()) / 8.0
    return C, c0


@dataclass(kw_only=True)
class SDPRelaxation:
    """A solved relaxation of ``min E(x)``.

    Attributes
    ----------
    Z : ndarray (d+1, d+1)
        The solver's optimal ``Z`` (``diag(Z) = 1``, PSD up to the solver's tolerance).
    factor : ndarray (d+1, d+1)
        ``V`` with ``VV' = Z`` after clipping ``Z``'s negative eigenvalues to 0.
    value : float
        ``c0 + tr(CZ)``, the relaxation's optimal value as the solver found it.
    lower_bound : float
        The certified bound of step 3: ``lower_bound <= min E(x)`` exactly.
    solver : str
        The cvxpy solver that solved it.
    """

    Z: np.ndarray
    factor: np.ndarray
    value: float
    lower_bound: float
    solver: str


def solve_sdp_relaxation(c: float, b: np.ndarray, Q: np.ndarray,
                         *, solvers: tuple[str, ...] = ("CLARABEL", "SCS")) -> SDPRelaxation:
    """Solve ``min tr(CZ)`` s.t. ``diag(Z) = 1``, ``Z`` PSD (step 2) for ``E = c + b.x + x'Qx/2``.

    The solvers are tried in order until one reports an optimal (or optimal-inaccurate) solution.

    Raises
    ------
    ImportError
        If cvxpy is not installed (the message names ``pip install "graphbo[bocs]"``).
    RuntimeError
        If no solver solved the problem.
    """
    C, c0 = ising_form(c, b, Q)
    cp = load_cvxpy()
    n = C.shape[0]
    Z = cp.Variable((n, n), PSD=True)
    diag = cp.diag(Z) == 1
    problem = cp.Problem(cp.Minimize(cp.trace(C @ Z)), [diag])
    failures = []
    for solver in solvers:
        try:
            problem.solve(solver=solver)
        except cp.error.SolverError as exc:
            failures.append(f"{solver}: {exc}")
            continue
        if problem.status in ("optimal", "optimal_inaccurate") and Z.value is not None \
                and diag.dual_value is not None:
            break
        failures.append(f"{solver}: status {problem.status}")
    else:
        raise RuntimeError("SDP relaxation not solved (" + "; ".join(failures) + ")")
    Zv = np.asarray(Z.value, dtype=float)
    Zv = (Zv + Zv.T) / 2.0
    w, U = np.linalg.eigh(Zv)
    factor = U * np.sqrt(np.clip(w, 0.0, None))
    mu = -np.asarray(diag.dual_value, dtype=float).reshape(n)  # cvxpy's sign: L = tr(CZ) - mu'(diag Z - 1)
    slack = float(np.linalg.eigvalsh(C - np.diag(mu)).min())
    lower = c0 + float(mu.sum()) + n * min(0.0, slack)
    return SDPRelaxation(Z=Zv, factor=factor, value=c0 + float(np.sum(C * Zv)), lower_bound=lower,
                         solver=str(solver))


def round_relaxation(relaxation: SDPRelaxation, rng: np.random.Generator, *, n_roundings: int) -> np.ndarray:
    """``n_roundings`` random-hyperplane roundings (step 4): int64 rows in ``{0, 1}^d``."""
    if n_roundings < 1:
        raise ValueError(f"n_roundings must be >= 1, got {n_roundings!r}")
    V = relaxation.factor
    z = np.sign(rng.standard_normal((n_roundings, V.shape[1])) @ V.T)
    z[z == 0] = 1.0
    spins = z[:, :-1] * z[:, -1:]
    return ((1 + spins) // 2).astype(np.int64)


def minimize_binary_quadratic_sdp(c: float, b: np.ndarray, Q: np.ndarray, *, rng: np.random.Generator,
                                  n_roundings: int = 100) -> tuple[np.ndarray, np.ndarray, SDPRelaxation]:
    """Minimise ``E(x) = c + b.x + x'Qx/2`` over ``{0,1}^d`` by SDP relaxation and rounding (steps 1-4).

    Returns
    -------
    states : ndarray (n_roundings, d) of int64
        Every rounded point, in the order drawn (repeats possible).
    energies : ndarray (n_roundings,)
        Their values of ``E``; the minimum is the rounded solution.
    relaxation : SDPRelaxation
        The solved relaxation (``relaxation.lower_bound <= min E``).
    """
    b, Q = _check_problem(b, Q)
    relaxation = solve_sdp_relaxation(c, b, Q)
    states = round_relaxation(relaxation, rng, n_roundings=n_roundings)
    return states, binary_quadratic_values(c, b, Q, X=states), relaxation
