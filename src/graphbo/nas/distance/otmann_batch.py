"""Fast exact OTMANN distances for many pairs, and an incremental distance cache.

NASBOT (Kandasamy et al. 2018) needs OTMANN distances between every candidate
network the evolutionary algorithm scores and every evaluated network, for the
four structural weights ``nu_str`` of Sec. 4.1: tens of thousands of
transport problems per suggestion. :class:`BatchOTMANN` computes exactly the
values of :meth:`graphbo.nas.distance.otmann.OTMANN.pairwise`, faster, with two exact
reductions of program (3):

1. **Label-compatibility classes.** Mass can only move between layers whose
   label-mismatch cost is finite (``M`` of Tables 4 and 5); everything else
   is left unassigned at cost 1 per unit on either side. Program (3) is
   therefore a sum of independent programs, one per connected component of
   the "finite cost" graph on labels (CNN: conv/res, pooling, ``fc``,
   ``softmax``, ``ip``, ``op``; MLP: hidden layers, ``linear``, ``softmax``,
   ``ip``, ``op``). Each is solved as program (6) on its own layers, which is
   smaller than the whole network, and a class present in one network only
   costs its whole mass.
   A class with a single layer on one side is a fractional knapsack: moving
   mass ``x`` from that layer to layer ``j`` saves ``x (2 - c_j)``, so the
   optimum fills the other side's layers in increasing cost while ``c_j < 2``
   (closed form, no solver call).

2. **Structural weights by concavity.** For a fixed pair, ``d(nu) =
   min_Z <Z, C_lmm + nu C_str> + phi_nas(Z)`` is the minimum of linear
   functions of ``nu``: concave and piecewise linear. Solving at the smallest
   and the largest ``nu`` gives two plans; if the plan optimal at one end is
   also optimal at the other (its cost there equals the optimum, to
   ``1e-9`` of the class mass), ``d`` is linear in between and the
   intermediate values are read off that plan's line without solving.
   Otherwise the middle ``nu`` is solved and both halves are treated the
   same way. About half of the class problems of mutated CNNs need two solves
   for the four distances; the others need four.

Both reductions are exact; the results agree with
:meth:`~graphbo.nas.distance.otmann.OTMANN.pairwise` to floating-point round-off
(checked in ``tests/optimizers/test_nasbot.py``). The transport problems are solved by
POT's network simplex (``ot.lp.emd_wrap.emd_c``, as in
:mod:`graphbo.nas.distance.otmann`); without POT this module falls back on
:meth:`OTMANN.pairwise`.

**Compiled solver.** With numba installed (``pip install "graphbo[fast]"``,
``solver="auto"`` or ``"numba"``), the transport problems of one candidate's
class against all the reference networks are solved in one compiled call
(:func:`graphbo.nas.distance.transport_jit.transport_rows`): a transportation simplex on
strongly feasible spanning trees, with the same concavity logic, in which every
solve after the first of a pair is warm-started from the optimal basis at a
neighbouring ``nu`` (the constraints do not depend on ``nu``, so that basis is
feasible; it is often optimal already). Same distances to round-off, several
times faster than one POT call per problem. A problem that reaches the
compiled solver's iteration cap (not seen in practice) is solved again with POT.

:class:`DistanceCache` holds the distances among a growing list of networks
(the evaluated ones) and computes only the rows of networks added since the
last call; a row computed earlier against a prefix of the list (a candidate
that was scored by the evolutionary algorithm and then evaluated) is reused.

**Threads.** POT's ``emd_c`` and the compiled solver release the GIL while they solve, so
:meth:`BatchOTMANN.cross` splits its rows (the candidates) into ``n_jobs``
contiguous blocks computed by a :class:`~concurrent.futures.ThreadPoolExecutor`
(default ``n_jobs = min(2, os.cpu_count())``). Every row is computed by the
same code whichever thread runs it and written to its own place, so the
results are identical to ``n_jobs=1`` (the serial path, no executor).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import Any, Sequence

import numpy as np
from scipy.spatial.distance import cdist

from ..domain.architecture import Architecture
from .otmann import DEFAULT_NU_STRS, OTMANN

__all__ = ["BatchOTMANN", "DistanceCache", "exact_key"]

_LINE_TOL = 1e-9  # plan optimal at another nu when its cost is within this (normalised units)
_MAX_ITER = 1_000_000


def _emd_solver():
    try:
        from ot.lp.emd_wrap import emd_c
    except Exception:  # pragma: no cover - POT missing or moved
        return None
    a = np.array([0.5, 0.5]); b = np.array([0.25, 0.75]); C = np.array([[0.0, 1.0], [1.0, 0.0]])
    try:
        out = emd_c(a, b, C, 1000, 1)
        if not np.allclose(out[0], [[0.25, 0.25], [0.0, 0.5]]) or out[4] != 1:  # pragma: no cover
            return None
    except Exception:  # pragma: no cover
        return None
    return emd_c


_EMD = _emd_solver()


def exact_key(arch: Architecture) -> bytes:
    """A key equal exactly for networks with the same fields (layer numbering included)."""
    return arch.cached("exact-key", lambda: repr((arch.kind, tuple(arch.labels), tuple(arch.units),
                                                  tuple(arch.strides or ()), tuple(arch.edges))).encode())


class _Split:
    """One network's layers grouped by label-compatibility class."""

    __slots__ = ("classes", "tm")

    def __init__(self, classes: dict, tm: float):
        self.classes = classes  # class id -> (label idx, masses, features, class mass)
        self.tm = tm


