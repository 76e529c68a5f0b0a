"""Parameter importance: how much of a fitted surrogate's variation each variable explains on its own.

The importance of variable ``i`` is its share of the first-order functional ANOVA of the surrogate's
posterior mean ``m(x)`` under the uniform distribution on the space (Hutter, Hoos and Leyton-Brown 2014,
"An efficient approach for assessing hyperparameter importance", Eq. 3-5, with a GP mean in place of their
random forest)::

    m_i(v) = E_{x_-i}[ m(x_i = v, x_-i) ]          (main effect of x_i = v)
    V_i    = Var_v[ m_i(v) ]                        (variance of the main effect)
    importance_i = V_i / sum_j V_j

The expectations are Monte Carlo averages over ``n_base`` configurations drawn uniformly from the space
(the same draws for every variable and level); a discrete variable's levels are all its values (at most
``max_levels``, evenly spread along its order), a continuous one's a grid of ``max_levels`` points on its
unit scale. A conditional variable's effect is taken over the draws where it is active. Importances sum to
1 (as Optuna's ``get_param_importances``) and are read against each other, not as the fraction of the
total variance they explain.

The surrogate is the one graphbo's own methods use on the space, fitted here to the given data whatever
method collected it: COMBO's (a diffusion-kernel GP averaged over its posterior samples) for a space of
discrete variables, BO-FM's (a frequency-modulated-kernel GP) where continuous variables are present. So
a study run by random search, TPE or a trust region gets importances the same way as one run by COMBO.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np
import torch

from ._validation import check_int
from .spaces.space import Space
from .spaces.variables import Continuous, Variable

__all__ = ["param_importances", "trial_importances", "main_effects", "MIN_OBSERVATIONS"]

#: the fewest complete evaluations an importance is computed from
MIN_OBSERVATIONS = 3

#: random restarts of BO-FM's type-II maximum likelihood fit here (the optimizer's default is 10): one cold
#: fit on 200 mixed evaluations took 90 s with 10 and 31 s with 3 on a 2-core machine, and the importances
#: need the mean's shape, not the best of ten likelihood optima
N_RESTARTS = 3


def _levels(space: Space, j: int, max_levels: int) -> np.ndarray:
    """The values of row column ``j`` whose main effect is averaged: every value (its active ones for a
    conditional variable), at most ``max_levels`` evenly spread; a continuous variable's unit grid."""
    var = space.variables[j]
    if isinstance(var, Continuous):
        grid = (np.arange(max_levels) + 0.5) / max_levels
        return np.unique(var.snap(grid))
    declared = space.declared_variables[j]
    assert isinstance(declared, Variable)  # a discrete column
    k = len(declared.values)  # without a conditional variable's inactive vertex
    if k <= max_levels:
        return np.arange(k)
    return np.unique(np.round(np.linspace(0, k - 1, max_levels)).astype(np.int64))


def main_effects(mean: Any, space: Space, *, rng: np.random.Generator, n_base: int = 128,
                 max_levels: int = 16) -> dict[str, float]:
    """The variance ``V_i`` of each variable's main effect on ``mean`` (the module's equations), by name.

    ``mean`` maps index rows ``(m, d)`` (the space's row encoding) to ``m`` values; the base configurations
    are drawn from ``rng``.
    """
    base = space.sample_index(n_base, rng)
    active = space.active_mask(base)
    out: dict[str, float] = {}
    for j, name in enumerate(space.names):
        rows = base[active[:, j]]
        if rows.shape[0] == 0:
            out[name] = 0.0
            continue
        levels = _levels(space, j, max_levels)
        batch = np.repeat(rows[None], levels.size, axis=0)  # (levels, n, d)
        batch[:, :, j] = levels[:, None]
        batch = space.canonical(batch.reshape(-1, len(space)))  # a parent's value decides its children
        effects = np.asarray(mean(batch), dtype=float).reshape(levels.size, -1).mean(axis=1)
        out[name] = float(np.var(effects))
    return out


def _surrogate_mean(space: Space, configs: Sequence[Mapping[str, Any]], values: np.ndarray,
                    seed: int) -> Any:
    """The posterior mean (averaged over hyper-parameter samples) of the surrogate graphbo's methods use on
    ``space``, fitted to ``configs`` and ``values``."""
    from .optimizers.bofm import BOFM
    from .optimizers.combo import COMBO

    opt = COMBO(space, seed=seed) if space.is_discrete else BOFM(space, seed=seed, n_restarts=N_RESTARTS)
    for config, value in zip(configs, values):
        opt.tell(config, float(value))
    model = opt.fit_model()

    def mean(rows: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return model.posterior(rows).mean.mean(dim=0).cpu().numpy()

    return mean


def param_importances(space: Space, configs: Sequence[Mapping[str, Any]], *, values: Sequence[float],
                      seed: int = 0, n_base: int = 128, max_levels: int = 16) -> dict[str, float]:
    """Each variable's importance for ``values`` observed at ``configs``, largest first, summing to 1.

    Parameters
    ----------
    space : Space
        The space the configurations belong to.
    configs, values : sequences of equal length
        Complete evaluations (at least :data:`MIN_OBSERVATIONS`, with finite values).
    seed : int, default 0
        Seed of the surrogate's fit and of the base configurations: the same data and seed give the same
        importances.
    n_base, max_levels : int, defaults 128 and 16
        Monte Carlo configurations per expectation, and the most levels per variable (module docstring).

    Returns
    -------
    dict
        ``{name: importance}`` ordered from the most important variable; all 0 when the fitted mean does
        not vary (every value equal).
    """
    if not isinstance(space, Space):
        raise TypeError(f"parameter importance needs a graphbo.Space of variables, got {type(space).__name__}")
    seed = check_int("seed", seed, minimum=0)
    n_base = check_int("n_base", n_base, minimum=2)
    max_levels = check_int("max_levels", max_levels, minimum=2)
    configs = list(configs)
    y = np.asarray(list(values), dtype=float).reshape(-1)
    if len(configs) != y.size:
        raise ValueError(f"got {len(configs)} configurations and {y.size} values")
    if y.size < MIN_OBSERVATIONS:
        raise ValueError(f"parameter importance needs at least {MIN_OBSERVATIONS} complete evaluations, "
                         f"got {y.size}")
    if not np.all(np.isfinite(y)):
        raise ValueError("parameter importance needs finite values")
    if np.ptp(y) == 0:
        return {name: 0.0 for name in space.names}
    rng = np.random.default_rng(seed)
    mean = _surrogate_mean(space, configs, y, int(rng.integers(2**31)))
    variances = main_effects(mean, space, rng=rng, n_base=n_base, max_levels=max_levels)
    total = sum(variances.values())
    shares = {n: (v / total if total > 0 else 0.0) for n, v in variances.items()}
    return dict(sorted(shares.items(), key=lambda kv: -kv[1]))


def trial_importances(space: Any, trials: Sequence[Any], *, objective: int = 0, n_objectives: int = 1,
                      seed: int = 0) -> dict[str, float]:
    """:func:`param_importances` of the complete ``trials`` (:class:`graphbo.storage.Trial`) of a study, for
    its objective number ``objective`` (of ``n_objectives``)."""
    objective = check_int("objective", objective, minimum=0)
    if objective >= n_objectives:
        raise ValueError(f"objective must be below the study's {n_objectives} objective(s), got {objective}")
    done = [t for t in trials if t.status == "complete" and t.value is not None]
    values = [float(t.attrs["values"][objective]) if n_objectives > 1 else float(t.value) for t in done]
    return param_importances(space, [t.config for t in done], values=values, seed=seed)
