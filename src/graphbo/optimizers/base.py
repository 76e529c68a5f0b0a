"""The ask/tell protocol shared by every graphbo optimizer.

An optimizer holds no I/O. It proposes configurations with :meth:`ask`
and learns their values with :meth:`tell`; :attr:`best` is the best
evaluation so far. ``tell`` validates its input and leaves the stored data
untouched when it raises. Minimisation everywhere.
"""

from __future__ import annotations

import copy
import inspect
import itertools
import math
from collections.abc import Collection, Set
from dataclasses import dataclass
from typing import AbstractSet, Any, Callable, Iterable, Iterator, Mapping, Sequence, TypeVar, cast, overload

import numpy as np

from ..acquisition.base import AcquisitionFunction
from ..acquisition.constrained import LogConstrainedExpectedImprovement
from ..acquisition.ei import LogExpectedImprovement
from ..acquisition.hypervolume import LogExpectedHypervolumeImprovement
from .._validation import as_real, check_configs, check_int, check_optional_int, check_seed
from ..outcomes import (feasibility_first, feasible, parego_scalarize, pareto_mask, reference_point,
                        simplex_weights)
from ..exceptions import SpaceExhaustedError
from ..spaces.space import Space, as_generator

__all__ = ["Optimizer", "Observation", "Configs", "signature_without", "training_subset", "check_max_train",
           "DEFAULT_MAX_TRAIN", "MIN_MAX_TRAIN"]

#: the type of ``initial_configs``: configurations (dicts of variable name -> value)
Configs = Sequence[Mapping[str, Any]]
_T = TypeVar("_T")


@dataclass(frozen=True)
class Observation:
    """A told evaluation."""

    config: dict[str, Any]
    value: float


