"""Optuna's GPSampler behind graphbo's ask/tell: the Gaussian-process BO that practitioners run today.

``optuna.samplers.GPSampler`` (Optuna >= 3.6) fits a GP with an ARD Matérn-5/2
kernel on the numerical parameters and a Hamming-type kernel on the categorical
ones (hyper-parameters by MAP with Gamma priors), and maximises log-EI (Ament
et al., 2023, "Unexpected improvements to expected improvement", Eq. 4;
q-batch log-EI with pending trials) by quasi-random candidates followed by
L-BFGS-B on the continuous and line or exhaustive search on the discrete
parameters. It is a peer graphbo is compared with, run through the
same harness (``graphbo compare --methods gp-optuna``), seeds and budgets.

Requires ``optuna`` with ``torch`` and ``scipy`` (``pip install "graphbo[tpe]"``);
imported when the optimizer is constructed, never at ``import graphbo``.
"""

from __future__ import annotations

import types
import warnings
from typing import Any, Mapping

from .._validation import check_bool, check_optional_int
from ..spaces.space import Space
from .base import Configs
from .tpe import OptunaOptimizer

__all__ = ["OptunaGP"]


class OptunaGP(OptunaOptimizer):
    """Optuna's ``GPSampler`` as a graphbo method (``gp-optuna``) on any graphbo space.

    Variables map onto Optuna distributions as for :class:`~graphbo.optimizers.tpe.TPE`:
    Binary, Categorical and GraphVariable -> ``CategoricalDistribution`` over value
    indices (GPSampler's categorical kernel: 0 for equal, 1 for different values,
    per dimension; a GraphVariable's graph is ignored); Ordinal ->
    ``IntDistribution(0, k - 1)`` over value indices; a rounded-continuous
    Integer -> ``IntDistribution(low, high, log=log)``; Continuous ->
    ``FloatDistribution(low, high, log=log)``. Integer distributions, not
    categorical ones, for the ordered variables because GPSampler's Matérn kernel
    then sees their order (nearby levels correlate, so 3 variables of 200 levels
    are a smooth 3-dimensional problem, not 600 unrelated one-hot levels), and its
    acquisition search moves along them by line search; a categorical
    distribution would make every pair of levels equally far apart.

    The study lives in memory and minimises; the sampler is seeded with
    :attr:`library_seed` (one integer drawn from the graphbo seed's generator
    after the shared random initial design), so the same seed gives the same
    suggestions. ``n_startup_trials`` defaults to the initial design's length:
    the GP models from the first suggestion after it (before that, when asks
    outrun tells, Optuna's seeded random sampler proposes). Pending suggestions
    are running trials, which GPSampler conditions on (q-batch log-EI).
    Duplicates, failures and the random fallback are as for TPE (see
    :class:`~graphbo.optimizers.tpe.OptunaOptimizer`): a failed configuration is a
    ``FAIL`` trial, which the GP ignores.

    Resume: a study replays the told data into a new instance (each a trial of
    the Optuna study), then :meth:`set_state` restores the sampler's random states
    and its cached kernel hyper-parameters (the starting point of the next fit),
    so a resumed run makes the suggestions an uninterrupted one would have made.

    Parameters
    ----------
    space, seed, n_initial, initial_configs
        As for :class:`~graphbo.optimizers.base.Optimizer`.
    n_startup_trials : int, optional
        Completed trials before the GP models; default: the initial design's length.
    deterministic_objective : bool, default False
        Fix the GP's noise variance at its minimum (Optuna's option); the default,
        like Optuna's, learns it.
    max_retries : int, default 20
        Proposals rejected as duplicates before the random fallback.
    """

    name = "gp-optuna"
    library_method = "gp-optuna (GPSampler)"

    def __init__(self, space: Space, *, seed: int | None = None, n_initial: int = 10,
                 initial_configs: Configs | None = None, n_startup_trials: int | None = None,
                 deterministic_objective: bool = False, max_retries: int = 20):
        self._n_startup_option = check_optional_int("n_startup_trials", n_startup_trials, minimum=0)
        self.deterministic_objective = check_bool("deterministic_objective", deterministic_objective)
        super().__init__(space, seed=seed, n_initial=n_initial, initial_configs=initial_configs,
                         max_retries=max_retries)

    def _make_sampler(self, optuna: Any) -> Any:
        self.n_startup_trials = len(self._initial) if self._n_startup_option is None else self._n_startup_option
        return optuna.samplers.GPSampler(seed=self.library_seed, n_startup_trials=self.n_startup_trials,
                                         deterministic_objective=self.deterministic_objective,
                                         warn_independent_sampling=False)

    # -- resumable state: the sampler's random states and its kernel cache -------------------------------
    def _method_state(self) -> dict[str, Any]:
        sampler = self.study.sampler
        state: dict[str, Any] = {"rng": _random_state(getattr(sampler, "_rng", None)),
                                 "random_rng": _random_state(getattr(getattr(sampler, "_independent_sampler", None),
                                                                     "_rng", None))}
        cache = getattr(sampler, "_gprs_cache_list", None)
        if cache:
            state["kernel"] = [{"inverse_squared_lengthscales": g.inverse_squared_lengthscales.tolist(),
                                "kernel_scale": float(g.kernel_scale), "noise_var": float(g.noise_var)}
                               for g in cache]
        return state

    def _load_method_state(self, state: Mapping[str, Any]) -> None:
        sampler = self.study.sampler
        _set_random_state(getattr(sampler, "_rng", None), state.get("rng"))
        _set_random_state(getattr(getattr(sampler, "_independent_sampler", None), "_rng", None), state.get("random_rng"))
        if state.get("kernel") and hasattr(sampler, "_gprs_cache_list"):
            import torch

            # GPSampler reads only these three tensors of its cached regressors (the next fit's start)
            sampler._gprs_cache_list = [types.SimpleNamespace(
                inverse_squared_lengthscales=torch.tensor(k["inverse_squared_lengthscales"], dtype=torch.float64),
                kernel_scale=torch.tensor(k["kernel_scale"], dtype=torch.float64),
                noise_var=torch.tensor(k["noise_var"], dtype=torch.float64)) for k in state["kernel"]]


def _random_state(lazy: Any) -> dict[str, Any] | None:
    """The state of Optuna's ``LazyRandomState`` (a NumPy ``RandomState``) as plain JSON, or ``None``."""
    rng = getattr(lazy, "rng", None)
    if rng is None:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = rng.get_state(legacy=False)
    return {"key": s["state"]["key"].tolist(), "pos": int(s["state"]["pos"]), "has_gauss": int(s["has_gauss"]),
            "gauss": float(s["gauss"])}


def _set_random_state(lazy: Any, state: Mapping[str, Any] | None) -> None:
    rng = getattr(lazy, "rng", None)
    if rng is None or not state:
        return
    import numpy as np

    rng.set_state({"bit_generator": "MT19937", "state": {"key": np.asarray(state["key"], dtype=np.uint32),
                                                          "pos": state["pos"]},
                   "has_gauss": state["has_gauss"], "gauss": state["gauss"]})
