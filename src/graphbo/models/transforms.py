"""Monotone transforms of the observed values a surrogate is fitted on (``y_transform`` of the optimizers)."""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["Y_TRANSFORMS", "TAIL_FENCE", "log_values", "power_values", "tail_values", "transform_values"]

#: ``y_transform`` choices: the values themselves, :func:`log_values`, :func:`power_values`, :func:`tail_values`
Y_TRANSFORMS = ("none", "log", "power", "tail")

#: :func:`tail_values` leaves the values up to ``Q3 + TAIL_FENCE * IQR`` as they are (Tukey's upper fence)
TAIL_FENCE = 1.5


def _finite(y: np.ndarray) -> np.ndarray:
    y = np.asarray(y, dtype=float)
    if not np.isfinite(y).all():
        raise ValueError("y must be finite (got inf or nan values)")
    return y


def log_values(y: np.ndarray) -> np.ndarray:
    """``log(y - min(y) + 1e-3 * span)`` (BO-FM Sec. 5.3's transform of the validation losses),
    ``span = max(y) - min(y)`` (``1e-12`` for constant values).

    Strictly increasing, so it keeps the order of the values (the best stays the best): it
    compresses a long tail of bad values and spreads the values near the best, so far that the
    best becomes an outlier of the transformed values. Fewer than two values are returned as they
    are. ``ValueError`` for non-finite values.
    """
    y = _finite(y)
    if y.size < 2:
        return y.copy()
    lo = float(y.min())
    span = max(float(y.max()) - lo, 1e-12)
    return np.log(y - lo + 1e-3 * span)


def power_values(y: np.ndarray) -> np.ndarray:
    """The Yeo-Johnson power transform (Yeo and Johnson, Biometrika 2000) of the standardised values,
    its ``lambda`` chosen by maximum likelihood (``scipy.stats.yeojohnson``), as HEBO transforms its
    outputs (Cowen-Rivers et al., JAIR 2022).

    Strictly increasing for every ``lambda``, so it keeps the order of the values. ``lambda < 1``
    compresses a long tail of large (bad) values, ``lambda > 1`` a tail of small ones, and values
    that already look normal keep ``lambda`` near 1 (almost the identity). Fewer than three values,
    or constant values, are returned standardised only. ``ValueError`` for non-finite values.
    """
    y = _finite(y)
    sd = float(y.std()) if y.size else 0.0
    if sd <= 0.0:
        return y - (y.mean() if y.size else 0.0)
    z = (y - y.mean()) / sd
    if y.size < 3:
        return z
    return np.asarray(stats.yeojohnson(z)[0], dtype=float)


def tail_values(y: np.ndarray) -> np.ndarray:
    """The values with their upper outliers pulled in: ``y`` up to Tukey's upper fence
    ``u = Q3 + 1.5 * IQR`` (Tukey, *Exploratory Data Analysis*, 1977; ``Q1``, ``Q3`` the quartiles,
    ``IQR = Q3 - Q1``), and ``u + IQR * log(1 + (y - u) / IQR)`` above it.

    For minimisation: the best values and the bulk of the data are left exactly as they are (so,
    unlike :func:`log_values` and :func:`power_values`, the differences among the good values keep
    their scale), and only values far worse than the bulk (diverging runs, penalties, crashes scored
    high) are compressed, logarithmically, so that a handful of them no longer set the GP's mean and
    signal variance. Strictly increasing and continuously differentiable (slope 1 at the fence), so it
    keeps the order of the values. Data without upper outliers, or whose quartiles coincide up to
    rounding (``IQR <= 1e-12 * max(1, |Q3|, max(y) - min(y))``: no scale to measure an outlier by),
    are returned unchanged (a copy). ``ValueError`` for non-finite values.
    """
    y = _finite(y).copy()
    if y.size == 0:
        return y
    q1, q3 = np.percentile(y, [25.0, 75.0])
    iqr = float(q3 - q1)
    if iqr <= 1e-12 * max(1.0, abs(float(q3)), float(y.max() - y.min())):
        return y
    fence = float(q3) + TAIL_FENCE * iqr
    above = y > fence
    y[above] = fence + iqr * np.log1p((y[above] - fence) / iqr)
    return y


def transform_values(y: np.ndarray, how: str) -> np.ndarray:
    """``y`` under the transform ``how`` (one of :data:`Y_TRANSFORMS`)."""
    if how == "none":
        return _finite(y)
    if how == "log":
        return log_values(y)
    if how == "power":
        return power_values(y)
    if how == "tail":
        return tail_values(y)
    raise ValueError(f"y_transform must be one of {Y_TRANSFORMS}, got {how!r}")
