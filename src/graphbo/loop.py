"""The optimisation loop: ``minimize`` runs an optimizer on a function for a fixed budget."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .optimizers import METHODS
from .optimizers.base import Observation, Optimizer
from .spaces.space import Space

__all__ = ["minimize", "MinimizeResult", "make_optimizer"]


@dataclass
class MinimizeResult:
    """Outcome of :func:`minimize`."""

    best: Observation
    history: list[Observation]
    optimizer: Optimizer
    suggest_seconds: list[float] = field(default_factory=list)
    evaluate_seconds: list[float] = field(default_factory=list)

    @property
    def best_config(self) -> dict[str, Any]:
        return self.best.config

    @property
    def best_value(self) -> float:
        return self.best.value


def make_optimizer(method: str, space: Space, seed: int | None = None, **options: Any) -> Optimizer:
    """An optimizer by name (``"combo"``, ``"random"``)."""
    try:
        cls = METHODS[method.lower()]
    except KeyError:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(METHODS)}") from None
    return cls(space, seed=seed, **options)


def minimize(
    objective: Callable[[dict[str, Any]], float],
    space: Space,
    method: str = "combo",
    budget: int = 100,
    seed: int | None = None,
    callback: Callable[[int, Mapping[str, Any], float, Optimizer, float], None] | None = None,
    **options: Any,
) -> MinimizeResult:
    """Minimise ``objective`` over ``space`` with ``budget`` evaluations.

    Parameters
    ----------
    objective : callable
        Maps a configuration dict to a float.
    space : Space
    method : str
        ``"combo"`` or ``"random"``.
    budget : int
        Number of evaluations, the initial design included.
    seed : int, optional
    callback : callable, optional
        ``callback(i, config, value, optimizer, seconds)`` after each evaluation
        (``seconds``: suggestion plus evaluation time).
    **options
        Passed to the optimizer (for COMBO: ``n_initial``, ``n_random``, ...).
    """
    if budget < 1:
        raise ValueError(f"budget must be >= 1, got {budget}")
    opt = make_optimizer(method, space, seed=seed, **options)
    t_suggest, t_eval = [], []
    for i in range(budget):
        t0 = time.perf_counter()
        config = opt.ask()
        t1 = time.perf_counter()
        value = objective(config)
        t2 = time.perf_counter()
        opt.tell(config, value)
        t_suggest.append(t1 - t0)
        t_eval.append(t2 - t1)
        if callback is not None:
            callback(i, config, float(value), opt, t2 - t0)
    return MinimizeResult(opt.best, opt.history, opt, t_suggest, t_eval)
