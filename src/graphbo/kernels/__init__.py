"""Kernels built from the graphs of a search space."""

from .diffusion import DiffusionKernel

__all__ = ["DiffusionKernel"]
