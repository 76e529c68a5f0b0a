"""Expected improvement under black-box constraints: EI weighted by the probability of feasibility.

For constraints ``c_k(x) <= 0`` modelled by independent surrogates, the constrained EI of Gardner et al.
(2014, Eq. 5; Schonlau et al. 1998) is ``EI(x) * prod_k P(c_k(x) <= 0)``, with the incumbent the best
*feasible* observation. Each probability is averaged over its model's hyper-parameter samples, as EI is
(COMBO Alg. 1, line 9): ``P_k(x) = mean_s Phi((t_k - mu_ks(x)) / sigma_ks(x))``, with ``t_k`` the threshold 0
on the model's scale (:meth:`~graphbo.models.Surrogate.transform_outcome`). Before any feasible observation
there is no incumbent, and the acquisition is the probability of feasibility alone (Gelbart et al. 2014,
Sec. 3: search for a feasible point first). Everything is in log space.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import torch

from ..models.base import Surrogate
from .base import AcquisitionFunction
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
    """

    def __init__(self, model: Surrogate, constraint_models: Sequence[Surrogate], best_f: float | None):
        super().__init__(model)
        self.constraint_models = list(constraint_models)
        self.best_f = None if best_f is None else float(best_f)

    def log_feasibility(self, X: Any) -> torch.Tensor:
        """``sum_k log P(c_k(x) <= 0)``, shape ``(m,)``."""
        out = None
        for cm in self.constraint_models:
            lp = log_probability_of_feasibility(cm, X)
            out = lp if out is None else out + lp
        assert out is not None, "LogConstrainedExpectedImprovement needs at least one constraint model"
        return out

    def __call__(self, X: Any) -> torch.Tensor:
        feas = self.log_feasibility(X)
        if self.best_f is None:
            return feas
        post = self.model.posterior(X)
        lei = log_mean_expected_improvement(post.mean, post.variance, self.best_f)
        return lei.to(torch.float64) + feas

    def upper_bound(self, X: Any) -> torch.Tensor:
        """log-EI at the objective model's mean and variance bounds: a probability is at most 1, so the log of
        the product of probabilities is at most 0 and log-EI's own bound bounds the constrained score."""
        if self.best_f is None:
            m = len(X) if not hasattr(X, "shape") else X.shape[0]
            return torch.zeros(m, dtype=torch.float64)
        mean, var = self.model.mean_and_variance_bound(X)
        return log_mean_expected_improvement(mean, var, self.best_f).to(torch.float64)
