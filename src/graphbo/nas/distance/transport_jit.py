"""A compiled exact solver for the small transport programs of OTMANN (optional, numba).

NASBOT's OTMANN distance (Kandasamy et al. 2018) solves program (6) -- a balanced
transportation problem ``min <Z, C> s.t. Z 1 = a, Z^T 1 = b, Z >= 0`` between the
layers of two networks plus one "null" entry on each side -- for every pair of
networks, label-compatibility class and structural weight ``nu_str``.
:class:`graphbo.nas.distance.otmann_batch.BatchOTMANN` needs hundreds of thousands of them
per suggestion, each with a few dozen layers at most, where calling a solver from
Python costs more than solving. This module solves them in compiled code, all the
reference networks of one (candidate, class) in one call:

* **Transportation simplex** (the u-v or MODI method, a network simplex on the
  bipartite graph of rows and columns). The basis is a spanning tree of
  ``n1 + n2 - 1`` cells, degenerate zero cells included, rooted at the first
  column, with its duals ``u_i + v_j = c_ij``. The start is the least-cost
  greedy flow (cells in increasing cost, bucket-sorted); each iteration brings
  in the cell of most negative reduced cost ``c_ij - u_i - v_j`` (Dantzig's
  rule), sends flow round the cycle it closes in the tree, drops a blocking
  cell, re-hangs the subtree cut off and shifts its duals.
* **No cycling.** The tree is kept *strongly feasible* (Cunningham 1976; Ahuja,
  Magnanti and Orlin 1993, Sec. 11.5): every cell with zero flow joins a row to
  its parent column. The start is completed to a tree so (rows and columns of
  zero mass are removed first; each further component of the greedy flow is
  joined to the root's by a zero cell from one of its rows), and the leaving
  cell is the last blocking cell met when the cycle is traversed from its apex
  in the direction of the entering cell, which keeps it so; then no basis
  repeats. An iteration cap (``50 (n1 + n2)^2`` pivots) still guards against
  round-off; a problem that reaches it is reported as failed, and the caller
  solves it another way.
* **Warm starts.** For one pair, the programs at the structural weights differ
  only in their costs, so the optimal tree at one ``nu`` is a feasible (and
  strongly feasible) tree at the next: :func:`transport_rows` starts each solve
  of a pair after the first from the optimal tree at the lower end of its
  stretch of ``nu`` (the smallest ``nu`` for the largest), which needs a few
  pivots or none.

:func:`transport_rows` reproduces :meth:`BatchOTMANN._transport` exactly: it solves
at the smallest and the largest ``nu`` and in between only where the cost is not
linear in ``nu`` (see :mod:`graphbo.nas.distance.otmann_batch`). The functions are compiled
with ``nogil=True`` (``BatchOTMANN.cross`` runs blocks of candidates in threads)
and ``cache=True`` (compiled once per machine).

numba is optional: without it (``pip install "graphbo[fast]"`` installs it) this
module still imports, :data:`AVAILABLE` is ``False``, nothing is compiled and
:func:`transport` raises :class:`ImportError`.
"""

from __future__ import annotations

import numpy as np

try:  # numba is optional
    from numba import njit
except Exception:  # pragma: no cover - numba missing or broken
    AVAILABLE = False  # njit stays undefined; it is used under ``if AVAILABLE:`` only
else:
    AVAILABLE = True

__all__ = ["AVAILABLE", "OPTIMAL", "ITERATION_LIMIT", "Basis", "transport"] + (["transport_rows"] if AVAILABLE else [])

OPTIMAL = 0
ITERATION_LIMIT = 1  # the pivot cap was reached (or the basis stopped being a spanning tree)
_CAP = 50  # iteration cap: _CAP * (n1 + n2) ** 2 pivots
_RTOL = 1e-12  # entering threshold, relative to the largest absolute cost

