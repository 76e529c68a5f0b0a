"""The surrogate protocol: what every graphbo model offers to acquisition functions and optimizers.

A surrogate is fitted on inputs ``X`` and values ``y`` and returns, for a batch
of ``m`` candidate inputs, a :class:`Posterior` of the latent function: one
Gaussian per hyper-parameter sample (``S`` samples for the fully Bayesian
COMBO and NASBOT models, ``S = 1`` for BO-FM's type-II maximum likelihood).

The inputs are whatever the model's space encodes: integer index rows
``(m, d)`` for COMBO's graph spaces, float rows ``(m, d)`` for BO-FM's mixed
spaces (discrete columns hold indices, continuous columns lie in [0, 1]),
and lists of :class:`graphbo.nas.Architecture` for NASBOT. Acquisition
functions never look inside ``X``: they ask the model for a posterior and
use its mean and variance, so a new surrogate needs no acquisition code.

Values are on the model's *output scale* (the units of ``y`` for COMBO and
NASBOT; standardised, optionally log-transformed, for BO-FM); the model maps an
observed value to that scale with :meth:`Surrogate.transform_outcome`, and
:meth:`Surrogate.best_observed` gives the incumbent there.
"""

from __future__ import annotations

import abc
from typing import Any, Callable

import numpy as np
import torch

from .gp import robust_cholesky

__all__ = ["Posterior", "Screening", "Surrogate"]


class Posterior:
    """Gaussian posterior of the latent function at ``m`` inputs, for ``S`` hyper-parameter samples.

    Parameters
    ----------
    mean, variance : Tensor, shape ``(S, m)``
        Posterior mean and marginal variance (without observation noise) per sample.
    covariance_fn : callable, optional
        Returns the joint covariance ``(S, m, m)``; called only when :attr:`covariance`
        or :meth:`sample` needs it (acquisition optimisers score tens of thousands of
        candidates and use the marginals only).
    """

    def __init__(self, mean: torch.Tensor, variance: torch.Tensor,
                 *, covariance_fn: Callable[[], torch.Tensor] | None = None):
        if mean.shape != variance.shape or mean.dim() != 2:
            raise ValueError(f"mean and variance must both have shape (S, m), got {tuple(mean.shape)} "
                             f"and {tuple(variance.shape)}")
        self.mean = mean
        self.variance = variance
        self._covariance_fn = covariance_fn
        self._covariance: torch.Tensor | None = None

    @property
    def n_samples(self) -> int:
        """``S``, the number of hyper-parameter samples."""
        return int(self.mean.shape[0])

    @property
    def covariance(self) -> torch.Tensor:
        """Joint posterior covariance of the ``m`` inputs per sample, ``(S, m, m)``."""
        if self._covariance is None:
            if self._covariance_fn is None:
                raise NotImplementedError("this posterior was made without a joint covariance")
            self._covariance = self._covariance_fn()
        return self._covariance

    def sample(self, n: int, rng: np.random.Generator | None = None) -> torch.Tensor:
        """``n`` joint draws of the latent function per hyper-parameter sample, ``(n, S, m)``.

        Draws are ``mean + L z`` with ``L`` the Cholesky factor of the covariance
        (with a small jitter where it is only semi-definite) and ``z`` standard
        normal from ``rng`` (a seed-reproducible NumPy generator).
        """
        if n < 1:
            raise ValueError(f"n must be a positive integer, got {n!r}")
        rng = np.random.default_rng() if rng is None else rng
        L = robust_cholesky(self.covariance)  # (S, m, m)
        z = torch.as_tensor(rng.standard_normal((n, *self.mean.shape)), dtype=self.mean.dtype,
                            device=self.mean.device)
        return self.mean + torch.einsum("sij,nsj->nsi", L, z)


