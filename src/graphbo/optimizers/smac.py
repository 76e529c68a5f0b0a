"""SMAC baseline: SMAC3's random-forest BO behind graphbo's ask/tell.

The COMBO paper (Oh et al., 2019) compares with SMAC (Hutter et al., 2011):
a random-forest surrogate with expected improvement, maximised by local and
random search, interleaved with random configurations. This wraps SMAC3's
:class:`~smac.HyperparameterOptimizationFacade` (SMAC3 >= 2.4, whose random
forest is scikit-learn based; ``pyrfr`` is not needed) through its ask/tell
interface.

Requires ``smac`` (``pip install "graphbo[smac]"``); it is imported when the
optimizer is constructed, never at ``import graphbo``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import tempfile
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from .._validation import check_float, check_int
from ..spaces.space import Space
from ..spaces.variables import Variable
from .base import Configs
from .external import ExternalOptimizer, import_extra

__all__ = ["SMAC", "SMACAdapter"]


def _load_smac() -> SimpleNamespace:
    import ConfigSpace
    import smac
    from smac.acquisition.maximizer.local_search import LocalSearch
    from smac.main.exceptions import ConfigurationSpaceExhaustedException
    from smac.model.random_forest import RandomForest
    from smac.runhistory.dataclasses import TrialInfo, TrialValue
    from smac.runhistory.encoder import RunHistoryLogScaledEncoder
    from smac.runhistory.enumerations import StatusType

    return SimpleNamespace(ConfigSpace=ConfigSpace, smac=smac, RandomForest=RandomForest, LocalSearch=LocalSearch,
                           TrialInfo=TrialInfo, TrialValue=TrialValue, Exhausted=ConfigurationSpaceExhaustedException,
                           Encoder=RunHistoryLogScaledEncoder, StatusType=StatusType)


@functools.lru_cache(maxsize=None)
def _sorted_start_local_search(local_search_cls):
    """SMAC's LocalSearch with its start points in a fixed order.

    SMAC3 (2.4.1) de-duplicates the local-search start points through a
    ``set`` of ``Configuration``; ConfigSpace hashes a configuration by its
    ``repr`` (a ``str``), so the order, hence the random numbers each start
    consumes, changes with ``PYTHONHASHSEED``: the same seed gave different
    suggestions in different processes. Sorting the start points by their
    vector makes runs reproducible across processes.
    """

    class _SortedStartLocalSearch(local_search_cls):
        def _get_init_points_from_previous_configs(self, *args, **kwargs):
            points = super()._get_init_points_from_previous_configs(*args, **kwargs)
            return sorted(points, key=lambda c: tuple(c.get_array()))

    return _SortedStartLocalSearch


@contextlib.contextmanager
def _quiet_smac():
    """Silence SMAC's log messages for one block, restoring the logger's level."""
    logger = logging.getLogger("smac")
    old = logger.level
    logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        logger.setLevel(old)


def smac_random_forest(forest_cls, configspace, n_trees: int, seed: int):
    """SMAC3's random forest with its HPO facade's settings (``get_model``), on one thread."""
    return forest_cls(configspace, log_y=True, n_trees=n_trees, ratio_features=1.0, min_samples_split=2,
                      min_samples_leaf=1, max_depth=2**20, bootstrapping=True, seed=seed, n_jobs=1,
                      max_leaf_nodes=None)


def index_configspace(cs_mod, space: Space, seed: int):
    """A ConfigSpace over the space's value indices (discrete) and native ranges (continuous, integer)."""
    cs = cs_mod.ConfigurationSpace(seed=seed)
    hps = []
    for name, var in zip(space.names, space.variables):
        if not isinstance(var, Variable):
            hp = cs_mod.UniformIntegerHyperparameter if var.kind == "integer" else cs_mod.UniformFloatHyperparameter
            hps.append(hp(name, var.low, var.high, log=var.log))
        elif var.kind == "ordinal":
            hps.append(cs_mod.OrdinalHyperparameter(name, list(range(var.n_values))))
        else:
            hps.append(cs_mod.CategoricalHyperparameter(name, list(range(var.n_values))))
    cs.add(hps)
    return cs


