"""The acquisition-function interface: a score per candidate input, larger is better."""

from __future__ import annotations

import abc
from typing import Any

import torch

from ..models.base import Surrogate

__all__ = ["AcquisitionFunction", "mean_and_variance_bound"]


def mean_and_variance_bound(model: Surrogate, X: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """A lower bound of the posterior mean ``(S, m)`` and an upper bound of the posterior variance ``(S, m)`` at
    the inputs ``X``: the model's screening's cheap bounds where it offers them
    (:meth:`graphbo.models.base.Screening.mean_and_variance_bound`, COMBO's
    :class:`~graphbo.models.diffusion_gp_screening.DiffusionGPScreening`), else the exact posterior's mean and
    variance (the tightest bounds, no saving)."""
    screening = model.screening()
    if screening is not None and screening.offers_mean_and_variance_bound:
        return screening.mean_and_variance_bound(X)
    post = model.posterior(X)
    return post.mean, post.variance


class AcquisitionFunction(abc.ABC):
    """Scores candidate inputs from the posterior of any :class:`~graphbo.models.Surrogate`.

    Calling it on ``m`` inputs (in the model's input format) returns a tensor of
    ``m`` scores, differentiable where the model's posterior is (BO-FM's
    continuous columns). The optimisers of :mod:`graphbo.optim` maximise it.
    """

    def __init__(self, model: Surrogate):
        if not isinstance(model, Surrogate):
            raise TypeError(f"model must implement graphbo.models.Surrogate, got {type(model).__name__}")
        self.model = model

    @abc.abstractmethod
    def __call__(self, X: Any) -> torch.Tensor:
        """Scores of the inputs ``X``, shape ``(m,)``."""

    def upper_bound(self, X: Any) -> torch.Tensor:
        """An upper bound of :meth:`__call__` at each input ``(m,)``, cheaper to compute where possible.

        The default is the score itself. Acquisitions that fall with the posterior mean and grow
        with its variance (EI, confidence bounds) evaluate themselves at the model's mean and
        variance bounds (:func:`mean_and_variance_bound`).
        """
        return self(X)

    @property
    def has_upper_bound(self) -> bool:
        """Whether :meth:`upper_bound` is a bound of its own rather than the score itself.

        Pruning (:mod:`graphbo.optim.bounded`) uses bounds only where this holds; otherwise
        every candidate would be scored twice.
        """
        return type(self).upper_bound is not AcquisitionFunction.upper_bound