class Screening(abc.ABC):
    """Cheaper answers than :meth:`Surrogate.posterior` that a conditioned surrogate may offer to acquisition
    functions and optimisers (:meth:`Surrogate.screening`), for the rows they only need to rank or rule out.

    Each of the four capabilities is optional; its ``offers_*`` property says whether this object has it,
    and a method whose capability is absent raises :class:`NotImplementedError` (the defaults here). All
    answers are on the posterior's scale, without autograd: :meth:`mean_and_variance_bound` for every
    hyper-parameter sample (shape ``(S, m)``, as the posterior), the others for a model with a single sample
    (shape ``(m,)``). A screening object answers for the conditioning it was made for; after the model is
    conditioned again (:meth:`Surrogate.fit`, :meth:`Surrogate.add_fantasies`) ask :meth:`Surrogate.screening`
    again.
    """

    @property
    def offers_mean_and_variance_bound(self) -> bool:
        """Whether :meth:`mean_and_variance_bound` is offered (and cheaper than the posterior)."""
        return False

    def mean_and_variance_bound(self, X: Any) -> tuple[torch.Tensor, torch.Tensor]:
        """A lower bound of the posterior mean ``(S, m)`` and an upper bound of the posterior variance ``(S, m)``
        at the inputs ``X``, for every hyper-parameter sample. A score that falls with the mean and grows with
        the variance (expected improvement, the negative lower confidence bound) is bounded above at them,
        so acquisition optimisers use them to skip candidates whose score cannot matter
        (:func:`graphbo.acquisition.base.mean_and_variance_bound`, :mod:`graphbo.optim.bounded`). Optional
        (:attr:`offers_mean_and_variance_bound`)."""
        raise NotImplementedError(f"{type(self).__name__} offers no mean_and_variance_bound")

    @property
    def offers_screen_moments(self) -> bool:
        """Whether :meth:`screen_moments` is offered."""
        return False

    def screen_moments(self, X: Any, dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
        """Estimates of the posterior mean and variance ``(m,)`` at the inputs ``X``, cheaper than the
        posterior and close to it (computed partly in ``dtype``), but not bounds: a caller rescores exactly
        the rows it keeps. Optional (:attr:`offers_screen_moments`)."""
        raise NotImplementedError(f"{type(self).__name__} offers no screen_moments")

    @property
    def offers_mean_lower_bound(self) -> bool:
        """Whether :meth:`mean_lower_bound` is offered (and cheaper than the posterior)."""
        return False

    def mean_lower_bound(self, X: Any, *, chunk: int = 8192,
                         tight_variance: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
        """A lower bound of the posterior mean ``(m,)`` and an upper bound of the posterior variance ``(m,)``
        at the inputs ``X``, in chunks of ``chunk`` rows; ``tight_variance`` asks for a tighter, costlier
        variance bound. Optional (:attr:`offers_mean_lower_bound`)."""
        raise NotImplementedError(f"{type(self).__name__} offers no mean_lower_bound")

    @property
    def offers_neighbour_moments(self) -> bool:
        """Whether :meth:`neighbour_moments` is offered; whether it also costs less than the posterior of
        the neighbours is :meth:`neighbour_moments_pay`."""
        return False

    def neighbour_moments_pay(self, n_rows: int, n_neighbours: int) -> bool:
        """Whether :meth:`neighbour_moments` is expected to cost less than the posterior of ``n_neighbours``
        graph neighbours of ``n_rows`` rows (``False`` where it is not offered)."""
        return False

    def neighbour_moments(self, X: Any, owner: np.ndarray, *, var: np.ndarray, value: np.ndarray,
                          entries: int = 4_000_000) -> tuple[torch.Tensor, torch.Tensor]:
        """Posterior mean and variance ``(N,)`` of graph neighbours of the rows ``X``: neighbour ``i`` is
        row ``owner[i]`` with its ``var[i]``-th discrete variable set to index ``value[i]``; the same
        numbers as the posterior of those rows up to rounding, working on at most about ``entries``
        numbers at a time. Optional (:attr:`offers_neighbour_moments`)."""
        raise NotImplementedError(f"{type(self).__name__} offers no neighbour_moments")


class Surrogate(abc.ABC):
    """A probabilistic model of the objective: fit on data, posterior at new inputs.

    Subclasses implement :meth:`fit`, :meth:`posterior` and :meth:`add_fantasies`,
    and override :meth:`transform_outcome` when they model a transformed ``y``.
    """

    @abc.abstractmethod
    def fit(self, X: Any, y: np.ndarray, *, rng: np.random.Generator) -> "Surrogate":
        """Infer the hyper-parameters from inputs ``X`` and values ``y`` and condition on the data.

        Drops any fantasies of an earlier :meth:`add_fantasies`.
        """

    @abc.abstractmethod
    def posterior(self, X: Any) -> Posterior:
        """The posterior of the latent function at the inputs ``X`` (all hyper-parameter samples)."""

    def screening(self) -> Screening | None:
        """The conditioned model's :class:`Screening` (cheaper moments, bounds and neighbour moments for
        acquisition functions and optimisers), or ``None`` where the model offers none of them (this default)."""
        return None

    @abc.abstractmethod
    def add_fantasies(self, X: Any) -> None:
        """Condition on pending inputs ``X`` at their posterior mean (the kriging believer).

        Ginsbourger, Le Riche and Carraro (2010): pending evaluations are
        hallucinated at the current posterior mean of each hyper-parameter
        sample, so the mean elsewhere is unchanged while the variance at and
        near them shrinks. The hyper-parameters are not refitted. Conditioning
        on all of them at once equals adding them one at a time (a fantasy at
        the mean leaves the mean unchanged). The next :meth:`fit` starts from
        the real data again.
        """

    def transform_outcome(self, value: float) -> float:
        """An observed value on the posterior's scale (identity unless the model transforms ``y``)."""
        return float(value)

    @property
    @abc.abstractmethod
    def train_targets(self) -> np.ndarray:
        """The real (not fantasised) observed values the model was last fitted on, in their own units."""

    def best_observed(self) -> float:
        """The lowest real observation on the posterior's scale: the incumbent of expected improvement."""
        y = self.train_targets
        if y.size == 0:
            raise RuntimeError("the model has not been fitted")
        return self.transform_outcome(float(np.min(y)))