if AVAILABLE:

    @njit(cache=True, nogil=True)
    def _find(comp, x):
        while comp[x] != x:
            comp[x] = comp[comp[x]]
            x = comp[x]
        return x

    @njit(cache=True, nogil=True)
    def _initial(a, b, C, n1, n2, bi, bj, fl, ra, rb, comp, cnt, order):
        """Starting basis: the least-cost greedy flow (cells taken in increasing cost, bucketed,
        each given as much as its row and column have left), whose positive cells form a
        forest, completed to a spanning tree by zero cells joining a row of each other
        component to the cheapest column already joined to column 0. Strongly feasible for
        the root column 0: positive cells may point either way, zero cells join a row to its
        parent column. Returns the number of cells (``n1 + n2 - 1``)."""
        nc = n1 * n2
        cmin = np.inf
        cmax = -np.inf
        for i in range(n1):
            for j in range(n2):
                c = C[i, j]
                if c < cmin:
                    cmin = c
                if c > cmax:
                    cmax = c
        scale = (nc - 1) / (cmax - cmin) if cmax > cmin else 0.0
        for q in range(nc + 1):
            cnt[q] = 0
        for i in range(n1):
            for j in range(n2):
                q = min(int((C[i, j] - cmin) * scale), nc - 1)
                cnt[q + 1] += 1
        for q in range(nc):
            cnt[q + 1] += cnt[q]
        for i in range(n1):
            for j in range(n2):
                q = min(int((C[i, j] - cmin) * scale), nc - 1)
                order[cnt[q]] = i * n2 + j
                cnt[q] += 1
        for i in range(n1):
            ra[i] = a[i]
        for j in range(n2):
            rb[j] = b[j]
        k = 0
        left = n1
        for p in range(nc):
            idx = order[p]
            i = idx // n2
            j = idx - i * n2
            if ra[i] > 0.0 and rb[j] > 0.0:
                bi[k] = i
                bj[k] = j
                if ra[i] <= rb[j]:  # the row is used up (ties too)
                    fl[k] = ra[i]
                    rb[j] -= ra[i]
                    ra[i] = 0.0
                    left -= 1
                else:
                    fl[k] = rb[j]
                    ra[i] -= rb[j]
                    rb[j] = 0.0
                k += 1
                if left == 0:
                    break
        nn = n1 + n2
        for x in range(nn):
            comp[x] = x
        for q in range(k):
            x = _find(comp, bi[q])
            y = _find(comp, n1 + bj[q])
            if x == y:  # not a forest (cannot happen)
                return -1
            comp[x] = y
        for r in range(n1):
            x = _find(comp, r)
            root = _find(comp, n1)
            if x != root:
                best = np.inf
                bc = -1
                for c in range(n2):
                    if _find(comp, n1 + c) == root and C[r, c] < best:
                        best = C[r, c]
                        bc = c
                bi[k] = r
                bj[k] = bc
                fl[k] = 0.0
                k += 1
                comp[x] = root
        return k

    @njit(cache=True, nogil=True)
    def _attach(x, p, parent, first, nxt, prv):
        parent[x] = p
        prv[x] = -1
        f = first[p]
        nxt[x] = f
        if f >= 0:
            prv[f] = x
        first[p] = x

    @njit(cache=True, nogil=True)
    def _detach(x, parent, first, nxt, prv):
        if prv[x] >= 0:
            nxt[prv[x]] = nxt[x]
        else:
            first[parent[x]] = nxt[x]
        if nxt[x] >= 0:
            prv[nxt[x]] = prv[x]

    @njit(cache=True, nogil=True)
    def _tree(C, n1, n2, bi, bj, pot, parent, pedge, depth, first, nxt, prv, deg, ptr, adj, queue):
        """Rooted spanning tree of the basis (root: column 0, node ``n1``; rows are nodes
        ``0..n1-1``, columns ``n1..n1+n2-1``) with child lists, and the duals ``pot`` (``u``
        then ``v``, ``u_i + v_j = C[i, j]`` on basic cells). False if the cells are not a
        spanning tree."""
        nn = n1 + n2
        for x in range(nn):
            deg[x] = 0
            depth[x] = -1
            first[x] = -1
        for k in range(nn - 1):
            deg[bi[k]] += 1
            deg[n1 + bj[k]] += 1
        ptr[0] = 0
        for x in range(nn):
            ptr[x + 1] = ptr[x] + deg[x]
            deg[x] = ptr[x]  # fill position
        for k in range(nn - 1):
            x = bi[k]
            adj[deg[x]] = k
            deg[x] += 1
            y = n1 + bj[k]
            adj[deg[y]] = k
            deg[y] += 1
        root = n1
        pot[root] = 0.0
        parent[root] = -1
        pedge[root] = -1
        depth[root] = 0
        queue[0] = root
        head = 0
        tail = 1
        while head < tail:
            x = queue[head]
            head += 1
            for p in range(ptr[x], ptr[x + 1]):
                k = adj[p]
                y = bi[k] if x >= n1 else n1 + bj[k]
                if depth[y] < 0:
                    depth[y] = depth[x] + 1
                    _attach(y, x, parent, first, nxt, prv)
                    pedge[y] = k
                    pot[y] = C[bi[k], bj[k]] - pot[x]
                    queue[tail] = y
                    tail += 1
        return tail == nn

    @njit(cache=True, nogil=True)
    def _duals(C, n1, bi, bj, pot, pedge, first, nxt, queue):
        """The duals of the tree held in the child lists, for the costs ``C``."""
        root = n1
        pot[root] = 0.0
        queue[0] = root
        top = 1
        while top > 0:
            top -= 1
            x = queue[top]
            c = first[x]
            while c >= 0:
                k = pedge[c]
                pot[c] = C[bi[k], bj[k]] - pot[x]
                queue[top] = c
                top += 1
                c = nxt[c]

    @njit(cache=True, nogil=True, fastmath={"nnan", "ninf", "nsz"})
    def _price(C, n1, n2, pot, tol):
        """The cell of most negative reduced cost ``C[i, j] - u_i - v_j`` below ``-tol`` (the
        first in row-major order among equals; ``(-tol, -1, -1)`` if none): the minimum of
        each row first (a loop the compiler vectorises), then its column."""
        best = -tol
        ei = -1
        for i in range(n1):
            ui = pot[i]
            m = np.inf
            for j in range(n2):
                m = min(m, C[i, j] - ui - pot[n1 + j])
            if m < best:
                best = m
                ei = i
        ej = -1
        if ei >= 0:
            ui = pot[ei]
            for j in range(n2):
                if C[ei, j] - ui - pot[n1 + j] == best:
                    ej = j
                    break
        return best, ei, ej

    @njit(cache=True, nogil=True)
    def _simplex(C, n1, n2, bi, bj, fl, max_iter, iw, adj, pot, keep_tree):
        """Pivot the strongly feasible basis ``(bi, bj, fl)`` to optimality for the costs
        ``C[:n1, :n2]``; ``iw``, ``adj``, ``pot``: work space (:func:`_workspace`), whose tree
        is that of the basis already if ``keep_tree`` (the previous call's). Returns
        ``(status, pivots)``."""
        parent = iw[0]
        pedge = iw[1]
        depth = iw[2]
        first = iw[3]
        nxt = iw[4]
        prv = iw[5]
        path_a = iw[6]
        path_b = iw[7]
        deg = iw[8]
        ptr = iw[9]
        queue = iw[10]
        if keep_tree:
            _duals(C, n1, bi, bj, pot, pedge, first, nxt, queue)
        elif not _tree(C, n1, n2, bi, bj, pot, parent, pedge, depth, first, nxt, prv, deg, ptr, adj, queue):
            return ITERATION_LIMIT, 0
        cmax = 0.0
        for i in range(n1):
            for j in range(n2):
                c = abs(C[i, j])
                if c > cmax:
                    cmax = c
        tol = _RTOL * cmax
        it = 0
        while True:
            best, ei, ej = _price(C, n1, n2, pot, tol)  # Dantzig's rule
            if ei < 0:
                return OPTIMAL, it
            if it >= max_iter:
                return ITERATION_LIMIT, it
            it += 1
            # the cycle: tree paths from the row ei (side a) and the column ej (side b) up to
            # their apex; on both sides the cells at even positions lose flow
            x = ei
            y = n1 + ej
            na = 0
            nb = 0
            while x != y:
                if depth[x] >= depth[y]:
                    path_a[na] = pedge[x]
                    na += 1
                    x = parent[x]
                else:
                    path_b[nb] = pedge[y]
                    nb += 1
                    y = parent[y]
            theta = np.inf
            for p in range(0, na, 2):
                f = fl[path_a[p]]
                if f < theta:
                    theta = f
            for p in range(0, nb, 2):
                f = fl[path_b[p]]
                if f < theta:
                    theta = f
            # leaving cell: the last blocking cell met going from the apex down to ei, across
            # the entering cell and up from ej to the apex (keeps the tree strongly feasible)
            leave = -1
            on_b = False
            for p in range(0, nb, 2):
                if fl[path_b[p]] == theta:
                    leave = path_b[p]
                    on_b = True
            if leave < 0:
                for p in range(0, na, 2):
                    if fl[path_a[p]] == theta:
                        leave = path_a[p]
                        break
            if theta > 0.0:
                for p in range(na):
                    k = path_a[p]
                    if p % 2 == 0:
                        fl[k] -= theta
                    else:
                        fl[k] += theta
                for p in range(nb):
                    k = path_b[p]
                    if p % 2 == 0:
                        fl[k] -= theta
                    else:
                        fl[k] += theta
            # the tree: cut the leaving cell (its child end s heads the subtree cut off, which
            # holds q, the end of the entering cell on the same side), re-hang that subtree
            # from q, joined to the other end o by the entering cell, and shift its duals
            s = bi[leave] if pedge[bi[leave]] == leave else n1 + bj[leave]
            if on_b:
                q = n1 + ej
                o = ei
            else:
                q = ei
                o = n1 + ej
            bi[leave] = ei
            bj[leave] = ej
            fl[leave] = theta
            k = 0
            x = q
            while True:  # the path q .. s (reusing path_a for nodes, path_b for their old cells)
                path_a[k] = x
                path_b[k] = pedge[x]
                k += 1
                if x == s:
                    break
                x = parent[x]
            for p in range(k):
                _detach(path_a[p], parent, first, nxt, prv)
            for p in range(k - 1, 0, -1):
                x = path_a[p]
                _attach(x, path_a[p - 1], parent, first, nxt, prv)
                pedge[x] = path_b[p - 1]
            _attach(q, o, parent, first, nxt, prv)
            pedge[q] = leave
            row_shift = best if q < n1 else -best  # rows of the subtree; its columns the opposite
            depth[q] = depth[o] + 1
            queue[0] = q
            top = 1
            while top > 0:
                top -= 1
                x = queue[top]
                if x < n1:
                    pot[x] += row_shift
                else:
                    pot[x] -= row_shift
                c = first[x]
                while c >= 0:
                    depth[c] = depth[x] + 1
                    queue[top] = c
                    top += 1
                    c = nxt[c]

    @njit(cache=True, nogil=True)
    def _solve(a, b, C, n1, n2, bi, bj, fl, warm, max_iter, iw, adj, pot, fw, cnt, order):
        """One problem with positive masses ``a[:n1]``, ``b[:n2]`` (equal sums): ``warm`` 0,
        cold from the least-cost start; 1, from the basis in ``bi, bj, fl``; 2, from that basis
        with its tree still in ``iw`` (left by the previous call). Returns ``(cost, status,
        pivots)``; the optimal basis is left in ``bi, bj, fl`` and its tree in ``iw``."""
        if warm == 0:
            if _initial(a, b, C, n1, n2, bi, bj, fl, fw[0], fw[1], iw[0], cnt, order) != n1 + n2 - 1:
                return np.nan, ITERATION_LIMIT, 0
        status, it = _simplex(C, n1, n2, bi, bj, fl, max_iter, iw, adj, pot, warm == 2)
        cost = 0.0
        for k in range(n1 + n2 - 1):
            cost += fl[k] * C[bi[k], bj[k]]
        return cost, status, it

    @njit(cache=True, nogil=True)
    def _workspace(nmax, ncells):
        """Work arrays for problems with at most ``nmax`` rows plus columns and ``ncells`` cells."""
        return (np.empty((11, nmax + 1), np.int64), np.empty(2 * nmax, np.int64), np.empty(nmax),
                np.empty((2, nmax)), np.empty(ncells + 1, np.int64), np.empty(ncells, np.int64))

    @njit(cache=True, nogil=True)
    def transport_rows(b_ext, off, many, a_all, ClT, CsT, nus, line_tol):
        """Program (6) of one candidate's class against several reference networks, at every
        structural weight: the compiled equivalent of calling ``BatchOTMANN._transport`` for
        each ``j`` in ``many``.

        Network ``j``'s program has the rows ``b_ext[off[j]:off[j + 1]]`` (its layers and null
        entry, normalised), the columns ``a_all[j]`` (the candidate's layers and null entry),
        the costs ``ClT + nus[t] CsT`` (rows ``off[j]:off[j + 1]``; label-mismatch and structural
        parts, as ``C_all[t]`` of ``BatchOTMANN._rows``, computed here so that the ``(m, total,
        k + 1)`` array is never built) at the sorted weights ``nus[t]``. Solved at the smallest and largest ``nu``;
        in between, read off a plan's line where it is optimal at both ends of a stretch (to
        ``line_tol``), else solved (bisection); each solve after the first is warm-started from
        the optimal tree at the lower end of its stretch.

        Returns ``(vals, n_solves, failed, pivots)``: ``vals[q, t]`` the normalised optimal
        cost of network ``many[q]`` at ``nus[t]``; the number of solves and of pivots (failed
        networks excluded); ``failed[q]`` true where a solve hit the iteration cap (its
        ``vals`` row is then meaningless).
        """
        nm = many.size
        m = nus.size
        kc = a_all.shape[1]
        vals = np.zeros((nm, m))
        failed = np.zeros(nm, np.bool_)
        n_solves = 0
        n_piv = 0
        rmax = 1
        for q in range(nm):
            j = many[q]
            if off[j + 1] - off[j] > rmax:
                rmax = off[j + 1] - off[j]
        nbmax = rmax + kc - 1
        sa = np.empty(rmax)
        sb = np.empty(kc)
        rows = np.empty(rmax, np.int64)
        cols = np.empty(kc, np.int64)
        C = np.empty((rmax, kc))
        iw, adj, pot, fw, cnt, order = _workspace(rmax + kc, rmax * kc)
        bi = np.empty(nbmax, np.int64)
        bj = np.empty(nbmax, np.int64)
        fl = np.empty(nbmax)
        sbi = np.empty((m, nbmax), np.int64)  # optimal tree at each nu solved
        sbj = np.empty((m, nbmax), np.int64)
        sfl = np.empty((m, nbmax))
        icpt = np.zeros(m)
        slope = np.zeros(m)
        todo = np.empty(m, np.int64)
        warm_from = np.empty(m, np.int64)
        st_lo = np.empty(m + 1, np.int64)
        st_hi = np.empty(m + 1, np.int64)
        for q in range(nm):
            j = many[q]
            r0 = off[j]
            nr = off[j + 1] - r0
            n1 = 0
            tot_a = 0.0
            for i in range(nr):
                w = b_ext[r0 + i]
                if w > 0.0:
                    rows[n1] = i
                    sa[n1] = w
                    tot_a += w
                    n1 += 1
            n2 = 0
            tot_b = 0.0
            for c in range(kc):
                w = a_all[j, c]
                if w > 0.0:
                    cols[n2] = c
                    sb[n2] = w
                    tot_b += w
                    n2 += 1
            if n1 == 0 or n2 == 0:  # no mass: nothing to move
                continue
            if tot_b != tot_a:
                s = tot_a / tot_b
                for c in range(n2):
                    sb[c] *= s
            nbas = n1 + n2 - 1
            max_iter = _CAP * (n1 + n2) * (n1 + n2)
            # the concavity logic of BatchOTMANN._transport
            ntodo = 0
            todo[ntodo] = 0
            warm_from[ntodo] = -1
            ntodo += 1
            if m > 1:
                todo[ntodo] = m - 1
                warm_from[ntodo] = 0
                ntodo += 1
            nst = 0
            if m > 2:
                st_lo[0] = 0
                st_hi[0] = m - 1
                nst = 1
            ns_q = 0
            piv_q = 0
            last = -1
            bad = False
            while True:
                for p in range(ntodo):
                    t = todo[p]
                    nu = nus[t]
                    for i in range(n1):
                        ri = r0 + rows[i]
                        for c in range(n2):
                            C[i, c] = ClT[ri, cols[c]] + nu * CsT[ri, cols[c]]
                    # warm start from the optimal basis at the lower end of the stretch (any
                    # optimal basis at another nu is feasible); when that is the last one
                    # solved, its tree is still in iw
                    src = warm_from[p]
                    mode = 0
                    if src >= 0:
                        mode = 2
                        if src != last:
                            mode = 1
                            for k in range(nbas):
                                bi[k] = sbi[src, k]
                                bj[k] = sbj[src, k]
                                fl[k] = sfl[src, k]
                    cost, status, it = _solve(sa, sb, C, n1, n2, bi, bj, fl, mode, max_iter, iw, adj, pot, fw,
                                              cnt, order)
                    last = t
                    ns_q += 1
                    piv_q += it
                    if status != OPTIMAL:
                        bad = True
                        break
                    sl = 0.0
                    for k in range(nbas):
                        sl += fl[k] * CsT[r0 + rows[bi[k]], cols[bj[k]]]
                        sbi[t, k] = bi[k]
                        sbj[t, k] = bj[k]
                        sfl[t, k] = fl[k]
                    vals[q, t] = cost
                    slope[t] = sl
                    icpt[t] = cost - nus[t] * sl
                if bad:
                    break
                ntodo = 0
                while nst > 0 and ntodo == 0:
                    nst -= 1
                    lo = st_lo[nst]
                    hi = st_hi[nst]
                    if hi - lo <= 1:
                        continue
                    if icpt[lo] + slope[lo] * nus[hi] <= vals[q, hi] + line_tol:
                        src = lo
                    elif icpt[hi] + slope[hi] * nus[lo] <= vals[q, lo] + line_tol:
                        src = hi
                    else:
                        mid = (lo + hi) // 2
                        todo[0] = mid
                        warm_from[0] = lo
                        ntodo = 1
                        st_lo[nst] = mid
                        st_hi[nst] = hi
                        st_lo[nst + 1] = lo
                        st_hi[nst + 1] = mid
                        nst += 2
                        continue
                    for t in range(lo + 1, hi):
                        vals[q, t] = icpt[src] + slope[src] * nus[t]
                if ntodo == 0:
                    break
            if bad:
                failed[q] = True
            else:
                n_solves += ns_q
                n_piv += piv_q
        return vals, n_solves, failed, n_piv

    @njit(cache=True, nogil=True)
    def _transport_one(a, b, C, bi, bj, fl, warm, max_iter):
        n1 = a.size
        n2 = b.size
        iw, adj, pot, fw, cnt, order = _workspace(n1 + n2, n1 * n2)
        return _solve(a, b, C, n1, n2, bi, bj, fl, warm, max_iter, iw, adj, pot, fw, cnt, order)


