"""Neural architecture search (NASBOT): the architecture domain, OTMANN, and training.

``ArchitectureSpace``, ``Architecture`` and ``Constraints`` are importable from
here (lazily, so ``import graphbo.nas`` stays light).
"""

from __future__ import annotations

from graphbo._lazy import lazy_exports

_EXPORTS = {
    "ArchitectureSpace": "graphbo.nas.domain.space",
    "Architecture": "graphbo.nas.domain.architecture",
    "InvalidArchitectureError": "graphbo.nas.domain.architecture",
    "Constraints": "graphbo.nas.domain.constraints",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports('graphbo.nas', _EXPORTS, globals())
