"""NASBOT (Kandasamy et al., NeurIPS 2018) and its baselines RAND and EA (App. C.1).

All three search a :class:`graphbo.nas.ArchitectureSpace` with the ask/tell
protocol of :class:`~graphbo.optimizers.base.Optimizer`; configurations are
the JSON dicts of :class:`~graphbo.nas.domain.architecture.Architecture`.

* :class:`NASBOT` ("nasbot"): a GP with the OTMANN kernel of Eq. 4 whose
  hyper-parameters are sampled from their posterior
  (:class:`graphbo.models.otmann_gp.OTMANNGP`); the next network maximises EI
  averaged over the posterior samples (log-EI of
  :mod:`graphbo.acquisition.ei`), found by the evolutionary algorithm of
  Sec. 4.2 / App. B.2 (:func:`graphbo.optim.evolutionary.optimize_acquisition_ea`;
  parents are selected with ``pi ~ exp(EI / sigma)``, App. B.2's rule for EI,
  not for log-EI)
  with the paper's schedule: ``n_EA(t)`` acquisition evaluations growing like
  ``sqrt(t)`` and ``N_mut ~ sqrt(n_EA)`` mutations per round.
* :class:`NASRandom` ("rand"): App. C.1's RAND, "exactly the same way as
  NASBOT, except that the EA procedure is fed a random sample from Unif(0, 1)
  instead of the GP acquisition each time it evaluates an architecture" (same
  ``n_EA`` and ``N_mut`` schedule).
* :class:`NASEvolution` ("ea"): App. C.1's EA, the evolutionary algorithm of
  App. B.2 on the objective itself, with ``N_mut = 10``: parents are drawn
  from all evaluated networks with probability ``~ exp(-y / sigma)``
  (``sigma`` = 2 std of the values, as in the acquisition EA), each is mutated
  by the compound k-step operator, and the 10 children are evaluated.

**Initial design**: the domain's 10 initial networks (App. B.1, Fig. 16/17),
after any ``initial_configs``.

**No repeats**: networks are compared by a Weisfeiler-Lehman hash of the
labelled graph (:meth:`ArchitectureSpace.key`), which is equal for networks
that differ only in the numbering of their layers; no method suggests a
network whose key is that of an evaluated, failed or pending one. (WL hashes
of non-isomorphic networks can collide in principle; such a network is then
skipped too.)

**Parallel suggestions** (``ask(n)``): NASBOT hallucinates the pending
networks with the kriging believer (Ginsbourger et al. 2011, as the paper
does): each posterior sample is conditioned on its own posterior mean at the
pending networks.
"""

from __future__ import annotations

from typing import AbstractSet, Any, Callable, Mapping, Sequence

import numpy as np
import torch

from ..optim.evolutionary import (SIGMA_SCALE, EAResult, n_ea_evaluations, optimize_acquisition_ea,
                                        selection_probabilities)
from ..models.otmann_gp import OTMANNGP, OTMANNHyperSample
from ..nas.domain.architecture import Architecture
from ..nas.domain.modifiers import mutate
from ..nas.distance.otmann import DEFAULT_NU_STRS
from ..nas.domain.space import ArchitectureSpace
from .._validation import check_choice, check_floats, check_int, check_optional_int
from .base import DEFAULT_MAX_TRAIN, Configs, Optimizer, _Excluded, check_max_train

__all__ = ["NASOptimizer", "NASBOT", "NASRandom", "NASEvolution", "EA_START_CHOICES"]

#: where the acquisition EA starts: the initial pool only (paper, Sec. 4.2) or the pool and
#: every evaluated network (graphbo's default)
EA_START_CHOICES = ("pool", "pool+evaluated")


