"""Evolutionary maximisation of an acquisition over network architectures.

NASBOT (Kandasamy et al. 2018), Sec. 4.2 and App. B.2: start from a pool of
networks and evaluate the acquisition ``phi`` on them; then repeatedly

1. draw ``N_mut`` parents, with replacement, from everything evaluated so far
   with probability ``pi(z_i) ~ exp(phi(z_i) / sigma)``, ``sigma`` a multiple
   of the standard deviation of all acquisition values so far (App. B.2,
   "Sampling strategy"; for NASBOT ``phi`` is EI itself, not its logarithm:
   see :func:`selection_probabilities` and ``log_acquisition``);
2. mutate each parent with the compound k-step operator (k = 1..5 with
   probabilities 0.5, 0.25, 0.125, 0.075, 0.05);
3. evaluate ``phi`` on the new networks (one batched call), add them to the
   evaluated set;

until ``n_EA`` new networks were evaluated. Children that are invalid, that
were already evaluated by the EA, or that are excluded (networks the BO loop
has evaluated or has pending) are skipped, and another mutation is tried.

Schedules and constants, from the authors' code (github.com/kirthevasank/nasbot;
``opt/nasbot.py``, ``opt/domains.py``, ``opt/ga_optimiser.py``,
``utils/general_utils.py``) where the paper only gives rates:

* ``n_EA(t) = clip(25 sqrt(t), 50, 500)`` acquisition evaluations at BO step
  ``t`` (paper: "at rate O(sqrt(t))");
* ``N_mut = int(clip(3 sqrt(n_EA), 5, 100))`` mutations per round (paper:
  "O(sqrt(n_EA))");
* ``sigma = 2 * std`` of the acquisition values (paper: "sigma is the standard
  deviation of all previous evaluations"; the code's GA scales it by 2), and the
  values are centred at their mean before exponentiating (no effect on ``pi``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import AbstractSet, Callable, Iterable, Mapping, Sequence

import numpy as np

from ..nas.domain.architecture import Architecture
from ..nas.domain.keys import architecture_key
from ..nas.domain.modifiers import (MODIFIER_WEIGHTS, STEP_PROBS, Validity, mutate, resolve_validity,
                             well_formed)

__all__ = [
    "EAResult",
    "n_ea_evaluations",
    "n_mutations_per_round",
    "selection_probabilities",
    "optimize_acquisition_ea",
    "EA_LEAD_CONST", "EA_MIN_EVALS", "EA_MAX_EVALS", "SIGMA_SCALE",
]

#: n_EA(t) = clip(EA_LEAD_CONST * sqrt(t), EA_MIN_EVALS, EA_MAX_EVALS) (authors' code:
#: lead constant min(5, dim)**2 with dim = 5 for the network domain).
EA_LEAD_CONST = 25.0
EA_MIN_EVALS = 50
EA_MAX_EVALS = 500
#: sigma = SIGMA_SCALE * std of the acquisition values (authors' code; the paper says 1).
SIGMA_SCALE = 2.0

Acquisition = Callable[[list[Architecture]], Sequence[float] | np.ndarray]


def n_ea_evaluations(t: int, *, lead_const: float = EA_LEAD_CONST,
                     lo: int = EA_MIN_EVALS, hi: int = EA_MAX_EVALS) -> int:
    """Number of acquisition evaluations of the EA at BO step ``t`` (>= 1):
    ``clip(lead_const * sqrt(t), lo, hi)``, rounded down."""
    if t < 0:
        raise ValueError(f"the BO step t must be >= 0, got {t}")
    return int(np.clip(lead_const * math.sqrt(t), lo, hi))


def n_mutations_per_round(n_ea: int) -> int:
    """Mutations generated per EA round: ``int(clip(3 sqrt(n_EA), 5, 100))``."""
    return int(np.clip(3.0 * math.sqrt(max(n_ea, 0)), 5, 100))


def selection_probabilities(values: Sequence[float] | np.ndarray, sigma_scale: float = SIGMA_SCALE, *,
                            log_values: bool = False) -> np.ndarray:
    """Parent-selection probabilities of the EA, NASBOT App. B.2 ("Sampling strategy"):
    ``pi(z_i) ~ exp(g(z_i) / sigma)``, ``sigma = sigma_scale * std(g)`` over the evaluated points.

    ``values`` are the acquisition values ``g(z_i)``, or, with ``log_values``, their
    logarithms (NASBOT's acquisition is EI, which the library evaluates as log-EI:
    the paper's ``g`` is then EI, not log-EI). The log values are exponentiated as
    ``exp(v_i - max v)``, i.e. ``g_i / max g``: dividing ``g`` by a constant divides
    ``sigma`` by the same constant, so ``pi`` is unchanged, and EI values far below
    the float range (log-EI of -1000) neither underflow all to 0 nor overflow. A log
    value of ``-inf`` is an EI of 0, a legitimate value.

    The values are centred at their mean before exponentiating (no effect on
    ``pi``). Values that are NaN (or ``+-inf`` without ``log_values``) get
    probability 0; the rest are uniform when all are equal, or when none is usable.
    """
    v = np.asarray(values, dtype=float).reshape(-1)
    if v.size == 0:
        raise ValueError("values must not be empty")
    if log_values:
        usable = ~np.isnan(v) & (v < np.inf)
        g = np.full(v.size, np.nan)
        if usable.any():
            top = v[usable].max()
            g[usable] = np.exp(v[usable] - top) if np.isfinite(top) else 0.0
    else:
        usable = np.isfinite(v)
        g = v
    p = np.zeros(v.size)
    if not usable.any():
        return np.full(v.size, 1.0 / v.size)
    f = g[usable]
    std = f.std()
    if std <= 0 or not np.isfinite(std):
        p[usable] = 1.0
    else:
        z = (f - f.mean()) / (sigma_scale * std)
        p[usable] = np.exp(z - z.max())
    return p / p.sum()


@dataclass(kw_only=True)
class EAResult:
    """Outcome of :func:`optimize_acquisition_ea`.

    ``top`` / ``top_values``: the best ``top_k`` distinct networks that are not
    excluded, best first (``best`` / ``best_value`` is the first).
    ``n_evaluations``: acquisition evaluations on new (mutated) networks, not
    counting the start population. ``n_rounds``: mutation rounds.
    ``best_value_per_round``: best acquisition value seen after the start
    population (index 0) and after each round. ``parents``: the parents drawn,
    round after round, as indices into the population (the distinct start
    networks in order, then each round's children in order), including parents
    whose mutations gave no new network.
    """

    best: Architecture
    best_value: float
    top: list[Architecture]
    top_values: list[float]
    n_evaluations: int
    n_rounds: int
    best_value_per_round: list[float] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)


def optimize_acquisition_ea(
    phi: Acquisition,
    start: Sequence[Architecture],
    *,
    rng: np.random.Generator,
    n_evaluations: int | None = None,
    t: int | None = None,
    n_mutations: int | None = None,
    exclude: Iterable[Architecture] = (),
    excluded_keys: AbstractSet[str] = frozenset(),
    is_valid: Validity | None = None,
    step_probs: Sequence[float] = STEP_PROBS,
    modifier_weights: Mapping[str, float] = MODIFIER_WEIGHTS,
    sigma_scale: float = SIGMA_SCALE,
    log_acquisition: bool = False,
    top_k: int = 1,
    max_mutation_tries: int = 5,
    max_idle_rounds: int = 3,
) -> EAResult:
    """Maximise ``phi`` over architectures with the NASBOT evolutionary algorithm.

    Parameters
    ----------
    phi : callable
        Maps a list of architectures to their acquisition values (larger is
        better); always called with a batch (the start population, then each
        round's new networks), so that a GP can score many at once.
    start : sequence of Architecture
        The start population: NASBOT passes the initial pool (App. B.2) and the
        networks evaluated so far. Duplicates are scored once.
    rng : numpy Generator
        The only source of randomness; the same seed gives the same result.
    n_evaluations : int, optional
        ``n_EA``, the number of new networks to score. Default: from ``t`` via
        :func:`n_ea_evaluations`, or ``EA_MIN_EVALS`` when ``t`` is None.
    t : int, optional
        The BO step, used only for the default ``n_evaluations``.
    n_mutations : int, optional
        ``N_mut`` per round; default :func:`n_mutations_per_round` of ``n_EA``
        (the paper's EA baseline uses 10).
    exclude : iterable of Architecture
        Networks never returned and never scored as children (evaluated or
        pending in the BO loop). They may be parents if they are in ``start``.
    excluded_keys : set of str
        Keys (:func:`~graphbo.nas.domain.keys.architecture_key`) of further
        excluded networks, used as they are: a caller that keeps its evaluated
        networks' keys passes them here, so a call costs nothing per told
        network (hashing ``exclude`` costs ~0.2 ms per network).
    is_valid : callable, optional
        Validity of a network (default: the library's check, see
        :func:`graphbo.nas.domain.modifiers.default_validity`). Invalid children are skipped.
    step_probs, modifier_weights
        The compound operator's k-step probabilities and the modifier weights.
    sigma_scale : float
        ``sigma = sigma_scale * std(phi values)`` in the selection probabilities.
    log_acquisition : bool
        ``phi`` returns the logarithm of the acquisition (NASBOT's log-EI). The
        networks are still ranked by it, but parents are selected with
        ``pi ~ exp(EI / sigma)``, ``EI = exp(phi)``, as App. B.2 prescribes for
        ``phi_t`` = EI (:func:`selection_probabilities` with ``log_values``).
    top_k : int
        How many distinct networks to return (for batch suggestions).
    max_mutation_tries : int
        Mutations tried per parent until one gives a new valid network.
    max_idle_rounds : int
        Stop early after this many consecutive rounds without a new network.

    Returns
    -------
    EAResult

    Raises
    ------
    ValueError
        When ``start`` is empty or ``top_k < 1``.
    RuntimeError
        When every scored network is excluded.
    """
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1, got {top_k}")
    if n_evaluations is None:
        n_evaluations = EA_MIN_EVALS if t is None else n_ea_evaluations(t)
    if n_evaluations < 0:
        raise ValueError(f"n_evaluations must be >= 0, got {n_evaluations}")
    if n_mutations is None:
        n_mutations = n_mutations_per_round(n_evaluations)
    if n_mutations < 1:
        raise ValueError(f"n_mutations must be >= 1, got {n_mutations}")
    valid = resolve_validity(is_valid)

    def accept(a: Architecture) -> bool:
        return well_formed(a) and bool(valid(a))

    own_excluded = {architecture_key(a) for a in exclude}

    def is_excluded(k: str) -> bool:
        return k in own_excluded or k in excluded_keys
    pop: list[Architecture] = []
    keys: list[str] = []
    seen: set[str] = set()
    for a in start:
        k = architecture_key(a)
        if k not in seen:
            seen.add(k)
            pop.append(a)
            keys.append(k)
    if not pop:
        raise ValueError("the start population of the EA is empty")
    values = [float(v) for v in np.asarray(phi(list(pop)), dtype=float).reshape(-1)]
    if len(values) != len(pop):
        raise ValueError(f"phi returned {len(values)} values for {len(pop)} architectures")

    def best_allowed() -> float:
        vals = [v for v, k in zip(values, keys) if not is_excluded(k) and not math.isnan(v)]
        return max(vals) if vals else -math.inf

    history = [best_allowed()]
    drawn: list[int] = []
    n_new = n_rounds = idle = 0
    while n_new < n_evaluations and idle < max_idle_rounds:
        n_round = min(n_mutations, n_evaluations - n_new)
        probs = selection_probabilities(values, sigma_scale, log_values=log_acquisition)
        parents = rng.choice(len(pop), size=n_round, replace=True, p=probs)
        drawn.extend(int(i) for i in parents)
        children: list[Architecture] = []
        child_keys: list[str] = []
        for i in parents:
            for _ in range(max_mutation_tries):
                child = mutate(pop[int(i)], rng, is_valid=valid, step_probs=step_probs, weights=modifier_weights)
                if child is None or not accept(child):
                    continue
                k = architecture_key(child)
                if k in seen or is_excluded(k):
                    continue
                seen.add(k)
                children.append(child)
                child_keys.append(k)
                break
        n_rounds += 1
        if not children:
            idle += 1
            history.append(history[-1])
            continue
        idle = 0
        vals = np.asarray(phi(children), dtype=float).reshape(-1)
        if vals.size != len(children):
            raise ValueError(f"phi returned {vals.size} values for {len(children)} architectures")
        pop.extend(children)
        keys.extend(child_keys)
        values.extend(float(v) for v in vals)
        n_new += len(children)
        history.append(best_allowed())

    order = sorted(range(len(pop)), key=lambda j: (-values[j] if not math.isnan(values[j]) else math.inf, j))
    chosen = [j for j in order if not is_excluded(keys[j])][:top_k]
    if not chosen:
        raise RuntimeError("every network the EA scored is excluded (already evaluated or pending)")
    return EAResult(best=pop[chosen[0]], best_value=values[chosen[0]],
                    top=[pop[j] for j in chosen], top_values=[values[j] for j in chosen],
                    n_evaluations=n_new, n_rounds=n_rounds, best_value_per_round=history,
                    parents=drawn)
