"""TPE baseline: optuna's Tree-structured Parzen Estimator behind graphbo's ask/tell.

The COMBO paper (Oh et al., 2019) compares with TPE from *hyperopt*
(Bergstra et al., 2011). We use optuna's :class:`~optuna.samplers.TPESampler`
as a stand-in: the same algorithm family (independent per-variable Parzen
estimators by default, ``multivariate=False``), but not hyperopt's code, so
numbers will not match the paper's TPE curves exactly.

Requires ``optuna`` (``pip install "graphbo[tpe]"``); it is imported when the
optimizer is constructed, never at ``import graphbo``.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, Iterator

import numpy as np

from .._validation import check_bool, check_int, check_optional_int
from ..spaces.space import Space
from ..spaces.variables import Variable
from .base import Configs
from .external import ExternalOptimizer, import_extra

__all__ = ["TPE", "OptunaOptimizer"]


def _load_optuna():
    import optuna

    return optuna


@contextlib.contextmanager
def _quiet_optuna(optuna):
    """Silence optuna's INFO/WARNING messages for one block, restoring the user's verbosity."""
    old = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(old)


def _distribution(optuna, var):
    """The optuna distribution of a graphbo variable (discrete ones over value indices)."""
    dist = optuna.distributions
    if isinstance(var, Variable):
        if var.kind == "ordinal":
            return dist.IntDistribution(0, var.n_values - 1)
        return dist.CategoricalDistribution(list(range(var.n_values)))
    if var.kind == "integer":
        return dist.IntDistribution(int(var.low), int(var.high), log=var.log)
    return dist.FloatDistribution(var.low, var.high, log=var.log)


class OptunaOptimizer(ExternalOptimizer):
    """What the Optuna-backed optimizers share (TPE here, GPSampler in :mod:`graphbo.optimizers.optuna_gp`).

    An in-memory study that minimises, built around the sampler returned by
    :meth:`_make_sampler` (seeded with :attr:`library_seed`); the variables'
    distributions of :func:`_distribution`; every told evaluation (the initial
    design included) added to the study, or told to the trial the sampler
    proposed if it is still pending; failures told ``FAIL``; proposals that
    repeat an evaluated or pending configuration kept *running* while the
    sampler is asked again (running trials are pending points for both
    samplers: TPE's constant liar, GPSampler's q-batch log-EI), then told
    ``FAIL``, which both samplers ignore.
    """

    #: the method name for messages about the missing extra
    library_method = "Optuna"

    def __init__(self, space: Space, *, seed: int | None = None, n_initial: int = 10,
                 initial_configs: Configs | None = None, max_retries: int = 20):
        self.max_retries = check_int("max_retries", max_retries, minimum=0)
        optuna = self._optuna = import_extra(self.library_method, "optuna", extra="tpe", load=_load_optuna)
        super().__init__(space, seed=seed, n_initial=n_initial, initial_configs=initial_configs)
        self._distributions = {name: _distribution(optuna, var) for name, var in zip(space.names, space.variables)}
        with _quiet_optuna(optuna), warnings.catch_warnings():
            # some sampler options are marked experimental (constant_liar in optuna 3-4, deterministic_objective)
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            self.study = optuna.create_study(direction="minimize", sampler=self._make_sampler(optuna))
        self._duplicates: list[Any] = []  # trials the sampler repeated during one suggestion, told FAIL at its end

    def _make_sampler(self, optuna: Any) -> Any:
        """The Optuna sampler, seeded with :attr:`library_seed` (called once, after the initial design)."""
        raise NotImplementedError

    # -- ExternalOptimizer hooks ---------------------------------------------------------------------
    def _quiet(self):
        return _quiet_optuna(self._optuna)

    def _tell_library(self, row: np.ndarray, value: float | None, fidelity: int | None = None) -> None:
        # a trial the sampler proposed is finished; for any other configuration a trial is added
        trial = self._pop_trial(row)
        fail = self._optuna.trial.TrialState.FAIL
        if trial is not None:
            self.study.tell(trial, **({"state": fail} if value is None else {"values": value}))
        else:
            self.study.add_trial(self._optuna.trial.create_trial(
                params=self._params_of(row), distributions=self._distributions,
                **({"state": fail} if value is None else {"value": value})))

    def _proposals(self) -> Iterator[Any]:
        while True:
            yield self.study.ask(self._distributions)

    def _repeated(self, trial: Any, key: bytes) -> None:
        # Kept running while retrying: a pending point for the sampler (TPE's constant liar counts
        # it among the bad trials, GPSampler's q-batch log-EI conditions on it), which moves away from it.
        self._duplicates.append(trial)

    def _proposals_done(self) -> None:
        fail = self._optuna.trial.TrialState.FAIL
        while self._duplicates:  # failed trials are ignored by the samplers
            self.study.tell(self._duplicates.pop(0), state=fail)


class TPE(OptunaOptimizer):
    """Tree-structured Parzen Estimator (optuna's ``TPESampler``) as a graphbo baseline.

    Variables map onto optuna distributions: discrete ones over value
    *indices* -- Binary, Categorical and GraphVariable ->
    ``CategoricalDistribution`` (the graph of a GraphVariable is ignored: TPE
    has no notion of it), Ordinal -> ``IntDistribution(0, k - 1)`` -- and the
    others over their native values: Continuous ->
    ``FloatDistribution(low, high, log=log)``, a rounded-continuous Integer
    (:class:`~graphbo.spaces.IntegerRange`) -> ``IntDistribution(low, high,
    log=log)``; so TPE also serves as a baseline on the mixed spaces of BO-FM.
    The study lives in memory, minimises, and is
    seeded from the graphbo seed (one integer drawn from ``self.rng`` after the
    shared random initial design, :attr:`library_seed`).

    Every told evaluation, the initial design included, is added to the study
    (``study.add_trial(create_trial(...))``, or ``study.tell`` for a trial
    that TPE itself proposed and that is still pending). ``n_startup_trials``
    defaults to the length of graphbo's initial design, so TPE models from the
    first suggestion after it.

    Duplicates: if TPE proposes a configuration already evaluated or pending,
    TPE is asked again, up to ``max_retries`` times, while the duplicate
    trials stay *running*: with ``constant_liar=True`` TPE counts running
    trials among the bad ones, which pushes the retries away from them. The
    duplicates are then told ``FAIL``, which TPE ignores, so they leave no
    trace in the model. After ``max_retries`` duplicates a uniformly random
    configuration not evaluated or pending is suggested instead (it enters
    the study when told). Pending graphbo suggestions also stay running
    trials until told (optuna's constant liar for batch asks).
    :attr:`n_duplicates` and :attr:`n_fallbacks` count these events.

    Failures: :meth:`mark_failed` tells the configuration's trial ``FAIL``
    (a trial TPE proposed is finished; for any other configuration a failed
    trial is added), so the study records it and TPE ignores it.

    Parameters
    ----------
    space, seed, n_initial, initial_configs
        As for :class:`~graphbo.optimizers.base.Optimizer`.
    n_startup_trials : int, optional
        Completed trials before TPE models; default: the initial design's length.
    n_ei_candidates : int, default 24
        optuna's default.
    multivariate : bool, default False
        ``False`` is the independent TPE of hyperopt and of the paper.
    constant_liar : bool, default True
        Treat running (pending) trials as bad observations; used by the
        duplicate retries above.
    max_retries : int, default 20
        TPE proposals rejected as duplicates before the random fallback.
    **sampler_kwargs
        Passed on to ``optuna.samplers.TPESampler``.
    """

    name = "tpe"
    library_method = "TPE"

    def __init__(self, space: Space, *, seed: int | None = None, n_initial: int = 10,
                 initial_configs: Configs | None = None, n_startup_trials: int | None = None,
                 n_ei_candidates: int = 24, multivariate: bool = False, constant_liar: bool = True,
                 max_retries: int = 20, **sampler_kwargs: Any):
        self._n_startup_option = check_optional_int("n_startup_trials", n_startup_trials, minimum=0)
        self._tpe_options = dict(n_ei_candidates=check_int("n_ei_candidates", n_ei_candidates, minimum=1),
                                 multivariate=check_bool("multivariate", multivariate),
                                 constant_liar=check_bool("constant_liar", constant_liar), **sampler_kwargs)
        super().__init__(space, seed=seed, n_initial=n_initial, initial_configs=initial_configs,
                         max_retries=max_retries)

    def _make_sampler(self, optuna: Any) -> Any:
        self.n_startup_trials = len(self._initial) if self._n_startup_option is None else self._n_startup_option
        return optuna.samplers.TPESampler(seed=self.library_seed, n_startup_trials=self.n_startup_trials,
                                          **self._tpe_options)

