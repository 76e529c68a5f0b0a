"""COMBO and BO-FM as Optuna samplers.

:class:`COMBOSampler` and :class:`BOFMSampler` implement
``optuna.samplers.BaseSampler``: an Optuna study (with any storage, shared by
any number of workers) gets its suggestions from graphbo's COMBO (Oh et al.,
NeurIPS 2019) or BO-FM (Oh et al., UAI 2021)::

    import optuna
    from graphbo.integrations.optuna import COMBOSampler

    study = optuna.create_study(sampler=COMBOSampler(seed=0), storage="sqlite:///study.db",
                                study_name="s", load_if_exists=True)
    study.optimize(objective, n_trials=50)

How a suggestion is made
------------------------
* The *relative search space* is the intersection of the distributions of all
  completed trials (``optuna.search_space.IntersectionSearchSpace``), without
  single-valued distributions. Each distribution becomes a graphbo variable:

  ===========================================  ==========================================================
  Optuna                                       graphbo
  ===========================================  ==========================================================
  ``CategoricalDistribution(choices)``         ``Categorical`` over the choices' positions (complete graph)
  ``IntDistribution(low, high, step)``         ``Ordinal`` over the grid ``low, low + step, ..., high``
                                               (path graph); BO-FM: a rounded continuous ``Integer`` over
                                               the grid positions when the grid has more than
                                               ``max_ordinal`` points
  ``IntDistribution(low, high, log=True)``     BO-FM: ``Integer(low, high, log=True)`` (continuous,
                                               rounded); COMBO: ``Ordinal`` over all integers, whose
                                               path the model may put on a log scale (its
                                               ``warp_ordinals``, as for any positive grid of more
                                               than 11 values spanning a decade)
  ``FloatDistribution(low, high, step=s)``     as an ``IntDistribution`` grid
  ``FloatDistribution(low, high, log=...)``    BO-FM: ``Continuous(low, high, log=...)``; COMBO: refused
  ===========================================  ==========================================================

* Until ``n_startup_trials`` trials are complete, the relative parameters are
  drawn uniformly at random (in graphbo's encoding: log-uniform for log
  distributions, including a log ``IntDistribution`` that COMBO holds as an
  ``Ordinal`` of its integers), avoiding configurations already completed,
  running or failed when the space is discrete.
* Then a graphbo COMBO or BO-FM optimizer is told every complete trial
  (values negated for ``direction="maximize"``: graphbo minimises), the
  parameters of the other workers' running (and enqueued) trials are marked
  *pending*, and one configuration is asked. COMBO accounts for pending
  configurations by the kriging believer (their posterior mean is added as a
  fantasy observation) and never proposes them; BO-FM only never proposes
  exactly the same configuration again. The optimizer is kept between trials
  of one process and told only the new trials (COMBO's slice sampler continues
  its chain, as in the paper); it is rebuilt when the search space changes.
* Parameters outside the relative search space (conditional or dynamic ones,
  and all parameters of the first trial, before any search space is known)
  are drawn by ``optuna.samplers.RandomSampler``.

Parallel workers
----------------
A suggestion takes a while (a GP fit and an acquisition search), and Optuna
stores a trial's parameters only after the sampler has returned them. So two
workers that suggest at the same time would not see each other's choice. To
avoid duplicates, each suggestion is first written to the trial's system
attribute ``"graphbo:proposal"``; the sampler then re-reads the running
trials, and if another one holds the same configuration (as parameters or as
its own proposal), it asks again with that one pending (up to three times).
Write-then-read makes at least one of two clashing workers see the clash.

Reproducibility
---------------
With ``seed=`` set, every random choice is derived from the seed and the
trial number (independent parameters, startup draws, the optimizer's seed), so
a sequential study (one worker) is reproducible, and a trial's random draws do
not depend on which worker runs it. Parallel studies are not reproducible: the
data each suggestion sees depends on timing. :meth:`GraphboSampler.reseed_rng`
(which ``study.optimize(n_jobs>1)`` calls in each thread) replaces the seed by
fresh entropy.

Limitations
-----------
Multi-objective studies are modelled by ParEGO's random scalarisation and constraints (``constraints_func``
or ``trial.set_constraint``) by a probability of feasibility, as in graphbo's own studies
(docs/multiobjective.md). Once
every configuration of a discrete space is complete, pending or failed, a
suggestion is a repeat drawn at random. Pruned and failed trials are not told to the
model (failed ones are never proposed again in a discrete space: graphbo's
``mark_failed``); a worker that crashed leaves its
trial ``RUNNING`` (without a heartbeat), and its configuration stays pending.

Optuna is imported with this module, never at ``import graphbo``.
"""

