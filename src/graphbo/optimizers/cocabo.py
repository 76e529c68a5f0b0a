"""CoCaBO: continuous and categorical BO with bandits and a mixture kernel (Ru et al., ICML 2020).

Ru, Alvi, Nguyen, Osborne, Roberts, "Bayesian optimisation over multiple
continuous and categorical inputs", ICML 2020 (reference code
``rubinxin/CoCaBO_code``); the baseline of BO-FM (Oh et al., UAI 2021,
Sec. 5), which compares the mixture weights ``lambda = 0, 0.5, 1``
(its footnote 8: learning the weight was not supported by the code it ran).

One round:

1. **Categories by bandits.** Every discrete variable ``j`` with ``C_j``
   values has its own EXP3 agent (as the reference code: one agent per
   categorical input, not one over all combinations). With weights
   ``W_j`` and ``gamma_j = min(1, sqrt(C_j log C_j / ((e - 1) T)))``,
   ``T = 2 budget / 3``, the agent draws ``h_j`` from
   ``p_j = (1 - gamma_j) W_j / sum(W_j) + gamma_j / C_j``.
2. **Continuous part by BO.** A GP with the CoCaBO kernel (below), fitted by
   type-II maximum likelihood, gives an acquisition function (UCB/LCB with
   ``kappa = 2`` as the reference experiments, or EI) that is maximised over
   the continuous variables with the categories fixed to ``h``: 5000
   uniformly random points, then L-BFGS-B from the best 3 (the reference
   code's ``sample_then_minimize`` settings).
3. **Reward.** Once the value ``y`` of the suggestion is told, agent ``j``
   receives ``G_j = -min{y_i : h_ij = h_j}`` (the best value so far among
   evaluations sharing its chosen category, negated for minimisation) and
   updates ``W_j[h_j] *= exp(gamma_j G_j / (p_j[h_j] C_j))``. The weights are
   kept as logarithms (the same rule, without overflow). The initial design
   does not update the agents (as in the reference's sequential CoCaBO).

**Kernel** (Ru et al. 2020, Sec. 3.2), for ``z = (h, x)``::

    k(z, z') = (1 - lambda) (k_h(h, h') + k_x(x, x')) + lambda k_h(h, h') k_x(x, x')

with the overlap (Hamming similarity) kernel with ARD weights
``k_h(h, h') = sum_j w_j [h_j = h'_j] / sum_j w_j`` (in ``[0, 1]``;
``ard=False``: all ``w_j = 1``, the reference code's plain overlap kernel)
and a Matérn-5/2 (the reference code's choice; ``cont_kernel="rbf"`` for an
RBF) kernel ``k_x`` on the unit-scaled continuous inputs with ARD
lengthscales (``ard=False``: one shared lengthscale). ``mix`` fixes
``lambda`` or, with ``mix="learn"``, makes it a hyper-parameter
(``sigmoid`` of an unconstrained one) fitted with the others. A signal
variance, noise variance and constant mean are fitted too (graphbo's
:class:`~graphbo.models.mixed_gp.MixedGP`: standardised ``y``, weak priors,
L-BFGS-B restarts). The reference code halves the sum,
``(1 - lambda) (k_h + k_x) / 2 + lambda k_h k_x`` (so that ``k(z, z) = 1``
for every ``lambda``); ``normalize_sum=True`` gives that form. For
``lambda`` in ``{0, 1}`` the two differ only by the signal variance.

**Variable types.** CoCaBO has categorical and continuous inputs only. Here
every discrete graphbo variable (``Categorical``, ``Binary``, ``Ordinal``,
narrow ``Integer``, ``GraphVariable``) is treated as categorical: one
bandit over its values and the overlap kernel (its graph is ignored, as
CoCaBO treats discrete inputs as categorical). ``Continuous`` and wide or
log ``Integer`` variables (``IntegerRange``) are continuous; an integer one
is optimised as a real number and rounded to the nearest integer.
"""

from __future__ import annotations

import math
import time
from typing import Any, Mapping

import numpy as np
import scipy.optimize
import torch

