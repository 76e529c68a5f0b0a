"""BO-FM: mixed-variable BO with frequency-modulated kernels (Oh, Gavves, Welling, UAI 2021).

Each suggestion fits a GP with an FM kernel by type-II maximum likelihood
(:class:`~graphbo.models.mixed_gp.MixedGP`, 10 restarts) and maximises EI by
random + spray starts followed by alternating hill climbing and L-BFGS-B
(:func:`~graphbo.optim.mixed.optimize_acquisition_mixed`: supplement D.1's
per-start alternation, a start polished as soon as its hill-climbing step stalls).
Pending (asked, not yet told) configurations are hallucinated at their
posterior mean (kriging believer), so ``ask(n)`` spreads its ``n`` suggestions.
"""

from __future__ import annotations

import time
from typing import Any, Mapping

import numpy as np
import torch

from ..optim.mixed import optimize_acquisition_mixed
from ..optim.known_constraints import allowed_only
from ..optim.trust_region import TrustRegion, as_trust_region_options
from .._validation import check_bool, check_choice, check_device, check_int
from ..kernels.frequency_modulated import KERNELS, FMKernel
from ..models.mixed_gp import MixedGP
from ..spaces.space import Space
from .auto import TR_MIN_DIMENSIONS, dimensions
from .base import DEFAULT_MAX_TRAIN, Configs, Optimizer, check_max_train, signature_without

__all__ = ["BOFM", "SCALED_PRIOR_MIN_DIMENSIONS"]

#: :class:`BOFM` fits with the dimension-scaled priors from this many effective variables
#: (:func:`graphbo.optimizers.auto.dimensions`), with the weak priors below: measured on the 53-dimensional
#: Ackley, where the weak priors' fit ranked the neighbours of the incumbent with Spearman 0.20 and the scaled
#: ones 0.79 (docs/bofm_benchmarks.md, "Priors in many dimensions"). Below it the paper's rows were measured
#: with the weak priors, which tie with or beat the marginal likelihood alone (docs/bofm_benchmarks.md, "The
#: prior's effect on 20 paired seeds"). The same threshold as the trust region's
#: (:data:`~graphbo.optimizers.auto.TR_MIN_DIMENSIONS`).
SCALED_PRIOR_MIN_DIMENSIONS = TR_MIN_DIMENSIONS