from __future__ import annotations

import math
import threading
import zlib
from dataclasses import dataclass
from typing import Any, Mapping, Sequence, cast

import numpy as np
try:
    from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
    from optuna.samplers import BaseSampler, RandomSampler
    from optuna.search_space import IntersectionSearchSpace
    from optuna.study import Study, StudyDirection
    from optuna.trial import FrozenTrial, TrialState
except ModuleNotFoundError as _exc:  # pragma: no cover - depends on the install
    raise ModuleNotFoundError(f'graphbo.integrations.optuna needs Optuna ({_exc}): '
                              'pip install "graphbo[optuna]"') from _exc

from .._validation import check_bool, check_int, check_mapping, check_seed
from ..exceptions import SpaceExhaustedError
from ..optimizers.base import Optimizer
from ..spaces.space import Space
from ..spaces.variables import Binary, Categorical, Continuous, IntegerRange, Ordinal

__all__ = ["COMBOSampler", "BOFMSampler", "GraphboSampler"]

#: system attribute of a trial holding the configuration the sampler is about to return
PROPOSAL_ATTR = "graphbo:proposal"
#: system attribute where Optuna's samplers keep a trial's ``constraints_func`` values
_CONSTRAINTS_ATTR = "constraints"


def _constraints_of(trial: FrozenTrial) -> list[float] | None:
    """A trial's constraint values (``constraints_func``'s, then ``trial.set_constraint``'s by name), or ``None``."""
    stored = trial.system_attrs.get(_CONSTRAINTS_ATTR)
    named = {k[len(_CONSTRAINTS_ATTR) + 1:]: v for k, v in trial.system_attrs.items()
             if isinstance(k, str) and k.startswith(_CONSTRAINTS_ATTR + ":")}
    if stored is None and not named:
        return None
    out = [float(c) for c in stored] if stored is not None else []
    return out + [float(named[k]) for k in sorted(named)]

_INDEPENDENT, _STARTUP, _MODEL, _REPEAT = 1, 2, 3, 4  # streams of derived seeds


def _fresh_entropy() -> int:
    """Entropy from the operating system (a fresh ``SeedSequence``'s, an int as NumPy makes it)."""
    return int(cast(int, np.random.SeedSequence().entropy))


def _derive_seed(entropy: int, *keys: int) -> int:
    """A 32-bit seed determined by ``entropy`` and ``keys`` (non-negative integers)."""
    return int(np.random.SeedSequence([entropy, *keys]).generate_state(1, np.uint32)[0])