class Optimizer:
    """Base class: bookkeeping of evaluations, the initial design and validation.

    Every optimizer takes the space first and everything else by keyword, with these names for the
    arguments they share. This class checks them (``TypeError`` or ``ValueError`` naming the argument);
    each subclass checks its own options first thing in its ``__init__``.

    Parameters
    ----------
    space : Space
    seed : int or None
        Every random choice of the optimizer flows from this seed (a non-negative integer).
    n_initial : int
        Number of uniformly random, distinct configurations asked before the
        method's own suggestions start. Evaluations told without being asked (an
        earlier study's history) count towards it, as do pending ones.
    initial_configs : list of dict, optional
        Configurations to ask first (they count towards ``n_initial``, and are asked even
        after a told history).
    """

    name = "base"
    #: cap on the GP's training set (the ``max_train`` option of the GP-based optimizers; ``None``: no cap)
    max_train: int | None = None
    #: indices (into the told data the model could use) of the observations of the last model fit
    last_training_indices: np.ndarray | None = None
    #: the space classes the optimizer accepts (the NAS optimizers take a ``graphbo.nas.ArchitectureSpace``)
    space_types: tuple[type, ...] = (Space,)
    #: whether the method takes several objectives and black-box constraints (:meth:`set_outcomes`)
    supports_outcomes = True
    #: whether a suggestion within the rounding of an earlier one (:data:`CONTINUOUS_DECIMALS`) is replaced by a
    #: random one (a wrapped library that tracks its own asks keeps its suggestion)
    avoids_near_repeats = True
    #: whether the method models black-box constraints itself (one surrogate per constraint, expected improvement
    #: weighted by the probability of feasibility); otherwise it is told each infeasible evaluation behind every
    #: feasible one (:func:`graphbo.outcomes.feasibility_first`)
    models_constraints = False
    #: the number of objectives and of black-box constraints told with each value (:meth:`set_outcomes`)
    n_objectives = 1
    n_constraints = 0
    mo_acquisition = "parego"

    def __init__(self, space: Space, *, seed: int | None = None, n_initial: int = 10,
                 initial_configs: Configs | None = None):
        if not isinstance(space, self.space_types):
            expected = " or ".join(f"a graphbo.{t.__name__}" if t is Space else f"a {t.__module__}.{t.__name__}"
                                   for t in self.space_types)
            raise TypeError(f"space must be {expected}, got {type(space).__name__}")
        seed = check_seed(seed)
        n_initial = check_int("n_initial", n_initial, minimum=0)
        initial_configs = check_configs("initial_configs", initial_configs)
        self.space = space
        self.seed = seed
        #: the number of random configurations asked before the first model-based suggestion
        self.n_initial = n_initial
        self.rng = as_generator(seed)
        #: seeds the training-set subsample of the GP methods (:func:`training_subset`): the seed, or a
        #: number drawn once without one (saved by :meth:`get_state`)
        self._subset_key = seed if seed is not None else int(self.rng.integers(2**63))
        self._X: list[np.ndarray] = []
        self._y: list[float] = []
        self._evaluated: set[bytes] = set()
        #: the rows asked or told, continuous coordinates rounded (:meth:`_near_key`): never suggested again
        self._near: set[bytes] = set()
        #: each told row's position in the told data (the latest, if told twice)
        self._told_position: dict[bytes, int] = {}
        self._pending: dict[bytes, np.ndarray] = {}
        refused = [c for c in initial_configs if not self._allows_config(c)]
        if refused:
            raise ValueError(f"initial_configs: {dict(refused[0])!r} breaks a known constraint of the space")
        self._initial = self._initial_design([space.to_index(c) for c in initial_configs], n_initial)
        #: how many rows at the front of ``_initial`` came from ``initial_configs`` (always asked); the random
        #: rows behind them are skipped once ``n_initial`` evaluations are told or pending (told history)
        self._n_given_initial = len(initial_configs)
        #: every told objective vector ``(k,)`` and constraint vector ``(c,)``, aligned with ``_X`` (outcome mode)
        self._objective_values: list[np.ndarray] = []
        self._constraint_values: list[np.ndarray] = []
        #: ParEGO's weights of the latest multi-objective suggestion (equal weights before the first)
        self._weights: np.ndarray | None = None

    def _allows_config(self, config: Mapping[str, Any]) -> bool:
        allows = getattr(self.space, "allows", None)
        return True if allows is None else bool(allows(config))

    # -- several objectives and black-box constraints ----------------------------------------------
    def set_outcomes(self, n_objectives: int = 1, n_constraints: int = 0, *, acquisition: str = "parego") -> None:
        """Tell the optimizer that each evaluation returns ``n_objectives`` values (all minimised) and
        ``n_constraints`` constraint values (feasible when every one is ``<= 0``). Call before the first tell.

        With several objectives every model-based suggestion draws weights uniformly on the simplex and models
        ParEGO's augmented Chebyshev scalarisation of the normalised objectives (Knowles 2006;
        :func:`graphbo.outcomes.parego_scalarize`). Black-box constraints are modelled by their own surrogates
        where the method can (:attr:`models_constraints`), else ranked by Deb's feasibility rule.

        ``acquisition="ehvi"`` (two objectives, a method that models constraints) models each objective with
        its own surrogate and maximises the expected hypervolume improvement instead
        (:mod:`graphbo.acquisition.hypervolume`).
        """
        n_objectives = check_int("n_objectives", n_objectives, minimum=1)
        n_constraints = check_int("n_constraints", n_constraints, minimum=0)
        if acquisition not in MO_ACQUISITIONS:
            raise ValueError(f"acquisition must be one of {MO_ACQUISITIONS}, got {acquisition!r}")
        if acquisition == "ehvi" and (n_objectives != 2 or not self.models_constraints):
            raise ValueError("acquisition='ehvi' takes two objectives and a model-based method (combo, bofm, nasbot)")
        if self._X:
            raise ValueError("set_outcomes: the optimizer has been told evaluations already")
        if (n_objectives > 1 or n_constraints) and not self.supports_outcomes:
            raise ValueError(f"method {self.name!r} takes one objective and no black-box constraints; "
                             "use combo, bofm, nasbot (or auto) or a graphbo baseline (rs, sa, re)")
        if (n_objectives > 1 or n_constraints) and getattr(self, "trust_region", None) is not None:
            raise ValueError(f"method {self.name!r} follows a trust region, which counts one objective's "
                             "improvements; use it without the trust region for several objectives or constraints")
        self.n_objectives, self.n_constraints = n_objectives, n_constraints
        self.mo_acquisition = acquisition if n_objectives > 1 else "parego"
        self._on_outcomes()

    def _on_outcomes(self) -> None:
        """Called by :meth:`set_outcomes`: a method that models constraints (:attr:`models_constraints`) gets one
        unfitted copy of its surrogate ``self.model`` per constraint."""
        if self.models_constraints:
            self._constraint_models = [self._new_surrogate() for _ in range(self.n_constraints)]
            self._objective_models = [self._new_surrogate()] if self.mo_acquisition == "ehvi" else []

    @property
    def _extra_surrogates(self) -> list[Any]:
        """The surrogates besides ``self.model``: one per black-box constraint, the second objective's (EHVI)."""
        return list(getattr(self, "_constraint_models", [])) + list(getattr(self, "_objective_models", []))

    def _surrogate_state(self, model: Any) -> dict[str, Any]:
        """What a resumed run needs of a surrogate's inference (its sampler's chain, its fitted parameters), as
        JSON; a method with such surrogates overrides it with :meth:`_load_surrogate_state`."""
        return {}

    def _load_surrogate_state(self, model: Any, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`_surrogate_state` gave."""

    def _new_surrogate(self) -> Any:
        """An unfitted surrogate of the method's kind, for a constraint or a second objective: a copy of
        ``self.model`` made before any fit."""
        return copy.deepcopy(getattr(self, "model"))

    def _log_ei(self, fit_y: np.ndarray, inputs: Any, pending: Any = None) -> AcquisitionFunction:
        """The acquisition of a model-based suggestion: log-EI on ``self.model`` (fitted on ``fit_y``, its incumbent
        the best real value); with black-box constraints, each constraint's surrogate fitted on ``inputs`` (the
        training inputs, :attr:`last_training_indices`) and conditioned on ``pending`` (kriging believer), and
        log-EI of the best *feasible* value weighted by the probability of feasibility
        (:class:`~graphbo.acquisition.constrained.LogConstrainedExpectedImprovement`)."""
        model = getattr(self, "model")
        if not self.n_constraints and self.mo_acquisition != "ehvi":
            return LogExpectedImprovement(model)
        train = self.last_training_indices
        C = self.C if train is None else self.C[train]
        for j, cm in enumerate(self._constraint_models):
            cm.fit(inputs, C[:, j], rng=self.rng)
            if pending is not None:
                cm.add_fantasies(pending)
        ok = self.feasible_mask
        if self.mo_acquisition == "ehvi":
            return self._ehvi(model, np.asarray(fit_y), inputs, pending, ok)
        best = model.transform_outcome(float(np.min(np.asarray(fit_y)[ok]))) if ok.any() else None
        lowest = None if ok.any() else [cm.transform_outcome(float(np.min(C[:, j])))
                                         for j, cm in enumerate(self._constraint_models)]
        return LogConstrainedExpectedImprovement(model, self._constraint_models, best_f=best, constraint_best=lowest)

    @property
    def _outcome_mode(self) -> bool:
        return self.n_objectives > 1 or self.n_constraints > 0

    @property
    def Y(self) -> np.ndarray:
        """Every told objective vector, shape ``(n, n_objectives)`` (minimised)."""
        if not self._outcome_mode:
            return self.y[:, None]
        return np.array(self._objective_values, dtype=float).reshape(-1, self.n_objectives)

    @property
    def C(self) -> np.ndarray:
        """Every told constraint vector, shape ``(n, n_constraints)`` (feasible when all are ``<= 0``)."""
        return np.array(self._constraint_values, dtype=float).reshape(len(self._constraint_values), self.n_constraints)

    @property
    def feasible_mask(self) -> np.ndarray:
        """Which told evaluations satisfy every black-box constraint (all of them without constraints)."""
        return feasible(self.C) if self.n_constraints else np.ones(self.n_told, dtype=bool)

    def _targets(self) -> np.ndarray:
        """The single value per evaluation the method models: the only objective, or ParEGO's scalarisation
        under the latest weights; infeasible evaluations ranked last unless the method models constraints."""
        Y = self.Y
        if self.n_objectives == 1 or self.mo_acquisition == "ehvi":  # EHVI: the method's model is objective 0's
            y = Y[:, 0]
        else:
            w = self._weights if self._weights is not None else np.full(self.n_objectives, 1 / self.n_objectives)
            y = parego_scalarize(Y, w) if Y.shape[0] else np.zeros(0)
        if self.n_constraints and not self.models_constraints:
            y = feasibility_first(y, self.C)
        return y

    def _refresh_targets(self, new_weights: bool) -> None:
        if not self._outcome_mode:
            return
        if new_weights and self.n_objectives > 1 and self.mo_acquisition == "parego":
            self._weights = simplex_weights(self.n_objectives, self.rng)
        self._y = [float(v) for v in self._targets()]

    def _ehvi(self, model: Any, fit_y: np.ndarray, inputs: Any, pending: Any, ok: np.ndarray) -> AcquisitionFunction:
        """Two objectives: the second objective's surrogate fitted, and log-EHVI against the feasible front on
        the models' scales, its reference point the feasible evaluations' nadir moved out by a tenth of the
        ranges (:func:`graphbo.outcomes.reference_point`; all evaluations while none is feasible)."""
        second = self._objective_models[0]
        train = self.last_training_indices
        y2 = self.Y[:, 1]
        second.fit(inputs, y2 if train is None else y2[train], rng=self.rng)
        if pending is not None:
            second.add_fantasies(pending)
        scaled = np.column_stack([[model.transform_outcome(float(v)) for v in fit_y],
                                  [second.transform_outcome(float(v)) for v in y2]])
        rows = scaled[ok] if ok.any() else scaled
        front = rows[pareto_mask(rows)] if ok.any() else np.zeros((0, 2))
        return LogExpectedHypervolumeImprovement([model, second], front, ref=reference_point(rows),
                                                 constraint_models=self._constraint_models)

    def _incumbent_index(self) -> int:
        """The told evaluation a local search starts from: the best modelled value among the feasible ones
        (among all when none is feasible); with the hypervolume acquisition, a point of the feasible front."""
        y = self.y
        ok = self.feasible_mask
        if self.mo_acquisition == "ehvi" and ok.any():  # two objectives: a point of the front, at random
            feasible_rows = np.flatnonzero(ok)
            front = feasible_rows[pareto_mask(self.Y[feasible_rows])]
            return int(front[self.rng.integers(front.size)])
        return int(np.flatnonzero(ok)[np.argmin(y[ok])]) if ok.any() else int(np.argmin(y))

    def _initial_design(self, rows: list[np.ndarray], n_initial: int) -> list[np.ndarray]:
        """The rows asked first: those of ``initial_configs``, then distinct random ones up to ``n_initial``."""
        n_random = int(max(0, min(n_initial, self.space.size) - len(rows)))
        return rows + self._distinct_random_rows(n_random, {r.tobytes() for r in rows})

    def _distinct_random_rows(self, n: int, taken: AbstractSet[bytes]) -> list[np.ndarray]:
        """``n`` distinct random rows, none in ``taken`` (read, never copied: an ask costs O(1) in the trials)."""
        rows: list[np.ndarray] = []
        new: set[bytes] = set()
        fruitless = 0  # batches in a row that found nothing new: the allowed configurations are all taken
        while len(rows) < n:
            found = False
            for r in self.space.sample_index(n - len(rows), self.rng):
                key = r.tobytes()
                if key not in taken and key not in new and len(rows) < n:
                    new.add(key)
                    rows.append(r)
                    found = True
            fruitless = 0 if found else fruitless + 1
            if fruitless >= MAX_FRUITLESS_DRAWS:
                raise SpaceExhaustedError(f"no configuration left to suggest: {MAX_FRUITLESS_DRAWS} batches of random "
                                          "draws found none that is not evaluated, failed or pending")
        return rows

    # -- protocol ---------------------------------------------------------------
    @overload
    def ask(self, n: None = None) -> dict[str, Any]: ...
    @overload
    def ask(self, n: int) -> list[dict[str, Any]]: ...

    def ask(self, n: int | None = None) -> dict[str, Any] | list[dict[str, Any]]:
        """The next configuration to evaluate; with ``n``, a list of ``n`` distinct ones.

        Asked configurations stay *pending* until told: they are never suggested
        again, and model-based methods account for them (COMBO: kriging believer),
        so several can be evaluated in parallel. With continuous variables, no suggestion is within a
        thousandth of every continuous range of one asked or told before (:data:`CONTINUOUS_DECIMALS`).
        """
        if n is not None:
            return [self._ask_one() for _ in range(self._check_n(n))]
        return self._ask_one()

    @staticmethod
    def _check_n(n: Any) -> int:
        """``ask``'s ``n`` as a positive int (``ValueError`` otherwise)."""
        try:
            ok = not isinstance(n, (bool, str)) and int(n) == n and n >= 1
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise ValueError(f"ask: n must be a positive integer, got {n!r}")
        return int(n)

    def _ask_one(self) -> dict[str, Any]:
        row = self._pop_initial(lambda r: r.tobytes() not in self._evaluated and r.tobytes() not in self._pending)
        if row is None:
            self._refresh_targets(new_weights=True)
            row = np.asarray(self._suggest(), dtype=self.space.row_dtype)
        config = self.space.from_index(row)
        if getattr(self.space, "conditions", None):  # the canonical row (inactive variables on their filler)
            row = self.space.to_index(config)
            if row.tobytes() in self._exclude:  # a non-canonical suggestion of a method that ignores conditions
                row = self._distinct_random_rows(1, self._exclude)[0]
                config = self.space.from_index(row)
        if not self._allows_config(config):  # a method that does not know the rules: an allowed random row
            row = self._distinct_random_rows(1, self._exclude)[0]
            config = self.space.from_index(row)
        if len(self.space.continuous_indices):
            # A continuous coordinate may not survive the trip to a value and back bit for bit;
            # key the pending row by what ``tell`` will compute from the returned config.
            row = self.space.to_index(config)
            for _ in range(100 if self.avoids_near_repeats else 0):  # not twice one configuration up to rounding
                if self._near_key(row) not in self._near:
                    break
                row = self._distinct_random_rows(1, self._exclude)[0]
                config = self.space.from_index(row)
                row = self.space.to_index(config)
            self._near.add(self._near_key(row))
        self._pending[row.tobytes()] = row
        return config

    def _pop_initial(self, is_new: Callable[[np.ndarray], bool]) -> np.ndarray | None:
        """The next row of the initial design for which ``is_new`` holds, or ``None`` when the design is done.

        The rows of ``initial_configs`` are always asked; the design's own rows only while fewer than
        ``n_initial`` evaluations are told or pending, so an optimizer told an earlier study's history (or
        a worker joining a running study) suggests from its model at once, as Optuna's samplers do once
        ``n_startup_trials`` trials are complete."""
        while self._initial:
            if self._n_given_initial == 0 and self.n_told + len(self._pending) >= self.n_initial:
                self._initial.clear()
                return None
            cand = self._initial.pop(0)
            self._n_given_initial = max(0, self._n_given_initial - 1)
            if is_new(cand):
                return cand
        return None

    def _near_key(self, row: np.ndarray) -> bytes:
        """The row with its continuous coordinates rounded to :data:`CONTINUOUS_DECIMALS` decimals of their
        unit range: two configurations with one key are the same but for digits no one tunes."""
        key = np.array(row, dtype=float)
        cont = self.space.continuous_indices
        key[cont] = np.round(key[cont], CONTINUOUS_DECIMALS)
        return key.tobytes()

    def _remember(self, row: np.ndarray) -> None:
        """A told or failed row joins the excluded ones (and, with continuous variables, its rounding)."""
        self._evaluated.add(row.tobytes())
        if len(getattr(self.space, "continuous_indices", ())):  # an architecture space has none
            self._near.add(self._near_key(row))

    def tell(self, config: Mapping[str, Any], value: float | Sequence[float], *,
             constraints: Sequence[float] | np.ndarray | None = None) -> None:
        """Record that ``config`` evaluated to ``value``.

        ``value`` is a number, or after :meth:`set_outcomes` a sequence of ``n_objectives`` numbers, with
        ``constraints`` a sequence of ``n_constraints`` numbers (feasible when all are ``<= 0``).
        Raises ``ValueError`` (and stores nothing) if the configuration is not
        in the space or a value is not a finite number.
        """
        if not self._outcome_mode:
            if constraints is not None and len(constraints):
                raise ValueError("tell: constraints given to an optimizer without black-box constraints "
                                 "(set_outcomes(n_constraints=...))")
            row, v = self._check_told(config, value)
        else:
            row, values, cons = self._check_outcome(config, value, constraints)
            self._objective_values.append(values)
            self._constraint_values.append(cons)
            targets = self._targets()  # normalisation and feasibility ranks depend on every evaluation
            self._y = [float(t) for t in targets[:-1]]
            v = float(targets[-1])
        self._observe(row, v)
        self._pending.pop(row.tobytes(), None)
        self._told_position[row.tobytes()] = len(self._X)
        self._X.append(row)
        self._y.append(v)
        self._remember(row)

    def replay_rows(self, rows: Sequence[np.ndarray], values: Sequence[float | None]) -> None:
        """Tell index rows already checked against the space, in order: a number is a told value (as
        :meth:`tell` records it), ``None`` a failure (as :meth:`mark_failed`). A study's replay of its stored
        trials, without converting each configuration to its row and back. ``ValueError`` for a value
        that is not a finite number (nothing after it is told).

        Only for an optimizer whose ``tell`` and ``mark_failed`` are this class's, with one objective and no
        fidelities (a subclass that overrides them learns through them, which this bypasses): the rows must
        be the ``space.to_index`` rows of configurations of the space."""
        for row, value in zip(rows, values):
            key = row.tobytes()
            if value is None:
                self._pending.pop(key, None)
                self._remember(row)
                continue
            if type(value) is not float or not math.isfinite(value):
                value = as_real(value)
                if not math.isfinite(value):
                    raise ValueError(f"tell: value {value!r} is not finite")
            self._observe(row, value)
            self._pending.pop(key, None)
            self._told_position[key] = len(self._X)
            self._X.append(row)
            self._y.append(value)
            self._remember(row)

    def _check_outcome(self, config: Mapping[str, Any], value: Any,
                       constraints: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``tell``'s checks in outcome mode: the row, the objective vector and the constraint vector."""
        row = self.space.to_index(config)
        vals = _finite_vector(value, self.n_objectives, "objective value", config, allow_scalar=True)
        cons = _finite_vector([] if constraints is None else constraints, self.n_constraints,
                              "constraint value", config, allow_scalar=False)
        return row, vals, cons

    def _check_told(self, config: Mapping[str, Any], value: Any) -> tuple[np.ndarray, float]:
        """``tell``'s checks: the index row of ``config`` and ``value`` as a finite float, or ``ValueError``."""
        row = self.space.to_index(config)
        try:
            v = as_real(value)  # a real number: not a str, bytes, bool, complex or array of several
        except (TypeError, ValueError) as exc:
            raise ValueError(f"tell: value for {dict(config)!r} must be a real number, got {exc}") from None
        if not math.isfinite(v):
            raise ValueError(f"tell: value {value!r} for {dict(config)!r} is not finite")
        return row, v

    def mark_failed(self, config: Mapping[str, Any]) -> None:
        """Record that evaluating ``config`` failed: it is never suggested again, the model is not told.

        The configuration leaves the pending set and joins the excluded ones
        (with the evaluated). To penalise it instead, :meth:`tell` a value.
        """
        row = self.space.to_index(config)
        self._pending.pop(row.tobytes(), None)
        self._remember(row)

    # -- results ------------------------------------------------------------------
    @property
    def n_told(self) -> int:
        return len(self._y)

    @property
    def n_pending(self) -> int:
        """Configurations asked for and not yet told (evaluations in flight)."""
        return len(self._pending)

    @property
    def pending_configs(self) -> list[dict[str, Any]]:
        """The configurations in flight (asked, or given to :meth:`add_pending`, and not yet told), in the
        order they became pending."""
        return [self.space.from_index(row) for row in self._pending.values()]

    def add_pending(self, config: Mapping[str, Any]) -> None:
        """Mark ``config`` as being evaluated without having asked for it (a trial in flight when a study
        resumes, or one another sampler suggested): it is not suggested again, and the model-based methods
        condition their next suggestion on it as they do on their own asked configurations (a kriging
        believer). A configuration already told or failed is left as it is."""
        row = self.space.to_index(config)
        if row.tobytes() not in self._evaluated:
            self._pending[row.tobytes()] = row

    def remove_pending(self, config: Mapping[str, Any]) -> None:
        """Forget that ``config`` is being evaluated, without telling anything (its evaluation was never
        started or was cancelled): it may be suggested again. Nothing happens if it is not pending."""
        self._pending.pop(self.space.to_index(config).tobytes(), None)

    def clear_pending(self) -> None:
        """:meth:`remove_pending` for every configuration in flight."""
        self._pending.clear()

    @property
    def exhausted(self) -> bool:
        """Whether every configuration of a discrete space is told, failed or pending, so that :meth:`ask` has
        nothing left to suggest (always ``False`` with continuous variables)."""
        return self.space.is_discrete and len(self._exclude) >= self.space.size

    @property
    def excluded_rows(self) -> frozenset[bytes]:
        """The index rows this optimizer will not suggest (told, failed or pending), each as ``row.tobytes()``:
        the ``exclude`` argument of the acquisition optimisers (:mod:`graphbo.optim`). A snapshot."""
        return frozenset(self._exclude)

    @property
    def X(self) -> np.ndarray:
        """Index rows of the told evaluations, shape ``(n, d)``."""
        return np.array(self._X, dtype=self.space.row_dtype).reshape(-1, len(self.space))

    @property
    def y(self) -> np.ndarray:
        return np.array(self._y, dtype=float)

    @property
    def history(self) -> list[Observation]:
        return [Observation(self.space.from_index(r), v) for r, v in zip(self._X, self._y)]

    @property
    def best(self) -> Observation | None:
        """The best (lowest) evaluation told so far, or ``None``. With black-box constraints the best feasible one
        (``None`` while none is); with several objectives, the best under the latest scalarisation."""
        if not self._y:
            return None
        if self.n_constraints:
            ok = self.feasible_mask
            if not ok.any():
                return None
            y = np.array(self._y)
            i = int(np.flatnonzero(ok)[np.argmin(y[ok])])
            return Observation(self.space.from_index(self._X[i]), self._y[i])
        i = int(np.argmin(self._y))
        return Observation(self.space.from_index(self._X[i]), self._y[i])

    # -- resumable state ----------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """JSON-serialisable state beyond the told data: random generator, initial design, method state.

        Together with the told evaluations (replayed through :meth:`tell`), it
        restores the optimizer exactly: a resumed run continues with the same
        suggestions as an uninterrupted one.
        """
        return {
            "rng": self.rng.bit_generator.state,
            "initial": [r.tolist() for r in self._initial],
            "given_initial": self._n_given_initial,
            "method": self._method_state(),
            "subset_key": self._subset_key,
            **({"weights": self._weights.tolist()} if self._weights is not None else {}),
            **({"surrogates": [self._surrogate_state(m) for m in self._extra_surrogates]}
               if self._extra_surrogates else {}),
        }

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`get_state` returned (after the told data has been replayed)."""
        self._load_method_state(state.get("method") or {})
        self._initial = [np.asarray(r, dtype=self.space.row_dtype) for r in state["initial"]]
        self._n_given_initial = check_int("given_initial", state.get("given_initial", 0), minimum=0)
        self._pending.clear()
        for model, saved in zip(self._extra_surrogates, state.get("surrogates") or []):
            self._load_surrogate_state(model, saved)
        if "weights" in state:
            self._weights = np.asarray(state["weights"], dtype=float)
            self._refresh_targets(new_weights=False)
        if "subset_key" in state:  # states saved before the training-set cap have none
            self._subset_key = check_int("subset_key", state["subset_key"], minimum=0)
        self.rng.bit_generator.state = state["rng"]  # last: restoring method state may draw numbers

    def _method_state(self) -> dict[str, Any]:
        return {}

    def _load_method_state(self, state: Mapping[str, Any]) -> None:
        pass

    def _fit(self) -> Any:
        """Fit the method's surrogate ``self.model`` on the told observations (a model-based method's)."""
        raise NotImplementedError(f"{type(self).__name__} fits no single surrogate")

    def fit_model(self) -> Any:
        """The method's surrogate fitted on the told observations as at a suggestion (no pending evaluations),
        from this optimizer's generator; what :func:`graphbo.importance.param_importances` reads. COMBO and
        BO-FM have one; ``NotImplementedError`` for the others."""
        if self.n_told < 2:
            raise ValueError(f"fitting the model needs at least 2 told values, got {self.n_told}")
        self._fit()
        return getattr(self, "model")

    def _training_indices(self, y: np.ndarray) -> np.ndarray:
        """The observations (indices into ``y``) the model is fitted on: :func:`training_subset` under
        ``max_train``, seeded by the optimizer's seed; kept in :attr:`last_training_indices`."""
        idx = training_subset(y, self.max_train, key=self._subset_key)
        self.last_training_indices = idx
        return idx

    # -- hooks for subclasses ------------------------------------------------------
    def _suggest(self) -> np.ndarray:
        """Index row of the method's next suggestion (after the initial design)."""
        raise NotImplementedError

    def _observe(self, row: np.ndarray, value: float) -> None:
        """Called by :meth:`tell` after validation, before the data is stored."""

    @property
    def _exclude(self) -> set[bytes]:
        """The rows never to suggest (evaluated, failed or pending), as a read-only view: nothing is copied.

        Typed ``set`` for the acquisition optimisers' signatures, which only test membership, take its
        length or iterate over it; it has no ``add``.
        """
        return cast("set[bytes]", _Excluded(self._evaluated, self._pending))


#: random draws give up (SpaceExhaustedError) after this many batches in a row find no new configuration
MAX_FRUITLESS_DRAWS = 10_000

#: a suggestion is never within the rounding of an earlier one: every continuous coordinate equal to this many
#: decimals of its unit range (a thousandth of the range)
CONTINUOUS_DECIMALS = 3

#: the acquisitions of several objectives: ParEGO's random scalarisation (every method) and, for two objectives
#: and a model-based method, the expected hypervolume improvement
MO_ACQUISITIONS = ("parego", "ehvi")

#: default cap on the training set of the GP-based optimizers (``max_train``; :func:`training_subset`): a
#: COMBO suggestion on 28 binary variables costs about 8 CPU seconds at 500 rows and 49 at 1,000
#: (docs/reliability.md, "Load"), and the papers' runs (at most a few hundred evaluations) stay uncapped
DEFAULT_MAX_TRAIN = 500
#: the smallest cap accepted: the kept part then still holds a few best, recent and random observations
MIN_MAX_TRAIN = 20


def check_max_train(value: Any) -> int | None:
    """The ``max_train`` option: ``None`` (fit on every observation) or an integer ``>= MIN_MAX_TRAIN``."""
    return check_optional_int("max_train", value, minimum=MIN_MAX_TRAIN)


def training_subset(y: Sequence[float] | np.ndarray, max_train: int | None, *, key: int) -> np.ndarray:
    """Indices, ascending, of the observations a GP is fitted on when at most ``max_train`` may be.

    Exact GP inference costs ``O(n^3)`` time and ``O(n^2)`` memory in the number ``n`` of training points
    (Rasmussen & Williams 2006, Alg. 2.1; their Sec. 8.3.3, "subset of datapoints", fits a subset for
    this reason), so a study of 10,000 trials would make every suggestion cost hours. With ``n <= max_train``
    every observation is used. Beyond it, with ``h = max_train // 4`` (the *refresh period*) and
    ``b = max_train - h``, the last refresh point is ``r = b + h * floor((n - 1 - b) / h)`` (so
    ``max_train <= r < n``, and ``r`` moves every ``h`` observations) and the subset is

    * a *kept part* of ``b`` observations among the first ``r``, fixed until the next refresh:
      the ``b // 3`` lowest values (ties: the earlier one), then the ``b // 3`` most recent
      of the others, then a uniform sample of the remaining ones, without replacement, from
      a generator seeded with ``(key, r)``;
    * every observation since the refresh point (``n - r`` of them, 1 to ``h``).

    It has between ``b + 1`` and ``max_train`` rows; it is a function of ``y[:r]``, ``max_train``,
    ``key`` and ``n`` alone (reproducible, and recomputed identically on resume); and between refresh
    points it grows by appending, so a model that caches per-pair work on a growing list (NASBOT's
    OTMANN distances) recomputes it only every ``h`` observations.

    Why these parts. Expected improvement looks for improvement on the incumbent, so the model must be
    accurate near the best points (and the best value itself is always in the subset: the lowest of
    ``y[:r]`` is the first of the kept best, a later one is in the recent part, so the incumbent of EI is
    the best of *all* observations). The recent observations are where the search is working now; a
    model that did not see them would suggest again next to a region it has just found poor. A uniform
    sample of the rest keeps an unbiased picture of the whole landscape, so that the fitted mean,
    amplitude and length-scales are not those of the good region alone (a fit on the best points only
    underestimates the variance and flatters the unexplored space).

    Parameters
    ----------
    y : sequence of float
        Every told value the model could be fitted on, in the order told.
    max_train : int or None
        The cap (``None``: no cap, every index).
    key : int
        Non-negative seed of the uniform part (the optimizer's seed, see ``Optimizer._subset_key``).
    """
    y = np.asarray(y, dtype=float).reshape(-1)
    n = y.size
    if max_train is None or n <= max_train:
        return np.arange(n)
    h = max(1, max_train // 4)
    b = max_train - h
    r = b + h * ((n - 1 - b) // h)
    n_best, n_recent = b // 3, b // 3
    best = np.argsort(y[:r], kind="stable")[:n_best]
    taken = np.zeros(r, dtype=bool)
    taken[best] = True
    others = np.flatnonzero(~taken)
    recent = others[len(others) - n_recent:] if n_recent else others[:0]
    taken[recent] = True
    rest = np.flatnonzero(~taken)
    rng = np.random.default_rng([int(key), int(r)])
    sample = rng.choice(rest, size=b - n_best - n_recent, replace=False)
    taken[sample] = True
    return np.concatenate([np.flatnonzero(taken), np.arange(r, n)])


def _finite_vector(value: Any, n: int, what: str, config: Mapping[str, Any], *, allow_scalar: bool) -> np.ndarray:
    """``value`` as ``n`` finite floats, or ``ValueError`` saying what is wrong."""
    if allow_scalar and n == 1 and not isinstance(value, (list, tuple, np.ndarray)):
        items: list[Any] = [value]
    elif isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__len__"):
        raise ValueError(f"tell: {n} {what}(s) expected for {dict(config)!r}, got {value!r}")
    else:
        items = list(np.asarray(value, dtype=object).reshape(-1)) if isinstance(value, np.ndarray) else list(value)
    if len(items) != n:
        raise ValueError(f"tell: {n} {what}(s) expected for {dict(config)!r}, got {len(items)}: {value!r}")
    out = np.empty(n, dtype=float)
    for i, item in enumerate(items):
        try:
            out[i] = as_real(item)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"tell: {what} {i} for {dict(config)!r} must be a real number, got {exc}") from None
        if not math.isfinite(out[i]):
            raise ValueError(f"tell: {what} {i} for {dict(config)!r} is {item!r}, not a finite number")
    return out


class _Excluded(Set[Any]):
    """The union of a growing set of done items (evaluated rows, their keys) and a few pending ones, without
    building it.

    ``in`` and ``len`` cost O(1) in the done items (``len`` counts the pending items not done, a few:
    the evaluations in flight); iteration gives each item once. The set operators (``|``, ``-``, ...) of
    :class:`collections.abc.Set` return plain sets.
    """

    __slots__ = ("_evaluated", "_pending")

    def __init__(self, evaluated: AbstractSet[Any], pending: Collection[Any]):
        self._evaluated = evaluated
        self._pending = pending

    def __contains__(self, key: object) -> bool:
        return key in self._evaluated or key in self._pending

    def __len__(self) -> int:
        return len(self._evaluated) + sum(1 for k in self._pending if k not in self._evaluated)

    def __iter__(self) -> Iterator[Any]:
        return itertools.chain(self._evaluated, (k for k in self._pending if k not in self._evaluated))

    @classmethod
    def _from_iterable(cls, it: Iterable[_T]) -> set[_T]:
        return set(it)


def signature_without(cls: type, name: str) -> inspect.Signature:
    """The signature of ``cls.__init__`` without the option ``name``: for a subclass whose
    ``__init__(self, space, **options)`` fixes that option (``bofm-modlap``, ``cocabo-0``)."""
    sig = inspect.signature(getattr(cls, "__init__"))
    return sig.replace(parameters=[p for p in sig.parameters.values() if p.name != name])
