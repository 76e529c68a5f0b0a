"""BOHB baseline: SMAC3's multi-fidelity facade (Hyperband + random forest) behind graphbo's ask/tell.

BO-FM (Oh et al., 2021, Sec. 5.3) compares with BOHB (Falkner et al., 2018)
on the joint NAS + SGD problem, with the number of training epochs as the
budget: Hyperband's successive halving decides how many epochs each
configuration is trained for, and a model of the evaluations at the largest
budget with enough data proposes new configurations. This wraps SMAC3's
:class:`~smac.MultiFidelityFacade` (a ``Hyperband`` intensifier and SMAC's
random forest; SMAC3 >= 2.4, no ``pyrfr``) through its ask/tell interface.

The protocol is graphbo's, extended by a fidelity (an integer: epochs)::

    opt = BOHB(space, seed=0, max_fidelity=25)
    config, k = opt.ask_with_fidelity()   # or: config = opt.ask(); k = opt.last_fidelity
    opt.tell(config, objective(config, epochs=k), fidelity=k)

Requires ``smac`` (``pip install "graphbo[smac]"``); it is imported when the
optimizer is constructed, never at ``import graphbo``.
"""

from __future__ import annotations

import math
import numbers
from collections import defaultdict
from typing import Any, Mapping, Sequence, overload

import numpy as np

from .._validation import check_float, check_int, check_optional_int
from ..spaces.space import Space
from .base import Configs, Observation
from .smac import SMACAdapter, _quiet_smac

__all__ = ["BOHB", "hyperband_fidelities"]

#: the BO-FM authors' HpBandSter budgets were (0.5, E + 0.5) epochs, rounded to whole epochs
_HALF = 0.5 - 1e-6


def _check_hyperband(min_fidelity: Any, max_fidelity: Any, eta: Any) -> tuple[int, int, int]:
    """The fidelity range and Hyperband's ``eta`` as ints (``ValueError``/``TypeError`` naming a bad one)."""
    if max_fidelity is None:
        raise ValueError("max_fidelity must be given: BOHB needs max_fidelity, the full fidelity in epochs "
                         "(a benchmark's max_fidelity), got None")
    min_fidelity = check_int("min_fidelity", min_fidelity, minimum=1)
    max_fidelity = check_int("max_fidelity", max_fidelity, minimum=min_fidelity)
    return min_fidelity, max_fidelity, check_int("eta", eta, minimum=2)


def _round_epochs(budget: float) -> int:
    return int(math.floor(budget + 0.5))


def _hyperband_budgets(min_fidelity: int, max_fidelity: int, eta: int) -> tuple[float, float, dict[int, float]]:
    """SMAC's ``(min_budget, max_budget)`` and the map fidelity -> SMAC budget of every Hyperband stage."""
    from smac.intensifier.hyperband_utils import determine_HB

    low, high = min_fidelity - _HALF, max_fidelity + _HALF
    stages = determine_HB(min_budget=low, max_budget=high, eta=eta)["budgets_in_stage"][0]  # bracket 0 has all
    budget_of: dict[int, float] = {}
    for b in stages:
        k = _round_epochs(b)
        if k in budget_of:
            raise ValueError(f"BOHB: with eta={eta}, Hyperband budgets {stages} on ({low:g}, {high:g}) round to "
                             f"the same number of epochs ({k}); use a larger eta or fidelity range")
        budget_of[k] = b
    return low, high, budget_of


def hyperband_fidelities(max_fidelity: int, *, min_fidelity: int = 1, eta: int = 3) -> tuple[int, ...]:
    """The fidelities (epochs) BOHB evaluates at, ascending: ``hyperband_fidelities(25) == (1, 3, 8, 25)``.

    Hyperband's budgets ``B eta^-i`` (``B = max_fidelity + 0.5``, ``i = 0 .. s_max``,
    ``s_max = floor(log_eta(B / (min_fidelity - 0.5)))``) rounded to whole epochs:
    the BO-FM authors' HpBandSter setting for the NAS + SGD problem
    (budgets ``0.5 .. 25.5``, ``round(budget)`` epochs).
    """
    return tuple(sorted(_hyperband_budgets(*_check_hyperband(min_fidelity, max_fidelity, eta))[2]))