@dataclass(frozen=True)
class _Param:
    """One Optuna distribution and the graphbo variable it maps to.

    ``kind``: ``"categorical"`` (graphbo value = position of the choice),
    ``"grid"`` (an ``Ordinal`` whose values are the grid's own, ``low + i * step``, when
    ``as_values``; else a rounded ``IntegerRange`` over the positions ``i``),
    ``"int"`` (graphbo value = the integer itself), ``"float"`` (the float itself).

    A grid keeps its values in the ``Ordinal`` so that COMBO sees what they are: an integer range
    such as a batch size of 16..512 or a log-scaled ``IntDistribution`` is a candidate for the
    model's log-spaced path (``COMBO(warp_ordinals=True)``, docs/combo_prior.md), which positions
    ``0..n-1`` never are.
    """

    name: str
    distribution: BaseDistribution
    kind: str
    n: int = 0  # number of grid points / choices
    as_values: bool = True  # "grid": an Ordinal over the grid's values (else an IntegerRange of positions)

    def grid_value(self, i: int) -> int | float:
        """The ``i``-th point of a grid distribution, as Optuna holds such a value."""
        d = self.distribution
        assert isinstance(d, (IntDistribution, FloatDistribution)) and d.step is not None
        x = d.low + int(i) * d.step
        if isinstance(d, IntDistribution):
            return int(min(max(x, d.low), d.high))
        return float(min(max(x, d.low), d.high))

    def make_variable(self):
        d = self.distribution
        if self.kind == "categorical":
            return Categorical(list(range(self.n)))
        if self.kind == "grid":
            if self.as_values:
                return Ordinal([self.grid_value(i) for i in range(self.n)])
            return IntegerRange(0, self.n - 1)
        if self.kind == "int":
            assert isinstance(d, IntDistribution)  # as GraphboSampler._param makes them
            return IntegerRange(d.low, d.high, log=d.log)
        assert isinstance(d, (IntDistribution, FloatDistribution))
        return Continuous(d.low, d.high, log=d.log)

    def to_graphbo(self, value: Any) -> Any:
        """graphbo value of an Optuna parameter value (``ValueError`` if it does not fit)."""
        d = self.distribution
        if self.kind == "categorical":
            return int(d.to_internal_repr(value))
        x = float(value)
        assert isinstance(d, (IntDistribution, FloatDistribution))  # as GraphboSampler._param makes them
        if not d.low <= x <= d.high:
            raise ValueError(f"{value!r} is outside [{d.low}, {d.high}]")
        if self.kind == "grid":
            assert d.step is not None  # a grid has a step
            i = min(max(int(round((x - d.low) / d.step)), 0), self.n - 1)
            return self.grid_value(i) if self.as_values else i
        if self.kind == "int":
            return int(round(x))
        return x

    def to_optuna(self, value: Any) -> Any:
        """Optuna parameter value of a graphbo value (contained in the distribution)."""
        d = self.distribution
        if self.kind == "categorical":
            assert isinstance(d, CategoricalDistribution)  # as GraphboSampler._param makes them
            return d.choices[int(value)]
        assert isinstance(d, (IntDistribution, FloatDistribution))
        if self.kind == "grid":
            assert d.step is not None  # a grid has a step
            i = int(round((float(value) - d.low) / d.step)) if self.as_values else int(value)
            return self.grid_value(min(max(i, 0), self.n - 1))
        if self.kind == "int":
            return int(value)
        return float(min(max(float(value), d.low), d.high))


