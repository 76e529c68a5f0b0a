"""Surrogate models: exact GPs, priors and posterior sampling."""

from .diffusion_gp import DiffusionGP, HyperSample
from .gp import CholeskyError, robust_cholesky
from .slice_sampling import slice_sample

__all__ = ["DiffusionGP", "HyperSample", "robust_cholesky", "CholeskyError", "slice_sample"]