class NASOptimizer(Optimizer):
    """What NASBOT, RAND and EA share: the architecture space, the initial pool, keys.

    Parameters
    ----------
    space : ArchitectureSpace or str
        The domain; a string (``"mlp-reg"``, ``"mlp-class"``, ``"cnn"``) makes an
        :class:`ArchitectureSpace` with the default constraints.
    seed : int, optional
    n_initial : int, default 10
        Networks of the initial design: ``initial_configs`` first, then the
        domain's initial pool, then random networks if more are asked for.
    initial_configs : list of dict, optional
    ea_start : {"pool+evaluated", "pool"}
        Start population of the EA (NASBOT and RAND): the initial pool and every
        evaluated network (default), or the initial pool only, as in the paper.
    """

    space_types = (ArchitectureSpace,)

    def __init__(self, space: ArchitectureSpace | str, *, seed: int | None = None, n_initial: int = 10,
                 initial_configs: Configs | None = None, ea_start: str = "pool+evaluated"):
        self.ea_start = check_choice("ea_start", ea_start, EA_START_CHOICES)
        if isinstance(space, str):
            try:
                space = ArchitectureSpace(space)
            except ValueError as exc:
                raise ValueError(f"space must be a graphbo.nas.ArchitectureSpace or a domain name ({exc})") from None
        #: keys (:meth:`ArchitectureSpace.key`) of the evaluated and failed networks, and one network per key,
        #: updated by ``tell`` and ``mark_failed``: an ask reads them instead of hashing every network again
        self._done_keys: set[str] = set()
        # Optimizer types its space as a Space; it takes any of space_types, here an ArchitectureSpace
        super().__init__(space, seed=seed, n_initial=n_initial,  # type: ignore[arg-type]  # see space_types
                         initial_configs=initial_configs)
        self.space: ArchitectureSpace = space  # type: ignore[assignment]  # not a Space: see space_types
        self._archs: list[Architecture] = []
        self.last_ea: EAResult | None = None

    def _initial_design(self, rows: list[np.ndarray], n_initial: int) -> list[np.ndarray]:
        """``initial_configs``, then the domain's initial pool, then random networks, up to ``n_initial``."""
        space = self.space
        keys = {self._row_key(r) for r in rows}
        for a in space.initial_pool():
            if len(rows) >= n_initial:
                break
            r = space.to_index(a)
            if self._row_key(r) not in keys:
                keys.add(self._row_key(r))
                rows.append(r)
        tries = 0
        while len(rows) < n_initial and tries < 100 * n_initial:
            tries += 1
            r = space.sample_index(1, self.rng)[0]
            if self._row_key(r) not in keys:
                keys.add(self._row_key(r))
                rows.append(r)
        return rows

    # -- keys ---------------------------------------------------------------------------------------
    def _row_key(self, row: np.ndarray | bytes) -> str:
        return self.space.key(self.space.architecture_at(row))

    def _excluded_keys(self) -> AbstractSet[str]:
        """Keys of the evaluated, failed and pending networks: a view of the kept set of done keys and the
        pending ones (O(pending) per call, nothing that grows with the told networks is rebuilt)."""
        return _Excluded(self._done_keys, {self._row_key(b) for b in self._pending})

    def _note_done(self, row: np.ndarray) -> None:
        """An evaluated or failed network joins the kept exclusion set (O(1) per ``tell``); the EA reads
        the set as it is (``excluded_keys``), so an ask hashes no told network again."""
        self._done_keys.add(self._row_key(row))

    @property
    def step(self) -> int:
        """The BO step ``t`` of the EA schedule: networks evaluated, failed or pending."""
        return len(self._evaluated) + len(self._pending)

    # -- protocol -----------------------------------------------------------------------------------------
    def _ask_one(self) -> dict[str, Any]:
        excluded = self._excluded_keys()  # a view: nothing is built unless the initial design is asked
        row = self._pop_initial(lambda r: self._row_key(np.asarray(r, dtype=np.int64)) not in excluded)
        if row is not None:
            row = np.asarray(row, dtype=np.int64)
        else:
            self._refresh_targets(new_weights=True)
            row = np.asarray(self._suggest(), dtype=np.int64)
        self._pending[row.tobytes()] = row
        return self.space.from_index(row)

    def tell(self, config: Mapping[str, Any] | Architecture, value: float | Sequence[float], *,
             constraints: Sequence[float] | np.ndarray | None = None) -> None:
        """Record that a network evaluated to ``value`` (a dict or an :class:`Architecture`); ``value`` and
        ``constraints`` as :meth:`Optimizer.tell` takes them.

        Raises ``ValueError`` naming the problem, and stores nothing, if the network is
        malformed, invalid, outside the space's constraints, or the value is not finite.
        """
        if isinstance(config, Architecture):
            config = config.to_dict()
        super().tell(config, value, constraints=constraints)
        self._note_done(self._X[-1])
        self._drop_pending_like(self._X[-1])

    def mark_failed(self, config: Mapping[str, Any] | Architecture) -> None:
        if isinstance(config, Architecture):
            config = config.to_dict()
        super().mark_failed(config)
        row = self.space.to_index(config)
        self._note_done(row)
        self._drop_pending_like(row)

    def _drop_pending_like(self, row: np.ndarray) -> None:
        """A renumbered copy of a pending network was told: it is not pending any more."""
        key = self._row_key(row)
        for b in [b for b in self._pending if self._row_key(b) == key]:
            del self._pending[b]

    def _observe(self, row: np.ndarray, value: float) -> None:
        self._archs.append(self.space.architecture_at(row))

    @property
    def X(self) -> list[np.ndarray]:  # type: ignore[override]  # not Optimizer's (n, d) array: rows differ in length
        """Rows of the told networks (they differ in length, so a list)."""
        return [r.copy() for r in self._X]

    @property
    def architectures(self) -> list[Architecture]:
        """The told networks, in order (shared objects: do not edit them)."""
        return list(self._archs)

    # -- helpers for the subclasses -------------------------------------------------------------------
    def _ea_start(self) -> list[Architecture]:
        pool = self.space.initial_pool()
        return pool + self._archs if self.ea_start == "pool+evaluated" else pool

    def _first_allowed(self, res: EAResult, excluded: AbstractSet[str]) -> np.ndarray | None:
        for a in res.top:
            if self.space.key(a) in excluded:  # pragma: no cover - the EA never returns excluded ones
                continue
            try:
                return self.space.to_index(a)
            except ValueError:  # e.g. a decision layer of the other task
                continue
        return None

    def _random_row(self) -> np.ndarray:
        """A random network (:meth:`ArchitectureSpace.sample_architectures`) not yet excluded."""
        excluded = self._excluded_keys()
        for _ in range(1000):
            r = self.space.sample_index(1, self.rng)[0]
            if self._row_key(r) not in excluded:
                return r
        raise RuntimeError("could not find a network that was not evaluated yet in 1000 random draws")

    def _run_ea(self, phi: Callable[[list[Architecture]], Sequence[float] | np.ndarray], n_evaluations: int,
                n_mutations: int | None = None, top_k: int = 5, log_acquisition: bool = False) -> np.ndarray:
        excluded = self._excluded_keys()
        try:
            res = optimize_acquisition_ea(phi, self._ea_start(), rng=self.rng, n_evaluations=n_evaluations,
                                          n_mutations=n_mutations, excluded_keys=excluded,
                                          is_valid=self.space.constraints, top_k=top_k,
                                          log_acquisition=log_acquisition)
        except RuntimeError:  # everything the EA scored was excluded
            self.last_ea = None
            return self._random_row()
        self.last_ea = res
        row = self._first_allowed(res, excluded)
        return row if row is not None else self._random_row()


