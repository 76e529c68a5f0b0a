"""graphbo: Bayesian optimisation over discrete, mixed and architecture spaces.

The public names are imported lazily, so ``import graphbo`` (and the
command line) stay quick until a model is actually needed.
"""

from __future__ import annotations

from ._lazy import lazy_exports

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
    "StorageError": "graphbo.storage.base",
    "DiffusionKernel": "graphbo.kernels",
    "DiffusionGP": "graphbo.models",
    "SpaceExhaustedError": "graphbo.exceptions",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports('graphbo', _EXPORTS, globals())