from ..acquisition.base import AcquisitionFunction
from ..acquisition.confidence_bound import NegativeLowerConfidenceBound
from ..acquisition.ei import LogExpectedImprovement
from .._validation import check_bool, check_choice, check_float, check_int
from ..kernels.frequency_modulated import unpack_params
from ..models.mixed_gp import MixedGP
from ..spaces.space import Space
from .base import DEFAULT_MAX_TRAIN, Configs, Optimizer, check_max_train, signature_without

__all__ = ["CoCaBO", "CoCaBOKernel", "cocabo_variant", "CoCaBOMix0", "CoCaBOMix1",
           "CoCaBOLearnedMix", "exp3_gamma", "exp3_probabilities"]


# -- the kernel -------------------------------------------------------------------------------------
#: kernels on the continuous inputs
CONT_KERNELS = ("matern52", "rbf")


def check_mix(mix: Any) -> float | None:
    """The mixture weight as a float in ``[0, 1]``, or ``None`` for ``"learn"``; ``ValueError`` otherwise."""
    if isinstance(mix, str) and mix == "learn":
        return None
    try:
        return check_float("mix", mix, minimum=0.0, maximum=1.0)
    except (TypeError, ValueError):
        raise ValueError(f"mix must be a number in [0, 1] or 'learn', got {mix!r}") from None


class CoCaBOKernel:
    """CoCaBO's mixture of an overlap kernel and a Matérn-5/2 (or RBF) kernel; see the module docstring.

    The interface is that of :class:`~graphbo.kernels.frequency_modulated.FMKernel`, so
    :class:`~graphbo.models.mixed_gp.MixedGP` fits it: hyper-parameters in one unconstrained vector
    (``log_w``: overlap weights, ``log_ls``: lengthscales, ``logit_mix``: the learned weight).

    Parameters
    ----------
    n_categorical : number of discrete (categorical) inputs ``h``
    n_continuous : number of continuous inputs ``x`` (unit-scaled)
    mix : float in [0, 1] or "learn"
    ard : bool, default False
        One weight per categorical input and one lengthscale per continuous input (the reference
        code's default is off, as here).
    cont_kernel : "matern52" or "rbf"
    normalize_sum : bool
        Halve the sum term as the reference code.
    """

    def __init__(self, n_categorical: int, n_continuous: int, *, mix: float | str = 0.5, ard: bool = False,
                 cont_kernel: str = "matern52", normalize_sum: bool = False, dtype: torch.dtype = torch.float64):
        self.P, self.Dc = int(n_categorical), int(n_continuous)
        self.mix: float | None = check_mix(mix)
        self.cont_kernel = check_choice("cont_kernel", cont_kernel, CONT_KERNELS)
        self.ard, self.dtype = bool(ard), dtype
        self.sum_scale = 0.5 if normalize_sum else 1.0
        layout = []
        if self.P:
            layout.append(("log_w", self.P if self.ard else 0))
        if self.Dc:
            layout.append(("log_ls", self.Dc if self.ard else 1))
        if self.mix is None:
            layout.append(("logit_mix", 1))
        self.layout = [(n, k) for n, k in layout if k > 0]
        self.size = sum(k for _, k in self.layout)

    # -- parameters ---------------------------------------------------------------------
    def unpack(self, params: torch.Tensor) -> dict[str, torch.Tensor]:
        return unpack_params(self.layout, params)

    def default_params(self) -> torch.Tensor:
        """Equal overlap weights, lengthscale 0.2 (the reference code's initial value), ``lambda = 0.5``."""
        p = torch.zeros(self.size, dtype=self.dtype)
        k = 0
        for name, size in self.layout:
            if name == "log_ls":
                p[k:k + size] = math.log(0.2)
            k += size
        return p

    def random_params(self, rng: np.random.Generator) -> torch.Tensor:
        """A random ML-II starting point: the defaults plus N(0, 1) noise."""
        return self.default_params() + torch.tensor(rng.normal(0.0, 1.0, self.size), dtype=self.dtype)

    def log_prior(self, params: torch.Tensor) -> torch.Tensor:
        """Weak ``N(0, 3^2)`` priors on every unconstrained coordinate."""
        return -0.5 * (params / 3.0).square().sum()

    def mix_value(self, params: torch.Tensor) -> torch.Tensor:
        """``lambda`` (fixed, or the sigmoid of the learned coordinate)."""
        if self.mix is not None:
            return torch.tensor(self.mix, dtype=self.dtype)
        return torch.sigmoid(self.unpack(params)["logit_mix"][0])

    # -- kernel -------------------------------------------------------------------------------
    def k_h(self, params: torch.Tensor, V1: torch.Tensor, *, V2: torch.Tensor) -> torch.Tensor:
        """Overlap kernel ``sum_j w_j [h_j = h'_j] / sum_j w_j``; all ones without categorical inputs."""
        if self.P == 0:
            return torch.ones(V1.shape[0], V2.shape[0], dtype=self.dtype)
        same = (V1[:, None, :] == V2[None, :, :]).to(self.dtype)
        if self.ard:
            w = torch.softmax(self.unpack(params)["log_w"], 0)  # = exp(log_w) / sum(exp(log_w))
            return same @ w
        return same.mean(-1)

    def k_x(self, params: torch.Tensor, C1: torch.Tensor, *, C2: torch.Tensor) -> torch.Tensor:
        """Matérn-5/2 or RBF kernel on the continuous inputs; all ones without continuous inputs."""
        if self.Dc == 0:
            return torch.ones(C1.shape[0], C2.shape[0], dtype=self.dtype)
        ls = torch.exp(self.unpack(params)["log_ls"])
        r2 = ((C1[:, None, :] - C2[None, :, :]) / ls).square().sum(-1)
        if self.cont_kernel == "rbf":
            return torch.exp(-0.5 * r2)
        # clamp: finite gradients at r = 0, where the Matern-5/2 derivative in r vanishes anyway
        r = r2.clamp_min(1e-30).sqrt()
        s5r = math.sqrt(5.0) * r
        return (1.0 + s5r + (5.0 / 3.0) * r2) * torch.exp(-s5r)

    def __call__(self, params: torch.Tensor, V1: torch.Tensor, C1: torch.Tensor,
                 V2: torch.Tensor | None = None, C2: torch.Tensor | None = None) -> torch.Tensor:
        """Gram matrix ``(n1, n2)`` between (categorical index rows, unit continuous rows)."""
        V2 = V1 if V2 is None else V2
        C2 = C1 if C2 is None else C2
        kh, kx = self.k_h(params, V1, V2=V2), self.k_x(params, C1, C2=C2)
        lam = self.mix_value(params)
        return (1.0 - lam) * self.sum_scale * (kh + kx) + lam * kh * kx

    def diag(self, params: torch.Tensor, V: torch.Tensor, *, C: torch.Tensor) -> torch.Tensor:
        """``k(z, z)``: ``k_h = k_x = 1`` on the diagonal."""
        lam = self.mix_value(params)
        value = (1.0 - lam) * self.sum_scale * 2.0 + lam
        return value * torch.ones(V.shape[0], dtype=self.dtype)


