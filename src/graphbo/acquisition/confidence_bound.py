"""Confidence-bound acquisition for minimisation (Srinivas et al., 2010), as CoCaBO uses it."""

from __future__ import annotations

from typing import Any

import torch

from ..models.base import Surrogate
from .base import AcquisitionFunction, mean_and_variance_bound

__all__ = ["NegativeLowerConfidenceBound"]


class NegativeLowerConfidenceBound(AcquisitionFunction):
    """``-(mu(x) - kappa sigma(x))``, averaged over the model's hyper-parameter samples.

    The GP-UCB rule of Srinivas et al. (ICML 2010) written for minimisation:
    larger scores are lower confidence bounds further below the data.
    """

    def __init__(self, model: Surrogate, kappa: float = 2.0):
        super().__init__(model)
        self.kappa = float(kappa)

    def __call__(self, X: Any) -> torch.Tensor:
        post = self.model.posterior(X)
        return (-(post.mean - self.kappa * post.variance.sqrt())).mean(0)

    @property
    def has_upper_bound(self) -> bool:
        """A bound of its own for ``kappa >= 0`` only."""
        return self.kappa >= 0

    def upper_bound(self, X: Any) -> torch.Tensor:
        """The score at the model's mean and variance bounds (it falls with the mean, and grows with the standard
        deviation for ``kappa >= 0``)."""
        if self.kappa < 0:
            return self(X)
        mean, var = mean_and_variance_bound(self.model, X)
        return (-(mean - self.kappa * var.sqrt())).mean(0)
