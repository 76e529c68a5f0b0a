"""COMBO: combinatorial BO on the graph Cartesian product (Oh et al., NeurIPS 2019).

Alg. 1 of the paper: fit a GP with the ARD diffusion kernel by slice
sampling (:class:`~graphbo.models.DiffusionGP`), average EI over the
posterior samples, and maximise it by random + spray vertices followed by
breadth-first local search on the graph
(:func:`~graphbo.acquisition.optimize_acquisition_on_graph`).
"""

from __future__ import annotations

import time
import warnings
from typing import Any, Mapping

import numpy as np
import torch

from ..exceptions import SpaceExhaustedError
from ..optim.graph_local_search import optimize_acquisition_on_graph
from ..optim.known_constraints import allowed_only
from ..optim.trim import trim_to_paid_changes
from ..optim.utils import as_scores
from ..optim.trust_region import TrustRegion, as_trust_region_options
from ..kernels.diffusion import KERNEL_FORMS, GraphDiffusionKernel
from ..models.diffusion_gp import DiffusionGP, HyperSample
from ..models.ordinal_warp import log_path_spectrum, log_warp_candidates
from ..spaces.space import Space
from ..spaces.variables import Categorical, IntegerRange, Variable
from .._validation import check_bool, check_choice, check_device, check_int
from .base import DEFAULT_MAX_TRAIN, Configs, Optimizer, check_max_train

__all__ = ["COMBO"]


