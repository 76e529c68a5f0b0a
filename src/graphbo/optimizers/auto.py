"""``method="auto"``: one of graphbo's own methods chosen from the space and the budget.

The rule (docs/auto.md has it as a table, with the measurements behind each threshold):

* a :class:`graphbo.nas.ArchitectureSpace` -> ``nasbot`` (Kandasamy et al. 2018);
* otherwise COMBO's diffusion kernel (Oh et al. 2019) for an all-discrete space, BO-FM's
  frequency-modulated kernels (Oh et al. 2021) for a space with continuous variables;
* with a CASMOPOLITAN trust region (Wan et al., ICML 2021; ``combo-tr``/``bofm-tr``) when the
  space has at least :data:`TR_MIN_DIMENSIONS` effective variables, the budget (when known) is at least
  :data:`TR_MIN_BUDGET` evaluations, the space has more configurations than the budget, and the problem has one
  objective and no black-box constraints.

"auto" is resolved once, where a run starts, to a concrete name of :data:`graphbo.optimizers.METHODS`,
so a stored study records the method that ran.
"""

from __future__ import annotations

import math
from typing import Any

from .._validation import check_int

__all__ = ["AUTO", "TR_MIN_DIMENSIONS", "TR_MIN_BUDGET", "dimensions", "choose_method", "resolve_method"]

#: the method name that asks for :func:`choose_method`
AUTO = "auto"

#: a trust region from this many effective variables (:func:`dimensions`). Mechanism (docs/trust_regions.md):
#: the region's initial Hamming radius is min(20, d), so with d <= 20 it holds the whole discrete space until 40
#: consecutive failures shrink it, and a trust region changes little. (Here d counts every variable; the region's
#: own radius counts the categorical ones only, ordinals of 3+ values being in its box: docs/trust_regions.md.) CASMOPOLITAN's categorical problems
#: start at 25 variables (contamination, pest control). Not measured between 21 and 49 (docs/auto.md).
TR_MIN_DIMENSIONS = 21

#: a trust region only for budgets of at least this many evaluations. Measured (docs/auto.md): at budgets
#: <= 60 the trust region gained nothing within the noise: LABS-50 at 60, combo -3.003 +- 0.090 vs combo-tr
#: -3.079 +- 0.194 (3 seeds; combo-tr behind at 20, 30, 40); ackley53 at 30, bofm 2.393 +- 0.076 vs bofm-tr
#: 2.333 +- 0.190 (2 seeds). A region first shrinks after n_initial + 40 evaluations (50 with the default
#: n_initial 10) and again after every 40 more, so within 100 it shrinks at most twice (radius 20 -> 13 -> 8)
#: and never restarts (that takes 6 shrinks, 250 evaluations); CASMOPOLITAN's experiments ran for hundreds.
TR_MIN_BUDGET = 100


def dimensions(space: Any) -> int:
    """The effective number of variables of a :class:`graphbo.Space`: discrete variables with more than one
    value plus continuous ones (ordinals included, which a trust region bounds in its box rather than its
    Hamming radius, docs/trust_regions.md)."""
    return sum(1 for v in space.variables if v.n_values != 1)


def _is_architecture_space(space: Any) -> bool:
    from ..nas.domain.space import ArchitectureSpace

    return isinstance(space, ArchitectureSpace)


def choose_method(space: Any, budget: int | None = None, *, single_objective: bool = True) -> str:
    """The method ``"auto"`` stands for on ``space`` with ``budget`` evaluations (``None``: not known).

    Returns a key of :data:`graphbo.optimizers.METHODS`: ``"nasbot"`` for a
    :class:`graphbo.nas.ArchitectureSpace`; otherwise ``"combo"`` (all-discrete space) or ``"bofm"``
    (continuous variables present), with ``"-tr"`` (a CASMOPOLITAN trust region, Wan et al. 2021) when
    :func:`dimensions` is at least :data:`TR_MIN_DIMENSIONS`, ``budget`` is ``None`` or at least
    :data:`TR_MIN_BUDGET`, and ``space.size`` exceeds ``budget``, and the problem has one objective and no
    black-box constraints (``single_objective``: a trust region counts one value's improvements).
    """
    from ..spaces.space import Space

    if budget is not None:
        budget = check_int("budget", budget, minimum=1)
    if _is_architecture_space(space):
        return "nasbot"
    if not isinstance(space, Space):
        raise TypeError(f"space must be a graphbo.Space or a graphbo.nas.ArchitectureSpace, "
                        f"got {type(space).__name__}")
    family = "combo" if space.is_discrete else "bofm"
    size = space.size  # inf with continuous variables
    large = dimensions(space) >= TR_MIN_DIMENSIONS
    enough_budget = budget is None or budget >= TR_MIN_BUDGET
    bigger_than_budget = budget is None or math.isinf(size) or size > budget
    return f"{family}-tr" if large and enough_budget and bigger_than_budget and single_objective else family


def resolve_method(method: str, space: Any, *, budget: int | None = None) -> str:
    """``method`` itself, or :func:`choose_method`'s choice if it is ``"auto"`` (any case).

    Raises ``ValueError`` naming ``method`` if it is neither ``"auto"`` nor a key of
    :data:`graphbo.optimizers.METHODS` (case-insensitive, as the optimizers are looked up).
    """
    from . import METHODS

    if not isinstance(method, str):
        raise TypeError(f"method must be a method name (str), got {method!r} ({type(method).__name__})")
    if method.lower() == AUTO:
        return choose_method(space, budget)
    if method.lower() not in METHODS:
        raise ValueError(f"method: unknown method {method!r}; choose {AUTO!r} or one of {sorted(METHODS)}")
    return method
