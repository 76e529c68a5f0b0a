"""JSON encoding of what a store holds: NumPy scalars and arrays, tuples and sets; unknown objects by repr.

Every store keeps JSON text only (nothing is pickled), so what comes back from
a store is what :func:`plain` makes of what went in, whichever store it is.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

__all__ = ["dumps", "plain"]


def _default(x: Any) -> Any:
    """``default=`` for :func:`json.dumps`: NumPy scalars and arrays, sets; anything else by repr."""
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, (set, frozenset)):
        return sorted(map(plain, x), key=repr)
    return {"__repr__": repr(x)}


def dumps(x: Any) -> str:
    """``x`` as JSON text (see :func:`plain` for what non-JSON values become)."""
    return json.dumps(x, default=_default)


def plain(x: Any) -> Any:
    """A JSON-compatible copy of ``x`` (tuples become lists, unknown objects ``{"__repr__": ...}``)."""
    return json.loads(dumps(x))
