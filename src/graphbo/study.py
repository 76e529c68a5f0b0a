"""Studies: an optimisation whose trials are kept in a store, crash-safe and resumable.

A :class:`Study` wraps an optimizer (by method name) and records every trial
through the storage interface (:mod:`graphbo.storage`): in an SQLite file
(:class:`~graphbo.storage.SQLiteStorage`, WAL mode; its tables are described
there) when given a path, in memory (:class:`~graphbo.storage.InMemoryStorage`)
without one, or in any :class:`~graphbo.storage.Storage` given.

Nothing is pickled: a store holds JSON and numbers only. Every write is
committed before :meth:`Study.ask`, :meth:`Study.tell` or :meth:`Study.fail`
returns. Opening an existing study resumes it: the finished trials are replayed
through the optimizer's ``tell`` (failures through ``mark_failed``) in the
order they were told, the latest optimizer state is restored, and trials left
``running`` by a crash are handed out first by the next :meth:`Study.ask`, with
the same configurations. A resumed sequential run therefore ends with the same
trace as an uninterrupted one. A trial whose evaluation took its process down
(killed, ``os._exit``, a segfault: the writer died with the trial handed out) is
handed out again at most ``max_retries`` times (default 1); then it is recorded
failed with the reason, so it cannot wedge the study. An interruption that
closes the study (Ctrl-C) does not count.

One writer at a time: a second study opened for writing on a file that a live
process (or another study of this process) has open raises
:class:`~graphbo.storage.StudyLockedError` at once, before anything is
written; readers (:func:`~graphbo.storage.info.read_study_info`, ``graphbo report``) work meanwhile. A
lock left by a process that died on this host is taken over; one left on
another host is cleared with ``graphbo unlock STUDY.db``. A configuration is
evaluated once per study: telling one that is already finished raises
``ValueError`` naming its trial.

Before anything is written, an existing file is read without changes and
checked; a file that is corrupt, not SQLite, not a graphbo study, written by a
newer graphbo, or made for another space, method, seed or method options raises
:class:`StorageError` naming the file, which is left byte-for-byte unchanged.

A study minimises its objective unless made with ``direction="maximize"``,
which is stored with it: graphbo minimises internally, so the optimizer is told
the negatives, while the trials, the history and the best value keep the values
as told (the user's sign). Trials are numbered from 0 in the order they were
asked, the same number everywhere (store, logs, the ``graphbo`` command).

A multi-fidelity method (BOHB) chooses a fidelity for each trial: it is the
trial attribute ``"fidelity"`` (``trial.attrs``), which the evaluation must
use; :func:`graphbo.minimize`, whose objective takes a configuration only,
refuses such methods. Such an optimizer cannot take back an ask from a saved
state, so its state is saved after tells only and, on resuming, it is asked
again for the trials left running: those it suggests again (a sequential run's
always) are resumed; any other is recorded failed and what it suggested
instead is handed out first.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import os
import secrets
import time
from typing import Any, Callable, Mapping, Sequence, overload

import numpy as np

from .optimizers import METHODS
from .optimizers.auto import AUTO, choose_method
from .optimizers.base import Observation, Optimizer
from .spaces.space import FINGERPRINT_SAMPLES, Space
from .spaces.variables import Variable
from .storage import Storage, as_storage
from .storage.base import (DIRECTIONS, FORMAT_VERSION, STATUSES, CorruptStudyError, HotJournalError, StorageError,
                           StoredStudy, Trial, now, stored_direction)
from .storage.jsonio import plain
from .threads import DEFAULT_THREADS, limit_threads
from .evaluation import _evaluate
from .parallel import ParallelEvaluations, check_parallel_run
from .pruners import Pruner, _evaluating, _Reporter, check_pruner, intermediate_of
from .outcomes import Outcome, as_outcome, check_directions, check_reference_point, hypervolume, pareto_mask
from .exceptions import ObjectiveFailingError, SpaceExhaustedError
from .progress import ProgressBar, check_show_progress
from ._validation import (as_real, check_budget, check_callable, check_int, check_optional_int, check_real,
                          check_seed, check_timeout)

__all__ = ["Study", "Trial", "StorageError", "describe_space", "check_direction", "FORMAT_VERSION",
           "DIRECTIONS"]

#: the studies' log: created and resumed studies (INFO), each finished trial (DEBUG), failed evaluations, trials
#: failed on resuming and an exhausted space (WARNING); graphbo adds no handler (the application configures logging)
logger = logging.getLogger(__name__)

#: configurations an optimizer suggested, each with its trial attributes (a multi-fidelity method's fidelity)
_Asked = list[tuple[dict[str, Any], dict[str, Any]]]


def _strict_options(options: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Method options as JSON; a value that does not survive JSON is an error (it could not be compared)."""
    out = {}
    for key, value in options.items():
        try:
            text = json.dumps(value, default=lambda o: o.item() if isinstance(o, np.generic) else _raise(o))
        except TypeError:
            raise TypeError(
                f"{where}: method option {key}={value!r} cannot be stored as JSON; "
                "persistent studies take numbers, strings, lists and dicts of them"
            ) from None
        out[key] = json.loads(text)
    return out


def _raise(o: Any):
    raise TypeError(type(o).__name__)


def describe_space(space: Space) -> list[dict[str, Any]]:
    """JSON description of a space: for each variable its name, class and values (or bounds).

    Graph variables also carry a SHA-256 of their adjacency matrix (edge weights
    included). Used to refuse resuming a study with a different space. A space with
    its own ``describe()`` (an architecture space) describes itself.
    """
    if not isinstance(space, Space) and hasattr(space, "describe"):
        return plain(space.describe())
    out = []
    for name, var in zip(space.names, space.declared_variables):
        d: dict[str, Any] = {"name": name, "class": type(var).__name__}
        values = getattr(var, "values", None)
        if values is not None:
            d["values"] = plain(list(values))
        for attr in ("low", "high", "log"):
            if hasattr(var, attr):
                d[attr] = plain(getattr(var, attr))
        adj = getattr(var, "adjacency", None)
        if adj is not None:
            d["adjacency_sha256"] = hashlib.sha256(np.ascontiguousarray(adj, dtype="<f8").tobytes()).hexdigest()
        if name in space.conditions:  # only conditional variables carry the key: earlier descriptions are unchanged
            d["active_if"] = {p: plain(list(v)) for p, v in space.conditions[name].items()}
        out.append(d)
    return out


def space_from_description(description: Any) -> Space | None:
    """The :class:`Space` a stored description (:func:`describe_space`) was made from, or ``None`` where it
    cannot be rebuilt exactly (a graph variable, whose description holds only a checksum of its graph; an
    ordinal with an edge weight other than the default or 1; an architecture space; a damaged description).
    Known constraints are not part of the description and are not rebuilt."""
    from .spaces.variables import Binary, Categorical, Continuous, IntegerRange, Ordinal

    if not isinstance(description, list) or not description:
        return None
    variables: dict[str, Any] = {}
    conditions: dict[str, dict[str, Any]] = {}
    try:
        for d in description:
            name, cls = d["name"], d["class"]
            if cls in ("Categorical", "Binary"):
                variables[name] = Binary() if cls == "Binary" else Categorical(d["values"])
            elif cls == "Ordinal":
                variables[name] = Ordinal(d["values"])
                if describe_space(Space({name: variables[name]}))[0] != {k: v for k, v in d.items()
                                                                          if k != "active_if"}:
                    variables[name] = Ordinal(d["values"], edge_weight=1.0)
            elif cls in ("Continuous", "IntegerRange"):
                variables[name] = (IntegerRange if cls == "IntegerRange" else Continuous)(d["low"], d["high"],
                                                                                          log=d.get("log", False))
            else:
                return None
            if "active_if" in d:
                conditions[name] = d["active_if"]
        space = Space(variables, conditions=conditions or None)
    except (KeyError, TypeError, ValueError):
        return None
    return space if describe_space(space) == description else None


def _space_difference(stored: Any, given: list[dict[str, Any]]) -> str | None:
    if stored == given:
        return None
    if not isinstance(stored, list) or not all(isinstance(d, dict) for d in stored):
        return f"the study's stored space is {type(stored).__name__}, not a list of variables (a damaged file?)"
    s_names, g_names = [d.get("name") for d in stored], [d.get("name") for d in given]
    if s_names != g_names:
        return f"the study's variables are {s_names}, the given space has {g_names}"
    for s, g in zip(stored, given):
        if s != g:
            keys = [k for k in list(g) + [k for k in s if k not in g] if s.get(k) != g.get(k)]
            k = keys[0]
            if k == "adjacency_sha256":
                return f"variable {s['name']!r} has another graph (adjacency matrix or edge weights)"
            return (f"variable {s['name']!r} differs in {k}: the study has {s.get(k)!r}, "
                    f"the given space has {g.get(k)!r}")
    return "the spaces differ"  # pragma: no cover


