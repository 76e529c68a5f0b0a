"""graphbo: Bayesian optimisation over discrete, mixed and architecture spaces.

The public names are imported lazily, so ``import graphbo`` (and the
command line) stay quick until a model is actually needed.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "Space": "graphbo.spaces",
    "Binary": "graphbo.spaces",
    "Categorical": "graphbo.spaces",
    "Ordinal": "graphbo.spaces",
    "GraphVariable": "graphbo.spaces",
    "Continuous": "graphbo.spaces",
    "Integer": "graphbo.spaces",
    "load_space": "graphbo.spaces",
    "save_space": "graphbo.spaces",
    "from_configspace": "graphbo.spaces.configspace",
    "COMBO": "graphbo.optimizers",
    "NASBOT": "graphbo.optimizers",
    "ArchitectureSpace": "graphbo.nas",
    "BOFM": "graphbo.optimizers",
    "RandomSearch": "graphbo.optimizers",
    "Observation": "graphbo.optimizers",
    "minimize": "graphbo.loop",
    "MinimizeResult": "graphbo.loop",
    "Study": "graphbo.study",
    "Trial": "graphbo.study",
    "StorageError": "graphbo.study",
    "DiffusionKernel": "graphbo.kernels",
    "DiffusionGP": "graphbo.models",
    "SpaceExhaustedError": "graphbo.acquisition",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'graphbo' has no attribute {name!r}")


def __dir__():
    return sorted(list(globals()) + __all__)