class _Stack:
    """The reference side of :meth:`BatchOTMANN.cross`, arranged per class: the layers of
    every network concatenated (labels, masses, features), each network's block followed by
    one "null" entry (the unassigned mass of program (6)), and each block's position."""

    def __init__(self, splits: list[_Split], n_classes: int, n_features: int):
        n = len(splits)
        self.n = n
        self.splits = splits
        self.tm = np.array([s.tm for s in splits])
        self.mass = np.zeros((n_classes, n))  # class mass of each network
        self.count = np.zeros((n_classes, n), dtype=np.intp)
        self.labels: list[np.ndarray] = []  # extended: label index, -1 at null entries
        self.masses: list[np.ndarray] = []  # extended: layer masses, 0 at null entries
        self.feats: list[np.ndarray] = []  # extended: path features, 0 at null entries
        self.offsets: list[np.ndarray] = []  # block j is [off[j], off[j + 1]); its null entry is off[j + 1] - 1
        for c in range(n_classes):
            labs, mass, feats = [], [], []
            for j, s in enumerate(splits):
                v = s.classes.get(c)
                if v is not None:
                    self.mass[c, j] = v[3]
                    self.count[c, j] = v[0].size
                    labs.append(v[0])
                    mass.append(v[1])
                    feats.append(v[2])
                labs.append(np.array([-1], dtype=np.intp))
                mass.append(np.zeros(1))
                feats.append(np.zeros((1, n_features)))
            off = np.zeros(n + 1, dtype=np.intp)
            np.cumsum(self.count[c] + 1, out=off[1:])
            self.offsets.append(off)
            self.labels.append(np.concatenate(labs))
            self.masses.append(np.concatenate(mass))
            self.feats.append(np.ascontiguousarray(np.concatenate(feats)))


