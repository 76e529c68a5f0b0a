"""Univariate slice sampling with doubling step-out and shrinkage (Neal, 2003).

COMBO samples every GP hyper-parameter with this sampler, one coordinate at
a time (supplement Sec. 2.3, steps SS-1 to SS-4), as Spearmint does.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

__all__ = ["slice_sample"]


def slice_sample(
    logp: Callable[[float], float],
    x0: float,
    *,
    rng: np.random.Generator,
    width: float = 1.0,
    max_doublings: int = 10,
    logp_x0: float | None = None,
) -> tuple[float, float]:
    """One slice-sampling update of a scalar ``x0`` under the log density ``logp``.

    Implements Neal (2003), Fig. 4 (doubling), Fig. 5 (shrinkage) and Fig. 6
    (the acceptance test that keeps doubling reversible).

    Parameters
    ----------
    logp : callable
        Unnormalised log density; ``-inf`` outside the support.
    x0 : float
        Current state; ``logp(x0)`` must be finite.
    rng : numpy Generator
    width : float
        Initial bracket width ``w``.
    max_doublings : int
        Limit ``p`` on the number of doublings (bracket at most ``2**p * w``).
    logp_x0 : float, optional
        ``logp(x0)`` if already known.

    Returns
    -------
    (x1, logp(x1))
    """
    f0 = logp(x0) if logp_x0 is None else logp_x0
    if not math.isfinite(f0):
        raise ValueError(f"slice_sample: the starting point {x0!r} has log density {f0!r}")
    height = f0 + math.log1p(-rng.random())  # log of U(0, f(x0)], never log(0)
    cache: dict[float, float] = {}

    def f(x: float) -> float:
        if x not in cache:
            cache[x] = logp(x)
        return cache[x]

    # Step out by doubling (Fig. 4).
    left = x0 - width * rng.random()
    right = left + width
    k = max_doublings
    while k > 0 and (height < f(left) or height < f(right)):
        if rng.random() < 0.5:
            left -= right - left
        else:
            right += right - left
        k -= 1

    # Shrink (Fig. 5), with the doubling acceptance test (Fig. 6).
    lo, hi = left, right
    while hi - lo > 1e-12 * max(1.0, abs(x0)):
        x1 = lo + rng.random() * (hi - lo)
        f1 = logp(x1)
        if height < f1 and _accept(x0, x1, height, width, left, right, f):
            return x1, f1
        if x1 < x0:
            lo = x1
        else:
            hi = x1
    return x0, f0


def _accept(x0: float, x1: float, height: float, width: float, left: float, right: float, f) -> bool:
    """Neal (2003) Fig. 6: could the doubling from ``x1`` have produced the same bracket?"""
    differ = False
    while right - left > 1.1 * width:
        mid = 0.5 * (left + right)
        if (x0 < mid) != (x1 < mid):
            differ = True
        if x1 < mid:
            right = mid
        else:
            left = mid
        if differ and height >= f(left) and height >= f(right):
            return False
    return True
