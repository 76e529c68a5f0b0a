"""Neural architecture search (NASBOT): the architecture domain, OTMANN, and training.

``ArchitectureSpace``, ``Architecture`` and ``Constraints`` are importable from
here (lazily, so ``import graphbo.nas`` stays light).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "ArchitectureSpace": "graphbo.nas.space",
    "Architecture": "graphbo.nas.architecture",
    "InvalidArchitectureError": "graphbo.nas.architecture",
    "Constraints": "graphbo.nas.constraints",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'graphbo.nas' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