class BatchOTMANN:
    """Exact OTMANN distances for many pairs (see the module docstring).

    Parameters
    ----------
    otmann : OTMANN
        The distance definition (kind and label-mismatch matrix).
    nu_strs : sequence of float
        Structural weights (paper: 0.1, 0.2, 0.4, 0.8).

    n_jobs : int or None
        Threads over which :meth:`cross` splits its rows (candidates); ``None``:
        ``min(2, os.cpu_count())``. ``1`` runs serially. Results do not depend on it.
    solver : {"auto", "pot", "numba"}
        How the transport problems are solved: ``"pot"``, one POT ``emd_c`` call per problem;
        ``"numba"``, the compiled batched solver of :mod:`graphbo.nas.distance.transport_jit` (needs
        numba: ``pip install "graphbo[fast]"``); ``"auto"`` (default), ``"numba"`` when numba
        can be imported, else ``"pot"``. The attribute ``solver`` holds the one in use and
        can be set later.

    ``solves`` counts the transport problems solved so far (for profiling); with the
    compiled solver, ``pivots`` counts its simplex pivots and ``fallbacks`` the problems it
    gave up on (iteration cap), which were solved with POT instead.
    """

    def __init__(self, otmann: OTMANN, *, nu_strs: Sequence[float] = DEFAULT_NU_STRS,
                 n_jobs: int | None = None, solver: str = "auto"):
        if n_jobs is None:
            n_jobs = min(2, os.cpu_count() or 1)
        self.n_jobs = max(1, int(n_jobs))
        self._jit: ModuleType | None = None  # transport_jit when the compiled solver is in use
        self.solver = solver
        self.otmann = otmann
        self.kind = otmann.kind
        self.nu_strs = tuple(float(v) for v in nu_strs)
        if not self.nu_strs:
            raise ValueError("at least one structural weight nu_str is needed")
        self._order = np.argsort(self.nu_strs, kind="stable")
        self._nus_sorted = np.asarray(self.nu_strs)[self._order]
        self._nus_col = self._nus_sorted[:, None]
        M = np.asarray(otmann.label_mismatch.matrix)
        finite = np.isfinite(M)
        n = M.shape[0]
        comp = -np.ones(n, dtype=np.intp)
        c = 0
        for s in range(n):  # connected components of the finite-cost graph
            if comp[s] >= 0:
                continue
            stack: list[int | np.integer[Any]] = [s]
            comp[s] = c
            while stack:
                u = stack.pop()
                for v in np.flatnonzero(finite[u]):
                    if comp[v] < 0:
                        comp[v] = c
                        stack.append(v)
            c += 1
        self._label_class = comp
        self.n_classes = c
        self._M = np.where(finite, M, 0.0)  # only finite entries are ever read
        self._key = ("otmann-split", otmann.label_mismatch.labels)
        self.solves = 0
        self.pivots = 0
        self.fallbacks = 0
        self._lock = threading.Lock()

    @property
    def solver(self) -> str:
        """The transport solver in use, ``"pot"`` or ``"numba"``."""
        return "pot" if self._jit is None else "numba"

    @solver.setter
    def solver(self, name: str) -> None:
        if name not in ("auto", "pot", "numba"):
            raise ValueError(f"solver must be 'auto', 'pot' or 'numba', got {name!r}")
        jit = None
        if name != "pot":
            from . import transport_jit

            if transport_jit.AVAILABLE:
                jit = transport_jit
            elif name == "numba":
                raise ImportError('BatchOTMANN(solver="numba") needs numba: pip install "graphbo[fast]"')
        self._jit = jit

    # -- per-network data -----------------------------------------------------------
    def split(self, arch: Architecture) -> _Split:
        """The network's layers by class (cached on the Architecture; validates it)."""
        def compute() -> _Split:
            lab, masses, tm, feats = self.otmann.features(arch)  # validates
            cls = self._label_class[lab]
            classes = {}
            for c in np.unique(cls):
                idx = np.flatnonzero(cls == c)
                m = np.ascontiguousarray(masses[idx], dtype=float)
                classes[int(c)] = (lab[idx], m, np.ascontiguousarray(feats[idx], dtype=float), float(m.sum()))
            return _Split(classes, float(tm))

        return arch.cached(self._key, compute)

    # -- the cost of one class --------------------------------------------------------------
    @staticmethod
    def _knapsack_many(m0: np.ndarray, masses: np.ndarray, cost: np.ndarray) -> np.ndarray:
        """Mass saved by the greedy optimum of several one-layer-versus-k problems at once.

        ``m0``: ``(J,)`` masses of the single layers; ``masses``: ``(k, J)`` masses of the
        other side's layers; ``cost``: ``(m, k, J)``. Moving ``x`` from the single layer to
        layer ``l`` saves ``x (2 - c_l)``; the optimum fills layers in increasing cost while
        that is positive (a fractional knapsack). Returns ``(m, J)``.
        """
        order = np.argsort(cost, axis=1, kind="stable")
        c = np.take_along_axis(cost, order, 1)
        t = np.take_along_axis(np.broadcast_to(masses, cost.shape), order, 1)
        before = np.cumsum(t, axis=1) - t
        x = np.clip(m0[None, None, :] - before, 0.0, t)
        return (x * np.maximum(2.0 - c, 0.0)).sum(1)

    @staticmethod
    def _knapsack_segments(m0: float, masses: np.ndarray, cost: np.ndarray, seg: np.ndarray,
                           n_seg: int) -> np.ndarray:
        """The same for one single layer against several networks with different numbers of
        layers: ``masses`` ``(L,)`` and ``cost`` ``(m, L)`` concatenated over networks,
        ``seg`` ``(L,)`` the network of each entry (non-decreasing). Returns ``(m, n_seg)``."""
        m = cost.shape[0]
        out = np.zeros((m, n_seg))
        starts = np.flatnonzero(np.r_[True, seg[1:] != seg[:-1]])
        for t in range(m):
            order = np.lexsort((cost[t], seg))
            c = cost[t, order]
            w = masses[order]
            cum = np.cumsum(w)
            first = np.repeat(cum[starts] - w[starts], np.diff(np.r_[starts, seg.size]))
            before = cum - w - first
            x = np.clip(m0 - before, 0.0, w)
            np.add.at(out[t], seg, x * np.maximum(2.0 - c, 0.0))
        return out

    def _transport(self, a: np.ndarray, b: np.ndarray, C_all: np.ndarray, C_str: np.ndarray
                   ) -> tuple[list[float], int]:
        """Program (6) for one class with at least two layers on each side, per (sorted) nu.

        ``a``, ``b``: normalised supplies and demands (null entries last); ``C_all[t]``: the
        cost matrix at ``nu_t`` (C-contiguous); ``C_str``: the structural cost, 0 on the null
        row and column. Solved at the smallest and largest nu, and in between only where the cost is
        not linear in nu (see the module docstring). Returns normalised costs and the number of
        solver calls.
        """
        nus = self._nus_sorted
        m = nus.size
        vals = [0.0] * m
        icpt = [0.0] * m
        slope = [0.0] * m
        emd = _EMD
        todo: tuple[int, ...] = (0, m - 1) if m > 1 else (0,)
        stack = [(0, m - 1)] if m > 2 else []
        n_solved = 0
        while True:
            for t in todo:
                G, cost, _, _, code = emd(a, b, C_all[t], _MAX_ITER, 1)
                if code != 1:  # pragma: no cover
                    raise RuntimeError(f"optimal transport failed (code {code})")
                sl = float(np.vdot(G, C_str))
                vals[t] = cost
                slope[t] = sl
                icpt[t] = cost - nus[t] * sl
                n_solved += 1
            todo = ()
            while stack and not todo:
                lo, hi = stack.pop()
                if hi - lo <= 1:
                    continue
                if icpt[lo] + slope[lo] * nus[hi] <= vals[hi] + _LINE_TOL:
                    src = lo
                elif icpt[hi] + slope[hi] * nus[lo] <= vals[lo] + _LINE_TOL:
                    src = hi
                else:
                    mid = (lo + hi) // 2
                    todo = (mid,)
                    stack.append((mid, hi))
                    stack.append((lo, mid))
                    continue
                for t in range(lo + 1, hi):  # the plan optimal at both ends is optimal between
                    vals[t] = icpt[src] + slope[src] * nus[t]
            if not todo:
                break
        return vals, n_solved

    def stack(self, archs: Sequence[Architecture]) -> _Stack:
        """The reference side of :meth:`cross` for ``archs`` (reuse it for several calls)."""
        splits = [self.split(b) for b in archs]
        F = next((v[2].shape[1] for s in splits for v in s.classes.values()), 1)
        return _Stack(splits, self.n_classes, F)

    # -- public ---------------------------------------------------------------------------
    def cross(self, archs1: Sequence[Architecture], archs2: Sequence[Architecture] | _Stack
              ) -> tuple[np.ndarray, np.ndarray]:
        """``(D, D_bar)`` of shape ``(len(nu_strs), n1, n2)``: each ``archs1[i]`` against
        each ``archs2[j]``, solved with ``archs1[i]`` as the rows of the program.
        ``archs2`` may be a :meth:`stack` of the networks."""
        ref = archs2 if isinstance(archs2, _Stack) else None
        seq: Sequence[Architecture] = [] if isinstance(archs2, _Stack) else archs2
        n1, m = len(archs1), len(self.nu_strs)
        n2 = ref.n if ref is not None else len(seq)
        D = np.zeros((m, n1, n2))
        Db = np.zeros((m, n1, n2))
        if n1 == 0 or n2 == 0:
            return D, Db
        if _EMD is None:  # pragma: no cover - no POT
            return self.otmann.pairwise(archs1, seq, nu_strs=self.nu_strs)
        if ref is None:
            ref = self.stack(seq)
        jobs = min(self.n_jobs, n1)
        if jobs <= 1:
            self.solves += self._rows(archs1, 0, n1, ref, D, Db)
        else:
            bounds = np.linspace(0, n1, jobs + 1).round().astype(int)
            with ThreadPoolExecutor(max_workers=jobs) as ex:
                futs = [ex.submit(self._rows, archs1, int(lo), int(hi), ref, D, Db)
                        for lo, hi in zip(bounds[:-1], bounds[1:])]
                for f in futs:
                    self.solves += f.result()
        np.maximum(D, 0.0, out=D)
        np.maximum(Db, 0.0, out=Db)
        return D, Db

    def _rows(self, archs1: Sequence[Architecture], lo: int, hi: int, ref: _Stack,
              D: np.ndarray, Db: np.ndarray) -> int:
        """Rows ``lo:hi`` of :meth:`cross`, written into ``D`` and ``Db`` (one thread).
        Returns the number of solver calls."""
        m = len(self.nu_strs)
        n2 = ref.n
        n_solved = 0
        n_piv = 0
        n_fall = 0
        nus = self._nus_sorted
        nus3 = nus[:, None, None]
        nus2 = self._nus_col
        Mlab = self._M
        for i in range(lo, hi):
            sa = self.split(archs1[i])
            acc = np.zeros((m, n2))  # sorted-nu order
            fixed = np.zeros(n2)
            for c in range(self.n_classes):
                A = sa.classes.get(c)
                count = ref.count[c]
                if A is None:
                    fixed += ref.mass[c]
                    continue
                la, ma, fa, Ma = A
                fixed[count == 0] += Ma
                present = np.flatnonzero(count)
                if not present.size:
                    continue
                k1 = la.size
                F = fa.shape[1]
                off = ref.offsets[c]
                lab_ext = ref.labels[c]
                mb_ext = ref.masses[c]
                null = lab_ext < 0
                # the candidate's layers against every reference layer of the class at once
                Cstr = cdist(fa, ref.feats[c], "cityblock")
                Cstr /= F
                Clmm = Mlab[la[:, None], lab_ext[None, :]]
                cnt = count[present]
                if k1 == 1:
                    one = present[cnt == 1]
                    if one.size:  # 1 x 1, all such reference networks at once
                        cols = off[one]
                        cost = Clmm[0, cols][None, :] + nus2 * Cstr[0, cols][None, :]
                        mbo = mb_ext[cols]
                        acc[:, one] += (ma[0] + mbo)[None, :] - np.minimum(ma[0], mbo)[None, :] * \
                            np.maximum(2.0 - cost, 0.0)
                    many = present[cnt > 1]
                    if many.size:  # 1 x k, all such reference networks at once
                        cols = np.concatenate([np.arange(off[j], off[j + 1] - 1) for j in many])
                        seg = np.repeat(np.arange(many.size), count[many])
                        cost = Clmm[0, cols][None, :] + nus2 * Cstr[0, cols][None, :]
                        saved = self._knapsack_segments(ma[0], mb_ext[cols], cost, seg, many.size)
                        acc[:, many] += (Ma + ref.mass[c, many])[None, :] - saved
                    continue
                single = present[cnt == 1]
                if single.size:  # k x 1, all such reference networks at once
                    cols = off[single]
                    cost = Clmm[:, cols][None, :, :] + nus3 * Cstr[:, cols][None, :, :]
                    mbs = mb_ext[cols]
                    saved = self._knapsack_many(mbs, np.broadcast_to(ma[:, None], (k1, cols.size)), cost)
                    acc[:, single] += (Ma + mbs)[None, :] - saved
                many = present[cnt > 1]
                if not many.size:
                    continue
                # k x l: transport problems. The cost blocks are laid out transposed (reference
                # layers as rows, the candidate's layers and its null entry as columns), so that
                # each block is a contiguous slice handed to the solver without a copy.
                Clmm[:, null] = 1.0
                Cstr[:, null] = 0.0
                total = Clmm.shape[1]
                ClT = np.empty((total, k1 + 1))
                ClT[:, :k1] = Clmm.T
                ClT[:, k1] = np.where(null, 0.0, 1.0)
                CsT = np.zeros((total, k1 + 1))
                CsT[:, :k1] = Cstr.T
                jit = self._jit
                if jit is None:
                    C_all = ClT[None] + nus3 * CsT[None]  # (m, total, k1 + 1)
                Mb = ref.mass[c]
                T = Ma + Mb  # per reference network
                b_ext = mb_ext.copy()
                b_ext[off[1:] - 1] = Ma
                b_ext /= np.repeat(T, count + 1)
                a_all = np.empty((n2, k1 + 1))
                a_all[:, :k1] = ma[None, :] / T[:, None]
                a_all[:, k1] = Mb / T
                if jit is not None:  # all of them in one compiled call (C_all computed there)
                    res, ns, failed, piv = jit.transport_rows(b_ext, off, many, a_all, ClT, CsT, nus,
                                                              _LINE_TOL)
                    n_solved += ns
                    n_piv += piv
                    if failed.any():  # iteration cap (not seen in practice): POT solves these
                        C_all = ClT[None] + nus3 * CsT[None]
                    for q in np.flatnonzero(failed):
                        j = many[q]
                        v, ns = self._transport(b_ext[off[j]:off[j + 1]], a_all[j],
                                                C_all[:, off[j]:off[j + 1]], CsT[off[j]:off[j + 1]])
                        res[q] = v
                        n_solved += ns
                        n_fall += 1
                    acc[:, many] += np.maximum(res.T, 0.0) * T[many][None, :]
                    continue
                res = []
                for j in many:
                    v, ns = self._transport(b_ext[off[j]:off[j + 1]], a_all[j], C_all[:, off[j]:off[j + 1]],
                                            CsT[off[j]:off[j + 1]])
                    res.append(v)
                    n_solved += ns
                acc[:, many] += np.maximum(np.array(res).T, 0.0) * T[many][None, :]
            acc += fixed[None, :]
            D[self._order, i, :] = acc
            Db[self._order, i, :] = acc / (sa.tm + ref.tm)[None, :]
        if n_piv or n_fall:
            with self._lock:
                self.pivots += n_piv
                self.fallbacks += n_fall
        return n_solved

    def pairwise(self, archs: Sequence[Architecture]) -> tuple[np.ndarray, np.ndarray]:
        """Symmetric ``(D, D_bar)`` of a list against itself, zero diagonal; entry
        ``(i, j)`` with ``j < i`` is solved with ``archs[i]`` as the rows (as
        :class:`DistanceCache` does, so both give identical numbers)."""
        n, m = len(archs), len(self.nu_strs)
        D = np.zeros((m, n, n))
        Db = np.zeros((m, n, n))
        for i in range(1, n):
            d, db = self.cross(archs[i:i + 1], archs[:i])
            D[:, i, :i] = d[:, 0]
            Db[:, i, :i] = db[:, 0]
        D = D + D.transpose(0, 2, 1)
        Db = Db + Db.transpose(0, 2, 1)
        return D, Db


