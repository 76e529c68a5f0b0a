"""OTMANN: optimal-transport distance between neural architectures (Kandasamy et al. 2018, Sec. 3).

Given networks ``G1, G2`` with layer masses ``lm``, the distance is the minimum of
program (3)

    min_Z  <Z, C_lmm> + phi_nas(Z) + nu_str <Z, C_str>
    s.t.   sum_j Z_ij <= lm(i),  sum_i Z_ij <= lm(j),  Z >= 0,

where ``C_lmm(i, j) = M(l(i), l(j))`` is the label-mismatch cost, ``phi_nas`` charges
1 per unit of mass left unassigned on either side and ``C_str`` is the structural
cost: the mean absolute difference of the layers' shortest / longest /
random-walk path lengths from ``ip`` and to ``op``, averaged over layer groups
(CNN: all, conv, pool, fc; MLP: all, rectifier, sigmoid; App. A.3).

It is solved as the balanced optimal-transport program (6): supplies
``[lm(G1), tm(G2)]``, demands ``[lm(G2), tm(G1)]``, cost
``[[C_lmm + nu C_str, 1], [1^T, 0]]`` (the extra "null" row / column absorbs the
unassigned mass), with POT's network-simplex solver ``ot.emd``. The normalised
distance is ``d_bar = d / (tm(G1) + tm(G2))`` (in ``[0, 1]``).

Infinite label costs are replaced by a finite ``INFEASIBLE_COST`` (> 2): moving a
unit of mass between incompatible layers then costs more than leaving it
unassigned on both sides (cost 2), so the optimum is that of the program with
infinite costs (paper, App. A.1).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
from scipy.spatial.distance import cdist

from ..._lazy import MissingExtraError, require
from ..domain.architecture import (
    CNN_LABELS,
    MLP_LABELS,
    MLP_RECTIFIERS,
    MLP_SIGMOIDS,
    Architecture,
    InvalidArchitectureError,
)

__all__ = [
    "DEFAULT_NU_STRS",
    "INFEASIBLE_COST",
    "LabelMismatch",
    "cnn_label_mismatch",
    "mlp_label_mismatch",
    "OTMANN",
    "OTMANNResult",
    "otmann_distance",
    "otmann_distances",
]

DEFAULT_NU_STRS: tuple[float, ...] = (0.1, 0.2, 0.4, 0.8)  # Sec. 4.1
INFEASIBLE_COST = 1e6  # stands in for an infinite label-mismatch cost (any value > 2 works)
_NON_ASSIGNMENT = 1.0  # cost of leaving a unit of mass unassigned (Sec. 3)


@dataclass(frozen=True)
class LabelMismatch:
    """A label-mismatch cost matrix ``M`` (``inf`` = never match) over a label vocabulary."""

    labels: tuple[str, ...]
    matrix: np.ndarray
    _index: dict[str, int] = field(init=False, repr=False, compare=False)  # label -> row, set below

    def __post_init__(self) -> None:
        m = np.array(self.matrix, dtype=float)
        if m.shape != (len(self.labels), len(self.labels)):
            raise ValueError(f"matrix shape {m.shape} does not match {len(self.labels)} labels")
        if not np.allclose(m, m.T) or np.any(np.diag(m) != 0) or np.any(m < 0):
            raise ValueError("a label-mismatch matrix must be symmetric, non-negative, zero on the diagonal")
        m.setflags(write=False)
        object.__setattr__(self, "matrix", m)
        object.__setattr__(self, "_index", {l: i for i, l in enumerate(self.labels)})

    def cost(self, a: str, b: str) -> float:
        return float(self.matrix[self._index[a], self._index[b]])

    def indices(self, labels: Sequence[str]) -> np.ndarray:
        try:
            return np.fromiter((self._index[l] for l in labels), dtype=np.intp, count=len(labels))
        except KeyError as e:
            raise InvalidArchitectureError(f"label {e.args[0]!r} has no row in the label-mismatch matrix") from None

    def finite(self, big: float = INFEASIBLE_COST) -> np.ndarray:
        """The matrix with ``inf`` replaced by ``big``."""
        out = np.where(np.isfinite(self.matrix), self.matrix, big)
        out.setflags(write=False)
        return out

    def triangle_violations(self, tol: float = 1e-12) -> list[tuple[str, str, str]]:
        """Label triples with ``M(x, z) > M(x, y) + M(y, z)`` (Thm. 3 needs none)."""
        m = self.matrix
        bad = m[:, None, :] > m[:, :, None] + m[None, :, :] + tol  # [x, y, z]
        return [(self.labels[x], self.labels[y], self.labels[z]) for x, y, z in zip(*np.nonzero(bad))]


# Paper, Table 4 (conv3/5/7, max/avg-pool, fc, softmax; ip and op like fc).
_PAPER_CONV_COSTS = {(3, 5): 0.2, (3, 7): 0.3, (5, 7): 0.2}


def cnn_label_mismatch(*, conv_costs: dict[tuple[int, int], float] | None = None,
                       pool_cost: float = 0.25, res_conv_fraction: float = 0.9) -> LabelMismatch:
    """The CNN label-mismatch matrix of Table 4 with the res rule of App. A.3.

    * ``conv k`` vs ``conv j``: ``conv_costs[(k, j)]`` (Table 4: 0.2, 0.3, 0.2 for
      (3,5), (3,7), (5,7)); ``res k`` vs ``res j``: the same;
    * ``res k`` vs ``conv j``: ``0.9 M(conv k, conv j) + 0.1 x 1`` (a convex
      combination of the conv cost and the non-assignment cost);
    * ``max-pool`` vs ``avg-pool``: ``pool_cost`` (Table 4: 0.25);
    * everything else ``inf`` off the diagonal (``fc``, ``softmax``, ``ip``, ``op``
      match only themselves).

    The authors' code uses ``0.1*sqrt(2)*sqrt(|k - j|)`` for conv pairs (0.2, 0.283, 0.2)
    and 0.5 for the two pools; pass ``conv_costs``/``pool_cost`` to get those.
    """
    cc = dict(_PAPER_CONV_COSTS if conv_costs is None else conv_costs)
    cc.update({(b, a): v for (a, b), v in list(cc.items())})

    def cost(a: str, b: str) -> float:
        ka = a[:4] if a.startswith("conv") else a[:3]
        kb = b[:4] if b.startswith("conv") else b[:3]
        if ka in ("conv", "res") and kb in ("conv", "res"):
            sa, sb = int(a[len(ka):]), int(b[len(kb):])
            base = 0.0 if sa == sb else cc[(sa, sb)]
            return base if ka == kb else res_conv_fraction * base + (1 - res_conv_fraction) * _NON_ASSIGNMENT
        if a.endswith("pool") and b.endswith("pool"):
            return pool_cost
        return np.inf

    return _mismatch_of(CNN_LABELS, cost)


def mlp_label_mismatch(*, rectifier_cost: float = 0.1, sigmoid_cost: float = 0.1,
                       cross_cost: float = 0.25) -> LabelMismatch:
    """The MLP label-mismatch matrix of Table 5.

    Rectifiers (relu, crelu, leaky-relu, softplus, elu) cost 0.1 among themselves,
    sigmoids (logistic, tanh) 0.1 among themselves, a rectifier vs a sigmoid 0.25;
    ``linear``, ``softmax``, ``ip`` and ``op`` match only themselves.
    """
    def cost(a: str, b: str) -> float:
        if a in MLP_RECTIFIERS and b in MLP_RECTIFIERS:
            return rectifier_cost
        if a in MLP_SIGMOIDS and b in MLP_SIGMOIDS:
            return sigmoid_cost
        if (a in MLP_RECTIFIERS + MLP_SIGMOIDS) and (b in MLP_RECTIFIERS + MLP_SIGMOIDS):
            return cross_cost
        return np.inf

    return _mismatch_of(MLP_LABELS, cost)


def _mismatch_of(labels: Sequence[str], cost: Callable[[str, str], float]) -> LabelMismatch:
    """The mismatch matrix with ``cost(a, b)`` between distinct labels and 0 on the diagonal."""
    m = np.array([[0.0 if a == b else cost(a, b) for b in labels] for a in labels])
    return LabelMismatch(tuple(labels), m)


@dataclass(kw_only=True)
class OTMANNResult:
    """One OTMANN evaluation: ``d``, ``d_bar`` and, if asked, the transport plan ``Z``
    (``(n1 + 1) x (n2 + 1)``; the last row / column is the null layer)."""

    d: float
    d_bar: float
    plan: np.ndarray | None = None


_SOLVER = None
_MAX_ITER = 10_000_000
_WARM_START_MIN_SIZE = 1024  # warm-start the next nu_str's solve from the last duals above this n1*n2


def _get_solver():
    """The transport solver ``solve(a, b, C, return_plan, warm) -> (cost, plan, duals)``.

    POT's C++ network simplex called through ``emd_c`` (skipping ``ot.emd``'s input
    conversion, which costs more than the solve itself on 12-layer networks; when
    available, solves for the next ``nu_str`` start from the previous duals),
    ``ot.emd`` if that private entry point has moved, or SciPy's HiGHS LP without POT.
    """
    global _SOLVER
    if _SOLVER is not None:
        return _SOLVER
    try:
        require("ot", "OTMANN's fast transport solver")
    except MissingExtraError as exc:  # POT is a core dependency: only a broken install lacks it
        warnings.warn(f"{exc}; solving with SciPy's HiGHS instead (slower)", RuntimeWarning, stacklevel=2)
        _SOLVER = _linprog_transport
        return _SOLVER
    a = np.array([0.5, 0.5]); b = np.array([0.25, 0.75]); C = np.array([[0.0, 1.0], [1.0, 0.0]])
    expected = np.array([[0.25, 0.25], [0.0, 0.5]])
    try:
        from ot.lp.emd_wrap import check_result, emd_c

        out = emd_c(a, b, C, 1000, 1)
        if not np.allclose(out[0], expected) or out[4] != 1:  # pragma: no cover
            raise ImportError("unexpected emd_c behaviour")
        try:
            out = emd_c(a, b, C, 1000, 1, out[2], out[3])
            warm_ok = bool(np.allclose(out[0], expected) and out[4] == 1)
        except TypeError:  # pragma: no cover - POT < 0.9.6 has no warm start
            warm_ok = False

        def solve(a, b, C, return_plan, warm=None):
            if warm is not None and warm_ok and C.size >= _WARM_START_MIN_SIZE:
                G, cost, u, v, code = emd_c(a, b, C, _MAX_ITER, 1, warm[0], warm[1])
            else:
                G, cost, u, v, code = emd_c(a, b, C, _MAX_ITER, 1)
            if code != 1:  # pragma: no cover
                raise RuntimeError(f"optimal transport failed: {check_result(code)}")
            return float(cost), (G if return_plan else None), (u, v)
    except Exception:  # pragma: no cover - POT internals moved
        def solve(a, b, C, return_plan, warm=None):
            G = ot.emd(a, b, C, numItermax=_MAX_ITER)
            return float(np.sum(G * C)), (G if return_plan else None), None
    _SOLVER = solve
    return _SOLVER


def _linprog_transport(a, b, C, return_plan, warm=None):  # pragma: no cover - no POT
    from scipy.optimize import linprog

    n1, n2 = C.shape
    A_eq = np.zeros((n1 + n2, n1 * n2))
    for i in range(n1):
        A_eq[i, i * n2:(i + 1) * n2] = 1
    for j in range(n2):
        A_eq[n1 + j, j::n2] = 1
    res = linprog(C.ravel(), A_eq=A_eq, b_eq=np.concatenate([a, b]), bounds=(0, None), method="highs")
    if not res.success:
        raise RuntimeError(f"transport LP failed: {res.message}")
    return float(res.fun), (res.x.reshape(n1, n2) if return_plan else None), None


class OTMANN:
    """OTMANN distance computer for one network kind.

    Parameters
    ----------
    kind : ``"cnn"`` or ``"mlp"``.
    label_mismatch : the matrix ``M``; default Table 4 (CNN) / Table 5 (MLP).

    Per-architecture quantities (masses, path lengths, label indices) are cached
    on the :class:`Architecture` objects, so repeated comparisons of the same
    networks only build the pair's cost matrices and solve the transport problems.
    """

    def __init__(self, kind: str, label_mismatch: LabelMismatch | None = None):
        if kind not in ("cnn", "mlp"):
            raise ValueError(f"unknown kind {kind!r}; expected 'cnn' or 'mlp'")
        self.kind = kind
        self.label_mismatch = label_mismatch or (cnn_label_mismatch() if kind == "cnn" else mlp_label_mismatch())
        self._M = np.ascontiguousarray(self.label_mismatch.finite())
        self._key = ("otmann-labels", self.label_mismatch.labels)

    # -- per-architecture features ------------------------------------------------------------
    def features(self, arch: Architecture) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
        """``(label indices, masses, total mass, path-length features)`` of one network (cached)."""
        if arch.kind != self.kind:
            raise InvalidArchitectureError(f"this OTMANN compares {self.kind} networks, got a {arch.kind}")
        def compute() -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
            arch.validate()
            masses = arch.layer_masses()
            return (self.label_mismatch.indices(arch.labels), masses, float(masses.sum()),
                    arch.path_length_features())

        return arch.cached(self._key, compute)

    def cost_matrices(self, a1: Architecture, a2: Architecture) -> tuple[np.ndarray, np.ndarray]:
        """``(C_lmm, C_str)``, each ``n1 x n2`` (``C_lmm`` with ``inf`` as ``INFEASIBLE_COST``)."""
        l1, _, _, f1 = self.features(a1)
        l2, _, _, f2 = self.features(a2)
        C_lmm = self._M[np.ix_(l1, l2)]
        C_str = cdist(f1, f2, "cityblock") / f1.shape[1]
        return C_lmm, C_str

    # -- distances ----------------------------------------------------------------------------
    def distance(self, a1: Architecture, a2: Architecture, *, nu_str: float = 0.5,
                 return_plan: bool = False) -> OTMANNResult:
        """``d`` and ``d_bar`` for one pair and one structural weight ``nu_str`` (program (6))."""
        res = self._solve(a1, a2, (float(nu_str),), return_plan)
        return res[0]

    def distances(self, a1: Architecture, a2: Architecture, *,
                  nu_strs: Sequence[float] = DEFAULT_NU_STRS) -> tuple[np.ndarray, np.ndarray]:
        """``(d, d_bar)`` arrays over ``nu_strs`` for one pair (cost matrices built once)."""
        res = self._solve(a1, a2, tuple(float(v) for v in nu_strs), False)
        return np.array([r.d for r in res]), np.array([r.d_bar for r in res])

    def _solve(self, a1, a2, nus, return_plan) -> list[OTMANNResult]:
        l1, m1, tm1, f1 = self.features(a1)
        l2, m2, tm2, f2 = self.features(a2)
        n1, n2 = len(l1), len(l2)
        C_lmm = self._M[l1][:, l2]
        C_str = cdist(f1, f2, "cityblock")
        C_str /= f1.shape[1]
        total = tm1 + tm2
        a = np.empty(n1 + 1); a[:n1] = m1; a[n1] = tm2; a /= total
        b = np.empty(n2 + 1); b[:n2] = m2; b[n2] = tm1; b /= total
        C = np.empty((n1 + 1, n2 + 1))
        C[n1, :] = _NON_ASSIGNMENT
        C[:, n2] = _NON_ASSIGNMENT
        C[n1, n2] = 0.0
        solve = _get_solver()
        out = []
        warm = None
        for nu in nus:
            np.multiply(C_str, nu, out=C[:n1, :n2])
            C[:n1, :n2] += C_lmm
            val, G, warm = solve(a, b, C, return_plan, warm)
            d = max(val, 0.0) * total
            out.append(OTMANNResult(d=d, d_bar=d / total, plan=None if G is None else G * total))
        return out

    def pairwise(self, archs1: Sequence[Architecture], archs2: Sequence[Architecture] | None = None, *,
                 nu_strs: Sequence[float] = DEFAULT_NU_STRS) -> tuple[np.ndarray, np.ndarray]:
        """Distance matrices for all pairs, for several ``nu_str`` at once.

        Returns ``(D, D_bar)``, each of shape ``(len(nu_strs), n1, n2)``. With
        ``archs2=None`` the matrices are those of ``archs1`` against itself: only the
        pairs ``i < j`` are solved, the result is exactly symmetric and its diagonal
        is 0 (Thm. 3: ``d(G, G) = 0``).
        """
        nus = tuple(float(v) for v in nu_strs)
        sym = archs2 is None
        others = archs1 if archs2 is None else archs2
        n1, n2, k = len(archs1), len(others), len(nus)
        D = np.zeros((k, n1, n2))
        Db = np.zeros((k, n1, n2))
        for a in list(archs1) + ([] if sym else list(others)):
            self.features(a)  # validate / cache once, up front
        for i in range(n1):
            for j in range(i + 1 if sym else 0, n2):
                res = self._solve(archs1[i], others[j], nus, False)
                for t, r in enumerate(res):
                    D[t, i, j] = r.d
                    Db[t, i, j] = r.d_bar
                    if sym:
                        D[t, j, i] = r.d
                        Db[t, j, i] = r.d_bar
        return D, Db


_DEFAULT: dict[str, OTMANN] = {}


def _default(kind: str) -> OTMANN:
    if kind not in _DEFAULT:
        _DEFAULT[kind] = OTMANN(kind)
    return _DEFAULT[kind]


def otmann_distance(a1: Architecture, a2: Architecture, *, nu_str: float = 0.5) -> tuple[float, float]:
    """``(d, d_bar)`` between two networks of the same kind with the paper's label costs."""
    r = _default(a1.kind).distance(a1, a2, nu_str=nu_str)
    return r.d, r.d_bar


def otmann_distances(archs1: Sequence[Architecture], archs2: Sequence[Architecture] | None = None,
                     *, nu_strs: Sequence[float] = DEFAULT_NU_STRS) -> tuple[np.ndarray, np.ndarray]:
    """``(D, D_bar)`` of shape ``(len(nu_strs), n1, n2)`` (see :meth:`OTMANN.pairwise`)."""
    kinds = {a.kind for a in archs1} | ({a.kind for a in archs2} if archs2 is not None else set())
    if len(kinds) > 1:
        raise InvalidArchitectureError(f"cannot compare networks of different kinds: {sorted(kinds)}")
    if not kinds:  # empty lists
        n2 = len(archs1) if archs2 is None else len(archs2)
        z = np.zeros((len(tuple(nu_strs)), len(archs1), n2))
        return z, z.copy()
    return _default(kinds.pop()).pairwise(archs1, archs2, nu_strs=nu_strs)