class BOHB(SMACAdapter):
    """BOHB through SMAC3's multi-fidelity facade: Hyperband brackets, random-forest proposals.

    Fidelities are integers (epochs) in ``min_fidelity .. max_fidelity``; an
    evaluation at ``max_fidelity`` is a full evaluation. Hyperband runs on SMAC
    budgets ``(min_fidelity - 0.5, max_fidelity + 0.5)`` with ``eta`` (default 3,
    HpBandSter's and SMAC's), each budget rounded to whole epochs -- how the
    BO-FM authors ran HpBandSter's BOHB (``min_budget = 0.5``,
    ``max_budget = 25.5``, ``round(budget)`` epochs): for 25 epochs the
    fidelities are 1, 3, 8 and 25 in four brackets, for 9 they are 1, 3, 9
    (:func:`hyperband_fidelities`, :attr:`fidelity_levels`).

    Setup (``MultiFidelityFacade`` components, SMAC3 defaults unless said
    otherwise): ``Hyperband(eta)`` with one seed (a deterministic scenario);
    SMAC's random forest on log-scaled costs, trained on the evaluations of the
    largest budget that has at least ``min_points_in_model`` of them (SMAC's
    ``min_trials``; default ``d + 1`` for ``d`` variables, BOHB's ``N_min``;
    SMAC's default is 1) and retrained for every proposal (``retrain_after=1``,
    as :class:`~graphbo.optimizers.smac.SMAC`); while no budget has that many,
    configurations are sampled uniformly, as in BOHB. Log-EI maximised by
    SMAC's local and random search (``n_challengers``), with a random
    configuration interleaved with probability ``random_probability``
    (default 1/3, BOHB's random fraction; SMAC's default is 0.2). The random
    forest runs single-threaded. SMAC's random initial design is replaced by
    graphbo's: the ``n_initial`` random configurations every graphbo method
    draws first from the same seed are the first configurations Hyperband
    considers (they open the first bracket at the lowest fidelity).

    Seeding: every random choice flows from ``seed``. Before each ask, SMAC's
    random generators (configuration space, random design, acquisition
    maximisers, intensifier) are re-seeded from integers drawn from
    ``self.rng``, so SMAC's randomness is part of :meth:`get_state` and a
    seed gives the same asks in any process (the local search's start points
    are put in a fixed order, :func:`~graphbo.optimizers.smac._sorted_start_local_search`).

    Told data: every evaluation, at any fidelity, is in :attr:`history`,
    :attr:`X`, :attr:`y`, with its fidelity in :attr:`told_fidelities`;
    :attr:`best` is the best **full-fidelity** evaluation (``None`` before the
    first one). Unlike the single-fidelity methods, a configuration is asked
    again (at a higher fidelity) when successive halving promotes it.

    Failures: :meth:`mark_failed` tells SMAC the trial ``CRASHED`` (cost
    ``inf``): it is never promoted and the random forest never sees it.

    Resuming (:meth:`get_state` / :meth:`set_state`): replay the told
    evaluations with :meth:`tell` (with their fidelities) into a fresh optimizer
    of the same seed and options, then call :meth:`set_state` before any ask.
    The state holds Hyperband's brackets in progress (configurations per
    bracket and stage, the next bracket), the retry count of SMAC's
    configuration generator and ``self.rng``; SMAC's run history is rebuilt by
    the replay, and stages the replay completed are promoted at once (as the
    interrupted generator would do next). The resumed optimizer then asks
    exactly what the uninterrupted one asks (tested at many cut points on
    mixed and discrete spaces). This rests on SMAC 2.4 internals
    (``Hyperband._tracker``, ``ConfigSelector._processed_configs``, the
    generators' ``_rng``) and may break with another SMAC version: the
    brackets in progress still continue correctly then, but new
    configurations may differ from an uninterrupted run.

    Parameters
    ----------
    space, seed, n_initial, initial_configs
        As for :class:`~graphbo.optimizers.base.Optimizer`.
    max_fidelity : int
        The full fidelity (a benchmark's ``max_fidelity``: epochs). Required.
    min_fidelity : int, default 1
        The smallest fidelity Hyperband may use.
    eta : int, default 3
        Hyperband's reduction factor (BOHB's and SMAC's default; BO-FM ran
        HpBandSter with its default, 3).
    min_points_in_model : int, optional
        Evaluations at one budget needed to fit the random forest on that
        budget; default ``len(space) + 1``.
    random_probability : float, default 1/3
        Probability of a uniformly random configuration instead of the model's.
    n_trees : int, default 10
        Trees of the random forest (SMAC's default).
    n_challengers : int, default 10000
        Configurations the acquisition maximiser considers (SMAC's default).
    local_search_iterations : int, default 10
        Local searches of the acquisition maximiser (SMAC's default); most of a
        proposal's time (~1 s on a 2-core machine) goes to them.
    """

    name = "bohb"
    #: asks come with a fidelity (see :mod:`graphbo.benchmarks.fidelity`)
    multi_fidelity = True

    def __init__(self, space: Space, *, seed: int | None = None, n_initial: int = 10,
                 initial_configs: Configs | None = None, max_fidelity: int | None = None, min_fidelity: int = 1,
                 eta: int = 3, min_points_in_model: int | None = None, random_probability: float = 1.0 / 3.0,
                 n_trees: int = 10, n_challengers: int = 10000, local_search_iterations: int = 10):
        self.min_fidelity, self.max_fidelity, self.eta = _check_hyperband(min_fidelity, max_fidelity, eta)
        min_points_in_model = check_optional_int("min_points_in_model", min_points_in_model, minimum=1)
        random_probability = check_float("random_probability", random_probability, minimum=0.0, maximum=1.0)
        n_trees = check_int("n_trees", n_trees, minimum=1)
        n_challengers = check_int("n_challengers", n_challengers, minimum=1)
        local_search_iterations = check_int("local_search_iterations", local_search_iterations, minimum=1)
        super().__init__(space, seed=seed, n_initial=n_initial, initial_configs=initial_configs)
        from smac.callback.callback import Callback
        from smac.main.config_selector import ConfigSelector

        self.min_points_in_model = len(space) + 1 if min_points_in_model is None else min_points_in_model
        low, high, self._budget_of = _hyperband_budgets(self.min_fidelity, self.max_fidelity, self.eta)
        #: the fidelities Hyperband uses, ascending
        self.fidelity_levels: tuple[int, ...] = tuple(sorted(self._budget_of))
        initial = [self._config_of(r) for r in self._initial]
        self._initial = []  # handed to SMAC's initial design below

        class _Restore(Callback):
            """Notes when SMAC's configuration generator starts; in a restored optimizer, gives it the
            interrupted generator's state then: the configurations of the restored brackets join the
            processed ones, and its number of retries is the interrupted one's (a fresh generator adds
            the number of configurations in the run history to it)."""

            def __init__(self) -> None:
                super().__init__()
                self.started = False
                self.configs: list = []
                self.max_tries: int | None = None

            def on_next_configurations_start(self, config_selector) -> None:
                if self.started:
                    return
                self.started = True
                processed = config_selector._processed_configs
                processed.extend(c for c in self.configs if c not in processed)
                self.configs = []
                if self.max_tries is not None:
                    config_selector._max_new_config_tries = self.max_tries

        self._restored = _Restore()
        MF = self._lib.smac.MultiFidelityFacade
        parts: dict[str, Any] = {}

        def components(scenario) -> dict[str, Any]:
            parts.update(random_design=MF.get_random_design(scenario, probability=random_probability),
                         intensifier=MF.get_intensifier(scenario, eta=self.eta),
                         initial_design=MF.get_initial_design(scenario, n_configs=0, additional_configs=initial),
                         config_selector=ConfigSelector(scenario, retrain_after=1, min_trials=self.min_points_in_model),
                         callbacks=[self._restored])
            return parts

        maximizer = self._start_smac(MF, n_trees, {"challengers": n_challengers,
                                                   "local_search_iterations": local_search_iterations},
                                     components, min_budget=low, max_budget=high)
        random_design, intensifier = parts["random_design"], parts["intensifier"]
        # New configurations enter Hyperband as graphbo rows see them (see _canonical_configs)
        intensifier._config_generator = self._canonical_configs(intensifier._config_generator)
        # SMAC's random generators, re-seeded before every ask (SMAC 2.4 attribute names)
        self._rng_owners = [o for o in (random_design, maximizer, getattr(maximizer, "_local_search", None),
                                        getattr(maximizer, "_random_search", None), intensifier)
                            if o is not None and isinstance(getattr(o, "_rng", None), np.random.RandomState)]
        self._fidelities: list[int] = []  # aligned with _X / _y
        self._failed: list[tuple[np.ndarray, int]] = []
        self._n_asked = 0
        #: fidelity of the configuration returned by the last :meth:`ask` (of each, for ``ask(n)``: ``last_fidelities``)
        self.last_fidelity: int | None = None
        self.last_fidelities: list[int] = []

    def _canonical_configs(self, configs):
        """SMAC's new configurations, each replaced by the one graphbo's row of it converts back to.

        A continuous coordinate may move (by ~1e-13: ConfigSpace rounds float
        values) on the trip SMAC vector -> graphbo value -> SMAC vector; with this, Hyperband's brackets and SMAC's
        run history hold exactly the configurations a replay of the told
        values (graphbo configurations) rebuilds, so a resumed run's model sees
        the same data as the uninterrupted one.
        """
        for config in configs:
            canonical = self._config_of(self._row_of(config))
            canonical.origin = config.origin
            yield canonical

    def _reseed(self) -> None:
        seeds = np.random.SeedSequence(int(self.rng.integers(2**63))).generate_state(1 + len(self._rng_owners))
        self.configspace.seed(int(seeds[0]))
        for owner, s in zip(self._rng_owners, seeds[1:]):
            owner._rng = np.random.RandomState(int(s))

    def _fidelity(self, fidelity: Any, where: str) -> int:
        if isinstance(fidelity, bool) or not isinstance(fidelity, numbers.Integral) \
                or int(fidelity) not in self._budget_of:
            raise ValueError(f"{where}: fidelity must be one of Hyperband's {list(self.fidelity_levels)}, "
                             f"got {fidelity!r}")
        return int(fidelity)

    # -- protocol -------------------------------------------------------------------
    @overload
    def ask(self, n: None = None) -> dict[str, Any]: ...
    @overload
    def ask(self, n: int) -> list[dict[str, Any]]: ...

    def ask(self, n: int | None = None) -> dict[str, Any] | list[dict[str, Any]]:
        """The next configuration; its fidelity is :attr:`last_fidelity` (``ask(n)``: :attr:`last_fidelities`).

        See :meth:`ask_with_fidelity`, which returns both.
        """
        if n is not None:
            pairs = self.ask_with_fidelity(n)
            return [c for c, _ in pairs]
        return self.ask_with_fidelity()[0]

    @overload
    def ask_with_fidelity(self, n: None = None) -> tuple[dict[str, Any], int]: ...
    @overload
    def ask_with_fidelity(self, n: int) -> list[tuple[dict[str, Any], int]]: ...

    def ask_with_fidelity(self, n: int | None = None) -> tuple[dict[str, Any], int] | list[tuple[dict[str, Any], int]]:
        """The next ``(configuration, fidelity)`` to evaluate; with ``n``, a list of ``n``.

        Evaluate the configuration at the fidelity (``epochs=fidelity``) and
        :meth:`tell` the value with it. Asked trials stay pending (SMAC's
        running trials) until told; Hyperband fills the next bracket while a
        stage waits for them.
        """
        if n is not None:
            pairs = [self._ask_one_pair() for _ in range(self._check_n(n))]
            self.last_fidelities = [k for _, k in pairs]
            self.last_fidelity = pairs[-1][1]
            return pairs
        pair = self._ask_one_pair()
        self.last_fidelities = [pair[1]]
        self.last_fidelity = pair[1]
        return pair

    def _ask_one_pair(self) -> tuple[dict[str, Any], int]:
        from ..exceptions import SpaceExhaustedError

        self._reseed()
        with _quiet_smac():
            try:
                info = self.smac.ask()
            except (StopIteration, self._Exhausted):
                raise SpaceExhaustedError("BOHB: SMAC found no new configuration for Hyperband's next bracket "
                                          "(the space looks exhausted)") from None
        self._n_asked += 1
        if self._trial_seed is None:
            self._trial_seed = info.seed
        k = _round_epochs(info.budget)
        if self._budget_of.get(k) != info.budget:  # pragma: no cover - SMAC computes the same budgets
            raise RuntimeError(f"BOHB: SMAC asked for budget {info.budget!r}, not one of {self._budget_of}")
        row = self._row_of(info.config)
        self._trials[(row.tobytes(), k)] = info
        self._pending[row.tobytes()] = row
        return self.space.from_index(row), k

    def _pop_trial(self, row: np.ndarray, fidelity: int | None = None):
        """The pending SMAC trial asked for ``(row, fidelity)`` (or ``None``), removed from the pending ones;
        the configuration leaves graphbo's pending set with its last pending trial."""
        key = self._trial_key(row, fidelity)
        if key is None:
            return None
        info = self._trials.pop(key)
        if not any(other == key[0] for other, _ in self._trials):
            self._pending.pop(key[0], None)
        return info

    def _pending_fidelity(self, row: np.ndarray, where: str) -> int:
        ks = sorted({k for key, k in self._trials if key == row.tobytes() and k is not None})  # BOHB's: all have one
        if len(ks) != 1:
            raise ValueError(f"{where}: give the fidelity of the evaluation (fidelity=...); "
                             f"{'no' if not ks else 'more than one'} pending trial of this configuration"
                             + (f" ({ks})" if ks else ""))
        return ks[0]

    def _budget(self, fidelity: int | None) -> float | None:
        assert fidelity is not None  # tell and mark_failed resolve it first
        return self._budget_of[fidelity]

    def tell(self, config: Mapping[str, Any], value: float | Sequence[float], *, fidelity: int | None = None,
             constraints: Sequence[float] | np.ndarray | None = None) -> None:
        """Record that ``config`` evaluated to ``value`` at ``fidelity`` (epochs).

        ``fidelity`` may be left out when exactly one trial of ``config`` is
        pending (then it is that trial's). A trial SMAC did not ask for (a
        replay) is added to its run history. Raises ``ValueError`` and stores
        nothing for a configuration outside the space, a value that is not a
        finite number or a fidelity that is not one of :attr:`fidelity_levels`.
        """
        if constraints is not None:
            raise ValueError(f"method {self.name!r} takes no black-box constraints")
        row, v = self._check_told(config, value)
        k = self._pending_fidelity(row, "tell") if fidelity is None else self._fidelity(fidelity, "tell")
        with _quiet_smac():
            self._tell_library(row, v, k)
        self._X.append(row)
        self._y.append(v)
        self._fidelities.append(k)
        self._evaluated.add(row.tobytes())

    def mark_failed(self, config: Mapping[str, Any], fidelity: int | None = None) -> None:
        """Record that evaluating ``config`` at ``fidelity`` failed: SMAC is told the trial ``CRASHED``.

        A crashed trial is never promoted to a higher fidelity and the random
        forest never sees it. ``fidelity`` as for :meth:`tell`.
        """
        row = self.space.to_index(config)
        k = self._pending_fidelity(row, "mark_failed") if fidelity is None else self._fidelity(fidelity, "mark_failed")
        with _quiet_smac():
            self._tell_library(row, None, k)
        self._failed.append((row, k))
        self._evaluated.add(row.tobytes())

    # -- results ----------------------------------------------------------------------
    @property
    def told_fidelities(self) -> np.ndarray:
        """Fidelity of each told evaluation, aligned with :attr:`history`, :attr:`X` and :attr:`y`."""
        return np.array(self._fidelities, dtype=np.int64)

    @property
    def failed(self) -> list[tuple[dict[str, Any], int]]:
        """``(configuration, fidelity)`` of each trial marked failed."""
        return [(self.space.from_index(r), k) for r, k in self._failed]

    @property
    def best(self) -> Observation | None:
        """The best evaluation at :attr:`max_fidelity` told so far, or ``None`` (lower fidelities are not counted)."""
        full = [i for i, k in enumerate(self._fidelities) if k == self.max_fidelity]
        if not full:
            return None
        i = min(full, key=lambda j: self._y[j])
        return Observation(self.space.from_index(self._X[i]), self._y[i])

    # -- resumable state --------------------------------------------------------------
    def _method_state(self) -> dict[str, Any]:
        hb = self.smac.intensifier
        tracker = [[int(b), int(s), [[None if seed is None else int(seed), [c.get_array().tolist() for c in configs]]
                                     for seed, configs in pairs]]
                   for (b, s), pairs in hb._tracker.items()]
        selector = hb._config_selector
        tries = int(selector._max_new_config_tries) if self._restored.started else None
        return {"tracker": tracker, "next_bracket": int(hb._next_bracket), "max_new_config_tries": tries}

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`get_state` returned, after the told data has been replayed and before any ask."""
        if self._n_asked:
            raise RuntimeError("BOHB.set_state restores a fresh optimizer: replay the told evaluations with tell, "
                               "then call set_state before the first ask")
        super().set_state(state)
        self._trials.clear()

    def _load_method_state(self, state: Mapping[str, Any]) -> None:
        if not state:
            return
        from ConfigSpace import Configuration

        known: dict[bytes, Any] = {}
        for c in self.smac.runhistory.get_configs():
            known.setdefault(np.asarray(c.get_array(), dtype=float).tobytes(), c)
        arrays = [(np.frombuffer(key, dtype=float), c) for key, c in known.items()]

        def config(vector) -> Any:
            v = np.asarray(vector, dtype=float)
            hit = known.get(v.tobytes())
            if hit is None:  # told in a replay: the same up to round-off of the continuous coordinates
                for a, c in arrays:
                    if a.shape == v.shape and np.allclose(a, v, rtol=0.0, atol=1e-9, equal_nan=True):
                        return c
                return Configuration(self.configspace, vector=v)
            return hit

        tracker: dict[tuple[int, int], list] = defaultdict(list)
        restored = []
        for b, s, pairs in state["tracker"]:
            tracker[(int(b), int(s))] = [(seed, [config(v) for v in vectors]) for seed, vectors in pairs]
            restored += [c for _, configs in tracker[(int(b), int(s))] for c in configs]
        hb = self.smac.intensifier
        hb._tracker = tracker
        hb._next_bracket = int(state["next_bracket"])
        self._restored.configs = restored
        tries = state.get("max_new_config_tries")
        self._restored.max_tries = None if tries is None else int(tries)
        if any(tracker.values()):
            self._promote_completed_stages()

    def _promote_completed_stages(self) -> None:
        """Promote every restored stage whose trials have all been told, as the interrupted run would next.

        The interrupted run's Hyperband generator was suspended just after
        handing out a trial; resumed, it first promotes the stages that trial
        completed, then hands out the next one. A fresh generator over the
        restored brackets would instead open a new bracket before promoting
        (it opens one after a pass that handed out nothing), so the
        promotions of stages with no trial left to hand out are done here,
        with SMAC's own selection (``SuccessiveHalving._get_best_configs``).
        """
        from smac.runhistory.errors import NotEvaluatedError

        hb = self.smac.intensifier
        with _quiet_smac():
            hb.__post_init__()  # budgets per stage and the instance-seed keys (done again when asked)
            changed = True
            while changed:
                changed = False
                for bracket, stage in list(hb._tracker):
                    for seed, configs in list(hb._tracker[(bracket, stage)]):
                        keys = hb._get_instance_seed_budget_keys_by_stage(bracket=bracket, stage=stage, seed=seed)
                        if any(hb._get_next_trials(c, from_keys=keys) for c in configs):
                            continue  # trials to hand out first (SMAC does not check the last stage)
                        try:
                            promoted = hb._get_best_configs(configs, bracket, stage, keys)
                        except NotEvaluatedError:
                            continue
                        hb._tracker[(bracket, stage)].remove((seed, configs))
                        if stage < hb._max_iterations[bracket] - 1:
                            hb._tracker[(bracket, stage + 1)].append((seed, promoted))
                        changed = True