class Basis:
    """The final basis of :func:`transport` (optimal, strongly feasible), in the indices of the
    rows and columns with mass: to warm-start a problem with the same masses and other costs."""

    __slots__ = ("rows", "cols", "bi", "bj", "flow")

    def __init__(self, rows, cols, *, bi, bj, flow):
        self.rows, self.cols, self.bi, self.bj, self.flow = rows, cols, bi, bj, flow


def transport(a, b, C, *, basis: Basis | None = None, max_iter: int | None = None):
    """Exact solution of ``min <G, C> s.t. G 1 = a, G^T 1 = b, G >= 0`` (transportation simplex).

    ``a`` (``n1``), ``b`` (``n2``): nonnegative masses with equal sums (``b`` is rescaled to
    the sum of ``a``); ``C``: ``(n1, n2)`` finite costs. ``basis``: the basis of an earlier
    call with the same ``a`` and ``b`` (warm start). Returns ``(G, cost, status, pivots,
    basis)``; ``status`` is :data:`OPTIMAL` or :data:`ITERATION_LIMIT`.
    """
    if not AVAILABLE:
        raise ImportError('graphbo.nas.distance.transport_jit needs numba: pip install "graphbo[fast]"')
    a = np.asarray(a, dtype=float).ravel()
    b = np.asarray(b, dtype=float).ravel()
    C = np.asarray(C, dtype=float)
    if C.shape != (a.size, b.size):
        raise ValueError(f"cost matrix of shape {C.shape} for {a.size} x {b.size} masses")
    if (a < 0).any() or (b < 0).any() or not np.isfinite(C).all():
        raise ValueError("masses must be nonnegative and costs finite")
    rows = np.flatnonzero(a > 0)
    cols = np.flatnonzero(b > 0)
    G = np.zeros((a.size, b.size))
    if not rows.size or not cols.size:
        return G, 0.0, OPTIMAL, 0, None
    ac = np.ascontiguousarray(a[rows])
    bc = np.ascontiguousarray(b[cols])
    bc *= ac.sum() / bc.sum()
    Cc = np.ascontiguousarray(C[np.ix_(rows, cols)])
    n1, n2 = rows.size, cols.size
    warm = basis is not None
    if basis is not None:
        if not (np.array_equal(basis.rows, rows) and np.array_equal(basis.cols, cols)):
            raise ValueError("the warm-start basis belongs to other masses")
        bi, bj, fl = basis.bi.copy(), basis.bj.copy(), basis.flow.copy()
    else:
        bi = np.empty(n1 + n2 - 1, np.int64)
        bj = np.empty(n1 + n2 - 1, np.int64)
        fl = np.empty(n1 + n2 - 1)
    if max_iter is None:
        max_iter = _CAP * (n1 + n2) ** 2
    cost, status, it = _transport_one(ac, bc, Cc, bi, bj, fl, int(warm), int(max_iter))
    np.add.at(G, (rows[bi], cols[bj]), fl)
    return G, float(cost), int(status), int(it), Basis(rows, cols, bi=bi, bj=bj, flow=fl)
