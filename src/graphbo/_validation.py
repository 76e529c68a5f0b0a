"""Argument checks at the public boundary (scikit-learn style).

Each check returns the value in its canonical type, or raises a ``TypeError``
(wrong type) or ``ValueError`` (right type, value not allowed) whose message
names the argument, the allowed values and what was given.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable, Collection, Mapping, Sequence, TypeVar

__all__ = ["check_int", "check_float", "check_bool", "check_choice", "check_seed", "check_optional_int",
           "check_callable", "check_configs", "check_mapping", "check_floats", "check_device", "check_dtype",
           "check_pair", "as_real", "check_real", "check_budget", "check_timeout", "MAX_TIMEOUT"]

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


def as_real(value: Any) -> float:
    """``value`` as a float if it is a real number: a Python ``int`` or ``float``, a NumPy integer or floating
    scalar, or a 0-d array or tensor of such a number (anything with ``ndim == 0`` and ``item()``).

    ``TypeError`` for anything else, with a message saying what ``value`` is: ``None``, ``str``, ``bytes``,
    ``bool`` (``True`` is not the number 1 here), complex numbers, arrays or tensors with more than one
    dimension or element, objects that merely convert with ``float()``. ``ValueError`` for an integer too
    large for a float (``10**400``). The result may be NaN or infinite: see :func:`check_real`.
    """
    mask = getattr(value, "mask", None)
    if mask is not None and getattr(value, "ndim", None) is not None:  # a NumPy masked array or constant
        try:
            any_set = getattr(mask, "any", None)
            masked = bool(any_set()) if callable(any_set) else bool(mask)
        except Exception:
            masked = True
        if masked:
            raise TypeError("a masked value (numpy.ma.masked), not a number")
    ndim = getattr(value, "ndim", None)
    if ndim is not None and callable(getattr(value, "item", None)):
        if ndim != 0:
            shape = tuple(getattr(value, "shape", ()))
            raise TypeError(f"{type(value).__name__} of shape {shape}, not a number (return a scalar, "
                            "e.g. value.item())")
        scalar = value.item()  # NumPy scalars and 0-d arrays or tensors -> a Python scalar
    else:
        scalar = value
    if isinstance(scalar, numbers.Complex) and not isinstance(scalar, numbers.Real):
        raise TypeError(f"{_short_repr(value)} ({type(value).__name__}), a complex number, not a real one")
    if isinstance(scalar, bool) or not isinstance(scalar, numbers.Real):
        raise TypeError(f"{_short_repr(value)} ({type(value).__name__}), not a number")
    try:
        return float(scalar)
    except OverflowError:
        raise ValueError(f"{_digits(scalar)}, too large for a float") from None
    except Exception as exc:  # a numbers.Real whose __float__ fails
        raise TypeError(f"{_short_repr(value)} ({type(value).__name__}), not convertible to a float "
                        f"({type(exc).__name__}: {exc})") from None


def _digits(value: Any) -> str:
    """``integer with N digits`` (without ``str()`` of the whole number, which Python limits to 4300 digits)."""
    if isinstance(value, int):
        return f"integer with about {max(1, int(value.bit_length() * 0.30103))} digits"
    return f"{type(value).__name__} value"


def _short_repr(value: Any, limit: int = 80) -> str:
    """``repr(value)``, bounded in time and length for containers and strings (``reprlib``)."""
    import reprlib

    try:
        text = reprlib.repr(value)
    except Exception:  # a broken __repr__
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def check_real(name: str, value: Any) -> float:
    """``value`` as a finite float if it is a real number (see :func:`as_real`); otherwise ``TypeError`` (not a
    real number) or ``ValueError`` (NaN, infinite, too large), naming ``name``."""
    try:
        v = as_real(value)
    except TypeError as exc:
        raise TypeError(f"{name} must be a real number, got {exc}") from None
    except ValueError as exc:
        raise ValueError(f"{name} must be a finite number, got {exc}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {v!r}")
    return v


def check_budget(value: Any, *, minimum: int = 1) -> int:
    """A number of evaluations: an integer >= ``minimum`` (floats, ``12.0`` included, NaN, ``True`` and strings
    are refused)."""
    if isinstance(value, float):
        raise TypeError(f"budget must be an integer (a number of evaluations), got the float {value!r}")
    return check_int("budget", value, minimum=minimum)


#: a timeout longer than this many seconds (about three years) means no timeout: the system timers
#: (``setitimer``, lock waits) overflow on larger values
MAX_TIMEOUT = 1e8


def check_timeout(value: Any, name: str = "timeout") -> float | None:
    """Seconds an evaluation may take: ``None`` or ``inf`` (and anything above :data:`MAX_TIMEOUT`) mean no
    timeout (``None`` is returned); otherwise a positive finite number. NaN, zero, negative numbers, bools
    and non-numbers are refused, naming ``name``."""
    if value is None:
        return None
    try:
        v = as_real(value)
    except ValueError:  # an integer too large for a float
        v = math.inf if value > 0 else -math.inf
    except TypeError:
        raise TypeError(f"{name} must be a positive number of seconds, inf or None, got {_describe(value)}") \
            from None
    if math.isnan(v) or not v > 0:
        raise ValueError(f"{name} must be a positive number of seconds, inf or None, got {value!r}")
    return None if v > MAX_TIMEOUT else v


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