class NASBOT(NASOptimizer):
    """Neural architecture search with Bayesian optimisation and optimal transport.

    Parameters
    ----------
    space : ArchitectureSpace or str
    seed : int, optional
    n_initial : int, default 10
        The initial pool (App. B.1) is evaluated first.
    initial_configs : list of dict, optional
    nu_strs : sequence of float
        Structural weights of the OTMANN distances in the kernel (paper: 0.1, 0.2, 0.4, 0.8).
    n_burn, n_samples : int, defaults 100 and 10
        Slice-sampling burn-in sweeps at the first fit, posterior samples per suggestion.
    ea_evaluations : int, optional
        A fixed number of acquisition evaluations per suggestion instead of the
        schedule ``n_EA(t) = clip(25 sqrt(t), 50, 500)``.
    ea_start : {"pool+evaluated", "pool"}
        See :class:`NASOptimizer`; with more than ``max_train`` told networks, "evaluated" means
        those of the GP's training set (so the EA scores a bounded start population).
    max_train : int or None, default 500
        Most networks the GP is fitted on (``>= 20``; ``None``: all of them). Beyond it the fit
        uses the best ones, the most recent ones and a seeded uniform sample of the others
        (:func:`~graphbo.optimizers.base.training_subset`), so a suggestion costs about the same at
        10,000 told networks as at ``max_train`` (docs/reliability.md, "Load"); the kept part
        changes every ``max_train // 4`` tells, and only then are all its OTMANN distances computed
        again. Every evaluated network stays excluded from the suggestions, and EI's incumbent is
        the best of all the observations. :attr:`last_training_indices` holds the networks of the
        last fit (indices into :attr:`architectures`).

    Attributes
    ----------
    model : OTMANNGP
    last_timing : dict
        Seconds of the last model-based suggestion: ``fit`` (slice sampling and
        conditioning, without distances), ``distances`` (OTMANN, all of it),
        ``acquisition`` (the EA, mutations and GP predictions, without
        distances), ``total``; and ``ea_evaluations``. Measured with
        ``model.clock`` (wall clock by default; set ``time.process_time`` for CPU time).
    """

    models_constraints = True

    name = "nasbot"

    def __init__(self, space: ArchitectureSpace | str, *, seed: int | None = None, n_initial: int = 10,
                 initial_configs: Configs | None = None, nu_strs: Sequence[float] = DEFAULT_NU_STRS,
                 n_burn: int = 100, n_samples: int = 10, ea_evaluations: int | None = None,
                 ea_start: str = "pool+evaluated", max_train: int | None = DEFAULT_MAX_TRAIN):
        nu_strs = check_floats("nu_strs", nu_strs, minimum=0.0)
        n_burn = check_int("n_burn", n_burn, minimum=0)
        n_samples = check_int("n_samples", n_samples, minimum=1)
        self.ea_evaluations = check_optional_int("ea_evaluations", ea_evaluations, minimum=1)
        self.max_train = check_max_train(max_train)
        super().__init__(space, seed=seed, n_initial=n_initial, initial_configs=initial_configs, ea_start=ea_start)
        self.model = OTMANNGP(self.space.kind, nu_strs=nu_strs, n_burn=n_burn, n_samples=n_samples)
        self._model_options = {"nu_strs": nu_strs, "n_burn": n_burn, "n_samples": n_samples}
        self._fitted_n = -1
        self.last_timing: dict[str, float] = {}
        self.last_acquisition_value: float | None = None

    def _new_surrogate(self) -> OTMANNGP:
        """An OTMANN GP of its own (the objective's holds a distance cache that is not copied)."""
        return OTMANNGP(self.space.kind, **self._model_options)  # type: ignore[arg-type]

    def _suggest(self) -> np.ndarray:
        if self.n_told == 0:
            return self._random_row()
        with torch.no_grad():
            clock = self.model.clock
            timing0 = dict(self.model.timing)
            t0 = clock()
            y_all = self.y
            # every network up to max_train; between refreshes of its kept part the list only grows,
            # so the distance cache extends (training_subset)
            train = self._training_indices(y_all)
            archs, y = [self._archs[i] for i in train], y_all[train]
            if self._fitted_n != self.n_told or self.n_objectives > 1:  # new ParEGO weights at every ask
                self.model.fit(archs, y, rng=self.rng)
                self._fitted_n = self.n_told
            elif not self.model.is_conditioned or self.model.n_data != len(archs):  # restored by set_state
                self.model.condition(archs, y, samples=self.model.samples)
            else:
                self.model.condition(archs, y)  # the same data: drop the fantasies of the previous ask
            pending = [self.space.architecture_at(b) for b in self._pending]
            self.model.add_fantasies(pending)  # kriging believer
            t1 = clock()
            dist_fit = self.model.timing["distances"] - timing0["distances"]
            # incumbent: the best real (feasible) value, that of all observations (training_subset always keeps it)
            acquisition = self._log_ei(y_all, archs, pending)

            def phi(archs: list[Architecture]) -> np.ndarray:
                return acquisition(archs).numpy()

            n_ea = self.ea_evaluations if self.ea_evaluations is not None else n_ea_evaluations(self.step)
            # phi is log-EI; the EA selects parents with pi ~ exp(EI / sigma) (App. B.2)
            row = self._run_ea(phi, n_ea, log_acquisition=True)
            t2 = clock()
        chosen = self.space.architecture_at(row)
        self.model.cache.clear_memo(keep=pending + [chosen])
        dist = self.model.timing["distances"] - timing0["distances"]
        self.last_timing = {"total": t2 - t0, "fit": (t1 - t0) - dist_fit, "distances": dist,
                            "acquisition": (t2 - t1) - (dist - dist_fit), "ea_evaluations": float(n_ea)}
        self.last_acquisition_value = float(self.last_ea.best_value) if self.last_ea is not None else None
        return row

    def _ea_start(self) -> list[Architecture]:
        """The initial pool, and (``ea_start="pool+evaluated"``) the told networks of the GP's training set:
        all of them up to ``max_train``."""
        pool = self.space.initial_pool()
        if self.ea_start != "pool+evaluated":
            return pool
        train = self.last_training_indices
        if train is None or len(train) == len(self._archs):
            return pool + self._archs
        return pool + [self._archs[i] for i in train]

    # -- state ------------------------------------------------------------------------------------------
    def _method_state(self) -> dict[str, Any]:
        if not self.model.samples:
            return {}
        return {**self._surrogate_state(self.model), "fitted_n": self._fitted_n}

    def _surrogate_state(self, model: Any) -> dict[str, Any]:
        """The posterior samples and the chain's last state."""
        if not model.samples:
            return {}
        assert model.state is not None  # sampled with the samples
        return {"samples": [s.to_dict() for s in model.samples], "state": model.state.to_dict()}

    def _load_surrogate_state(self, model: Any, state: Mapping[str, Any]) -> None:
        if "samples" in state:
            model.restore_samples([OTMANNHyperSample.from_dict(s) for s in state["samples"]],
                                  OTMANNHyperSample.from_dict(state["state"]))

    def _load_method_state(self, state: Mapping[str, Any]) -> None:
        if "samples" in state:
            self.model.restore_samples([OTMANNHyperSample.from_dict(s) for s in state["samples"]],
                                       OTMANNHyperSample.from_dict(state["state"]))
            self._fitted_n = int(state["fitted_n"])
        else:
            self.model.samples = []
            self.model.state = None
            self._fitted_n = -1