class BOFM(Optimizer):
    """Bayesian optimisation on mixed spaces with a frequency-modulated kernel.

    The hyper-parameters maximise the marginal likelihood plus priors on the kernel's log-scales
    (:class:`~graphbo.models.mixed_gp.MixedGP` with ``prior="weak"``): the weak priors ``N(0, 3^2)``
    below :data:`SCALED_PRIOR_MIN_DIMENSIONS` effective variables, priors scaled with the number of
    variables (Hvarfner et al. 2024, :meth:`~graphbo.kernels.FMKernel.scaled_centre`) from there on;
    :attr:`prior` says which. BO-FM Sec. 5 states the marginal likelihood alone; the weak priors
    tie with it or do better (docs/bofm_benchmarks.md, "Fit priors").

    Parameters
    ----------
    space : Space
        Any mix of discrete (graph) and continuous variables.
    seed, n_initial, initial_configs : as for every optimizer.
    kernel : str, default "modlap"
        ``modlap``, ``moddif``, ``general``, ``fnn``, or a comparison kernel
        ``prodlap``, ``addlap``, ``proddif``, ``adddif``.
    n_restarts : int, default 10
        ML-II restarts (the previous optimum is one of them).
    restart_every : int, default 10
        The ML-II restarts run at the first fit and every ``restart_every``-th fit after
        it; the fits between start from the previous optimum alone, and run the restarts
        when that fails or ends worse than the default hyper-parameters
        (:class:`~graphbo.models.mixed_gp.MixedGP`). ``1``: restarts at every fit.
    log_y : bool, default False
        Fit the GP on log-transformed values (BO-FM Sec. 5.3).
    n_random, n_spray, n_starts : int, defaults 20000, 50, 40
        Acquisition starting pool and number of alternating searches (supplement D.1, whose pool has
        100,000 random rows; the methods of the paper's tables, ``bofm-modlap``, ``bofm-moddif``, ...,
        keep 100,000). The smaller default halves the acquisition step on the NAS + SGD space and
        reached the same acquisition value in 93 of 96 fitted models (2 lower by at most 2e-8 in
        log-EI, 1 higher by 6e-4; docs/bofm_benchmarks.md, "The pool's size"): the start that wins
        is nearly always a spray point near the incumbent.
    trust_region : bool or dict, default False
        Search only a trust region around the best point of the current region (CASMOPOLITAN,
        Wan et al. 2021; :mod:`graphbo.optim.trust_region`, docs/trust_regions.md): a Hamming
        ball on the categorical part times a box on the ordinal (in index steps) and continuous
        parts, which expand after
        successes, shrink after failures and restart with a new random design when too small.
        ``True`` takes CASMOPOLITAN's constants; a dict overrides some. The GP is fitted to all
        the data (up to ``max_train``).
    max_train : int or None, default 500
        Most observations the GP is fitted on (``>= 20``; ``None``: all of them). Beyond it the fit
        uses the best ones, the most recent ones and a seeded uniform sample of the others
        (:func:`~graphbo.optimizers.base.training_subset`), so a suggestion costs the same at
        10,000 told trials as at ``max_train`` (docs/reliability.md, "Load"). Every evaluated
        configuration stays excluded from the suggestions, and EI's incumbent is the best of all
        the observations. :attr:`last_training_indices` holds the trials of the last fit.
    device : str or torch.device, optional
        torch device of the GP (kernel tables, training rows, hyper-parameters, Gram matrix and
        Cholesky factor): ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``; it must be available on
        this machine. ``None``: CPU. The acquisition optimiser's rows and L-BFGS-B's vectors stay
        NumPy and cross to the device at the model's boundary (:class:`~graphbo.models.mixed_gp.MixedGP`).
        The saved state is plain floats, so a run can resume on another device; in a
        :class:`~graphbo.Study` pass it in ``runtime_options`` (not stored) to allow that.
        docs/measurements.md ("GPU") says what is measured.
    """

    models_constraints = True

    name = "bofm"

    def __init__(self, space: Space, *, seed: int | None = None, n_initial: int = 10,
                 initial_configs: Configs | None = None, kernel: str = "modlap", n_restarts: int = 10,
                 log_y: bool = False, n_random: int = 20_000, n_spray: int = 50, n_starts: int = 40,
                 trust_region: bool | dict = False,
                 restart_every: int = 10, max_train: int | None = DEFAULT_MAX_TRAIN,
                 device: str | torch.device | None = None):
        kernel = check_choice("kernel", kernel, KERNELS)
        n_restarts = check_int("n_restarts", n_restarts, minimum=1)
        log_y = check_bool("log_y", log_y)
        self.n_random = check_int("n_random", n_random, minimum=1)
        self.n_spray = check_int("n_spray", n_spray, minimum=0)
        self.n_starts = check_int("n_starts", n_starts, minimum=1)
        tr_options = as_trust_region_options("trust_region", trust_region)
        self.max_train = check_max_train(max_train)
        device = check_device("device", device)
        super().__init__(space, seed=seed, n_initial=n_initial, initial_configs=initial_configs)
        #: the kernel's priors of the fit: ``"scaled"`` from :data:`SCALED_PRIOR_MIN_DIMENSIONS` effective
        #: variables, else ``"weak"`` (:class:`~graphbo.kernels.FMKernel`'s ``prior``)
        self.prior: str = "scaled" if dimensions(space) >= SCALED_PRIOR_MIN_DIMENSIONS else "weak"
        spectra = [space.variables[j].spectrum for j in space.discrete_indices]
        self.kernel = FMKernel(kernel, spectra, n_continuous=len(space.continuous_indices), device=device,
                               prior=self.prior)
        self.model = MixedGP(self.kernel, space, n_restarts=n_restarts, log_y=log_y, prior="weak",
                             restart_every=restart_every, device=device)
        #: the trust region (CASMOPOLITAN), or None
        self.trust_region = None if tr_options is None else TrustRegion(space, n_initial, **tr_options)
        self.last_timing: dict[str, float] = {}

    def _suggest(self) -> np.ndarray:
        if self.n_told < 2:
            return self._distinct_random_rows(1, self._exclude)[0]
        tr = self.trust_region
        design = None if tr is None else tr.design_row(self._exclude, self.rng)
        if design is not None:  # a restarted trust region's initial design
            return design
        X, y = self.X, self.y
        t0, c0 = time.perf_counter(), time.process_time()
        train = self._fit()
        pending = np.stack(list(self._pending.values())) if self._pending else None
        if pending is not None:
            # kriging believer (Surrogate.add_fantasies): pending rows join the data at their posterior
            # mean, under the hyper-parameters fitted to the real data, so EI's exploration term
            # collapses at and near them
            self.model.add_fantasies(pending)
        acquisition = allowed_only(self._log_ei(y, X[train], pending), self.space)
        t1, c1 = time.perf_counter(), time.process_time()
        region = None if tr is None else tr.region()
        row, _ = optimize_acquisition_mixed(
            # incumbent: the best real (feasible) value, on the model's scale, of all observations
            # (training_subset keeps it); known constraints: refused rows score below every allowed one
            acquisition,
            self.space, rng=self.rng, incumbent=X[self._incumbent_index()] if region is None else region.centre,
            exclude=self._exclude, n_random=self.n_random, n_spray=self.n_spray, n_starts=self.n_starts,
            region=region,
        )
        # wall seconds, and CPU seconds of this process (less sensitive to other jobs on the machine)
        self.last_timing = {"fit": t1 - t0, "acquisition": time.perf_counter() - t1,
                            "fit_cpu": c1 - c0, "acquisition_cpu": time.process_time() - c1}
        return row

    def _fit(self) -> np.ndarray:
        """Fit :attr:`model` on the observations (up to ``max_train`` of them); returns the training indices."""
        train = self._training_indices(self.y)  # every observation up to max_train (its docstring)
        self.model.fit(self.X[train], self.y[train], rng=self.rng)
        return train

    def _observe(self, row: np.ndarray, value: float) -> None:
        if self.trust_region is not None:
            self.trust_region.observe(row, value)

    def _method_state(self) -> dict[str, Any]:
        out = {} if self.trust_region is None else {"trust_region": self.trust_region.state()}
        return {**self._surrogate_state(self.model), **out}

    def _surrogate_state(self, model: Any) -> dict[str, Any]:
        """The fitted hyper-parameters (the next fit's warm start) and the count of warm fits."""
        if model.params is None:
            return {}
        return {"params": model.params.tolist(), "warm_fits": model.warm_fits}

    def _load_method_state(self, state: Mapping[str, Any]) -> None:
        if self.trust_region is not None and "trust_region" in state:
            self.trust_region.load_state(state["trust_region"])
        self._load_surrogate_state(self.model, state)

    def _load_surrogate_state(self, model: Any, state: Mapping[str, Any]) -> None:
        # plain floats in the state: restored onto this run's device, whichever device saved them
        model.params = (torch.tensor(state["params"], dtype=torch.float64, device=model.device)
                        if "params" in state else None)
        model.warm_fits = int(state.get("warm_fits", 0))


#: random rows of D.1's acquisition pool ("100000 randomly sampled points"), kept by the paper's methods
PAPER_N_RANDOM = 100_000


def bofm_variant(kernel: str) -> type:
    """BOFM with ``kernel`` fixed (methods ``bofm-modlap``, ``bofm-prodlap``, ...), so that a
    comparison directory holds one method per kernel as in the BO-FM paper's tables; these keep the
    paper's pool of :data:`PAPER_N_RANDOM` random rows unless ``n_random`` is given."""
    check_choice("kernel", kernel, KERNELS)

    def __init__(self, space, **options):
        if "kernel" in options:
            raise TypeError(f"bofm-{kernel} fixes the kernel; use method 'bofm' to choose it")
        options.setdefault("n_random", PAPER_N_RANDOM)  # the paper's tables: D.1's pool, unless asked otherwise
        BOFM.__init__(self, space, kernel=kernel, **options)

    setattr(__init__, "__signature__", signature_without(BOFM, "kernel"))
    return type(f"BOFM_{kernel}", (BOFM,), {"__init__": __init__, "__doc__": f"BO-FM with the {kernel} kernel."})
