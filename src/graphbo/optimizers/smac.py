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
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..spaces.space import Space
from ..spaces.variables import Variable
from .base import Optimizer

__all__ = ["SMAC"]

_INSTALL_HINT = 'SMAC needs SMAC3: pip install "graphbo[smac]"'


def _import_smac():
    try:
        import ConfigSpace
        import smac
        from smac.acquisition.maximizer.local_search import LocalSearch
        from smac.main.exceptions import ConfigurationSpaceExhaustedException
        from smac.model.random_forest import RandomForest
        from smac.runhistory.dataclasses import TrialInfo, TrialValue
        from smac.runhistory.encoder import RunHistoryLogScaledEncoder
        from smac.runhistory.enumerations import StatusType
    except ImportError as exc:  # pragma: no cover - exercised only without smac
        raise ImportError(_INSTALL_HINT) from exc
    return (ConfigSpace, smac, RandomForest, LocalSearch, TrialInfo, TrialValue, ConfigurationSpaceExhaustedException,
            RunHistoryLogScaledEncoder, StatusType)


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


class SMAC(Optimizer):
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

    def __init__(
        self,
        space: Space,
        seed: int | None = None,
        n_initial: int = 10,
        initial_configs: list[Mapping[str, Any]] | None = None,
        n_trees: int = 10,
        n_challengers: int = 10000,
        random_probability: float = 0.2,
        retrain_after: int = 1,
        max_retries: int = 20,
    ):
        (cs_mod, smac, RandomForest, LocalSearch, TrialInfo, TrialValue, Exhausted, Encoder,
         StatusType) = _import_smac()
        super().__init__(space, seed=seed, n_initial=n_initial, initial_configs=initial_configs)
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        self.max_retries = int(max_retries)
        self.smac_seed = int(self.rng.integers(2**31))
        self._TrialInfo, self._TrialValue, self._Exhausted = TrialInfo, TrialValue, Exhausted
        self._crashed = StatusType.CRASHED

        cs = index_configspace(cs_mod, space, self.smac_seed)
        self.configspace = cs

        self._tmpdir = tempfile.TemporaryDirectory(prefix="graphbo-smac-")
        HPO = smac.HyperparameterOptimizationFacade
        with _quiet_smac():
            scenario = smac.Scenario(
                cs,
                name="graphbo-smac",
                output_directory=Path(self._tmpdir.name),
                deterministic=True,
                n_trials=2**31 - 1,
                seed=self.smac_seed,
            )
            model = smac_random_forest(RandomForest, cs, n_trees, self.smac_seed)
            maximizer = HPO.get_acquisition_maximizer(scenario, challengers=n_challengers)
            local_search = getattr(maximizer, "_local_search", None)
            if type(local_search) is LocalSearch:  # SMAC internals as of 2.4.1; see _sorted_start_local_search
                local_search.__class__ = _sorted_start_local_search(LocalSearch)
            self.smac = HPO(
                scenario,
                None,
                model=model,
                acquisition_maximizer=maximizer,
                initial_design=HPO.get_initial_design(scenario, n_configs=0),
                random_design=HPO.get_random_design(scenario, probability=random_probability),
                intensifier=HPO.get_intensifier(scenario, max_config_calls=1),
                config_selector=HPO.get_config_selector(scenario, retrain_after=retrain_after),
                # the facade's encoder, but the model never sees crashed (failed) trials
                runhistory_encoder=Encoder(scenario, considered_states=[StatusType.SUCCESS]),
                logging_level=False,
                overwrite=True,
            )
        self._trials: dict[bytes, Any] = {}  # row key -> pending TrialInfo proposed by SMAC
        self._values: dict[bytes, float] = {}  # row key -> last told value
        self._failed: set[bytes] = set()  # row keys told CRASHED
        self._trial_seed: int | None = None  # the deterministic intensifier's one seed
        self._exhausted = False
        self.n_duplicates = 0
        self.n_fallbacks = 0

    # -- helpers ------------------------------------------------------------------
    def close(self) -> None:
        """Remove SMAC's temporary output directory now (also done at garbage collection)."""
        self._tmpdir.cleanup()

    def _config_of(self, row: np.ndarray):
        from ConfigSpace import Configuration

        values = {n: int(x) if isinstance(v, Variable) else v.from_unit(x)
                  for n, v, x in zip(self.space.names, self.space.variables, row)}
        config = Configuration(self.configspace, values=values)
        # Rebuilt from its vector, as SMAC builds its own: the value types (NumPy
        # integers) then match, and so do the hashes (ConfigSpace hashes the repr),
        # which SMAC's run history uses to recognise a configuration.
        return Configuration(self.configspace, vector=config.get_array())

    def _row_of(self, config) -> np.ndarray:
        """graphbo row of a SMAC configuration, canonical (``to_index(from_index(row))`` gives it back)."""
        space = self.space
        row = np.array([int(config[n]) if isinstance(v, Variable) else v.to_unit(config[n])
                        for n, v in zip(space.names, space.variables)], dtype=space.row_dtype)
        if not space.is_discrete:  # unit coordinates: the round trip through native values may move them by an ulp
            row = space.to_index(space.from_index(row))
        return row

    def _pop_trial(self, row: np.ndarray):
        """The pending SMAC trial proposed for ``row`` (or ``None``), removed from the pending ones."""
        info = self._trials.pop(row.tobytes(), None)
        if info is None and not self.space.is_discrete:
            for key in list(self._trials):  # tolerate an ulp of round-off in the unit coordinates
                if np.allclose(np.frombuffer(key, dtype=row.dtype), row, rtol=0.0, atol=1e-12):
                    return self._trials.pop(key)
        return info

    def _trial_info(self, row: np.ndarray):
        """SMAC's pending trial for ``row``, or a new one for a configuration SMAC did not propose."""
        info = self._pop_trial(row)
        if info is None:
            config = self._config_of(row)
            info = self._TrialInfo(config, seed=self._seed())
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

    # -- protocol hooks --------------------------------------------------------------
    def _suggest(self) -> np.ndarray:
        from ..exceptions import SpaceExhaustedError

        exclude = self._exclude
        if len(exclude) >= self.space.size:
            raise SpaceExhaustedError(f"all {self.space.size} configurations have been evaluated or are pending")
        if not self._exhausted:
            with _quiet_smac():
                for _ in range(self.max_retries + 1):
                    try:
                        info = self.smac.ask()
                    except (StopIteration, self._Exhausted):
                        self._exhausted = True
                        break
                    if self._trial_seed is None:
                        self._trial_seed = info.seed
                    row = self._row_of(info.config)
                    key = row.tobytes()
                    if key not in exclude:
                        self._trials[key] = info
                        return row
                    self.n_duplicates += 1
                    if key in self._values:  # evaluated: close SMAC's running trial with the known value
                        self.smac.tell(info, self._TrialValue(cost=self._values[key]), save=False)
                    elif key in self._failed:
                        self.smac.tell(info, self._crash_value(), save=False)
                    # pending: SMAC's running trial is completed when graphbo's tell arrives
        self.n_fallbacks += 1
        return self._distinct_random_rows(1, exclude)[0]

    def _observe(self, row: np.ndarray, value: float) -> None:
        info = self._trial_info(row)
        with _quiet_smac():
            self.smac.tell(info, self._TrialValue(cost=value), save=False)
        self._values[row.tobytes()] = value

    def _crash_value(self):
        return self._TrialValue(cost=self.smac.scenario.crash_cost, status=self._crashed)

    def mark_failed(self, config: Mapping[str, Any]) -> None:
        """As :meth:`Optimizer.mark_failed`; SMAC is told the trial ``CRASHED`` (its model ignores it)."""
        super().mark_failed(config)
        row = self.space.to_index(config)
        info = self._trial_info(row)
        with _quiet_smac():
            self.smac.tell(info, self._crash_value(), save=False)
        self._failed.add(row.tobytes())
