"""Expected improvement under black-box constraints: EI weighted by the probability of feasibility.

For constraints ``c_k(x) <= 0`` modelled by independent surrogates, the constrained EI of Gardner et al.
(2014, Eq. 5; Schonlau et al. 1998) is ``EI(x) * prod_k P(c_k(x) <= 0)``, with the incumbent the best
*feasible* observation. Each probability is averaged over its model's hyper-parameter samples, as EI is
(COMBO Alg. 1, line 9): ``P_k(x) = mean_s Phi((t_k - mu_ks(x)) / sigma_ks(x))``, with ``t_k`` the threshold 0
on the model's scale (:meth:`~graphbo.models.Surrogate.transform_outcome`). Before any feasible observation
there is no incumbent, and the search is for a feasible point first (Gelbart et al. 2014, Sec. 3): each
constraint that some observation satisfies contributes its probability of feasibility; each constraint that no
observation satisfies contributes the expected improvement of its value below the smallest one observed,
``E[max(c_k^* - c_k(x), 0)]`` (the constraint treated as an objective until it is met). The probability alone
is tiny wherever the posterior mean is well above the threshold, and then largest where the posterior is most
uncertain, not where the constraint is lowest: on contamination control with a risk constraint graphbo's
searches spent most of their budget before the first feasible point that way (docs/outcomes_suite.md).
Everything is in log space.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import torch

from ..models.base import Surrogate
from .base import AcquisitionFunction, mean_and_variance_bound
from .ei import log_mean_expected_improvement

__all__ = ["log_probability_of_feasibility", "LogConstrainedExpectedImprovement"]


def log_probability_of_feasibility(model: Surrogate, X: Any) -> torch.Tensor:
    """``log mean_s P(c(x) <= 0)`` under ``model``'s posterior of a constraint ``c`` (shape ``(m,)``)."""
    post = model.posterior(X)
    mean, var = post.mean.to(torch.float64), post.variance.to(torch.float64)
    threshold = model.transform_outcome(0.0)
    log_p = torch.special.log_ndtr((threshold - mean) / var.clamp_min(1e-300).sqrt())
    return torch.logsumexp(log_p, dim=0) - math.log(log_p.shape[0])


class LogConstrainedExpectedImprovement(AcquisitionFunction):
    """``log EI(x) + sum_k log P(c_k(x) <= 0)``, or the log-probability of feasibility alone when ``best_f`` is None.

    Parameters
    ----------
    model : Surrogate
        The objective's model.
    constraint_models : sequence of Surrogate
        One fitted model per constraint (feasible when the constraint is ``<= 0``).
    best_f : float or None
        The best feasible observation on the objective model's scale; ``None`` when none is feasible.
    constraint_best : sequence of float, optional
        Per constraint, its smallest observed value on its model's scale. Used when ``best_f`` is None: a
        constraint whose smallest value is above its threshold (no observation satisfies it) scores the log
        expected improvement below that value instead of its log probability of feasibility (module docstring).
        ``None``: every constraint scores its probability.
    """

    def __init__(self, model: Surrogate, constraint_models: Sequence[Surrogate], *, best_f: float | None,
                 constraint_best: Sequence[float] | None = None):
        super().__init__(model)
        self.constraint_models = list(constraint_models)
        self.best_f = None if best_f is None else float(best_f)
        if constraint_best is not None and len(constraint_best) != len(self.constraint_models):
            raise ValueError(f"constraint_best: one value per constraint model ({len(self.constraint_models)}), "
                             f"got {len(constraint_best)}")
        #: per constraint, the smallest observed value when no observation satisfies it (else None)
        self.unmet_best: list[float | None] = [
            None if constraint_best is None or float(b) <= cm.transform_outcome(0.0) else float(b)
            for cm, b in zip(self.constraint_models, constraint_best or [0.0] * len(self.constraint_models))]

    def log_feasibility(self, X: Any) -> torch.Tensor:
        """``sum_k log P(c_k(x) <= 0)``, shape ``(m,)``."""
        out = None
        for cm in self.constraint_models:
            lp = log_probability_of_feasibility(cm, X)
            out = lp if out is None else out + lp
        assert out is not None, "LogConstrainedExpectedImprovement needs at least one constraint model"
        return out

    def __call__(self, X: Any) -> torch.Tensor:
        if self.best_f is None:
            return self.log_progress(X)
        feas = self.log_feasibility(X)
        post = self.model.posterior(X)
        lei = log_mean_expected_improvement(post.mean, post.variance, best=self.best_f)
        return lei.to(torch.float64) + feas

    def log_progress(self, X: Any) -> torch.Tensor:
        """The score while nothing is feasible: per constraint, its log probability of feasibility, or where no
        observation satisfies it, the log expected improvement below its smallest observed value; summed."""
        out = None
        for cm, unmet in zip(self.constraint_models, self.unmet_best):
            if unmet is None:
                term = log_probability_of_feasibility(cm, X)
            else:
                post = cm.posterior(X)
                term = log_mean_expected_improvement(post.mean, post.variance, best=unmet).to(torch.float64)
            out = term if out is None else out + term
        assert out is not None, "LogConstrainedExpectedImprovement needs at least one constraint model"
        return out

    @property
    def has_upper_bound(self) -> bool:
        """A bound of its own once a trial is feasible; before, the score is its own bound (and pruning with it
        would score every candidate twice)."""
        return self.best_f is not None

    def upper_bound(self, X: Any) -> torch.Tensor:
        """log-EI at the objective model's mean and variance bounds: a probability is at most 1, so the log of
        the product of probabilities is at most 0 and log-EI's own bound bounds the constrained score."""
        if self.best_f is None:
            return self(X)
        mean, var = mean_and_variance_bound(self.model, X)
        return log_mean_expected_improvement(mean, var, best=self.best_f).to(torch.float64)
