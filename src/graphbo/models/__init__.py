"""Surrogate models: exact GPs, priors and posterior sampling."""

from .diffusion_gp import DiffusionGP, HyperSample
from .gp import CholeskyError, log_marginal_likelihood, robust_cholesky
from .slice_sampling import slice_sample

__all__ = ["DiffusionGP", "HyperSample", "robust_cholesky", "log_marginal_likelihood", "CholeskyError", "slice_sample"]