class SMACAdapter(ExternalOptimizer):
    """What :class:`SMAC` and :class:`~graphbo.optimizers.bohb.BOHB` share: SMAC3 behind graphbo's ask/tell.

    The ConfigSpace over value indices (:func:`index_configspace`), seeded
    like every SMAC component by :attr:`library_seed`; a facade with SMAC's
    random forest on one thread (:func:`smac_random_forest`), the local
    search's start points in a fixed order (:func:`_sorted_start_local_search`)
    and a model that never sees crashed (failed) trials; SMAC's output in a
    temporary directory (:meth:`close`); told values and failures passed to
    ``smac.tell`` as ``TrialInfo``/``TrialValue`` (crashed trials at SMAC's
    crash cost).
    """

    def __init__(self, space: Space, **common: Any):
        lib = import_extra(type(self).__name__, "SMAC3", extra="smac", load=_load_smac)
        super().__init__(space, **common)
        self._lib = lib
        self._TrialInfo, self._TrialValue, self._Exhausted = lib.TrialInfo, lib.TrialValue, lib.Exhausted
        self._crashed = lib.StatusType.CRASHED
        self.configspace = index_configspace(lib.ConfigSpace, space, self.library_seed)
        self._trial_seed: int | None = None  # the deterministic intensifier's one seed

    def _start_smac(self, facade: type[Any], n_trees: int, maximizer_options: Mapping[str, Any],
                    components: Callable[[Any], Mapping[str, Any]], **scenario_options: Any):
        """Create ``self.smac``, a ``facade`` over a deterministic scenario; return its acquisition maximiser.

        ``components(scenario)`` gives the facade's other components (initial design, random design,
        intensifier, configuration selector, callbacks).
        """
        lib = self._lib
        self._tmpdir = tempfile.TemporaryDirectory(prefix=f"graphbo-{self.name}-")
        with _quiet_smac(), warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # SMAC 2.4 calls ConfigSpace's get_dictionary
            scenario = lib.smac.Scenario(self.configspace, name=f"graphbo-{self.name}",
                                         output_directory=Path(self._tmpdir.name), deterministic=True,
                                         n_trials=2**31 - 1, seed=self.library_seed, **scenario_options)
            model = smac_random_forest(lib.RandomForest, self.configspace, n_trees, self.library_seed)
            maximizer = facade.get_acquisition_maximizer(scenario, **maximizer_options)
            local_search = getattr(maximizer, "_local_search", None)
            if type(local_search) is lib.LocalSearch:  # SMAC internals as of 2.4.1; see _sorted_start_local_search
                local_search.__class__ = _sorted_start_local_search(
                    lib.LocalSearch)  # type: ignore[arg-type]  # a class is hashable; mypy checks its instances
            parts = dict(components(scenario))
            self.smac = facade(
                scenario,
                None,
                model=model,
                acquisition_maximizer=maximizer,
                # the facade's encoder, but the model never sees crashed (failed) trials
                runhistory_encoder=lib.Encoder(scenario, considered_states=[lib.StatusType.SUCCESS]),
                logging_level=False,
                overwrite=True,
                **parts,
            )
        return maximizer

    def close(self) -> None:
        """Remove SMAC's temporary output directory now (also done at garbage collection)."""
        self._tmpdir.cleanup()

    # -- conversions ------------------------------------------------------------------------------
    def _config_of(self, row: np.ndarray):
        from ConfigSpace import Configuration

        config = Configuration(self.configspace, values=self._params_of(row))
        # Rebuilt from its vector, as SMAC builds its own: the value types (NumPy
        # integers) then match, and so do the hashes (ConfigSpace hashes the repr),
        # which SMAC's run history uses to recognise a configuration.
        return Configuration(self.configspace, vector=config.get_array())

    def _trial_params(self, trial: Any) -> Any:
        return trial.config

    # -- trials --------------------------------------------------------------------------------
    def _budget(self, fidelity: int | None) -> float | None:
        """SMAC's budget of a fidelity (single-fidelity SMAC: none)."""
        return None

    def _trial_info(self, row: np.ndarray, fidelity: int | None = None):
        """SMAC's pending trial for ``row`` (at ``fidelity``), or a new one for a trial SMAC did not ask for."""
        info = self._pop_trial(row, fidelity)
        if info is None:
            config = self._config_of(row)
            info = self._TrialInfo(config, seed=self._seed(), budget=self._budget(fidelity))
            self._mark_processed(config)
        return info

    def _seed(self) -> int:
        # Before SMAC's first ask its intensifier takes its seed from the run
        # history, so any fixed value works; after it, use the one it chose.
        return 0 if self._trial_seed is None else self._trial_seed

    def _mark_processed(self, config) -> None:
        # Private SMAC state, best effort: keeps SMAC from proposing a config it was
        # told about after its generator started. Duplicates are handled anyway.
        selector = getattr(self.smac.intensifier, "_config_selector", None)
        processed = getattr(selector, "_processed_configs", None)
        if isinstance(processed, list) and config not in processed:
            processed.append(config)

    def _crash_value(self):
        return self._TrialValue(cost=self.smac.scenario.crash_cost, status=self._crashed)

    def _quiet(self):
        return _quiet_smac()

    def _tell_library(self, row: np.ndarray, value: float | None, fidelity: int | None = None) -> None:
        info = self._trial_info(row, fidelity)
        self.smac.tell(info, self._crash_value() if value is None else self._TrialValue(cost=value), save=False)


