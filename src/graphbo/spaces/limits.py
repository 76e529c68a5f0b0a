"""Caps on what a space definition may ask for, and the error an invalid one raises.

A space file (or the space stored in a study file) may come from someone else, so reading one
must end in bounded time and memory whatever it holds. The caps, documented in
``docs/spaces.md`` ("Limits and untrusted files"):

- :data:`MAX_FILE_BYTES`: a space file is at most 1 MiB (typical files are a few hundred bytes).
- :data:`MAX_DEPTH`: YAML/JSON nesting of at most 32 levels (the schema needs 5).
- :data:`MAX_NODES`: a space file holds at most 2^16 = 65,536 nodes (scalars, lists and mappings),
  a YAML alias counting as a copy of its anchor's node. PyYAML's pure-Python parser (the safe one)
  takes 10-150 microseconds a node, so this also bounds the time to read a file: well under 10 s on
  a slow shared machine. A space needs few nodes: 2048 categorical values are 2048 of them, a graph
  variable's edge list three per edge (a dense adjacency matrix ``k^2``: use ``edges`` for large graphs).
- :data:`MAX_VALUES`: a discrete variable has at most 2048 values. Its graph is held as a dense
  ``k x k`` adjacency matrix and its kernel needs that matrix's eigendecomposition (COMBO Sec. 2.2),
  so ``k`` values cost ``8 k^2`` bytes and ``O(k^3)`` time: 32 MiB and a few seconds at ``k = 2048``.
- :data:`MAX_ADJACENCY_ENTRIES`: in one space definition the discrete variables' ``k^2`` add up to at
  most ``2048^2`` (32 MiB of adjacency in all).

Messages quote user values through :func:`short_repr`, never a plain ``repr()``: the repr of an
expanded alias chain or of a huge string is itself the attack.
"""

from __future__ import annotations

import reprlib
from typing import Any

__all__ = ["SpaceFileError", "MAX_FILE_BYTES", "MAX_DEPTH", "MAX_NODES", "MAX_VALUES", "MAX_ADJACENCY_ENTRIES",
           "short_repr"]

#: largest space file read, in bytes
MAX_FILE_BYTES = 1 << 20
#: deepest nesting of lists and mappings in a space file
MAX_DEPTH = 32
#: most nodes (scalars, lists, mappings) in a space file, YAML aliases counted as copies of their anchor's node
MAX_NODES = 1 << 16
#: most values of one discrete variable (its dense adjacency matrix is ``k x k``)
MAX_VALUES = 2048
#: most adjacency entries (sum of ``k^2`` over the discrete variables) in one space definition
MAX_ADJACENCY_ENTRIES = MAX_VALUES**2

#: longest quotation of a user value in an error message
_MAX_QUOTE = 200

_repr = reprlib.Repr()
_repr.maxlevel = 3
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = _repr.maxfrozenset = 10
_repr.maxstring = _repr.maxother = 80
_repr.maxlong = 40


class SpaceFileError(ValueError):
    """A space definition (a file or a dict) is invalid; the message names the file, variable and field."""


def short_repr(value: Any) -> str:
    """``repr(value)`` cut to at most 200 characters, built in time bounded by that length.

    Nested containers are shown to 3 levels and 10 items per level, strings and other objects to
    80 characters, so a value that expands to millions of items (a YAML alias chain) costs no more
    to quote than a short one.
    """
    text = _repr.repr(value)
    return text if len(text) <= _MAX_QUOTE else text[: _MAX_QUOTE - 3] + "..."