class GraphboSampler(BaseSampler):
    """What :class:`COMBOSampler` and :class:`BOFMSampler` share; a subclass names its method and says
    how parameters become graphbo variables (:attr:`method`, :meth:`_max_ordinal`, :meth:`_check_distribution`).

    Parameters (keyword-only, as for both samplers)
    -----------------------------------------------
    seed : int, optional
        Seed of every random choice (derived per trial number); ``None``: a fresh one.
    n_startup_trials : int, default 10
        Complete trials drawn at random before the model takes over.
    optimizer_kwargs : dict, optional
        Options of the graphbo optimizer (all but ``space``, ``seed``, ``n_initial`` and
        ``initial_configs``, which the sampler sets); checked by the optimizer when the sampler is made.
    exclude_failed : bool, default True
        Never propose again a configuration whose trial failed (relevant for discrete spaces).
    constraints_func : callable, optional
        As Optuna's samplers take it: ``constraints_func(frozen_trial)`` returns a sequence of constraint values,
        feasible when every one is ``<= 0``; called after each complete (or pruned) trial and stored with it.
        Constraints set with ``trial.set_constraint`` are read as well. The optimizer models them
        (docs/multiobjective.md): COMBO and BO-FM weight expected improvement by the probability of feasibility.
    """

    #: the graphbo method that makes the suggestions (a key of ``graphbo.optimizers.METHODS``)
    method = ""
    _max_rounds = 3  # proposals re-made after a clash with another worker

    def __init__(self, *, seed: int | None = None, n_startup_trials: int = 10,
                 optimizer_kwargs: Mapping[str, Any] | None = None, exclude_failed: bool = True,
                 constraints_func: Any = None):
        if not self.method:
            raise TypeError("GraphboSampler is the base of COMBOSampler and BOFMSampler; make one of those")
        self.seed = check_seed(seed)
        self.n_startup_trials = check_int("n_startup_trials", n_startup_trials, minimum=0)
        self.optimizer_kwargs = self._check_optimizer_kwargs(optimizer_kwargs)
        self.exclude_failed = check_bool("exclude_failed", exclude_failed)
        if constraints_func is not None and not callable(constraints_func):
            raise TypeError(f"constraints_func must be a function of a FrozenTrial, got {constraints_func!r}")
        self.constraints_func = constraints_func
        self._entropy = _fresh_entropy() if self.seed is None else self.seed
        self._intersection = IntersectionSearchSpace()
        self._study_key: Any = None  # the study the search space and the cache belong to
        self._cache: tuple[Any, Optimizer, set[int], set[int]] | None = None  # key, optimizer, told, failed
        self._lock = threading.Lock()  # one suggestion at a time per sampler (study.optimize(n_jobs>1))

    def _check_optimizer_kwargs(self, optimizer_kwargs: Any) -> dict[str, Any]:
        """The options as a dict, checked by the optimizer itself on a one-variable space."""
        kwargs = check_mapping("optimizer_kwargs", optimizer_kwargs)
        reserved = {"space", "seed", "n_initial", "initial_configs"} & set(kwargs)
        if reserved:
            raise ValueError(f"optimizer_kwargs may not set {sorted(reserved)!r}: the sampler sets them")
        try:
            self._make_optimizer(Space({"x": Binary()}), 0, kwargs)
        except (TypeError, ValueError) as exc:
            error = TypeError if isinstance(exc, TypeError) else ValueError
            raise error(f"optimizer_kwargs of {type(self).__name__}: {exc}") from None
        return kwargs

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_cache"] = None  # the cached optimizer is rebuilt from the study
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # -- hooks ------------------------------------------------------------------------
    def _max_ordinal(self) -> int | None:
        """Integer grids with more values than this become rounded continuous variables (``None``: never)."""
        return None

    def _make_optimizer(self, space: Space, seed: int, options: Mapping[str, Any] | None = None) -> Optimizer:
        from ..optimizers import METHODS

        options = self.optimizer_kwargs if options is None else options
        return METHODS[self.method](space, seed=seed, n_initial=0, **options)

    def _check_distribution(self, name: str, distribution: BaseDistribution) -> None:
        """Raise ``ValueError`` if the method cannot handle the distribution."""

    # -- search space ---------------------------------------------------------------
    def _param(self, name: str, d: BaseDistribution) -> _Param:
        self._check_distribution(name, d)
        if isinstance(d, CategoricalDistribution):
            return _Param(name, d, "categorical", len(d.choices))
        if isinstance(d, IntDistribution) and d.log and self._max_ordinal() is not None:
            return _Param(name, d, "int")
        if isinstance(d, (IntDistribution, FloatDistribution)) and d.step is not None:
            n, max_ordinal = int(round((d.high - d.low) / d.step)) + 1, self._max_ordinal()
            return _Param(name, d, "grid", n, as_values=max_ordinal is None or n <= max_ordinal)
        return _Param(name, d, "float")

    def _space_of(self, search_space: Mapping[str, BaseDistribution]) -> tuple[Space, list[_Param]]:
        params = [self._param(n, d) for n, d in search_space.items()]
        return Space({p.name: p.make_variable() for p in params}), params

    @staticmethod
    def _config_of(values: Mapping[str, Any], params: Sequence[_Param]) -> dict[str, Any] | None:
        """graphbo configuration of Optuna parameter values; ``None`` if some are missing or do not fit."""
        try:
            return {p.name: p.to_graphbo(values[p.name]) for p in params}
        except (KeyError, ValueError, TypeError, IndexError):
            return None

    def _pending_configs(self, trials: Sequence[FrozenTrial], trial: FrozenTrial,
                         params: Sequence[_Param]) -> list[dict[str, Any]]:
        """Configurations of the other running or waiting trials: their parameters, else their proposal."""
        out = []
        for t in trials:
            if t.number == trial.number or t.state not in (TrialState.RUNNING, TrialState.WAITING):
                continue
            cfg = self._config_of(t.params, params)
            if cfg is None and "fixed_params" in t.system_attrs:  # enqueued
                cfg = self._config_of({**t.system_attrs["fixed_params"], **t.params}, params)
            if cfg is None and isinstance(t.system_attrs.get(PROPOSAL_ATTR), dict):
                proposal = t.system_attrs[PROPOSAL_ATTR]
                try:
                    external = {p.name: p.distribution.to_external_repr(proposal[p.name]) for p in params}
                except (KeyError, ValueError, TypeError, IndexError):
                    external = {}
                cfg = self._config_of(external, params)
            if cfg is not None:
                out.append(cfg)
        return out

    def _taken_configs(self, trials: Sequence[FrozenTrial], trial: FrozenTrial,
                       params: Sequence[_Param]) -> list[dict[str, Any]]:
        """Configurations another trial holds: pending ones, and those of trials finished since."""
        out = self._pending_configs(trials, trial, params)
        for t in trials:
            if t.number != trial.number and t.state.is_finished():
                cfg = self._config_of(t.params, params)
                if cfg is not None:
                    out.append(cfg)
        return out

    def reseed_rng(self) -> None:
        """Draw fresh entropy from the operating system for every later random choice.

        Optuna calls this in each thread of ``study.optimize(n_jobs>1)``, so that copies of one
        sampler do not repeat each other's draws. The seed given to the sampler is then no longer
        used: the independent and startup draws of later trials, and the cached optimizer's
        random stream (its slice sampler or ML-II restarts and its acquisition search), come
        from the new entropy.
        """
        with self._lock:
            self._entropy = _fresh_entropy()
            if self._cache is not None:
                rng = self._cache[1].rng
                rng.bit_generator.state = type(rng.bit_generator)(_derive_seed(self._entropy, _MODEL)).state

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        with self._lock:
            key = (study._study_id, study.study_name)
            if key != self._study_key:  # another study (in-memory studies share one id): start afresh
                self._study_key = key
                self._intersection = IntersectionSearchSpace()
                self._cache = None
            intersection = self._intersection.calculate(study)
        space: dict[str, BaseDistribution] = {}
        for name, d in intersection.items():
            if d.single() or not isinstance(d, (CategoricalDistribution, IntDistribution, FloatDistribution)):
                continue
            space[name] = d
        return space

    def sample_independent(
        self, study: Study, trial: FrozenTrial, param_name: str, param_distribution: BaseDistribution
    ) -> Any:
        self._check_distribution(param_name, param_distribution)
        seed = _derive_seed(self._entropy, _INDEPENDENT, trial.number, zlib.crc32(param_name.encode()))
        return RandomSampler(seed=seed).sample_independent(study, trial, param_name, param_distribution)

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        with self._lock:
            return self._sample_relative(study, trial, search_space)

    def after_trial(self, study: Study, trial: FrozenTrial, state: TrialState,
                    values: Sequence[float] | None) -> None:
        """Store ``constraints_func(trial)`` with a complete or pruned trial (system attribute ``constraints``,
        where Optuna's samplers keep it); a NaN among them is refused with ``ValueError``, as Optuna does."""
        if self.constraints_func is None or state not in (TrialState.COMPLETE, TrialState.PRUNED):
            return
        constraints = None
        try:
            values = tuple(float(c) for c in self.constraints_func(trial))
            if any(math.isnan(c) for c in values):
                raise ValueError(f"constraints_func returned NaN for trial {trial.number}: {values}")
            constraints = values  # stored only when usable; a trial whose constraints failed has none
        finally:
            study._storage.set_trial_system_attr(trial._trial_id, _CONSTRAINTS_ATTR, constraints)

    def _sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        if not search_space:
            return {}
        fixed = trial.system_attrs.get("fixed_params") or {}
        if all(name in fixed for name in search_space):  # an enqueued trial: nothing to suggest
            return {}
        space, params = self._space_of(search_space)
        signs = tuple(-1.0 if d == StudyDirection.MAXIMIZE else 1.0 for d in study.directions)
        # One snapshot of the study: with separate queries per state, a trial finishing
        # in between would be neither complete nor pending, and could be proposed again.
        trials = study.get_trials(deepcopy=False)
        done = [t for t in trials if t.state == TrialState.COMPLETE]
        n_constraints = max((len(c) for c in map(_constraints_of, done) if c is not None), default=0)
        completed: list[tuple[int, dict[str, Any], Any, list[float]]] = []
        failed: list[tuple[int, dict[str, Any]]] = []
        for t in trials:
            if t.state == TrialState.COMPLETE:
                cfg = self._config_of(t.params, params)
                cons = _constraints_of(t) or []
                if cfg is None:
                    continue
                if t.values is None or len(t.values) != len(signs) or len(cons) != n_constraints \
                        or not all(math.isfinite(v) for v in list(t.values) + cons):
                    if self.exclude_failed:  # an outcome the model cannot take: as a failed trial
                        failed.append((t.number, cfg))
                    continue
                values = [s_ * float(v) for s_, v in zip(signs, t.values)]
                completed.append((t.number, cfg, values[0] if len(signs) == 1 else values, cons))
            elif t.state == TrialState.FAIL and self.exclude_failed:
                cfg = self._config_of(t.params, params)
                if cfg is not None:
                    failed.append((t.number, cfg))
        pending = self._pending_configs(trials, trial, params)

        if len(completed) < self.n_startup_trials:
            rng = np.random.default_rng(_derive_seed(self._entropy, _STARTUP, trial.number))
            exclude = {space.to_index(c).tobytes() for c in [c for _, c, _, _ in completed] + [c for _, c in failed]}

            def propose(extra: list[dict[str, Any]]) -> dict[str, Any] | None:
                exclude.update(space.to_index(c).tobytes() for c in extra)
                return self._random_config(space, rng, exclude, params)
        else:
            opt = self._optimizer(space, params, (signs, n_constraints), trial.number, completed, failed)
            opt.clear_pending()  # the previous trial's suggestion and stale pending rows

            def propose(extra: list[dict[str, Any]]) -> dict[str, Any] | None:
                for c in extra:
                    opt.add_pending(c)
                if opt.exhausted:
                    return None
                try:
                    return opt.ask()
                except SpaceExhaustedError:
                    return None

        config = propose(pending)
        for round_ in range(self._max_rounds + 1):
            exhausted = config is None
            if config is None:  # every configuration is complete, pending or failed: a repeat
                config = self._repeat_config(space, trial.number, [c for _, c in failed])
            study._storage.set_trial_system_attr(
                trial._trial_id,
                PROPOSAL_ATTR,
                {p.name: p.distribution.to_internal_repr(p.to_optuna(config[p.name])) for p in params},
            )
            if exhausted or round_ == self._max_rounds:
                break
            key = space.to_index(config).tobytes()
            # write, then read: of two workers proposing one configuration, at least one sees it
            others = self._taken_configs(study.get_trials(deepcopy=False), trial, params)
            if not any(space.to_index(c).tobytes() == key for c in others):
                break
            config = propose(others)  # another worker holds it: ask again with it pending
        assert config is not None  # the last round breaks the loop
        return {p.name: p.to_optuna(config[p.name]) for p in params}

    # -- helpers ------------------------------------------------------------------------
    @staticmethod
    def _random_config(space: Space, rng: np.random.Generator, exclude: set[bytes],
                       params: Sequence[_Param] = ()) -> dict[str, Any] | None:
        """A configuration drawn at random, not in ``exclude``; ``None`` if none is left.

        Uniform in graphbo's encoding, except that a log ``IntDistribution`` held as an ``Ordinal``
        over its integers (``params``: COMBO's) is drawn log-uniformly, as Optuna draws it
        (uniform on ``[log(low - 0.5), log(high + 0.5)]``, rounded).
        """
        if space.is_discrete and len(exclude) >= space.size:
            return None
        log_grids = [p for p in params if p.kind == "grid" and p.as_values and getattr(p.distribution, "log", False)]
        for _ in range(100):
            for row in space.sample_index(256, rng):
                cfg = space.from_index(row)
                for p in log_grids:
                    d = p.distribution
                    assert isinstance(d, IntDistribution)  # only an IntDistribution has log and a step
                    x = math.exp(rng.uniform(math.log(d.low - 0.5), math.log(d.high + 0.5)))
                    cfg[p.name] = p.to_graphbo(min(max(round(x), d.low), d.high))
                if space.to_index(cfg).tobytes() not in exclude:
                    return cfg
        return None

    def _repeat_config(self, space: Space, trial_number: int, failed: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """A configuration drawn uniformly at random (seeded by the trial number), not a failed one
        if any other is left.

        For a discrete space that holds no configuration the study has not tried or is not trying:
        every parameter of the relative search space still gets a value, as Optuna expects of
        ``sample_relative``.
        """
        rng = np.random.default_rng(_derive_seed(self._entropy, _REPEAT, trial_number))
        config = self._random_config(space, rng, {space.to_index(c).tobytes() for c in failed})
        return space.from_index(space.sample_index(1, rng)[0]) if config is None else config

    def _optimizer(
        self,
        space: Space,
        params: Sequence[_Param],
        outcomes: tuple[tuple[float, ...], int],
        trial_number: int,
        completed: Sequence[tuple[int, dict[str, Any], Any, list[float]]],
        failed: Sequence[tuple[int, dict[str, Any]]],
    ) -> Optimizer:
        """The cached optimizer, told the trials it has not seen yet (rebuilt when the search space, the
        directions or the number of constraints change)."""
        key = (tuple((p.name, repr(p.distribution)) for p in params), outcomes)
        if self._cache is None or self._cache[0] != key:
            seed = _derive_seed(self._entropy, _MODEL, trial_number)
            opt = self._make_optimizer(space, seed)
            signs, n_constraints = outcomes
            if len(signs) > 1 or n_constraints:
                opt.set_outcomes(len(signs), n_constraints)
            self._cache = (key, opt, set(), set())
        _, opt, told, marked = self._cache
        for number, cfg, value, cons in completed:
            if number not in told:
                opt.tell(cfg, value, constraints=cons if cons else None)
                told.add(number)
        for number, cfg in failed:
            if number not in marked:
                opt.mark_failed(cfg)
                marked.add(number)
        return opt


class COMBOSampler(GraphboSampler):
    """Optuna sampler driven by graphbo's :class:`~graphbo.COMBO` (discrete parameters).

    Handles categorical, integer and stepped float parameters
    (``suggest_float(..., step=...)``); a float parameter without ``step``
    raises ``ValueError`` (use :class:`BOFMSampler`). See the module
    documentation for the mapping and the behaviour with parallel workers.

    Parameters (keyword-only)
    -------------------------
    seed, n_startup_trials, optimizer_kwargs, exclude_failed
        As for :class:`GraphboSampler`; ``optimizer_kwargs`` go to :class:`graphbo.COMBO`, e.g.
        ``{"n_burn": 50, "n_random": 5000}`` for quicker suggestions.
    max_values : int, default 2000
        Largest number of values of one integer or stepped float parameter
        (each becomes a path graph with that many vertices).
    """

    method = "combo"

    def __init__(self, *, max_values: int = 2000, **common: Any):
        self.max_values = check_int("max_values", max_values, minimum=1)
        super().__init__(**common)

    def _check_distribution(self, name: str, d: BaseDistribution) -> None:
        if isinstance(d, FloatDistribution) and d.step is None and not d.single():
            raise ValueError(
                f"COMBOSampler handles discrete parameters only, but {name!r} is {d!r} (a continuous float). "
                "Use graphbo.integrations.optuna.BOFMSampler for mixed spaces, or suggest_float(..., step=...)."
            )
        if isinstance(d, (IntDistribution, FloatDistribution)) and d.step is not None:
            n = int(round((d.high - d.low) / d.step)) + 1
            if n > self.max_values:
                raise ValueError(
                    f"COMBOSampler: parameter {name!r} ({d!r}) has {n} values, more than max_values="
                    f"{self.max_values}; use BOFMSampler, a coarser step, or a larger max_values"
                )


class BOFMSampler(GraphboSampler):
    """Optuna sampler driven by graphbo's :class:`~graphbo.BOFM` (mixed parameters).

    Handles categorical, integer (also ``log=True``) and float (also ``log=True``
    or ``step=``) parameters. See the module documentation for the mapping and
    the behaviour with parallel workers.

    Parameters (keyword-only)
    -------------------------
    seed, n_startup_trials, optimizer_kwargs, exclude_failed
        As for :class:`GraphboSampler`; ``optimizer_kwargs`` go to :class:`graphbo.BOFM`, e.g.
        ``{"kernel": "moddif", "n_random": 10000, "n_starts": 10}`` for quicker suggestions.
    max_ordinal : int, default 64
        Integer and stepped float parameters with at most this many values become
        ordinal (path-graph) variables; wider ones continuous variables rounded to the grid.
    """

    method = "bofm"

    def __init__(self, *, max_ordinal: int = 64, **common: Any):
        self.max_ordinal = check_int("max_ordinal", max_ordinal, minimum=1)
        super().__init__(**common)

    def _max_ordinal(self) -> int | None:
        return self.max_ordinal