# -- EXP3 ------------------------------------------------------------------------------------------------
def exp3_gamma(n_arms: int, budget: int) -> float:
    """CoCaBO's EXP3 exploration rate ``min(1, sqrt(C log C / ((e - 1) 2 budget / 3)))``."""
    if n_arms <= 1:
        return 0.0
    horizon = max(2.0 * budget / 3.0, 1.0)
    return float(min(1.0, math.sqrt(n_arms * math.log(n_arms) / ((math.e - 1.0) * horizon))))


def exp3_probabilities(log_weights: np.ndarray, gamma: float) -> np.ndarray:
    """``(1 - gamma) W / sum(W) + gamma / C`` from ``log W``."""
    lw = np.asarray(log_weights, dtype=float)
    w = np.exp(lw - lw.max())
    return (1.0 - gamma) * w / w.sum() + gamma / lw.size


# -- the optimizer ---------------------------------------------------------------------------------------------
class CoCaBO(Optimizer):
    """CoCaBO (Ru et al., 2020): EXP3 agents pick the categories, GP-BO the continuous values.

    Parameters
    ----------
    space : Space
        Any mix of discrete variables (all treated as categorical) and continuous ones.
    seed, n_initial, initial_configs : as for every optimizer.
    mix : float in [0, 1] or "learn", default 0.5
        The mixture weight ``lambda`` (BO-FM compares 0, 0.5 and 1; 0.5 is the reference code's default).
    acquisition : {"ucb", "ei"}, default "ucb"
        ``"ucb"``: minimise ``mean - kappa * sd`` (the reference experiments' LCB); ``"ei"``: expected improvement.
    kappa : float, default 2.0
    budget : int, default 200
        Number of bandit rounds expected, which sets EXP3's ``gamma`` (the reference code uses its
        iteration budget).
    ard : bool, default False
        ARD weights on the overlap kernel and ARD lengthscales on the continuous kernel. Off by
        default, as in the reference code (``CoCaBO_Base(ard=False)``), which the BO-FM paper's
        CoCaBO numbers come from; with ARD our Func2C/Func3C runs ended on a wrong category more
        often (``results/diagnostics/cocabo-ard-true``).
    cont_kernel : {"matern52", "rbf"}, default "matern52"
    normalize_sum : bool, default False
        Use the reference code's ``(1 - lambda)(k_h + k_x) / 2`` instead of the paper's ``(1 - lambda)(k_h + k_x)``.
    n_restarts : int, default 5
        ML-II restarts (the reference code's 5; the previous optimum is one of them).
    refit_interval : int, default 1
        Re-fit the hyper-parameters every this many suggestions and reuse them in between
        (the reference code re-fits every 10 iterations).
    n_random, n_starts : int, defaults 5000, 3
        Random points scored and L-BFGS-B starts (the best of them) of the acquisition optimisation
        (the names of COMBO's and BO-FM's options for the same).
    max_train : int or None, default 500
        Most observations the GP is fitted on, as for every GP-based optimizer of graphbo
        (:func:`~graphbo.optimizers.base.training_subset`; ``None``: all of them). The bandits'
        rewards still see every observation.
    """

    name = "cocabo"

    def __init__(self, space: Space, *, seed: int | None = None, n_initial: int = 10,
                 initial_configs: Configs | None = None, mix: float | str = 0.5, acquisition: str = "ucb",
                 kappa: float = 2.0, budget: int = 200, ard: bool = False, cont_kernel: str = "matern52",
                 normalize_sum: bool = False, n_restarts: int = 5, refit_interval: int = 1, n_random: int = 5000,
                 n_starts: int = 3, max_train: int | None = DEFAULT_MAX_TRAIN):
        check_mix(mix)
        acquisition = check_choice("acquisition", acquisition.lower() if isinstance(acquisition, str) else acquisition,
                                   ("ucb", "lcb", "ei"))
        self.acquisition = "ucb" if acquisition == "lcb" else acquisition
        self.kappa = check_float("kappa", kappa, minimum=0.0)
        self.budget = check_int("budget", budget, minimum=1)
        ard, normalize_sum = check_bool("ard", ard), check_bool("normalize_sum", normalize_sum)
        cont_kernel = check_choice("cont_kernel", cont_kernel, CONT_KERNELS)
        n_restarts = check_int("n_restarts", n_restarts, minimum=1)
        self.refit_interval = check_int("refit_interval", refit_interval, minimum=1)
        self.n_random = check_int("n_random", n_random, minimum=1)
        self.n_starts = check_int("n_starts", n_starts, minimum=1)
        self.max_train = check_max_train(max_train)
        super().__init__(space, seed=seed, n_initial=n_initial, initial_configs=initial_configs)
        self._disc = space.discrete_indices
        self._cont = space.continuous_indices
        self.kernel = CoCaBOKernel(len(self._disc), len(self._cont), mix=mix, ard=ard, cont_kernel=cont_kernel,
                                   normalize_sum=normalize_sum)
        self.model = MixedGP(self.kernel, space, n_restarts=n_restarts)
        self.n_arms = [int(space.n_values[j]) for j in self._disc]
        self.gammas = [exp3_gamma(c, self.budget) for c in self.n_arms]
        self.log_weights = [np.zeros(c) for c in self.n_arms]
        # suggestion row -> (row, categories drawn, their probabilities), until told
        self._bandit_pending: dict[bytes, tuple[np.ndarray, np.ndarray, list[np.ndarray]]] = {}
        self._n_suggested = 0
        self.last_timing: dict[str, float] = {}

    # -- bandits --------------------------------------------------------------------------------
    def bandit_probabilities(self) -> list[np.ndarray]:
        """The current EXP3 distribution of every categorical variable, in the space's discrete order."""
        return [exp3_probabilities(lw, g) for lw, g in zip(self.log_weights, self.gammas)]

    def _draw_categories(self) -> tuple[np.ndarray, list[np.ndarray]]:
        probs = self.bandit_probabilities()
        ht = np.array([int(self.rng.choice(p.size, p=p)) for p in probs], dtype=np.int64)
        return ht, probs

    def _pop_pending(self, row: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]] | None:
        """The bandit draw behind a suggestion, matched exactly or (after a lossy round trip) within 1e-9."""
        key: bytes | None = row.tobytes()
        if key not in self._bandit_pending:
            key = next((k for k, (r, _, _) in self._bandit_pending.items()
                        if np.allclose(r, row, rtol=0.0, atol=1e-9)), None)
            if key is None:
                return None
        _, ht, probs = self._bandit_pending.pop(key)
        return ht, probs

    def _observe(self, row: np.ndarray, value: float) -> None:
        rec = self._pop_pending(row)
        if rec is None or not self._disc.size:
            return
        ht, probs = rec
        H = np.vstack([self.X[:, self._disc], row[self._disc][None]]) if self._y else row[self._disc][None]
        ys = np.append(self.y, value)
        for j, (h, p) in enumerate(zip(ht, probs)):
            reward = -float(ys[H[:, j] == h].min())
            self.log_weights[j][h] += self.gammas[j] * reward / (float(p[h]) * self.n_arms[j])

    def mark_failed(self, config: Mapping[str, Any]) -> None:
        self._pop_pending(self.space.to_index(config))
        super().mark_failed(config)

    # -- model -------------------------------------------------------------------------------------
    def _fit(self) -> None:
        train = self._training_indices(self.y)  # every observation up to max_train
        X, y = self.X[train], self.y[train]
        if self.model.params is None or self._n_suggested % self.refit_interval == 0:
            self.model.fit(X, y, rng=self.rng)
        else:  # reuse the hyper-parameters, condition on the current data
            self.model.condition(X, y)

    def _acquisition_fn(self) -> AcquisitionFunction:
        if self.acquisition == "ei":
            return LogExpectedImprovement(self.model)
        return NegativeLowerConfidenceBound(self.model, self.kappa)

    def _optimize_continuous(self, acq: AcquisitionFunction, ht: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Candidate continuous parts (unit rows), best acquisition first, for the categories ``ht``."""
        dc = self._cont.size
        variables = [self.space.variables[j] for j in self._cont]

        def snap(C: np.ndarray) -> np.ndarray:
            for i, var in enumerate(variables):
                C[:, i] = var.snap(C[:, i])
            return C

        disc_t, cont_t = torch.as_tensor(self._disc, dtype=torch.long), torch.as_tensor(self._cont, dtype=torch.long)

        def rows_of(C: torch.Tensor) -> torch.Tensor:
            """Mixed rows with the categories ``ht`` and the continuous parts ``C`` (gradients flow to C)."""
            rows = torch.zeros(C.shape[0], len(self.space), dtype=torch.float64)
            rows[:, disc_t] = torch.as_tensor(ht, dtype=torch.float64)
            rows[:, cont_t] = C
            return rows

        def score(C: np.ndarray) -> np.ndarray:
            out = []
            with torch.no_grad():
                for s in range(0, C.shape[0], 2000):
                    out.append(acq(rows_of(torch.as_tensor(C[s:s + 2000], dtype=torch.float64))).numpy())
            return np.concatenate(out)

        pool = snap(self.rng.random((self.n_random, dc)))
        vals = score(pool)
        top = np.argsort(-vals, kind="stable")[: self.n_starts]
        starts = pool[top].copy()

        def fun(x: np.ndarray):
            C = torch.tensor(x.reshape(-1, dc), dtype=torch.float64, requires_grad=True)
            val = -acq(rows_of(C)).sum()
            (g,) = torch.autograd.grad(val, C)
            if not torch.isfinite(val) or not torch.isfinite(g).all():
                return 1e10, np.zeros_like(x)
            return float(val.detach()), g.numpy().reshape(-1).astype(float)

        res = scipy.optimize.minimize(fun, starts.reshape(-1), jac=True, method="L-BFGS-B",
                                      bounds=[(0.0, 1.0)] * starts.size, options={"maxiter": 100})
        local = snap(np.clip(res.x.reshape(-1, dc), 0.0, 1.0))
        cand = np.concatenate([local, pool])
        cand_vals = np.concatenate([score(local), vals])
        order = np.argsort(-cand_vals, kind="stable")
        return cand[order], cand_vals[order]

    # -- suggestion -------------------------------------------------------------------------------
    def _canonical(self, row: np.ndarray) -> np.ndarray:
        """The row that ``tell`` will compute for this suggestion (native values round-trip)."""
        return self.space.to_index(self.space.from_index(row))

    def _suggest(self) -> np.ndarray:
        exclude = self._exclude
        if self.n_told < 2:
            return self._distinct_random_rows(1, exclude)[0]
        t0 = time.perf_counter()
        self._fit()
        t1 = time.perf_counter()
        self._n_suggested += 1
        acq = self._acquisition_fn()
        for _ in range(50):  # redraw the categories if every candidate for them was evaluated already
            ht, probs = self._draw_categories()
            row = np.zeros(len(self.space), dtype=float)
            row[self._disc] = ht
            if self._cont.size:
                cands, _ = self._optimize_continuous(acq, ht)
                found = None
                for c in cands:
                    row[self._cont] = c
                    r = self._canonical(row)
                    if r.tobytes() not in exclude:
                        found = r
                        break
            else:
                r = self._canonical(row)
                found = None if r.tobytes() in exclude else r
            if found is not None:
                self._bandit_pending[found.tobytes()] = (found, ht, probs)
                self.last_timing = {"fit": t1 - t0, "acquisition": time.perf_counter() - t1}
                return found
        return self._distinct_random_rows(1, exclude)[0]

    # -- state ---------------------------------------------------------------------------------------
    @property
    def mix_used(self) -> float | None:
        """The mixture weight ``lambda`` of the current model (``None`` before the first fit)."""
        if self.kernel.mix is not None:
            return self.kernel.mix
        if self.model.params is None:
            return None
        return float(self.kernel.mix_value(self.model.params[: self.kernel.size]))

    def _method_state(self) -> dict[str, Any]:
        state: dict[str, Any] = {"log_weights": [lw.tolist() for lw in self.log_weights],
                                 "n_suggested": self._n_suggested}
        if self.model.params is not None:
            state["params"] = self.model.params.tolist()
        return state

    def _load_method_state(self, state: Mapping[str, Any]) -> None:
        self.model.params = torch.tensor(state["params"], dtype=torch.float64) if "params" in state else None
        if "log_weights" in state:
            self.log_weights = [np.asarray(lw, dtype=float) for lw in state["log_weights"]]
        self._n_suggested = int(state.get("n_suggested", 0))
        self._bandit_pending.clear()


# -- named variants ---------------------------------------------------------------------------------------------
def cocabo_variant(mix: float | str, class_name: str | None = None) -> type[CoCaBO]:
    """A :class:`CoCaBO` subclass whose mixture weight is fixed to ``mix`` (for ``METHODS`` names).

    Passing ``mix=`` to the subclass is an error unless it equals the fixed value.
    """
    check_mix(mix)
    label = mix if isinstance(mix, str) else f"{float(mix):g}"

    def __init__(self, space: Space, **options: Any):
        if "mix" in options and options["mix"] != mix:
            raise ValueError(f"{type(self).name}: the mixture weight is fixed to {mix!r}, got mix={options['mix']!r}")
        options["mix"] = mix
        CoCaBO.__init__(self, space, **options)

    setattr(__init__, "__signature__", signature_without(CoCaBO, "mix"))

    name = class_name or f"CoCaBO_{label}".replace(".", "_")
    cls = type(name, (CoCaBO,), {"__init__": __init__, "name": f"cocabo-{label}",
                                 "__doc__": f"CoCaBO with the mixture weight fixed to {label}."})
    cls.__module__ = __name__
    cls.__qualname__ = name
    return cls


CoCaBOMix0 = cocabo_variant(0.0, "CoCaBOMix0")
CoCaBOMix1 = cocabo_variant(1.0, "CoCaBOMix1")
CoCaBOLearnedMix = cocabo_variant("learn", "CoCaBOLearnedMix")
