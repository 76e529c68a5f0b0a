"""Trim a proposal to the changes from the incumbent that the posterior mean pays for.

An acquisition maximiser on a discrete space returns a configuration that differs from the incumbent in some
variables. Some of those changes lower the posterior mean (the model predicts they help); others leave it as it
is, and are there because they raise the posterior variance, which expected improvement rewards: a model that
holds a variable nearly irrelevant after few evaluations lets the maximiser change it for free. Where the
objective does depend on such variables (every bit of an Ising model does) the free changes are random damage to
a good configuration.

:func:`trim_to_paid_changes` undoes the free changes one at a time, greedily: among the variables where the
proposal differs from the incumbent, it sets back the one whose reversal gives the lowest posterior mean, if that
mean is no higher than the proposal's (the change was not paid for), and repeats. A reversal that gives a
configuration already evaluated or pending, or one a known constraint refuses, is not made. The result keeps
every change whose reversal would raise the mean, so a jump the model predicts to pay only as a whole stays whole.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["trim_to_paid_changes"]


def trim_to_paid_changes(row: np.ndarray, incumbent: np.ndarray, *, mean: Callable[[np.ndarray], np.ndarray],
                         exclude: set[bytes] | frozenset[bytes], allowed: Callable[[np.ndarray], np.ndarray],
                         tol: float = 0.0) -> np.ndarray:
    """``row`` with the changes from ``incumbent`` that ``mean`` does not pay for set back (module docstring).

    Parameters
    ----------
    row, incumbent : index rows ``(d,)`` of the same dtype.
    mean : maps index rows ``(m, d)`` to the posterior mean ``(m,)`` of the minimised objective.
    exclude : ``tobytes()`` of the rows that may not be returned (evaluated or pending).
    allowed : maps index rows ``(m, d)`` to whether the known constraints allow them ``(m,)``.
    tol : a reversal is made when its mean is at most the current one plus ``tol``.
    """
    current = np.array(row, copy=True)
    incumbent = np.asarray(incumbent, dtype=current.dtype)
    current_mean = float(np.asarray(mean(current[None]))[0])
    while True:
        changed = np.flatnonzero(current != incumbent)
        if changed.size == 0:
            break
        candidates = np.repeat(current[None], changed.size, axis=0)
        candidates[np.arange(changed.size), changed] = incumbent[changed]
        usable = np.array([c.tobytes() not in exclude for c in candidates]) & np.asarray(allowed(candidates), bool)
        if not usable.any():
            break
        candidates = candidates[usable]
        means = np.asarray(mean(candidates), dtype=float)
        best = int(np.argmin(means))
        if not means[best] <= current_mean + tol:
            break
        current, current_mean = candidates[best], float(means[best])
    return current