class DistanceCache:
    """OTMANN distances among a growing list of networks, computed once per pair.

    ``extend(archs)`` appends networks and computes only their rows (each new
    network against all earlier ones). Rows computed earlier by :meth:`rows`
    for a candidate (against the first ``k`` networks of the list) are reused
    when that candidate is appended, so a network the evolutionary algorithm
    scored and that was then evaluated costs only its distances to networks
    added since.
    """

    def __init__(self, batch: BatchOTMANN, memo_size: int = 4096):
        self.batch = batch
        self.m = len(batch.nu_strs)
        self.archs: list[Architecture] = []
        self._keys: list[bytes] = []
        self._D = np.zeros((self.m, 0, 0))
        self._Db = np.zeros((self.m, 0, 0))
        self._memo: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}
        self.memo_size = int(memo_size)
        self.pairs_computed = 0

    def __len__(self) -> int:
        return len(self.archs)

    @property
    def keys(self) -> list[bytes]:
        """The :func:`exact_key` of each cached network, in the order of :attr:`archs`: the cache's own list,
        to be read, not changed."""
        return self._keys

    @property
    def D(self) -> np.ndarray:
        return self._D

    @property
    def D_bar(self) -> np.ndarray:
        return self._Db

    def rows(self, archs: Sequence[Architecture], remember: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """``(D, D_bar)`` of shape ``(m, len(archs), len(self))``: the given networks against
        the cached list (rows of networks in the list are read from the matrices)."""
        n = len(self)
        k = len(archs)
        D = np.empty((self.m, k, n))
        Db = np.empty((self.m, k, n))
        pos = {key: i for i, key in enumerate(self._keys)}
        todo_idx: list[int] = []
        todo_from: list[int] = []
        for r, a in enumerate(archs):
            key = exact_key(a)
            if key in pos:
                D[:, r] = self._D[:, pos[key]]
                Db[:, r] = self._Db[:, pos[key]]
                continue
            hit = self._memo.get(key)
            start = 0
            if hit is not None:
                start = min(hit[0].shape[1], n)
                D[:, r, :start] = hit[0][:, :start]
                Db[:, r, :start] = hit[1][:, :start]
            if start < n:
                todo_idx.append(r)
                todo_from.append(start)
        # group by start column so that each group is one cross() call
        for start in sorted(set(todo_from)):
            rs = [r for r, s in zip(todo_idx, todo_from) if s == start]
            d, db = self.batch.cross([archs[r] for r in rs], self.archs[start:])
            self.pairs_computed += len(rs) * (n - start)
            for t, r in enumerate(rs):
                D[:, r, start:] = d[:, t]
                Db[:, r, start:] = db[:, t]
        if remember:
            for r in todo_idx:
                key = exact_key(archs[r])
                self._memo[key] = (D[:, r].copy(), Db[:, r].copy())
            while len(self._memo) > self.memo_size:
                self._memo.pop(next(iter(self._memo)))
        return D, Db

    def extend(self, archs: Sequence[Architecture]) -> None:
        """Append networks, computing their distances to all earlier ones."""
        for a in archs:
            n = len(self)
            key = exact_key(a)
            if n:
                d, db = self.rows([a], remember=False)
                d, db = d[:, 0], db[:, 0]
            else:
                d, db = np.zeros((self.m, 0)), np.zeros((self.m, 0))
            self._memo.pop(key, None)
            D = np.zeros((self.m, n + 1, n + 1))
            Db = np.zeros((self.m, n + 1, n + 1))
            D[:, :n, :n] = self._D
            Db[:, :n, :n] = self._Db
            D[:, n, :n] = d
            D[:, :n, n] = d
            Db[:, n, :n] = db
            Db[:, :n, n] = db
            self._D, self._Db = D, Db
            self.archs.append(a)
            self._keys.append(key)

    def clear_memo(self, keep: Sequence[Architecture] = ()) -> None:
        """Forget remembered candidate rows, except those of ``keep``."""
        kept = {exact_key(a) for a in keep}
        self._memo = {k: v for k, v in self._memo.items() if k in kept}