class SMAC(SMACAdapter):
    """SMAC3 (random forest + log-EI, local and random search) as a graphbo baseline.

    Variables map onto a ConfigSpace: discrete ones over value *indices* --
    Binary, Categorical and GraphVariable -> ``CategoricalHyperparameter``
    (the graph of a GraphVariable is ignored), Ordinal ->
    ``OrdinalHyperparameter`` -- and the others over their native values:
    Continuous -> ``UniformFloatHyperparameter(low, high, log=log)``, a
    rounded-continuous Integer (:class:`~graphbo.spaces.IntegerRange`) ->
    ``UniformIntegerHyperparameter(low, high, log=log)``; so SMAC also serves
    as a baseline on the mixed spaces of BO-FM.

    Setup (``HyperparameterOptimizationFacade`` components, SMAC3 defaults unless
    said otherwise): a deterministic scenario, one trial per configuration
    (``max_config_calls=1``: no re-evaluation of incumbents); **no SMAC initial
    design** (``n_configs=0``): graphbo's shared random initial design is told
    to SMAC as it is evaluated; the surrogate is retrained after every
    suggestion (``retrain_after=1``; the facade's default of 8 is meant for
    parallel/cheap runs); the random forest runs single-threaded
    (``n_jobs=1``) with ``max_leaf_nodes=None`` (scikit-learn preallocates
    ``2**20`` nodes per tree for SMAC's default, which is slow and equivalent
    for any realistic data size). Everything is seeded by one integer drawn
    from ``self.rng`` after the initial design, and the local search's start
    points are put in a fixed order (:func:`_sorted_start_local_search`), so
    a seed gives the same suggestions in any process. SMAC's output directory is a
    temporary directory, removed by :meth:`close` or when the optimizer is
    garbage collected; SMAC never writes its run history there
    (``tell(..., save=False)``).

    Every told evaluation is passed to ``smac.tell(TrialInfo(config, seed=s),
    TrialValue(cost=value))``, with ``s`` the single seed of the deterministic
    intensifier (SMAC accepts trials it did not ask for).

    Failures: :meth:`mark_failed` tells SMAC the trial ``CRASHED`` with
    SMAC's crash cost (``inf``); the surrogate is trained on successful trials
    only (the run-history encoder considers ``SUCCESS`` alone; with no
    failures this is SMAC's default), so, as for graphbo's own methods, a
    failure leaves the model untouched.

    Duplicates: if SMAC proposes a configuration already evaluated (its known
    value is told again under SMAC's trial key, so SMAC keeps no dangling
    running trial) or pending, it is asked again, up to ``max_retries`` times;
    then a uniformly random configuration not evaluated or pending is
    suggested. Once SMAC's own generator gives up (on tiny, nearly exhausted
    spaces it stops after failing to find new configurations), all further
    suggestions are such random configurations. :attr:`n_duplicates` and
    :attr:`n_fallbacks` count these events.

    Parameters
    ----------
    space, seed, n_initial, initial_configs
        As for :class:`~graphbo.optimizers.base.Optimizer`.
    n_trees : int, default 10
        Trees of the random forest (SMAC's default).
    n_challengers : int, default 10000
        Configurations the acquisition maximiser considers (SMAC's default).
        Most of a suggestion's time (~0.3-0.8 s on a 2-core machine for spaces
        of a few thousand configurations) goes to SMAC's local search, not to this.
    random_probability : float, default 0.2
        Probability of an interleaved random configuration (SMAC's default).
    retrain_after : int, default 1
        Suggestions between two fits of the random forest.
    max_retries : int, default 20
        SMAC proposals rejected as duplicates before the random fallback.
    """

    name = "smac"

    def __init__(self, space: Space, *, seed: int | None = None, n_initial: int = 10,
                 initial_configs: Configs | None = None, n_trees: int = 10, n_challengers: int = 10000,
                 random_probability: float = 0.2, retrain_after: int = 1, max_retries: int = 20):
        n_trees = check_int("n_trees", n_trees, minimum=1)
        n_challengers = check_int("n_challengers", n_challengers, minimum=1)
        random_probability = check_float("random_probability", random_probability, minimum=0.0, maximum=1.0)
        retrain_after = check_int("retrain_after", retrain_after, minimum=1)
        self.max_retries = check_int("max_retries", max_retries, minimum=0)
        super().__init__(space, seed=seed, n_initial=n_initial, initial_configs=initial_configs)
        HPO = self._lib.smac.HyperparameterOptimizationFacade

        def components(scenario) -> dict[str, Any]:
            return dict(initial_design=HPO.get_initial_design(scenario, n_configs=0),
                        random_design=HPO.get_random_design(scenario, probability=random_probability),
                        intensifier=HPO.get_intensifier(scenario, max_config_calls=1),
                        config_selector=HPO.get_config_selector(scenario, retrain_after=retrain_after))

        self._start_smac(HPO, n_trees, {"challengers": n_challengers}, components)
        self._values: dict[bytes, float] = {}  # row key -> last told value
        self._failed: set[bytes] = set()  # row keys told CRASHED
        self._exhausted = False

    # -- ExternalOptimizer hooks ---------------------------------------------------------------------
    def _proposals(self) -> Iterator[Any]:
        while not self._exhausted:
            try:
                info = self.smac.ask()
            except (StopIteration, self._Exhausted):
                self._exhausted = True
                return
            if self._trial_seed is None:
                self._trial_seed = info.seed
            yield info

    def _repeated(self, trial: Any, key: bytes) -> None:
        if key in self._values:  # evaluated: close SMAC's running trial with the known value
            self.smac.tell(trial, self._TrialValue(cost=self._values[key]), save=False)
        elif key in self._failed:
            self.smac.tell(trial, self._crash_value(), save=False)
        # pending: SMAC's running trial is completed when graphbo's tell arrives

    def _tell_library(self, row: np.ndarray, value: float | None, fidelity: int | None = None) -> None:
        super()._tell_library(row, value, fidelity)
        if value is None:
            self._failed.add(row.tobytes())
        else:
            self._values[row.tobytes()] = value