def _space_types() -> tuple[type, ...]:
    """The space classes a study accepts: graphbo spaces and NAS architecture spaces."""
    from .nas.domain.space import ArchitectureSpace

    return (Space, ArchitectureSpace)


def _check_number(value: Any, what: str) -> float:
    """``value`` as a finite float if it is a real number (:func:`graphbo._validation.as_real`: no str, bytes,
    bool, ``np.bool_``, complex or array of several numbers); ``ValueError`` naming ``what`` otherwise."""
    try:
        v = as_real(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{what} must be a real number, got {exc}") from None
    if not math.isfinite(v):
        raise ValueError(f"{what} {value!r} is not finite")
    return v


#: ``failure_value="worst"``: a failed evaluation is told to the model as the worst complete value so far
WORST = "worst"


def check_failure_value(value: Any) -> float | str | None:
    """``failure_value`` checked: ``"worst"``, ``None`` or a finite number."""
    if value is None or (isinstance(value, str) and value == WORST):
        return value
    if isinstance(value, str):
        raise ValueError(f"failure_value must be a finite number, 'worst' or None, got {value!r}")
    return check_real("failure_value", value)


def check_direction(direction: Any, name: str = "direction") -> str | None:
    """``direction`` checked: ``"minimize"``, ``"maximize"`` or ``None`` (a study's stored one, else minimize);
    ``ValueError`` naming the argument otherwise."""
    if direction is None or (isinstance(direction, str) and direction in DIRECTIONS):
        return direction
    raise ValueError(f"{name} must be 'minimize' or 'maximize', got {direction!r}")


def _front_hypervolume(front: np.ndarray, ref: np.ndarray) -> float:
    """The hypervolume of a non-empty front against ``ref`` (both minimised); ``ValueError`` when no point of the
    front dominates ``ref`` (a reference point better than the whole front measures nothing)."""
    if not np.any(np.all(front < ref, axis=1)):
        raise ValueError("reference_point is not dominated by any point of the Pareto front (no point is better in "
                         "every objective); "
                         "give one worse than every point of interest in every objective")
    return hypervolume(front, ref)


def _fidelity(t: Trial) -> dict[str, Any]:
    """``fidelity=`` for the optimizer's tell and mark_failed: a multi-fidelity trial's, else nothing."""
    return {"fidelity": int(t.attrs["fidelity"])} if "fidelity" in t.attrs else {}


def _complete_value(t: Trial) -> float:
    """The value of a complete trial of a study, a finite number (told through the optimizer's checks)."""
    assert t.value is not None, f"complete trial {t.number} has no value"
    return t.value


# -- the study ------------------------------------------------------------------------------------
def _progress(stored: StoredStudy) -> list[tuple[int, str, str | None, int | None]]:
    """What changes in a study's trials when a writer asks, tells or hands out one again."""
    return [(t.number, t.status, t.started, t.tell_order) for t in stored.trials]


def _told_first(t: Trial) -> tuple[bool, int, int]:
    """Sort key: trials in the order they were told, then (a store that keeps no tell order) by number."""
    return (t.tell_order is None, t.tell_order if t.tell_order is not None else 0, t.number)


class _InThisProcess:
    """The evaluations of a sequential run of :meth:`Study.optimize`: each one done (evaluated and recorded)
    by ``evaluate(trial)`` before :meth:`submit` returns, so that none is ever in flight; the interface of
    :class:`graphbo.parallel.ParallelEvaluations`, which :meth:`Study._run` drives alike."""

    n_in_flight = 0

    def __init__(self, evaluate: Callable[[Trial], None]) -> None:
        self.evaluate = evaluate

    def submit(self, trial: Trial) -> None:
        """Evaluate ``trial`` and record its outcome."""
        self.evaluate(trial)

    def __enter__(self) -> _InThisProcess:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def has_room(self) -> bool:
        return True

    def wait(self, finished: bool) -> bool:
        """Nothing is ever in flight: ``False``."""
        return False


class Study:
    """An optimisation whose trials are kept in a store: an SQLite file, memory, or any :class:`Storage`.

    Parameters
    ----------
    space : Space
    method : str, default "auto"
        Optimizer name, as for :func:`graphbo.minimize`. ``"auto"`` becomes, for a new study,
        :func:`graphbo.optimizers.auto.choose_method`'s choice for ``space`` and ``auto_budget``, and for a
        stored one the method it was created with; :attr:`method` and the file hold that name.
    storage : str, path-like or Storage, optional
        SQLite file: created if absent (with its folder); resumed if it exists.
        ``None`` keeps the study in memory (nothing survives the process). A
        :class:`~graphbo.storage.Storage` is used as it is (and resumed if it
        holds a study).
    seed : int, optional
        Seed of the optimizer. ``None`` draws one, which is stored, so a resumed
        study continues with the same random choices; resuming with ``None``
        takes the stored seed.
    direction : {"minimize", "maximize"}, optional
        Whether the best value is the lowest or the highest. graphbo minimises:
        a maximising study tells its optimizer the negative of each value (and
        of a failure's penalty), but stores and reports the values as they were
        told (trials, :attr:`history`, :attr:`best_value`). Stored with the
        study; ``None`` takes the stored direction when resuming and
        ``"minimize"`` for a new study. Resuming with the other direction raises
        :class:`StorageError`.
    directions : list of {"minimize", "maximize"}, optional
        Several objectives, one direction each (instead of ``direction``): every tell then takes one value
        per objective, and the results are the Pareto front (:attr:`pareto_front`, :meth:`hypervolume`).
        Stored with the study, like ``direction``.
    n_constraints : int, optional
        The number of black-box constraint values each tell takes (``constraints=``; feasible when every
        one is ``<= 0``, as Optuna's ``constraints_func``). The best trial is the best feasible one.
        Stored with the study; ``None`` takes the stored number (0 for a new study).
    user_attrs : mapping, optional
        Free attributes written with a new study, in the same write as its
        record (an existing study keeps its own; see :meth:`set_user_attr`).
    n_threads : int or None, default 1
        torch and BLAS threads while the optimizer suggests (:func:`graphbo.threads.limit_threads`;
        not stored). One thread is fastest for graphbo's small matrices; ``None`` leaves the
        process's settings alone.
    runtime_options : mapping, optional
        Passed to the optimizer but neither stored nor compared on resume:
        what the caller derives from its objective each time (a benchmark's
        validity test for regularized evolution, its full fidelity for BOHB).
    max_retries : int, default 1
        How many times a trial found ``running`` after its process died (see the
        module docstring) is handed out again; after that it is recorded failed.
        Not stored: each opening decides.
    pruner : graphbo.MedianPruner or graphbo.SuccessiveHalvingPruner, optional
        Stops evaluations whose intermediate values (:func:`graphbo.report`, :meth:`report`) fall behind
        those of the finished trials (:mod:`graphbo.pruners`, docs/pruning.md). One objective, no black-box
        constraints. Not stored.
    auto_budget : int, optional
        The evaluations planned, for ``method="auto"`` only (:func:`graphbo.minimize` passes its budget);
        ``None``: not known. Not stored.
    **method_options
        Passed to the optimizer (``n_initial``, COMBO's ``n_random``, ...). For a
        file they must be JSON values; resuming with other options is refused.

    Examples
    --------
    A loop of your own (``minimize(..., storage=...)`` runs this one)::

        with Study(space, "combo", storage="runs/s.db", seed=0) as study:
            while study.n_finished < 50:
                trial = study.ask()          # recorded `running`
                try:
                    study.tell(trial, objective(trial.config))
                except Exception as exc:
                    study.fail(trial, exc)   # never suggested again
    """

    def __init__(self, space: Space, method: str = "auto", *, storage: str | os.PathLike | Storage | None = None,
                 seed: int | None = None, direction: str | None = None,
                 directions: Sequence[str] | None = None, n_constraints: int | None = None,
                 user_attrs: Mapping[str, Any] | None = None,
                 runtime_options: Mapping[str, Any] | None = None, n_threads: int | None = DEFAULT_THREADS,
                 max_retries: int = 1, auto_budget: int | None = None, pruner: Pruner | None = None,
                 **method_options: Any):
        if not isinstance(space, _space_types()):
            raise TypeError(f"space must be a graphbo.Space or a graphbo.nas.ArchitectureSpace, "
                            f"got {type(space).__name__}")
        if not isinstance(method, str) or (method.lower() not in METHODS and method.lower() != AUTO):
            raise ValueError(f"unknown method {method!r}; choose {AUTO!r} or one of {sorted(METHODS)}")
        auto_budget = check_optional_int("auto_budget", auto_budget, minimum=1)
        seed = check_seed(seed)
        direction = check_direction(direction)
        if directions is not None:
            if direction is not None:
                raise ValueError("give direction (one objective) or directions (one per objective), not both")
            directions = check_directions(directions)
            if len(directions) == 1:
                direction, directions = directions[0], None
        n_constraints = check_optional_int("n_constraints", n_constraints, minimum=0)
        #: stops evaluations whose intermediate values fall behind (:mod:`graphbo.pruners`); not stored
        self.pruner: Pruner | None = check_pruner(pruner)
        self._reporters: dict[int, _Reporter] = {}
        self.n_threads = check_optional_int("n_threads", n_threads, minimum=1)
        self.max_retries = check_int("max_retries", max_retries, minimum=0)
        #: a run (:meth:`optimize`, :func:`graphbo.minimize`) stops when this many evaluations failed with one
        #: error and none completed (``None``: never)
        self.stop_after_failures: int | None = 10
        self._owns_storage = not isinstance(storage, Storage)
        self._storage = as_storage(storage)
        self._closed = False
        self.space = space
        self.path: str | None = self._storage.path
        where = f"Study({self.path})" if self.path else "Study"
        options = _strict_options(method_options, where) if self.path else dict(method_options)
        self.method_options = options
        space_desc = describe_space(space)
        try:
            stored = self._storage.load()
        except HotJournalError:  # a writer crashed mid-write: SQLite rolls back when the file is opened to write
            recover = getattr(self._storage, "recover_journal", None)
            if recover is None:
                raise
            recover()
            stored = self._storage.load()
        if method.lower() == AUTO:  # the stored study's own method, else the rule's choice (docs/auto.md)
            kept = stored.meta.get("method") if stored is not None else None
            several = bool((directions and len(directions) > 1) or n_constraints)
            method = kept if isinstance(kept, str) and kept.lower() in METHODS else \
                choose_method(space, auto_budget, single_objective=not several)
        self.method = method.lower()
        rules = [c.description for c in space.constraints] if isinstance(space, Space) else []
        verdicts = space.function_rule_fingerprints() if isinstance(space, Space) else {}
        if stored is not None:
            self._check_match(stored.meta, space_desc, seed, options, direction)
            self._check_outcomes_match(stored.meta, directions, n_constraints, rules)
            self._check_function_rules(stored.meta, verdicts)
            seed = stored.meta["seed"]
            direction = stored_direction(stored.meta)
            directions = stored.meta.get("directions")
            n_constraints = stored.meta.get("n_constraints", 0)
        elif seed is None:
            seed = secrets.randbits(31)
        self.seed = int(seed)
        #: ``"minimize"`` or ``"maximize"`` (the first objective's, with several)
        self.direction: str = directions[0] if directions else (direction or DIRECTIONS[0])
        #: each objective's direction (one entry for a single objective)
        self.directions: list[str] = list(directions) if directions else [self.direction]
        #: the number of black-box constraint values each trial returns
        self.n_constraints: int = int(n_constraints or 0)
        self._sign = -1.0 if self.direction == "maximize" else 1.0  # what the optimizer is told: sign * value
        self._signs = np.array([-1.0 if d == "maximize" else 1.0 for d in self.directions])
        self._optimizer_args = (dict(method_options), dict(runtime_options or {}))
        self._new_optimizer()
        self._resume_queue: list[Trial] = []
        self._t_ask: dict[int, float] = {}
        if self.pruner is not None and (len(self.directions) > 1 or self.n_constraints):
            raise ValueError("a pruner compares one objective's intermediate values: it is for a study with one "
                             "objective and no black-box constraints")
        if stored is not None:
            self._restore(stored)  # every check first: a damaged file is refused before anything is written
            self._storage.open()  # the writer lock: refused while another writer is alive
            try:
                if not self._storage.unchanged_since(stored):
                    fresh = self._storage.load() or stored
                    if _progress(fresh) != _progress(stored):  # a writer wrote between the check and the lock
                        self._new_optimizer()
                        self._restore(fresh)
                    crashes = {t.number: t.crashes for t in fresh.trials if t.status == "running"}
                    for t in self._trials:  # counted when the lock was taken over from a dead writer
                        t.crashes = crashes.get(t.number, t.crashes)
                self._settle(*self._pend_running())
            except BaseException:
                self._storage.close()
                raise
        else:
            meta: dict[str, Any] = {"method": self.method, "seed": self.seed, "method_options": plain(options),
                                    "space": space_desc, "direction": self.direction,
                                    "user_attrs": plain(dict(user_attrs or {}))}
            if self.n_objectives > 1:
                meta["directions"] = self.directions
            if self.n_constraints:
                meta["n_constraints"] = self.n_constraints
            if rules:
                meta["space_constraints"] = rules
            if verdicts:
                meta["function_rule_verdicts"] = verdicts
            self._storage.create(meta)
        if stored is None:
            logger.info("created study %s (method %s, seed %d, %s)", self.path or "in memory", self.method,
                        self.seed, self.direction)
        else:
            logger.info("resumed study %s (method %s, seed %d, %s): %d trials, %d finished, %d to resume",
                        self._storage.name, self.method, self.seed, self.direction, len(self._trials),
                        self._n_finished, len(self._resume_queue))

    # -- opening ----------------------------------------------------------------------------
    def _check_match(self, meta: Mapping[str, Any], space_desc: list, seed: int | None,
                     options: Mapping[str, Any], direction: str | None) -> None:
        name = self._storage.name
        stored_dir = stored_direction(meta)
        if stored_dir is None:
            raise CorruptStudyError(f"{name}: corrupt graphbo study (direction {meta.get('direction')!r}, not one "
                                    f"of {list(DIRECTIONS)})")
        if direction is not None and direction != stored_dir:
            raise StorageError(f"{name}: the study was created with direction={stored_dir!r}, not {direction!r}; "
                               f"give direction={stored_dir!r} or leave direction out")
        stored = meta["method"]
        if METHODS.get(str(stored).lower()) is not METHODS[self.method]:
            raise StorageError(f"{name}: the study was created with method {stored!r}, not {self.method!r}")
        if seed is not None and meta["seed"] != int(seed):
            raise StorageError(f"{name}: the study was created with seed {meta['seed']!r}, not {seed!r}")
        if meta["method_options"] != plain(options):
            raise StorageError(f"{name}: the study was created with method options {meta['method_options']!r}, "
                               f"not {options!r}")
        diff = _space_difference(meta["space"], space_desc)
        if diff:
            raise StorageError(f"{name}: the study was created for another space: {diff}")

    def _check_outcomes_match(self, meta: Mapping[str, Any], directions: list[str] | None,
                              n_constraints: int | None, rules: list[str]) -> None:
        """Refuse to resume with other objectives, another number of constraints or other known constraints."""
        name = self._storage.name
        stored_dirs = meta.get("directions")
        if stored_dirs is not None and (not isinstance(stored_dirs, list) or len(stored_dirs) < 2
                                        or any(d not in DIRECTIONS for d in stored_dirs)):
            raise CorruptStudyError(f"{name}: corrupt graphbo study (directions {stored_dirs!r})")
        if directions is not None and directions != stored_dirs:
            raise StorageError(f"{name}: the study was created with "
                               f"{'directions=' + repr(stored_dirs) if stored_dirs else 'one objective'}, "
                               f"not directions={directions!r}")
        stored_n = meta.get("n_constraints", 0)
        if isinstance(stored_n, bool) or not isinstance(stored_n, int) or stored_n < 0:
            raise CorruptStudyError(f"{name}: corrupt graphbo study (n_constraints {stored_n!r})")
        if n_constraints is not None and n_constraints != stored_n:
            raise StorageError(f"{name}: the study was created with n_constraints={stored_n}, not {n_constraints}")
        stored_rules = meta.get("space_constraints", [])
        if stored_rules != rules:
            raise StorageError(f"{name}: the study was created for a space with the constraints {stored_rules!r}, "
                               f"the given space has {rules!r}")

    def _check_function_rules(self, meta: Mapping[str, Any], verdicts: Mapping[str, str]) -> None:
        """A function rule is stored by its name and its verdicts on fixed sample configurations
        (:meth:`graphbo.Space.function_rule_fingerprints`): the same name refusing other configurations is
        another rule. (A study stored without verdicts is not checked.)"""
        stored = meta.get("function_rule_verdicts")
        if not isinstance(stored, dict):
            return
        for name, bits in verdicts.items():
            if name in stored and stored[name] != bits:
                try:
                    differ = sum(bin(a ^ b).count("1") for a, b in zip(bytes.fromhex(str(stored[name])),
                                                                      bytes.fromhex(bits)))
                except ValueError:
                    raise CorruptStudyError(f"{self._storage.name}: corrupt graphbo study (verdicts of the "
                                            f"constraint function {name!r})") from None
                raise StorageError(f"{self._storage.name}: the constraint function {name!r} of the given space "
                                   f"decides {differ} of {FINGERPRINT_SAMPLES} sample configurations differently "
                                   "from the one the study was created with; give the study's own function, or "
                                   "start a new study file")

    @property
    def n_objectives(self) -> int:
        """The number of objectives."""
        return len(self.directions)

    @property
    def _outcome_mode(self) -> bool:
        return self.n_objectives > 1 or self.n_constraints > 0

    def _config_of(self, row: Any, stored: Mapping[str, Any]) -> dict[str, Any]:
        """The configuration of a stored trial: discrete values from the row, continuous ones from the JSON.

        A row that does not fit the space (an index out of range: a negative one would silently pick from
        the end) or a stored value that is not the one its index names is damage: ``ValueError``."""
        if not isinstance(self.space, Space):  # an architecture space: the row encodes the whole network
            return self.space.from_index(np.asarray(row, dtype=self.space.row_dtype))
        if isinstance(row, np.ndarray):  # a store of one's own may give arrays
            row = row.tolist()
        if not isinstance(row, list) or len(row) != len(self.space.names):
            raise ValueError(f"index row {row!r} does not have {len(self.space.names)} entries")
        out = {}
        active = self.space.active_mask(np.array([row], dtype=self.space.row_dtype))[0] if self.space.conditions \
            else np.ones(len(row), dtype=bool)
        for j, (name, var) in enumerate(zip(self.space.names, self.space.variables)):
            n = self.space.n_values[j]
            if not active[j]:
                if name in stored:
                    raise ValueError(f"stored variable {name!r} is inactive in the stored row")
                continue
            if n > 0:
                assert isinstance(var, Variable)  # a continuous variable has no values (n_values 0)
                n -= 1 if name in self.space.conditions else 0  # an active variable is not on its inactive vertex
                k = row[j]
                if (isinstance(k, bool) or not isinstance(k, (int, float)) or not math.isfinite(k) or k != int(k)
                        or not 0 <= k < n):
                    raise ValueError(f"stored index {k!r} of variable {name!r} is not in 0..{n - 1}")
                out[name] = var.value_at(int(k))
                if name in stored and out[name] != stored[name] and plain(out[name]) != stored[name]:
                    raise ValueError(f"stored value {stored[name]!r} of variable {name!r} is not the value "
                                     f"{plain(out[name])!r} of its index {int(k)}")
            else:
                out[name] = stored[name]
        return out

    def _new_optimizer(self) -> None:
        """A new optimizer, with no trials."""
        method_options, runtime_options = self._optimizer_args
        self.optimizer: Optimizer = METHODS[self.method](self.space, seed=self.seed, **method_options,
                                                         **runtime_options)
        self._multi_fidelity = bool(getattr(self.optimizer, "multi_fidelity", False))
        if self._outcome_mode:
            self.optimizer.set_outcomes(self.n_objectives, self.n_constraints)
        self._trials: list[Trial] = []
        self._by_row: dict[bytes, int] = {}  # index row -> number of its latest trial
        self._n_finished = 0
        self._next_order = 0

    def _restore(self, stored: StoredStudy) -> None:
        """Rebuild the trials and the optimizer from a stored study (replay, then the latest state), checking
        each trial against the space; writes nothing."""
        number = None
        try:
            checked = getattr(self._storage, "checked_trials", 0)  # the SQLite store's sealed blocks
            bulk = self._restore_in_bulk(stored.trials[:checked])
            for t in stored.trials[bulk:]:
                number = t.number
                cfg = self._config_of(t.row, t.config)
                self._append(dataclasses.replace(t, config=cfg, row=self.space.to_index(cfg)))
            number = None
            finished_trials = sorted((t for t in self._trials if t.status != "running"), key=_told_first)
            for t in ([] if self._replay_in_bulk(finished_trials) else finished_trials):
                if t.status == "complete":
                    if t.value is None:
                        raise ValueError("a complete trial without a value")
                    if self._outcome_mode:
                        values, cons = self._stored_outcome(t)
                        self.optimizer.tell(t.config, self._signs * values, constraints=cons)
                    else:
                        self.optimizer.tell(t.config, self._sign * t.value, **_fidelity(t))
                elif t.penalty is not None and not self._outcome_mode:
                    self.optimizer.tell(t.config, self._sign * t.penalty, **_fidelity(t))
                elif self._outcome_mode and "imputed" in t.attrs:
                    values, cons = self._stored_outcome(t, t.attrs["imputed"])
                    self.optimizer.tell(t.config, self._signs * values, constraints=cons)
                else:
                    self.optimizer.mark_failed(t.config, **_fidelity(t))
            state = stored.meta.get("optimizer_state")
            if state is not None:
                self.optimizer.set_state(state)
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, RecursionError) as exc:
            where = "" if number is None else f"trial {number}: "
            raise CorruptStudyError(f"{self._storage.name}: corrupt graphbo study, its trials cannot be replayed "
                                    f"({where}{exc}); restore it from a copy") from None
        self._next_order = 1 + max((t.tell_order for t in self._trials if t.tell_order is not None), default=-1)

    def _restore_in_bulk(self, trials: Sequence[Trial]) -> int:
        """:meth:`_restore`'s first step for the trials a store read back as it checked them (sealed blocks:
        index rows lists of ints), in a space of discrete variables without conditions, array-wise: every
        index in range and every stored configuration the one its row names (what :meth:`_config_of` checks
        one trial at a time). Returns how many it restored: all, or none (the trial-by-trial path then
        names the problem) and for other spaces."""
        space = self.space
        if not trials or not isinstance(space, Space) or space.conditions or space.continuous_indices.size:
            return 0
        rows = [t.row for t in trials]
        try:
            index = np.array(rows, dtype=np.int64)
        except (TypeError, ValueError, OverflowError):
            return 0
        if index.shape != (len(trials), len(space.names)) or (index < 0).any() or \
                (index >= np.asarray(space.n_values)).any():
            return 0
        columns = [[var.values[k] for k in index[:, j].tolist()]  # type: ignore[union-attr]  # all discrete
                   for j, var in enumerate(space.variables)]
        configs = [dict(zip(space.names, values)) for values in zip(*columns)]
        if any(cfg != t.config for cfg, t in zip(configs, trials)):
            return 0
        for t, cfg, row in zip(trials, configs, index):  # the loaded trials are the study's own: no copies
            t.config, t.row = cfg, row
            self._append(t)
        return len(trials)

    def _replay_in_bulk(self, finished: Sequence[Trial]) -> bool:
        """:meth:`_restore`'s replay of the finished trials through :meth:`Optimizer.replay_rows`, for an
        optimizer whose ``tell`` and ``mark_failed`` are the base class's, one objective and no fidelities;
        ``False``, with nothing told, otherwise."""
        opt = self.optimizer
        if (self._outcome_mode or type(opt).tell is not Optimizer.tell
                or type(opt).mark_failed is not Optimizer.mark_failed or any("fidelity" in t.attrs for t in finished)):
            return False
        values: list[float | None] = []
        for t in finished:
            if t.status == "complete":
                if t.value is None:
                    raise ValueError("a complete trial without a value")
                values.append(self._sign * t.value)
            else:
                values.append(None if t.penalty is None else self._sign * t.penalty)
        opt.replay_rows([t.row for t in finished], values)
        return True

    def _stored_outcome(self, t: Trial, imputed: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """A stored complete trial's objective values and constraint values, or a failed one's ``imputed``
        (``ValueError`` when they are not the study's numbers of finite numbers)."""
        if imputed is not None:
            if not isinstance(imputed, dict):
                raise ValueError(f"imputed outcome {imputed!r} is not an object")
            values, cons = imputed.get("values"), imputed.get("constraints")
        else:
            values = t.attrs.get("values", [t.value]) if self.n_objectives > 1 else [t.value]
            cons = t.attrs.get("constraints", [])
        if not isinstance(values, list) or len(values) != self.n_objectives:
            raise ValueError(f"{self.n_objectives} objective values expected, the trial has {values!r}")
        if not isinstance(cons, list) or len(cons) != self.n_constraints:
            raise ValueError(f"{self.n_constraints} constraint values expected, the trial has {cons!r}")
        return (np.array([_check_number(v, "objective value") for v in values]),
                np.array([_check_number(v, "constraint value") for v in cons]))

    def _pend_running(self) -> tuple[list[Trial], _Asked, list[Trial]]:
        """The trials left running: those that crashed their process more than ``max_retries`` times (to
        fail), the others made pending again (:meth:`_pend`); returns what :meth:`_settle` takes."""
        running = [t for t in self._trials if t.status == "running"]
        wedged = [t for t in running if t.crashes > self.max_retries]
        try:
            lost, extra = self._pend([t for t in running if t.crashes <= self.max_retries])
        except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, RecursionError) as exc:
            raise CorruptStudyError(f"{self._storage.name}: corrupt graphbo study, its running trials cannot be "
                                    f"resumed ({exc}); restore it from a copy") from None
        return lost, extra, wedged

    def _append(self, t: Trial) -> None:
        """Add a trial to the study's list and its indexes (by row; finished count)."""
        self._trials.append(t)
        self._by_row[t.row.tobytes()] = t.number
        self._n_finished += t.status != "running"

    def _pend(self, running: list[Trial]) -> tuple[list[Trial], _Asked]:
        """Make the trials left running by a crash pending again, to be handed out first by the next ask.

        Most optimizers take them back as they are (their state was saved after
        the asks). A multi-fidelity optimizer (SMAC) cannot: its state is saved
        after tells only, and it is asked again for as many trials; those it
        suggests again (same configuration and fidelity, as in a sequential run)
        are resumed. Returns the trials it did not suggest again and what it
        suggested instead (possible with several in flight), for :meth:`_settle`.
        """
        if not self._multi_fidelity:
            for t in running:
                self.optimizer.add_pending(t.config)
            self._resume_queue.extend(running)
            return [], []
        extra = self._ask_optimizer(len(running)) if running else []
        lost = []
        for t in running:
            same = [j for j, (c, a) in enumerate(extra) if a.get("fidelity") == t.attrs.get("fidelity")
                    and self.space.to_index(c).tobytes() == t.row.tobytes()]
            if same:
                extra.pop(same[0])
                self._resume_queue.append(t)
            else:
                lost.append(t)
        return lost, extra

    def _settle(self, lost: list[Trial], extra: _Asked, wedged: Sequence[Trial] = ()) -> None:
        """Record what :meth:`_pend` found: trials the optimizer did not suggest again fail, what it
        suggested instead becomes new running trials, handed out first; trials that crashed their process
        more than ``max_retries`` times fail."""
        for t in wedged:
            done = self.fail(t, f"its process died {t.crashes} times while evaluating it (killed, os._exit, a "
                                f"segfault); not run again (max_retries={self.max_retries})", seconds=0.0)
            logger.warning("trial %d failed on resuming %s: %s", t.number, self._storage.name, done.error)
        for t in lost:
            done = self.fail(t, "interrupted, and not suggested again on resuming (a multi-fidelity method "
                                "cannot take back an evaluation in flight)", seconds=0.0)
            logger.warning("trial %d failed on resuming %s: %s", t.number, self._storage.name, done.error)
        if extra:
            self._resume_queue.extend(self._add_new(lambda k: extra, len(extra)))

    # -- protocol -------------------------------------------------------------------------
    def _ask_optimizer(self, k: int) -> _Asked:
        """``k`` new configurations with their trial attributes (a multi-fidelity method's fidelity)."""
        with limit_threads(self.n_threads):
            if self._multi_fidelity:
                ask_with_fidelity: Callable[[int], list[tuple[dict[str, Any], int]]] = \
                    getattr(self.optimizer, "ask_with_fidelity")  # what a multi-fidelity optimizer (BOHB) adds
                return [(c, {"fidelity": int(f)}) for c, f in ask_with_fidelity(k)]
            return [(c, {}) for c in self.optimizer.ask(k)]

    @overload
    def ask(self, n: None = None) -> Trial: ...
    @overload
    def ask(self, n: int) -> list[Trial]: ...

    def ask(self, n: int | None = None) -> Trial | list[Trial]:
        """The next trial to evaluate (``n``: a list of ``n``), recorded as ``running`` before returning.

        Trials left running by a crash or an interruption are handed out first,
        with their original numbers and configurations. A multi-fidelity
        method's trial carries the fidelity to evaluate at in ``attrs["fidelity"]``.
        """
        self._check_open()
        if n is not None and (isinstance(n, bool) or int(n) != n or n < 1):
            raise ValueError(f"ask: n must be a positive integer, got {n!r}")
        count = 1 if n is None else int(n)
        resumed = self._resume_queue[:count]
        del self._resume_queue[:count]
        try:
            for t in resumed:
                t.started = now()
                self._storage.restart_trial(t.number, t.started)
            new = self._add_new(self._ask_optimizer, count - len(resumed)) if count > len(resumed) else []
        except BaseException:
            self._resume_queue[:0] = resumed
            raise
        t_ask = time.perf_counter()
        out = resumed + new
        for t in out:
            self._t_ask[t.number] = t_ask
        copies = [dataclasses.replace(t) for t in out]
        return copies[0] if n is None else copies

    def _add_new(self, asker: Callable[[int], _Asked], k: int) -> list[Trial]:
        """``k`` new trials from ``asker(k)`` (``[(config, attrs)]``), recorded ``running``, with the optimizer
        state after the asks (not for a multi-fidelity optimizer, which cannot take its asks back, see
        :meth:`_pend`)."""
        t0 = time.perf_counter()
        asked = asker(k)
        seconds = (time.perf_counter() - t0) / k
        started = now()
        new = [Trial(number=len(self._trials) + i, config=cfg, status="running", started=started,
                     suggest_seconds=seconds,
                     row=self.space.to_index(cfg), attrs=attrs) for i, (cfg, attrs) in enumerate(asked)]
        try:
            self._storage.add_trials(new, state=None if self._multi_fidelity else self.optimizer.get_state())
        except BaseException:
            for t in new:  # keep memory and store in step: the new configurations were not recorded
                self.optimizer.remove_pending(t.config)
            raise
        for t in new:
            self._append(t)
        return new

    def _resolve(self, trial_or_config: Trial | Mapping[str, Any] | int, what: str) -> Trial | None:
        """The running trial meant by a Trial, a trial number or a configuration (``None``: never asked)."""
        if isinstance(trial_or_config, Trial) or isinstance(trial_or_config, (int, np.integer)):
            number = trial_or_config.number if isinstance(trial_or_config, Trial) else int(trial_or_config)
            if not 0 <= number < len(self._trials):
                raise ValueError(f"{what}: no trial number {number} in this study")
            t = self._trials[number]
            if t.status != "running":
                raise ValueError(f"{what}: trial {number} is already {t.status}")
            return t
        found = self._by_row.get(self.space.to_index(trial_or_config).tobytes())
        if found is None:
            return None
        t = self._trials[found]
        if t.status != "running":
            raise ValueError(f"{what}: this configuration is trial {found}, already {t.status}"
                             f"{'' if t.value is None else f' (value {t.value!r})'}; a study evaluates a "
                             "configuration once")
        return t

    def tell(self, trial: Trial | Mapping[str, Any] | int, value: float | Sequence[float] | Outcome, *,
             constraints: Sequence[float] | None = None, seconds: float | None = None) -> Trial:
        """Record that a trial (a :class:`Trial`, its number, or its configuration) evaluated to ``value``.

        With several objectives, ``value`` is a sequence of one number per objective (stored in the trial's
        ``attrs["values"]``; ``trial.value`` is the first); with black-box constraints, ``constraints`` is a
        sequence of :attr:`n_constraints` numbers (``attrs["constraints"]``). An :class:`~graphbo.outcomes.Outcome`
        or a dict ``{"values": ..., "constraints": ...}`` carries both.

        ``value`` is in the user's sign: a maximising study tells the optimizer
        ``-value`` and stores ``value``. The optimizer learns it and the trial is stored ``complete`` (with the
        optimizer state) before this returns. A configuration that was never
        asked is added as a new complete trial. ``value`` must be a finite
        number: otherwise ``ValueError`` and nothing is stored.
        ``seconds`` (evaluation time) defaults to the time since it was asked.
        """
        self._check_open()
        t = self._resolve(trial, "tell")
        values, cons = self._check_outcome(value, constraints)
        v = float(values[0])
        if t is not None:
            cfg = t.config
        else:
            assert not isinstance(trial, (Trial, int, np.integer))  # _resolve returns None for a configuration only
            cfg = self.space.from_index(self.space.to_index(trial))
        if self._outcome_mode:
            self.optimizer.tell(cfg, self._signs * values, constraints=cons)
            attrs = {"constraints": cons.tolist()} if self.n_constraints else {}
            if self.n_objectives > 1:
                attrs["values"] = values.tolist()
            return self._finish(t, cfg, "complete", v, None, None, seconds, attrs)
        self.optimizer.tell(cfg, self._sign * v, **(_fidelity(t) if t is not None else {}))
        return self._finish(t, cfg, "complete", v, None, None, seconds)

    def _check_outcome(self, value: Any, constraints: Any) -> tuple[np.ndarray, np.ndarray]:
        """``tell``'s ``value`` and ``constraints`` as arrays of the study's numbers of finite numbers, or
        ``ValueError`` saying what is wrong (nothing is stored)."""
        if isinstance(value, (Outcome, Mapping, list, tuple)):
            try:
                out = as_outcome(value)
            except TypeError as exc:
                raise ValueError(f"tell: value must be {self._expected()}, got {exc}") from None
            if constraints is not None and out.constraints:
                raise ValueError("tell: constraints given twice (in the value and as constraints=)")
            items = list(out.values)
            cons_items = list(out.constraints) if out.constraints else list(constraints or [])
        else:
            items = [value]
            cons_items = [] if constraints is None else list(constraints)
        if len(items) != self.n_objectives:
            several = " (directions=[...] for several objectives)" if self.n_objectives == 1 else ""
            raise ValueError(f"tell: {len(items)} values for {self.n_objectives} objective(s){several}")
        if len(cons_items) != self.n_constraints:
            raise ValueError(f"tell: {len(cons_items)} constraint values for n_constraints={self.n_constraints}")
        values = np.array([_check_number(x, "tell: value" if self.n_objectives == 1 else f"tell: value {i}")
                           for i, x in enumerate(items)], dtype=float)
        cons = np.array([_check_number(x, f"tell: constraint {i}") for i, x in enumerate(cons_items)], dtype=float)
        return values, cons

    def _expected(self) -> str:
        return "a number" if self.n_objectives == 1 else f"{self.n_objectives} numbers (one per objective)"

    def fail(self, trial: Trial | Mapping[str, Any] | int, error: str | BaseException = "failed", *,
             value: float | None = None, seconds: float | None = None) -> Trial:
        """Record that a trial failed, with ``error`` (a message or the exception).

        The configuration is never suggested again. By default the model is not
        told; with ``value``, it is told that value instead (a penalty, in the
        user's sign like any value: for a maximising study, a low one).
        """
        return self._fail(trial, error, value, seconds)

    def _fail(self, trial: Trial | Mapping[str, Any] | int, error: str | BaseException, value: float | None,
              seconds: float | None, attrs: Mapping[str, Any] | None = None, *,
              imputed: Mapping[str, list[float]] | None = None) -> Trial:
        """:meth:`fail`; with several objectives or constraints, ``imputed`` (:meth:`_worst_outcome`) is told to
        the model in the failure's place and kept as the trial's attribute ``imputed``."""
        self._check_open()
        t = self._resolve(trial, "fail")
        if isinstance(error, BaseException):
            error = f"{type(error).__name__}: {error}"
        penalty = None if value is None else _check_number(value, "fail: penalty value")
        if t is not None:
            cfg = t.config
        else:
            assert not isinstance(trial, (Trial, int, np.integer))  # _resolve returns None for a configuration only
            cfg = self.space.from_index(self.space.to_index(trial))
        fidelity = _fidelity(t) if t is not None else {}
        if penalty is not None and self._outcome_mode:
            raise ValueError("fail: a penalty value is for a study with one objective and no constraints; a failed "
                             "trial of this study is never suggested again and not told to the model")
        if imputed is not None:
            self.optimizer.tell(cfg, self._signs * np.asarray(imputed["values"], dtype=float),
                                constraints=np.asarray(imputed["constraints"], dtype=float))
            attrs = {**(attrs or {}), "imputed": {"values": list(imputed["values"]),
                                                  "constraints": list(imputed["constraints"])}}
        elif penalty is None:
            self.optimizer.mark_failed(cfg, **fidelity)
        else:
            self.optimizer.tell(cfg, self._sign * penalty, **fidelity)
        return self._finish(t, cfg, "failed", None, str(error), penalty, seconds, attrs)

    def _finish(self, t: Trial | None, cfg: dict[str, Any], status: str, value: float | None, error: str | None,
                penalty: float | None, seconds: float | None, attrs: Mapping[str, Any] | None = None) -> Trial:
        t_done = time.perf_counter()
        reporter = self._reporters.pop(t.number, None) if t is not None else None
        if reporter is not None and reporter.curve:
            attrs = {**(attrs or {}), "intermediate": {str(k): v for k, v in reporter.curve.items()}}
        state = self.optimizer.get_state()
        stamp = now()
        new = t is None
        if t is None:
            t = Trial(number=len(self._trials), config=cfg, status=status, started=stamp, row=self.space.to_index(cfg))
        if seconds is None:
            seconds = t_done - self._t_ask.get(t.number, t_done)
        updated = dataclasses.replace(t, status=status, value=value, error=error, penalty=penalty, finished=stamp,
                                      evaluate_seconds=float(seconds), tell_order=self._next_order,
                                      attrs={**t.attrs, **(attrs or {})})
        if new:
            self._storage.add_trials([updated], state=state)
            self._append(updated)
        else:
            self._storage.finish_trial(updated, state=state)
            self._trials[t.number] = updated
            self._n_finished += 1
            if self._resume_queue:
                self._resume_queue = [q for q in self._resume_queue if q.number != t.number]
        self._next_order += 1
        self._t_ask.pop(t.number, None)
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("trial %d %s%s in %.3g s", t.number, status,
                         f", value {value!r}" if value is not None else f": {error}", float(seconds))
        return dataclasses.replace(updated)

    # -- intermediate values and pruning ------------------------------------------------------
    def _reporter(self, trial: Trial) -> _Reporter:
        """The running ``trial``'s record of intermediate values, made at its first use against the curves
        of the trials complete or pruned by then (in the minimising sign)."""
        if trial.number not in self._reporters:
            # the other trials' curves only where a pruner reads them: no scan of the study per evaluation
            curves = [t for t in self._trials if t.attrs.get("intermediate")] if self.pruner is not None else []
            complete = [intermediate_of(t.attrs, self._sign) for t in curves if t.status == "complete"]
            pruned = [intermediate_of(t.attrs, self._sign) for t in curves
                      if t.status == "failed" and "pruned" in t.attrs]  # not a crash or a timeout
            self._reporters[trial.number] = _Reporter(self.pruner, complete, pruned, self._sign)
        return self._reporters[trial.number]

    def _running(self, trial: Trial | int, what: str) -> Trial:
        self._check_open()
        t = self._resolve(trial, what)
        if t is None:
            raise ValueError(f"{what}: give a running trial (or its number), not a configuration")
        return t

    def report(self, trial: Trial | int, value: float, *, step: int) -> None:
        """Record a running trial's intermediate ``value`` at ``step`` (an integer from 0), in the user's
        sign; the first value of a step counts. Stored with the trial when it finishes. An objective run by
        :meth:`optimize` or :func:`graphbo.minimize` calls :func:`graphbo.report` instead."""
        self._reporter(self._running(trial, "report")).report(value, step)

    def should_prune(self, trial: Trial | int) -> bool:
        """Whether :attr:`pruner` would stop the running ``trial`` at its last reported step (``False``
        without a pruner or a report)."""
        return self._reporter(self._running(trial, "should_prune")).should_prune()

    def prune(self, trial: Trial | int, *, seconds: float | None = None) -> Trial:
        """Record a running trial as pruned: stored ``failed`` with ``error`` "pruned at step k",
        ``attrs["pruned"] = k`` and its intermediate values; the model is told its last reported value (the
        worst complete value so far if it reported none), and the configuration is not suggested again."""
        t = self._running(trial, "prune")
        reporter = self._reporter(t)
        step = reporter.last_step
        value = reporter.last_value()
        if value is None:
            value = self._worst_value()
        done = self._fail(t, "pruned" if step is None else f"pruned at step {step}", value, seconds,
                          {"pruned": step})
        logger.info("trial %d pruned at step %s", done.number, step)
        return done

    # -- running ---------------------------------------------------------------------------
    def optimize(self, objective: Callable[[dict[str, Any]], Any], budget: int, *, n_workers: int = 1,
                 executor: Any = None, timeout: float | None = None, failure_value: float | str | None = "worst",
                 callback: Callable[[int, Mapping[str, Any], float, Optimizer, float], None] | None = None,
                 show_progress: bool | None = None, stop_after_failures: int | None = 10) -> "Study":
        """Ask, evaluate ``objective(config)`` and tell, until ``budget`` trials are finished.

        With ``n_workers == 1`` and no ``executor`` the evaluations run in this process, one at a time.
        With ``n_workers > 1`` they run in a pool of that many worker processes (``objective`` must be
        picklable), and with an ``executor`` (a :class:`concurrent.futures.Executor`, e.g. a Dask client's
        ``get_executor()``) in it, ``n_workers`` at a time: a new configuration is asked for as soon as any
        evaluation finishes (:mod:`graphbo.parallel`; the models condition on the ones in flight).

        ``budget`` counts the study's finished trials (complete and failed), those
        of earlier sessions included, as :func:`graphbo.minimize`'s does with
        ``storage``: ``study.optimize(f, 50)`` on a resumed study with 30 finished
        trials runs 20 more (trials left running are evaluated first). Failures
        (an exception, a value that is not a finite number, a ``timeout`` in
        seconds) are recorded failed with their reason, logged as warnings, and
        the run goes on; ``failure_value``, ``callback`` (called after each
        complete trial with ``number, config, value, optimizer, seconds``) and
        ``timeout`` are :func:`graphbo.minimize`'s (a thin wrapper of this method). If every
        configuration of a discrete space is evaluated before the budget is used, the run ends there
        with a warning. Ctrl-C stops it: the trial in flight stays ``running``, for the next session.

        ``show_progress``: a progress bar on standard error (finished trials out of
        ``budget``, the best value in the user's sign, the last suggestion's
        seconds); ``None`` shows it when standard error is a terminal.

        ``stop_after_failures`` (default 10): when that many evaluations have failed, all with the same error,
        and none has completed, the run stops with :class:`graphbo.exceptions.ObjectiveFailingError` naming
        the error (a mistake in the objective, as a wrong signature, should not use up the budget; Optuna
        stops at the first exception). ``None`` never stops. Returns the study.
        """
        self._check_open()
        check_callable("objective", objective)
        budget = check_budget(budget)
        timeout = check_timeout(timeout)
        penalty = check_failure_value(failure_value)
        check_callable("callback", callback, optional=True)
        show = check_show_progress(show_progress)
        self.stop_after_failures = check_optional_int("stop_after_failures", stop_after_failures, minimum=1)
        n_workers = check_int("n_workers", n_workers, minimum=1)
        if self._multi_fidelity:
            raise ValueError(f"method {self.method!r} chooses a fidelity for each trial (trial.attrs['fidelity']), "
                             "which objective(config) cannot take: drive the study with ask and tell")
        parallel = n_workers > 1 or executor is not None
        if parallel:
            check_parallel_run(objective, n_workers=n_workers, executor=executor, pruner=self.pruner)
        with self._progress_bar(budget, show) as bar:

            def record(trial: Trial, ok: bool, value: float | Outcome | None, error: str | None,
                       seconds: float) -> None:
                done = self._record_evaluation(trial, ok, value, error, seconds, penalty, callback)
                bar.finished(self._shown_value(done), done.suggest_seconds)

            if parallel:
                evaluations: _InThisProcess | ParallelEvaluations = ParallelEvaluations(
                    objective, n_workers, executor=executor, timeout=timeout, record=record)
            else:
                evaluations = _InThisProcess(lambda trial: self._evaluate_here(trial, objective, timeout, record,
                                                                               bar))
            self._run(budget, evaluations)
        return self

    def _evaluate_here(self, trial: Trial, objective: Callable[[dict[str, Any]], Any], timeout: float | None,
                       record: Callable[[Trial, bool, float | Outcome | None, str | None, float], None],
                       bar: ProgressBar) -> None:
        """A sequential run's evaluation of ``trial`` in this process, where the objective may report
        intermediate values to the pruner; recorded through ``record``, or pruned."""
        reporter = self._reporter(trial)
        ok, value, error, seconds = _evaluate(_evaluating(reporter, objective), trial.config, timeout)
        if self._storage.repair_after_evaluation():
            logger.warning("the objective closed the open files of study %s (trial %d); graphbo "
                           "reopened them", self._storage.name, trial.number)
        if not ok and reporter.pruned:
            done = self.prune(trial, seconds=seconds)
            bar.finished(self._shown_value(done), done.suggest_seconds)
        else:
            record(trial, ok, value, error, seconds)

    def _run(self, budget: int, evaluations: _InThisProcess | ParallelEvaluations) -> None:
        """The loop of :meth:`optimize`, sequential or parallel: ask for trials while a worker is free and the
        budget allows (finished trials plus those in flight), and wait for evaluations to end, until the
        budget is used or the space exhausted and nothing is in flight. ``evaluations`` records each outcome
        (told or failed) as it ends."""
        exhausted = False  # every configuration is evaluated or in flight
        with evaluations:
            while True:
                while (not exhausted and evaluations.has_room()
                       and self.n_finished + evaluations.n_in_flight < budget):
                    trial = self._ask_within(budget)
                    if trial is None:
                        exhausted = True
                        break
                    evaluations.submit(trial)
                if not evaluations.wait(self.n_finished >= budget or exhausted):
                    break

    def _shown_value(self, done: Trial) -> float | None:
        """What a progress bar counts towards its best value: a complete, feasible trial's value (nothing with
        several objectives, which have no single best)."""
        if done.status != "complete" or self.n_objectives > 1 or not self._is_feasible(done):
            return None
        return done.value

    def _progress_bar(self, budget: int, show: bool | None) -> ProgressBar:
        """The bar of a run of this study to ``budget`` finished trials (:class:`graphbo.progress.ProgressBar`),
        starting from its finished trials and best value."""
        best = self.best_trial
        return ProgressBar(budget, done=self.n_finished, best=None if best is None else best.value,
                           direction=self.direction, show=show,
                           description=self.method)

    def _ask_within(self, budget: int) -> Trial | None:
        """The next trial, or ``None`` (with a warning) when every configuration of the space is evaluated or
        in flight."""
        try:
            return self.ask()
        except SpaceExhaustedError as exc:
            logger.warning("the space is exhausted after %d trials, short of the budget %d (%s); the run "
                           "ends with what it found", len(self._trials), budget, exc)
            return None

    def _record_evaluation(self, trial: Trial, ok: bool, value: float | Outcome | None, error: str | None, seconds: float,
                           failure_value: float | str | None, callback: Callable | None) -> Trial:
        """Tell (then call ``callback``) or fail (with a warning) a trial from its evaluation's outcome."""
        if ok:
            assert value is not None  # _evaluate returns a number or an Outcome with ok
            try:
                done = self.tell(trial, value, seconds=seconds)
            except ValueError as exc:  # the wrong number of values, a non-number among them: a failed trial
                ok, error = False, f"objective returned an unusable outcome: {str(exc).removeprefix('tell: ')}"
        if ok:
            if callback is not None:
                callback(done.number, done.config, done.value, self.optimizer, (done.suggest_seconds or 0.0) + seconds)
            return done
        assert error is not None  # every failure comes with its message
        if self._outcome_mode:  # each objective's and constraint's worst value so far (a number: single-objective)
            imputed = self._worst_outcome() if failure_value == WORST else None
            done = self._fail(trial, error, None, seconds, imputed=imputed)
        else:
            penalty = self._worst_value() if failure_value == WORST else failure_value
            assert not isinstance(penalty, str), "failure_value is checked: a number, 'worst' or None"
            done = self.fail(trial, error, value=penalty, seconds=seconds)
        logger.warning("trial %d failed (%s) at %s", trial.number, error, trial.config)
        self._stop_if_objective_fails()
        return done

    def _worst_value(self) -> float | None:
        """The worst complete value so far, in the user's sign (``None`` before any)."""
        values = [t.value for t in self._trials if t.status == "complete" and t.value is not None]
        if not values:
            return None
        return min(values) if self.direction == "maximize" else max(values)

    def _worst_outcome(self) -> dict[str, list[float]] | None:
        """With several objectives or constraints, ``failure_value="worst"``'s imputation: each objective's worst
        value over the complete trials (the highest of a minimised one, the lowest of a maximised one) and each
        constraint's highest, in the user's sign (``None`` before any trial completed)."""
        done = [t for t in self._trials if t.status == "complete" and t.value is not None]
        if not done:
            return None
        values = np.array([self._objective_values(t) for t in done], dtype=float)
        worst = [float(values[:, k].min() if d == "maximize" else values[:, k].max())
                 for k, d in enumerate(self.directions)]
        cons = np.array([t.attrs.get("constraints", []) for t in done], dtype=float).reshape(len(done), -1)
        return {"values": worst, "constraints": [float(c) for c in cons.max(axis=0)] if cons.shape[1] else []}

    def _stop_if_objective_fails(self) -> None:
        """Raise :class:`ObjectiveFailingError` when no trial has completed and the last
        :attr:`stop_after_failures` failed ones (at least that many) all failed with the same error."""
        n = self.stop_after_failures
        if n is None or any(t.status == "complete" for t in self._trials):
            return
        errors = [t.error for t in self._trials if t.status == "failed" and "pruned" not in t.attrs]
        if len(errors) >= n and len(set(errors[-n:])) == 1:
            raise ObjectiveFailingError(
                f"the first {len(errors)} evaluations all failed with the same error, {errors[-1]} (a mistake in "
                "the objective?); fix it and run again (they stay in the study as failed trials), or give "
                "stop_after_failures=None to go on regardless")

    # -- results --------------------------------------------------------------------------
    @property
    def trials(self) -> list[Trial]:
        """All trials, by number (copies)."""
        return [dataclasses.replace(t) for t in self._trials]

    def _by_status(self, status: str) -> list[Trial]:
        return [dataclasses.replace(t) for t in self._trials if t.status == status]

    def trials_dataframe(self) -> Any:
        """Every trial as a pandas ``DataFrame``, one row per trial, one ``params_<name>`` column per variable
        (:func:`graphbo.storage.frame.trials_dataframe`; needs ``pip install "graphbo[dataframe]"``)."""
        from .storage.frame import trials_dataframe

        return trials_dataframe(self._trials, list(self.space) if isinstance(self.space, Space) else None)

    def param_importances(self, *, objective: int = 0, seed: int = 0) -> dict[str, float]:
        """Each variable's importance for the complete trials, largest first, summing to 1: its share of the
        first-order functional ANOVA of a GP's mean fitted to them (:func:`graphbo.importance.param_importances`),
        whichever method ran the study; ``objective`` picks one of several objectives. The same trials and
        ``seed`` give the same importances."""
        from .importance import trial_importances

        return trial_importances(self.space, self._trials, objective=objective, n_objectives=self.n_objectives,
                                 seed=seed)

    @property
    def complete_trials(self) -> list[Trial]:
        return self._by_status("complete")

    @property
    def failed_trials(self) -> list[Trial]:
        """The failed trials (an error, a timeout, an unusable value); pruned ones are in :attr:`pruned_trials`."""
        return [t for t in self._by_status("failed") if "pruned" not in t.attrs]

    @property
    def pruned_trials(self) -> list[Trial]:
        """The trials stopped by the pruner (stored ``failed``, with the step in ``attrs["pruned"]``)."""
        return [t for t in self._by_status("failed") if "pruned" in t.attrs]

    @property
    def running_trials(self) -> list[Trial]:
        return self._by_status("running")

    @property
    def n_finished(self) -> int:
        """Complete plus failed trials (what a budget counts)."""
        return self._n_finished

    @property
    def history(self) -> list[Observation]:
        """The complete evaluations, in the order the optimizer was told them (values in the user's sign)."""
        done = sorted((t for t in self._trials if t.status == "complete"), key=_told_first)
        return [Observation(dict(t.config), float(_complete_value(t))) for t in done]

    @property
    def best_trial(self) -> Trial | None:
        """The complete trial with the lowest value (the highest for ``direction="maximize"``; the first told
        of equals), or ``None``. With black-box constraints, the best *feasible* one (``None`` while no trial
        is feasible); with several objectives there is no single best: ``None`` (see :attr:`pareto_front`)."""
        if self.n_objectives > 1:
            return None
        done = self.feasible_trials if self.n_constraints else [t for t in self._trials if t.status == "complete"]
        sign = self._sign
        return dataclasses.replace(min(done, key=lambda t: (sign * _complete_value(t),) + _told_first(t))) \
            if done else None

    # -- several objectives and constraints -------------------------------------------------
    def _objective_values(self, t: Trial) -> list[float]:
        """A complete trial's objective values in the user's sign."""
        return list(t.attrs["values"]) if self.n_objectives > 1 else [_complete_value(t)]

    def _is_feasible(self, t: Trial) -> bool:
        return all(c <= 0 for c in t.attrs.get("constraints", ())) if self.n_constraints else True

    @property
    def feasible_trials(self) -> list[Trial]:
        """The complete trials whose every constraint value is ``<= 0`` (all complete trials without constraints)."""
        return [dataclasses.replace(t) for t in self._trials if t.status == "complete" and self._is_feasible(t)]

    @property
    def pareto_front(self) -> list[Trial]:
        """The feasible complete trials that no other feasible trial dominates (no worse in every objective,
        better in one; Deb 2001, Def. 2.5), by number. With one objective, the best trials (all those tied
        for the best value)."""
        feas = self.feasible_trials
        if not feas:
            return []
        Y = np.array([self._objective_values(t) for t in feas]) * self._signs
        return [t for t, keep in zip(feas, pareto_mask(Y)) if keep]

    def hypervolume(self, reference_point: Sequence[float] | None = None) -> float:
        """The hypervolume of the Pareto front (:func:`graphbo.outcomes.hypervolume`) against
        ``reference_point`` (in the user's sign, one value per objective: worse than every point of
        interest); default :func:`graphbo.outcomes.reference_point` of the feasible trials (their worst values
        moved out by a tenth of their ranges). 0.0 without feasible trials."""
        feas = self.feasible_trials
        if reference_point is not None:
            ref = np.array(check_reference_point(reference_point, self.n_objectives)) * self._signs
        if not feas:
            return 0.0
        Y = np.array([self._objective_values(t) for t in feas]) * self._signs
        if reference_point is None:
            from .outcomes import reference_point as default_reference

            ref = default_reference(Y)
        return _front_hypervolume(Y[pareto_mask(Y)], ref)

    @property
    def best(self) -> Observation | None:
        """The best complete evaluation (see :attr:`best_trial`), or ``None``."""
        t = self.best_trial
        return None if t is None else Observation(t.config, _complete_value(t))

    def _completed_best(self) -> Trial:
        t = self.best_trial
        if t is None and self.n_objectives > 1:
            raise ValueError(f"study {self._storage.name} has {self.n_objectives} objectives and no single best trial; "
                             "see study.pareto_front")
        if t is None and self.n_constraints and self.complete_trials:
            raise ValueError(f"no trial of study {self._storage.name} is feasible ({len(self.complete_trials)} "
                             "complete, each with a constraint value > 0)")
        if t is None:
            n_failed = sum(1 for t in self._trials if t.status == "failed")
            raise ValueError(f"no trial of study {self._storage.name} completed ({len(self._trials)} trials, "
                             f"{n_failed} failed; their errors are in study.failed_trials)")
        return t

    @property
    def best_params(self) -> dict[str, Any]:
        """The best configuration (see :attr:`best_trial`) as a dict of the variables' own values (a
        Categorical's category, an Ordinal's value, a Continuous number; not index rows); ``ValueError`` if no
        trial completed."""
        return dict(self._completed_best().config)

    @property
    def best_value(self) -> float:
        """The best value, in the user's sign (the lowest, or the highest for ``direction="maximize"``);
        ``ValueError`` if no trial completed."""
        return _complete_value(self._completed_best())

    # -- free attributes ------------------------------------------------------------------
    @property
    def user_attrs(self) -> dict[str, Any]:
        self._check_open()
        return self._storage.user_attrs()

    def set_user_attr(self, key: str, value: Any) -> None:
        """Store a JSON value under ``key`` in the study's meta (e.g. what the objective is)."""
        self._check_open()
        self._storage.set_user_attr(str(key), plain(value))

    # -- lifetime -------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed or not self._storage.is_open:
            raise ValueError(f"study {self._storage.name} is closed")

    def close(self) -> None:
        """Close the store (an SQLite file's WAL is checkpointed into the main file). Idempotent."""
        if not getattr(self, "_closed", True):
            self._closed = True
            self._storage.close()

    def __enter__(self) -> "Study":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # pragma: no cover - best effort
        try:
            if self._owns_storage:  # a store the caller gave may be in use by another study by now
                self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        """One line: the store, method, seed, direction when maximising, trial counts, best value."""
        if not hasattr(self, "_trials"):  # __init__ failed early (a debugger or a traceback shows it)
            return f"Study({self._storage.name if hasattr(self, '_storage') else '?'}, not opened)"
        counts = ", ".join(f"{s} {sum(1 for t in self._trials if t.status == s)}" for s in STATUSES)
        direction = ", direction='maximize'" if self.direction == "maximize" else ""
        best = self.best_trial
        shown = "" if best is None else f", best {_complete_value(best):.6g}"
        return f"Study({self._storage.name}, method={self.method!r}, seed={self.seed}{direction}, {counts}{shown})"