class COMBO(Optimizer):
    """Combinatorial Bayesian optimisation with the ARD diffusion kernel.

    Parameters
    ----------
    space : Space
        A space of discrete variables (Binary, Categorical, Ordinal, GraphVariable).
    seed : int, optional
        Seed of every random choice; the same seed and the same told values
        give the same suggestions.
    n_initial : int, default 10
        Uniformly random configurations before the model takes over.
    initial_configs : list of dict, optional
        Configurations to evaluate first.
    n_burn : int, default 100
        Slice-sampling burn-in sweeps at the first fit (paper: 100).
    n_samples : int, default 10
        Posterior samples per suggestion (paper: 10).
    beta_prior : {"horseshoe", "reference"}, default "horseshoe"
        How the Horseshoe prior on each ``beta_i`` enters the slice sampler of ``log beta_i``
        (:class:`~graphbo.models.diffusion_gp.DiffusionGP`): ``"horseshoe"``, the prior the paper
        states (a density on ``beta_i``, with the change of variables to ``log beta_i``); or
        ``"reference"``, as the authors' code (no Jacobian), which reproduces the paper's tables but
        with little data holds every ``beta_i`` near its lower bound, where the GP cannot generalise
        (docs/combo_prior.md). A state saved by a graphbo without this option was sampled with the
        reference density; it is loaded as it is and the chain moves to the chosen prior over the
        next fits.
    trim_proposals : bool or None, default None
        Set back the changes from the incumbent that the posterior mean does not pay for before suggesting
        (:func:`~graphbo.optim.trim.trim_to_paid_changes`; single objective without black-box constraints):
        the changes a maximiser of expected improvement makes only for the variance they add. ``None``: on
        spaces of binary and categorical variables only, where it was chosen on the broad suite's development
        half (docs/broad_suite.md, "Trimmed proposals": 10 seeds, better on the Ising torus and OneMax with
        epistasis, level elsewhere); not with ordinal or other graph variables, where it is not measured.
        ``False`` is the paper's acquisition optimiser (supplement Sec. 3), which the reproduction of its
        tables passes.
    kernel_form : {"diffusion", "matern52"}, default "diffusion"
        The ARD diffusion kernel of the paper, or the Matern-5/2 profile of its distance ``-log K``
        (on binary and categorical variables the weighted Hamming distance; the form of Optuna's
        GPSampler on categories), which keeps configurations many changes apart correlated
        (:class:`~graphbo.kernels.diffusion.GraphDiffusionKernel`).
    n_random, n_spray, n_starts : int, defaults 20000, 20, 20
        Acquisition optimiser: random vertices, spray vertices within graph
        distance 2 of the best evaluation, and local-search starts (supplement Sec. 3).
    device : str or torch.device, optional
        torch device for the GP algebra (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"``; it must be
        available on this machine); CPU by default.
    trust_region : bool or dict, default False
        Search only a trust region around the best point of the current region (CASMOPOLITAN,
        Wan et al. 2021; :mod:`graphbo.optim.trust_region`, docs/trust_regions.md): a Hamming
        ball over the categorical variables times a box in index steps over the ordinals of three
        or more values (``ordinals="hamming"`` puts them in the ball), which expands after
        successes, shrinks after failures and restarts with a new random design when it is too small. ``True`` takes CASMOPOLITAN's constants; a dict
        overrides some (``radius_init``, ``fail_tol``, ...). The GP is fitted to all the data
        (up to ``max_train``).
    max_train : int or None, default 500
        Most observations the GP is fitted on (``>= 20``; ``None``: all of them). Beyond it the fit
        uses the best ones, the most recent ones and a seeded uniform sample of the others
        (:func:`~graphbo.optimizers.base.training_subset`), so a suggestion costs the same at
        10,000 told trials as at ``max_train`` (docs/reliability.md, "Load"). Every evaluated
        configuration stays excluded from the suggestions, and EI's incumbent is the best of all
        the observations. :attr:`last_training_indices` holds the trials of the last fit.
    warp_ordinals : bool, default True
        Let the model put each long ordinal of positive numbers spanning a decade or more (a batch
        size, a width) on a log-spaced path instead of the evenly spaced one, chosen from the data
        with the other hyper-parameters (input warping, Snoek et al. 2014;
        :mod:`graphbo.models.ordinal_warp`, docs/combo_prior.md, "Log-scale integers"). Spaces
        without such ordinals are unaffected. :attr:`ordinal_scales` reports the choice.
    """

    models_constraints = True

    name = "combo"

    def __init__(self, space: Space, *, seed: int | None = None, n_initial: int = 10,
                 initial_configs: Configs | None = None, n_burn: int = 100, n_samples: int = 10,
                 n_random: int = 20000, n_spray: int = 20, n_starts: int = 20,
                 device: str | None = None, trust_region: bool | dict = False,
                 max_train: int | None = DEFAULT_MAX_TRAIN, beta_prior: str = "horseshoe",
                 warp_ordinals: bool = True, kernel_form: str = "diffusion", trim_proposals: bool | None = None):
        n_burn = check_int("n_burn", n_burn, minimum=0)
        n_samples = check_int("n_samples", n_samples, minimum=1)
        self.n_random = check_int("n_random", n_random, minimum=1)
        self.n_spray = check_int("n_spray", n_spray, minimum=0)
        self.n_starts = check_int("n_starts", n_starts, minimum=1)
        device = check_device("device", device)
        tr_options = as_trust_region_options("trust_region", trust_region)
        self.max_train = check_max_train(max_train)
        super().__init__(space, seed=seed, n_initial=n_initial, initial_configs=initial_configs)
        bad = [n for n in space.names if not isinstance(space[n], Variable)]
        if bad:
            what = "; ".join(f"{n!r} is an integer range (a rounded real; gb.Ordinal(range(low, high + 1)) is "
                             "discrete)" if isinstance(space[n], IntegerRange) else f"{n!r} is continuous"
                             for n in bad)
            raise ValueError(f"COMBO handles discrete variables only: {what}; use method 'bofm' for a mixed space "
                             "(graphbo.BOFM, --method bofm on the command line)")
        kernel_form = check_choice("kernel_form", kernel_form, KERNEL_FORMS)
        #: whether proposals are trimmed to the changes the posterior mean pays for
        self.trim_proposals = (all(isinstance(v, Categorical) for v in space.variables) if trim_proposals is None
                               else check_bool("trim_proposals", trim_proposals))
        kernel = GraphDiffusionKernel([v.spectrum for v in space.variables if isinstance(v, Variable)],
                                      device=device, form=kernel_form)
        warps = {}
        if check_bool("warp_ordinals", warp_ordinals):
            for j in log_warp_candidates(space.variables):
                var = space.variables[j]
                assert isinstance(var, Variable)  # log_warp_candidates keeps ordinals only
                spectrum = log_path_spectrum(var.values)
                assert spectrum is not None  # log_warp_candidates keeps only variables that have one
                warps[j] = spectrum
        self.model = DiffusionGP(kernel, n_burn=n_burn, n_samples=n_samples, beta_prior=beta_prior,
                                 warps=warps)
        #: the trust region (CASMOPOLITAN), or None
        self.trust_region = None if tr_options is None else TrustRegion(space, n_initial, **tr_options)
        self.last_acquisition_value: float | None = None
        #: seconds spent fitting and optimising the acquisition at the last model-based suggestion
        self.last_timing: dict[str, float] = {}

    def _suggest(self) -> np.ndarray:
        if self.n_told == 0:
            return self._distinct_random_rows(1, self._exclude)[0]
        tr = self.trust_region
        design = None if tr is None else tr.design_row(self._exclude, self.rng)
        if design is not None:  # a restarted trust region's initial design
            return design
        with torch.no_grad():
            t0 = time.perf_counter()
            X = self.X
            train, fit_y = self._fit()
            pending = np.stack(list(self._pending.values())) if self._pending else None
            if pending is not None:
                # kriging believer: pending rows at each posterior sample's mean (Surrogate.add_fantasies)
                self.model.add_fantasies(pending)
            t1 = time.perf_counter()
            # incumbent: the best real (feasible) value, that of all observations (training_subset always keeps it);
            # known constraints: refused rows score below every allowed one
            acquisition = allowed_only(self._log_ei(fit_y, X[train], pending), self.space)

            region = None if tr is None else tr.region()
            incumbent = X[self._incumbent_index()] if region is None else region.centre
            try:
                row, value = optimize_acquisition_on_graph(
                    acquisition,
                    self.space,
                    rng=self.rng,
                    incumbent=incumbent,
                    exclude=self._exclude,
                    n_random=self.n_random,
                    n_spray=self.n_spray,
                    n_starts=self.n_starts,
                    region=region,
                )
            except SpaceExhaustedError:
                if tr is None or region is None or self.space.size <= len(self._exclude):
                    raise
                tr.restart()  # every vertex of the region is evaluated or pending
                first = tr.design_row(self._exclude, self.rng)
                return self._distinct_random_rows(1, self._exclude)[0] if first is None else first
            if self.trim_proposals and not self._outcome_mode:
                model = self.model
                row = trim_to_paid_changes(row, incumbent, mean=lambda R: model.posterior(R).mean.mean(0).cpu().numpy(),
                                           exclude=self._exclude, allowed=self.space.allowed_rows)
                value = float(as_scores(acquisition(row[None]))[0])
        self.last_timing = {"fit": t1 - t0, "acquisition": time.perf_counter() - t1}
        self.last_acquisition_value = value
        return row

    def _fit(self) -> tuple[np.ndarray, np.ndarray]:
        """Fit :attr:`model` on the observations (up to ``max_train`` of them); returns the training indices
        and the values of every observation."""
        y = self.y
        train = self._training_indices(y)  # every observation up to max_train (its docstring)
        with torch.no_grad():
            self.model.fit(self.X[train], y[train], rng=self.rng)
        return train, y

    def _observe(self, row: np.ndarray, value: float) -> None:
        if self.trust_region is not None:
            self.trust_region.observe(row, value)

    def _method_state(self) -> dict[str, Any]:
        out = {} if self.trust_region is None else {"trust_region": self.trust_region.state()}
        if self.model.state is None:
            return out
        out.update(self._surrogate_state(self.model))
        if self.model.warp_positions.size:
            out["ordinal_scales"] = self.ordinal_scales
        return {**out, "beta": self.beta, "relevance": self.relevance, "beta_prior": self.model.beta_prior}

    def _surrogate_state(self, model: Any) -> dict[str, Any]:
        """The slice sampler's last sample and adapted widths, and the ordinals' chosen paths: a resumed chain
        continues the same."""
        st = model.state
        if st is None:
            return {}
        out: dict[str, Any] = {"mean": st.mean, "log_amp": st.log_amp, "log_noise": st.log_noise,
                               "log_beta": st.log_beta.tolist()}
        if model.widths is not None:
            out["widths"] = model.widths.tolist()
        if model.warp_positions.size:
            out["warp"] = model.warp.tolist()
        return out

    def _load_method_state(self, state: Mapping[str, Any]) -> None:
        if self.trust_region is not None and "trust_region" in state:
            self.trust_region.load_state(state["trust_region"])
        if "log_beta" in state:
            saved = state.get("beta_prior", "reference")  # states from before the option ran the reference sampler
            if saved != self.model.beta_prior:
                warnings.warn(f"COMBO: the saved chain was sampled with beta_prior={saved!r}; it continues under "
                              f"beta_prior={self.model.beta_prior!r} (pass beta_prior={saved!r} to keep its prior)",
                              stacklevel=2)
        self._load_surrogate_state(self.model, state)

    def _load_surrogate_state(self, model: Any, state: Mapping[str, Any]) -> None:
        if "log_beta" in state:
            model.state = HyperSample(mean=float(state["mean"]), log_amp=float(state["log_amp"]),
                                      log_noise=float(state["log_noise"]),
                                      log_beta=np.asarray(state["log_beta"], dtype=float))
        else:
            model.state = None
        model.widths = np.asarray(state["widths"], dtype=float) if "widths" in state else None
        warp = state.get("warp")
        n_warp = model.warp_positions.size
        if warp is not None and len(warp) != n_warp:
            warnings.warn(f"COMBO: the saved state chose graphs for {len(warp)} ordinal(s), this optimizer warps "
                          f"{n_warp} (warp_ordinals differs?); its ordinals start on the evenly spaced path",
                          stacklevel=2)
            warp = None
        model.set_warp(np.zeros(n_warp, dtype=bool) if warp is None else np.asarray(warp))

    @property
    def relevance(self) -> dict[str, float]:
        """How much each variable matters to the model at the last fit, from 0 (no effect) to 1.

        ``1 -`` the mean correlation between distinct values of the variable under its kernel
        factor, averaged over the posterior samples
        (:attr:`~graphbo.models.DiffusionGP.relevance_posterior_mean`); it grows with importance.
        Empty before the first fit.
        """
        if not self.model.samples:
            return {}
        return dict(zip(self.space.names, map(float, self.model.relevance_posterior_mean)))

    @property
    def kernel(self) -> GraphDiffusionKernel:
        """The model's diffusion kernel (over the graphs :attr:`ordinal_scales` has chosen)."""
        return self.model.kernel

    @property
    def ordinal_scales(self) -> dict[str, str]:
        """The path each warpable ordinal is on at the last fit (``"linear"`` before it): ``"log"`` or ``"linear"``;
        empty when the space has none or the option is off."""
        names = [self.space.names[int(j)] for j in self.model.warp_positions]
        return {n: "log" if w else "linear" for n, w in zip(names, self.model.warp)}

    @property
    def beta(self) -> dict[str, float]:
        """Posterior mean of each diffusion parameter ``beta_i`` at the last fit (empty before it).

        The kernel's own parameter (Eq. 5), which reads the opposite way to :attr:`relevance`:
        a large ``beta_i`` makes the variable's kernel factor constant (the variable has little
        effect), a small one makes only equal values correlate.
        """
        if not self.model.samples:
            return {}
        return dict(zip(self.space.names, map(float, self.model.beta_posterior_mean)))
