"""Argument checks at the public boundary (scikit-learn style).

Each check returns the value in its canonical type, or raises a ``TypeError``
(wrong type) or ``ValueError`` (right type, value not allowed) whose message
names the argument, the allowed values and what was given.
"""

from __future__ import annotations

import math
from typing import Any, Collection, TypeVar

__all__ = ["check_int", "check_float", "check_bool", "check_choice", "check_seed", "check_optional_int"]

T = TypeVar("T")


def _describe(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


def check_int(name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as an int in ``[minimum, maximum]``; integral floats such as ``5.0`` are accepted."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and not (math.isfinite(value) and value == int(value))):
        try:  # numpy integers
            import numpy as np
            if isinstance(value, np.integer):
                value = int(value)
            else:
                raise TypeError
        except TypeError:
            raise TypeError(f"{name} must be an integer, got {_describe(value)}") from None
    v = int(value)
    if minimum is not None and v < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value!r}")
    return v


def check_optional_int(name: str, value: Any, *, minimum: int | None = None) -> int | None:
    """``None`` or :func:`check_int`."""
    return None if value is None else check_int(name, value, minimum=minimum)


def check_float(name: str, value: Any, *, minimum: float | None = None, maximum: float | None = None,
                strict_minimum: bool = False) -> float:
    """``value`` as a finite float in the given range (``strict_minimum``: ``> minimum``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            import numpy as np
            if not isinstance(value, (np.integer, np.floating)):
                raise TypeError
        except TypeError:
            raise TypeError(f"{name} must be a number, got {_describe(value)}") from None
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if minimum is not None and (v <= minimum if strict_minimum else v < minimum):
        raise ValueError(f"{name} must be {'>' if strict_minimum else '>='} {minimum}, got {value!r}")
    if maximum is not None and v > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value!r}")
    return v


def check_bool(name: str, value: Any) -> bool:
    """``value`` if it is a bool (``0``/``1`` and other truthy values are refused)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {_describe(value)}")
    return value


def check_choice(name: str, value: Any, choices: Collection[T]) -> T:
    """``value`` if it is one of ``choices``."""
    try:
        ok = value in choices
    except TypeError:  # unhashable
        ok = False
    if not ok:
        raise ValueError(f"{name} must be one of {sorted(map(str, choices))}, got {value!r}")
    return value


def check_seed(value: Any) -> int | None:
    """A seed: ``None`` or a non-negative integer."""
    if value is None:
        return None
    return check_int("seed", value, minimum=0)
