"""Kernels built from the graphs of a search space.

* :class:`GraphDiffusionKernel`: COMBO's ARD diffusion kernel on a graph Cartesian product.
* :class:`FMKernel`: BO-FM's frequency-modulated kernels (and their comparison kernels) on mixed spaces.
* :class:`~graphbo.kernels.otmann.OTMANNKernel`: NASBOT's kernel on architectures (import it from
  :mod:`graphbo.kernels.otmann`, or as ``graphbo.OTMANNKernel``; it needs the NAS modules).

The GPyTorch versions for BoTorch models are in :mod:`graphbo.integrations.gpytorch`
(``DiffusionKernel``, ``FrequencyModulatedKernel``).
"""

from .diffusion import GraphDiffusionKernel
from .frequency_modulated import KERNELS as FM_KERNELS
from .frequency_modulated import FMKernel

__all__ = ["GraphDiffusionKernel", "FMKernel", "FM_KERNELS"]
