"""Monotone transforms of the observed values a surrogate is fitted on."""

from __future__ import annotations

import numpy as np

__all__ = ["log_values"]


def log_values(y: np.ndarray) -> np.ndarray:
    """``log(y - min(y) + 1e-3 * span)`` (BO-FM Sec. 5.3's transform of the validation losses),
    ``span = max(y) - min(y)`` (``1e-12`` for constant values).

    Strictly increasing, so it keeps the order of the values (the best stays the best): it
    compresses a long tail of bad values and spreads the values near the best. Fewer than two
    values are returned as they are. ``ValueError`` for non-finite values.
    """
    y = np.asarray(y, dtype=float)
    if not np.isfinite(y).all():
        raise ValueError("y must be finite (got inf or nan values)")
    if y.size < 2:
        return y.copy()
    lo = float(y.min())
    span = max(float(y.max()) - lo, 1e-12)
    return np.log(y - lo + 1e-3 * span)