class NASRandom(NASOptimizer):
    """RAND of App. C.1: NASBOT's EA fed Unif(0, 1) values instead of the acquisition.

    Same parameters as :class:`NASOptimizer`, plus ``ea_evaluations`` (a fixed
    ``n_EA`` instead of the schedule).
    """

    name = "rand"

    def __init__(self, space: ArchitectureSpace | str, *, seed: int | None = None, n_initial: int = 10,
                 initial_configs: Configs | None = None, ea_evaluations: int | None = None,
                 ea_start: str = "pool+evaluated"):
        self.ea_evaluations = check_optional_int("ea_evaluations", ea_evaluations, minimum=1)
        super().__init__(space, seed=seed, n_initial=n_initial, initial_configs=initial_configs, ea_start=ea_start)

    def _suggest(self) -> np.ndarray:
        n_ea = self.ea_evaluations if self.ea_evaluations is not None else n_ea_evaluations(self.step)
        return self._run_ea(lambda archs: self.rng.random(len(archs)), n_ea)


class NASEvolution(NASOptimizer):
    """EA of App. C.1: the evolutionary algorithm of App. B.2 on the objective, ``N_mut = 10``.

    After the initial pool, generations of ``n_mutations`` children are made:
    each parent is drawn from all evaluated networks with probability
    ``~ exp(-(y - mean) / (2 std))`` (lower values are better) and mutated by
    the compound operator (k = 1..5 steps with probabilities 0.5, 0.25, 0.125,
    0.075, 0.05); children that are invalid or already evaluated, failed,
    pending or in the generation are redrawn (up to ``max_mutation_tries`` per
    parent). The children are suggested one by one; a new generation is made
    when they are used up, from everything told by then.
    """

    name = "ea"

    def __init__(self, space: ArchitectureSpace | str, *, seed: int | None = None, n_initial: int = 10,
                 initial_configs: Configs | None = None, n_mutations: int = 10, max_mutation_tries: int = 10):
        self.n_mutations = check_int("n_mutations", n_mutations, minimum=1)
        self.max_mutation_tries = check_int("max_mutation_tries", max_mutation_tries, minimum=1)
        super().__init__(space, seed=seed, n_initial=n_initial, initial_configs=initial_configs)
        self._queue: list[np.ndarray] = []

    def _suggest(self) -> np.ndarray:
        excluded = self._excluded_keys()
        while self._queue:
            row = self._queue.pop(0)
            if self._row_key(row) not in excluded:
                return row
        if not self._archs:
            return self._random_row()
        probs = selection_probabilities(-self.y, SIGMA_SCALE)
        parents = self.rng.choice(len(self._archs), size=self.n_mutations, replace=True, p=probs)
        taken: set[str] = set()  # the keys of this generation (the excluded ones are a view, not copied)
        children: list[np.ndarray] = []
        for i in parents:
            for _ in range(self.max_mutation_tries):
                child = mutate(self._archs[int(i)], self.rng, is_valid=self.space.constraints)
                if child is None:
                    continue
                key = self.space.key(child)
                if key in taken or key in excluded:
                    continue
                try:
                    row = self.space.to_index(child)
                except ValueError:
                    continue
                taken.add(key)
                children.append(row)
                break
        if not children:
            return self._random_row()
        self._queue = children[1:]
        return children[0]

    def _method_state(self) -> dict[str, Any]:
        return {"queue": [r.tolist() for r in self._queue]}

    def _load_method_state(self, state: Mapping[str, Any]) -> None:
        self._queue = [np.asarray(r, dtype=np.int64) for r in state.get("queue", [])]
