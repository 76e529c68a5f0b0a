"""Argument checks at the public boundary (scikit-learn style).

Each check returns the value in its canonical type, or raises a ``TypeError``
(wrong type) or ``ValueError`` (right type, value not allowed) whose message
names the argument, the allowed values and what was given.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Collection, Mapping, Sequence, TypeVar

__all__ = ["check_int", "check_float", "check_bool", "check_choice", "check_seed", "check_optional_int",
           "check_callable", "check_configs", "check_mapping", "check_floats", "check_device", "check_dtype",
           "check_pair"]

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
    chosen: T = value
    return chosen


def check_seed(value: Any) -> int | None:
    """A seed: ``None`` or a non-negative integer."""
    if value is None:
        return None
    return check_int("seed", value, minimum=0)


def check_callable(name: str, value: Any, *, optional: bool = False) -> Callable[..., Any] | None:
    """``value`` if it is callable (or ``None`` when ``optional``)."""
    if value is None and optional:
        return None
    if not callable(value):
        raise TypeError(f"{name} must be callable{' or None' if optional else ''}, got {_describe(value)}")
    function: Callable[..., Any] = value
    return function


def check_mapping(name: str, value: Any) -> dict[str, Any]:
    """``None`` (as ``{}``) or a mapping with string keys, as a new dict."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise TypeError(f"{name} must be a dict of option names to values or None, got {_describe(value)}")
    return dict(value)


def check_configs(name: str, value: Any) -> list[Mapping[str, Any]]:
    """``None`` (as ``[]``) or a list of configurations (mappings of variable names to values)."""
    if value is None:
        return []
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a list of configurations (dicts) or None, got {_describe(value)}")
    for i, config in enumerate(value):
        if not isinstance(config, Mapping):
            raise TypeError(f"{name}[{i}] must be a configuration (a dict), got {_describe(config)}")
    return list(value)


def check_floats(name: str, value: Any, *, minimum: float | None = None, strict_minimum: bool = False,
                 min_length: int = 1) -> tuple[float, ...]:
    """A sequence of at least ``min_length`` numbers, each checked by :func:`check_float`, as a tuple."""
    import numpy as np

    if isinstance(value, np.ndarray) and value.ndim == 1:
        value = value.tolist()
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a sequence of numbers, got {_describe(value)}")
    if len(value) < min_length:
        raise ValueError(f"{name} must have at least {min_length} entries, got {list(value)!r}")
    return tuple(check_float(f"{name}[{i}]", v, minimum=minimum, strict_minimum=strict_minimum)
                 for i, v in enumerate(value))


#: torch device types graphbo's models run on
DEVICE_TYPES = ("cpu", "cuda", "mps")


def check_device(name: str, value: Any) -> Any:
    """``None`` or a torch device (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"`` or a ``torch.device``) that is
    available on this machine, as a ``torch.device``."""
    if value is None:
        return None
    import torch

    if not isinstance(value, (str, torch.device)):
        raise TypeError(f"{name} must be None, a str such as 'cpu' or 'cuda' or a torch.device, "
                        f"got {_describe(value)}")
    try:
        device = torch.device(value)
    except (RuntimeError, ValueError):
        device = None
    if device is None or device.type not in DEVICE_TYPES:
        raise ValueError(f"{name} must be None or a torch device of type {list(DEVICE_TYPES)} "
                         f"(e.g. 'cpu', 'cuda', 'cuda:0'), got {value!r}")
    if device.type == "cuda" and not torch.cuda.is_available():
        missing = "torch.cuda.is_available() is False"
    elif device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        missing = f"it has {torch.cuda.device_count()} CUDA device(s)"
    elif device.type == "mps" and not torch.backends.mps.is_available():
        missing = "torch.backends.mps.is_available() is False"
    else:
        return device
    raise ValueError(f"{name} must be a device available on this machine ({missing}), got {value!r}")


def check_dtype(name: str, value: Any) -> Any:
    """``value`` if it is a floating torch dtype (``torch.float64``, ``torch.float32``, ...)."""
    import torch

    if not isinstance(value, torch.dtype):
        raise TypeError(f"{name} must be a torch floating dtype such as torch.float64 or torch.float32, "
                        f"got {_describe(value)}")
    if not value.is_floating_point:
        raise ValueError(f"{name} must be a torch floating dtype such as torch.float64 or torch.float32, "
                         f"got {value}")
    return value


def check_pair(name: str, value: Any, *, minimum: float | None = None, strict_minimum: bool = False,
               increasing: bool = False) -> tuple[float, float]:
    """A pair of finite numbers ``(low, high)`` (each checked by :func:`check_float`); with ``increasing``,
    ``low < high``."""
    pair = check_floats(name, value, minimum=minimum, strict_minimum=strict_minimum, min_length=2)
    if len(pair) != 2:
        raise ValueError(f"{name} must be a pair (low, high), got {list(value)!r}")
    if increasing and not pair[0] < pair[1]:
        raise ValueError(f"{name} must satisfy low < high, got {tuple(value)!r}")
    return pair[0], pair[1]
