"""The screening of a conditioned :class:`~graphbo.models.mixed_gp.MixedGP` (a :class:`~graphbo.models.base.Screening`).

What BO-FM's acquisition optimiser (:func:`graphbo.optim.mixed.optimize_acquisition_mixed`) may ask of the
model besides its posterior, to rank or rule out many rows at a fraction of the posterior's cost:

* :meth:`MixedGPScreening.screen_moments`: the posterior's moments from a float32 cross-covariance
  (ModLap and ModDif kernels);
* :meth:`MixedGPScreening.mean_lower_bound`: a lower bound of the posterior mean and an upper bound of its
  variance from per-variable tables (ModLap);
* :meth:`MixedGPScreening.neighbour_moments`: the posterior's moments at graph neighbours of rows, their
  cross-covariance made from the rows' by replacing one factor of BO-FM's Eq. 5 (every kernel of the FM
  family).

A :class:`MixedGP` offers a screening (:meth:`MixedGP.screening`) where its kernel is an FM kernel of the
Eq. 5 family with discrete variables (:meth:`MixedGPScreening.supports`); the object reads the model
through its public members only (the conditioned inputs, :attr:`MixedGP.alpha`, the Cholesky factor,
the signal variance, the constant mean and the kernel parameters) and answers for the conditioning it was
made for: the model makes a new one after each conditioning, and an object kept past it raises.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import torch

from ..kernels.frequency_modulated import FMKernel
from .base import Screening

if TYPE_CHECKING:
    from .mixed_gp import MixedGP, MixedKernel

__all__ = ["MixedGPScreening"]


class _BoundTables(NamedTuple):
    """:meth:`MixedGPScreening.mean_lower_bound`'s tables (one hot-encoded row ``O`` of the values ``>= 1``
    times a table, plus the value-0 sums, is the log of a product over the variables)."""

    mean_W: torch.Tensor  #: (width, n + 1): per training row, log K_hi or log K_lo as its weight's sign asks; log k(x, x)
    mean_base: torch.Tensor  #: (n + 1,)
    weights: torch.Tensor  #: (n,) amp K^-1 (y - m)
    range_W: torch.Tensor  #: (width, 2n): log K_hi | log K_lo, for the tight variance bound
    range_base: torch.Tensor  #: (2n,)
    offsets: torch.Tensor  #: value v >= 1 of variable q is column offsets[q] + v
    width: int  #: columns: sum_q (k_q - 1)
    binary: bool  #: every variable has two values (the one-hot rows are the index rows)


class MixedGPScreening(Screening):
    """The :class:`~graphbo.models.base.Screening` of a conditioned :class:`MixedGP` with an FM kernel of the
    Eq. 5 family on discrete variables (:meth:`supports`); made by :meth:`MixedGP.screening`, once per
    conditioning. Every answer is on the model's standardised scale, without autograd."""

    def __init__(self, model: "MixedGP") -> None:
        if not self.supports(model.kernel):
            raise ValueError("a MixedGP screening needs an FM kernel of the Eq. 5 family with discrete variables")
        self._model = model
        #: :meth:`_bound_tables`, computed once for this conditioning
        self._tables: _BoundTables | None = None

    @staticmethod
    def supports(kernel: "MixedKernel") -> bool:
        """Whether a :class:`MixedGP` with ``kernel`` has a screening: an FM kernel of the Eq. 5 family with
        discrete variables (:attr:`FMKernel.has_neighbour_gram`), which offers at least
        :meth:`neighbour_moments`."""
        return isinstance(kernel, FMKernel) and kernel.has_neighbour_gram

    @property
    def _kernel(self) -> FMKernel:
        kernel = self._model.kernel
        assert isinstance(kernel, FMKernel)
        return kernel

    def _check_current(self) -> None:
        """Raise unless the model is still conditioned as when this object was made."""
        if self._model.screening() is not self:
            raise RuntimeError("the model was conditioned again since this screening was made; "
                               "ask model.screening() for the current one")

    # -- float32 screening --------------------------------------------------------------
    @property
    def offers_screen_moments(self) -> bool:
        """Whether :meth:`screen_moments` is offered for ranking a pool: a ModLap or ModDif FM kernel (BO-FM
        Eq. 9 in Eq. 5) on discrete variables, whose float32 Gram matrix (``FMKernel.fm_gram_inplace``)
        costs about 0.6 of the float64 one. Not the general family or FNN: their float32 estimates were
        measured up to 0.05 off in log-EI near the top of a pool, so the check of
        :func:`graphbo.optim.mixed._pool_scores` often failed and the screening only added its cost."""
        return self._kernel.name in ("modlap", "moddif")

    def screen_moments(self, X: np.ndarray | torch.Tensor,
                       dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
        """Posterior mean and variance ``(m,)`` (standardised scale) at rows ``X`` from a cross-covariance
        computed in ``dtype`` (default float32), for screening many rows at about 0.6 of the cost: the
        Gram entries carry float32's rounding (about ``1e-6`` relative over a dozen factors), the rest
        (Rasmussen and Williams 2006, Eq. 2.25-2.26) is float64. Not a bound: a caller that needs exact
        values rescores the rows it keeps (:func:`graphbo.optim.mixed.optimize_acquisition_mixed`).
        Without autograd."""
        if not self.offers_screen_moments:
            raise NotImplementedError("screen_moments needs a ModLap or ModDif FM kernel with discrete variables")
        self._check_current()
        model, kernel = self._model, self._kernel
        with torch.no_grad():
            V, C = model.split(X)
            V_train, C_train = model.conditioned_inputs
            kp, amp = model.kernel_params, model.signal_variance
            Kx = kernel.fm_gram_inplace(kp, V, C1=C, V2=V_train, C2=C_train, dtype=dtype).to(model.dtype)
            return model.moments(Kx.mul_(amp), amp * kernel.diag(kp, V, C=C))

    # -- mean lower bound ---------------------------------------------------------------
    @property
    def offers_mean_lower_bound(self) -> bool:
        """Whether :meth:`mean_lower_bound` is cheaper than the posterior: an FM kernel of the
        ModLap family (the only one whose factors are known to fall with ``r``) on discrete variables."""
        return self._kernel.name == "modlap" and self._kernel.P > 0

    def mean_lower_bound(self, X: np.ndarray | torch.Tensor, *, chunk: int = 8192,
                         tight_variance: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """A lower bound of the posterior mean ``(m,)`` and an upper bound of the posterior variance
        ``(m,)``, standardised scale, without the ``(m, n)`` cross-covariance of :meth:`MixedGP.posterior`. The
        variance bound is the prior variance ``amp k(x, x)``, or with ``tight_variance`` (about twice the
        cost: one Cholesky solve per row) the posterior variance at the worst cross-covariance the
        bounds below allow.

        ModLap (BO-FM Eq. 9 in Eq. 5): the factor of variable ``q`` is
        ``A_q(t)[v, v'] = sum_j P_j[v, v'] / (norm_q (1 + beta_q lambda_j + alpha_q t))``, with
        ``t = r^2``, i.e. ``(beta_q L_q + (1 + alpha_q t) I)^{-1} / norm_q``: the inverse of an
        M-matrix, so entrywise ``>= 0`` and non-increasing in ``t``. Every pair of rows in the unit
        cube has ``r^2 <= R^2 = sum_d 1 / theta_d^2``, so ``K(t = R^2) <= k(x, x_i) <= K(t = 0)``,
        and each of the two bounds is a product of per-variable tables, i.e. ``exp`` of one matrix
        product of a one-hot encoding. With weights ``alpha = K^{-1}(y - m)``,
        ``mean >= m + amp (sum_{alpha_i > 0} alpha_i K_lo + sum_{alpha_i < 0} alpha_i K_hi)``.
        Without continuous inputs ``R = 0`` and the bound is the mean itself (up to rounding).

        Tight variance: the posterior variance is ``amp k(x, x) - k^T A k`` with ``k = amp k(x, X)`` and
        ``A = (amp K + noise I)^{-1}`` (Rasmussen and Williams 2006, Eq. 2.26). Write ``k = k_mid + d`` with
        ``k_mid = amp (K_lo + K_hi) / 2`` and ``|d| <= h = amp (K_hi - K_lo) / 2`` entrywise. Since
        ``d^T A d >= 0``, ``k^T A k >= k_mid^T A k_mid - 2 sum_i |(A k_mid)_i| h_i``, which bounds the
        variance from above. Where the continuous range ``R`` is small (a few continuous inputs with long
        lengthscales, as on the 53-dimensional Ackley) this is close to the posterior variance, often a
        tenth of the prior's, and the acquisition's bound prunes many more rows; where ``R`` is large it
        may say no more than the prior variance (it is never above it).
        """
        if not self.offers_mean_lower_bound:
            raise NotImplementedError("mean_lower_bound needs a ModLap FM kernel with discrete variables")
        self._check_current()
        model = self._model
        dtype, device, amp = model.dtype, model.device, model.signal_variance
        with torch.no_grad():
            t = self._bound_tables()
            V = model.discrete_part(X)  # float index values
            if not t.binary:
                V = V.long()
            n = model.conditioned_inputs[0].shape[0]
            m = V.shape[0]
            mean = torch.empty(m, dtype=dtype, device=device)
            prior = torch.empty(m, dtype=dtype, device=device)
            explained = torch.zeros(m, dtype=dtype, device=device)  # lower bound of k^T A k
            for s in range(0, m, chunk):
                Vc = V[s:s + chunk]
                if t.binary:  # every variable has two values: the one-hot of the values >= 1 is V itself
                    O = Vc
                else:  # one-hot of the values >= 1 (value 0 of every variable goes to a spare last column)
                    cols = torch.where(Vc > 0, Vc + t.offsets, t.width)
                    O = torch.zeros(Vc.shape[0], t.width + 1, dtype=dtype, device=device)
                    O.scatter_(1, cols, 1.0)
                    O = O[:, :t.width]
                # per training row the bound of k(x, x_i) its weight's sign asks for, and k(x, x)
                bound = torch.addmm(t.mean_base, O, t.mean_W).exp_()  # (chunk, n + 1)
                mean[s:s + chunk] = bound[:, :n] @ t.weights
                prior[s:s + chunk] = bound[:, n]
                if tight_variance:
                    K = torch.addmm(t.range_base, O, t.range_W).exp_()  # (chunk, 2n): K_hi | K_lo
                    k_mid = (0.5 * amp) * (K[:, n:] + K[:, :n])
                    half = (0.5 * amp) * (K[:, :n] - K[:, n:]).abs()  # K_lo may pass K_hi by ulps
                    Ak = torch.cholesky_solve(k_mid.T, model.cholesky)  # (n, chunk)
                    explained[s:s + chunk] = ((k_mid.T * Ak).sum(0) - 2.0 * (Ak.abs() * half.T).sum(0)).clamp_min(0.0)
            mean += model.constant_mean
            # k(x, x) as exp of a sum of logs, not FMKernel.diag's product: raised by 1e-12 against rounding
            prior *= amp * (1.0 + 1e-12)
            # the explained part is lowered by 1e-9 of the prior variance against rounding (its terms and
            # the exact variance's are summed in different orders)
            var = (prior - (explained - 1e-9 * prior).clamp_min(0.0)).clamp_min(1e-12)
        return mean, var

    def _bound_tables(self) -> _BoundTables:
        """What :meth:`mean_lower_bound` needs of the conditioned model, computed once per conditioning
        (an acquisition optimisation asks for bounds a dozen times): the log tables of the values ``>= 1``
        against the training rows at ``t = 0`` (``K_hi``) and ``t = R^2`` (``K_lo``) and of ``k(x, x)``'s
        factors, with their value-0 sums (:class:`_BoundTables`)."""
        if self._tables is not None:
            return self._tables
        model, fm = self._model, self._kernel
        dtype, device = model.dtype, model.device
        kp = model.kernel_params
        V_train = model.conditioned_inputs[0]
        p = fm.unpack(kp)
        beta, alpha = torch.exp(p["log_beta"]), torch.exp(p["log_alpha"])
        norms = fm.spectrum_norms(p, beta)
        R2 = float((1.0 / torch.exp(p["log_theta"]).square()).sum()) if fm.Dc else 0.0
        weights = model.alpha[:, 0] * model.signal_variance
        # per variable q, its log table at t, read at the training rows: rows v of (k_q, n)
        offsets: list[int] = []
        delta_hi: list[torch.Tensor] = []
        delta_lo: list[torch.Tensor] = []
        base_hi = torch.zeros(V_train.shape[0], dtype=dtype, device=device)
        base_lo = torch.zeros_like(base_hi)
        width = 0
        for q, groups in enumerate(fm.eigenspaces):
            lam = torch.tensor([g[0] for g in groups], dtype=dtype, device=device)
            tables = fm.projector_tables[q]
            logs = []
            for t in (0.0, R2):
                f = 1.0 / (norms[q] * (1.0 + beta[q] * lam + alpha[q] * t))
                A = (f[:, None, None] * tables).sum(0)  # (k_q, k_q)
                logs.append(A.clamp_min(1e-300).log()[:, V_train[:, q]])  # (k_q, n)
            base_hi += logs[0][0]
            base_lo += logs[1][0]
            delta_hi.append(logs[0][1:] - logs[0][0])
            delta_lo.append(logs[1][1:] - logs[1][0])
            offsets.append(width - 1)  # value v >= 1 of variable q is column offsets[q] + v
            width += tables.shape[1] - 1
        # k(x, x) = prod_q d_q[v_q] (FMKernel.diag) in the same form: one more column
        logd = fm.diag_tables(kp, p).log()
        base_d = torch.zeros(1, dtype=dtype, device=device)
        delta_d = []
        for a, b in fm.diag_table_bounds:
            base_d += logd[a]
            delta_d.append(logd[a + 1:b] - logd[a])
        hi, lo = torch.cat(delta_hi), torch.cat(delta_lo)  # (width, n) each
        up = weights < 0  # a negative weight takes k's upper bound K_hi, a positive one its lower bound K_lo
        self._tables = _BoundTables(
            mean_W=torch.cat([torch.where(up, hi, lo), torch.cat(delta_d)[:, None]], 1),
            mean_base=torch.cat([torch.where(up, base_hi, base_lo), base_d]),
            weights=weights, range_W=torch.cat([hi, lo], 1), range_base=torch.cat([base_hi, base_lo]),
            offsets=torch.as_tensor(offsets, dtype=torch.long, device=device), width=width,
            binary=all(int(T.shape[1]) == 2 for T in fm.projector_tables))
        return self._tables

    # -- graph neighbours -----------------------------------------------------------------
    @property
    def offers_neighbour_moments(self) -> bool:
        """Always: :meth:`neighbour_moments` needs an FM kernel of the Eq. 5 family
        (:meth:`FMKernel.neighbour_gram`), as every screening of a :class:`MixedGP` has (:meth:`supports`).
        Whether it also costs less is :meth:`neighbour_moments_pay`."""
        return True

    def neighbour_moments_pay(self, n_rows: int, n_neighbours: int) -> bool:
        """Whether :meth:`neighbour_moments` is expected to cost less than the posterior of ``n_neighbours``
        neighbours of ``n_rows`` rows. Per training row it builds ``n_rows * sum_q J_q k_q`` table
        entries (and ``4 P n_rows`` products) where scoring afresh costs ``n_neighbours * sum_q J_q``
        (``J_q`` eigenspaces of variable ``q``'s graph, ``k_q`` values); it also has a fixed cost of a few
        tensor operations per variable, so it is not used for fewer than 8 rows. Measured: 50 binary
        variables, 40 rows, 2.1x faster; 1 row, or ordinals (path graphs: many eigenspaces, two
        neighbours), slower than afresh."""
        if n_rows < 8:
            return False
        kernel = self._kernel
        tables = sum(int(T.shape[0]) * int(T.shape[1]) for T in kernel.projector_tables) + 4 * kernel.P
        afresh = sum(int(T.shape[0]) for T in kernel.projector_tables)
        return 2 * n_rows * tables <= n_neighbours * afresh

    def neighbour_moments(self, X: np.ndarray | torch.Tensor, owner: np.ndarray, *, var: np.ndarray,
                          value: np.ndarray, entries: int = 4_000_000) -> tuple[torch.Tensor, torch.Tensor]:
        """Posterior mean and variance ``(N,)`` (standardised scale) of graph neighbours of the mixed
        rows ``X``: neighbour ``i`` is row ``owner[i]`` with its ``var[i]``-th discrete variable set to
        index ``value[i]``. The same numbers as :meth:`MixedGP.posterior` on those rows (up to rounding), with
        the cross-covariance from :meth:`FMKernel.neighbour_gram`, taken for the rows of ``X`` in
        chunks whose tables and Gram rows hold at most about ``entries`` numbers. Without autograd."""
        self._check_current()
        model, kernel = self._model, self._kernel
        dtype, device = model.dtype, model.device
        V_train, C_train = model.conditioned_inputs
        kp, amp = model.kernel_params, model.signal_variance
        V, C = model.split(X)
        owner = np.asarray(owner, dtype=np.int64)
        N, n = owner.shape[0], V_train.shape[0]
        mean = torch.empty(N, dtype=dtype, device=device)
        variance = torch.empty(N, dtype=dtype, device=device)
        # rows of X in chunks whose value tables and neighbours' Gram rows stay within ``entries``
        # per row of X and training row: its value tables, the modulating values of every eigenspace (held
        # for a group of same-shaped variables at once), its factors and their prefix, suffix and product
        # (4 P), or its neighbours' Gram rows
        per_row = max(sum(int(T.shape[1]) + int(T.shape[0]) for T in kernel.projector_tables) + 4 * kernel.P,
                      int(np.bincount(owner).max()) if N else 1)
        step = max(1, entries // max(1, per_row * n))
        order = np.argsort(owner, kind="stable")
        bounds = np.searchsorted(owner[order], np.arange(0, V.shape[0] + step, step))
        with torch.no_grad():
            for c, s in enumerate(range(0, V.shape[0], step)):
                at = order[bounds[c]:bounds[c + 1]]
                if at.size == 0:
                    continue
                own = torch.as_tensor(owner[at] - s, dtype=torch.long, device=device)
                q = torch.as_tensor(np.asarray(var)[at], dtype=torch.long, device=device)
                v = torch.as_tensor(np.asarray(value)[at], dtype=torch.long, device=device)
                Vs, Cs = V[s:s + step], C[s:s + step]
                Kx = amp * kernel.neighbour_gram(kp, Vs, C1=Cs, V2=V_train, C2=C_train, owner=own, var=q, value=v)
                Vn = Vs[own].clone()
                Vn[torch.arange(own.shape[0], device=device), q] = v
                where = torch.as_tensor(at, dtype=torch.long, device=device)
                mean[where], variance[where] = model.moments(Kx, amp * kernel.diag(kp, Vn, C=Cs[own]))
        return mean, variance
