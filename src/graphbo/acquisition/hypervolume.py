"""Expected hypervolume improvement of two objectives with independent Gaussian posteriors, in closed form.

For a point ``y = (y1, y2)`` (minimised) and a front ``P`` with reference point ``r``, the hypervolume
improvement ``HVI(y) = HV(P + {y}) - HV(P)`` is the area that ``y`` dominates inside ``[y1, r1] x [y2, r2]``
and the front does not. Sort the front by its first objective, ``x_1 < ... < x_n`` (second objectives
``h_1 > ... > h_n``), and cut the first axis into cells ``[l_j, u_j)``: ``(-inf, x_1)``, ``[x_i, x_{i+1})``,
``[x_n, r1)``, over which the front's staircase has height ``H_j`` (``r2``, ``h_i``, ``h_n``). Then

    HVI(y) = sum_j (u_j - max(l_j, y1))^+ (H_j - y2)^+ ,

and ``(u - max(l, y1))^+ = (u - y1)^+ - (l - y1)^+`` for ``l <= u``. With ``y1`` and ``y2`` independent the
expectation of each term factorises, and each factor is an expected improvement
``psi(c; mu, s) = E[(c - Y)^+] = (c - mu) Phi(z) + s phi(z)``, ``z = (c - mu) / s`` (Jones et al. 1998):

    EHVI = sum_j [psi(u_j; mu1, s1) - psi(l_j; mu1, s1)] psi(H_j; mu2, s2)

(the cell decomposition of Emmerich et al. 2006 and Yang et al. 2019, here in the two-objective case). With
posterior samples of each model's hyper-parameters, the samples of the two models are independent, so the
mean over their pairs is the product of the means of each factor over its own model's samples.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import torch

from ..models.base import Surrogate
from ..outcomes import pareto_mask
from .base import AcquisitionFunction

__all__ = ["expected_improvement_below", "expected_hypervolume_improvement_2d", "LogExpectedHypervolumeImprovement"]

_SQRT_2PI = math.sqrt(2 * math.pi)


def expected_improvement_below(c: torch.Tensor, mean: torch.Tensor, *, sd: torch.Tensor) -> torch.Tensor:
    """``E[(c - Y)^+]`` for ``Y ~ N(mean, sd^2)``, broadcast; ``c = -inf`` gives 0."""
    finite = torch.isfinite(c)
    c_safe = torch.where(finite, c, torch.zeros_like(c))
    z = (c_safe - mean) / sd
    out = (c_safe - mean) * torch.special.ndtr(z) + sd * torch.exp(-0.5 * z * z) / _SQRT_2PI
    return torch.where(finite, out, torch.zeros_like(out))


def _cells(front: np.ndarray, ref: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lower and upper ends on the first axis and the staircase height of each cell (module docstring)."""
    P = front[np.all(front < ref, axis=1)]
    if P.shape[0]:
        P = np.unique(P[pareto_mask(P)], axis=0)  # sorted by the first objective: the second falls
    x, h = P[:, 0], P[:, 1]
    lower = np.concatenate([[-np.inf], x])
    upper = np.concatenate([x, [ref[0]]])
    height = np.concatenate([[ref[1]], h])
    return lower, upper, height


def expected_hypervolume_improvement_2d(mean1: torch.Tensor, var1: torch.Tensor, *, mean2: torch.Tensor,
                                        var2: torch.Tensor, front: np.ndarray, ref: np.ndarray) -> torch.Tensor:
    """EHVI at ``m`` inputs from each objective's posterior samples (``(S1, m)`` and ``(S2, m)``), against
    ``front`` (``(n, 2)``, minimised) and ``ref`` (``(2,)``), shape ``(m,)``."""
    lower, upper, height = (torch.as_tensor(a, dtype=torch.float64) for a in _cells(np.asarray(front, dtype=float)
                                                                                   .reshape(-1, 2),
                                                                                   np.asarray(ref, dtype=float)))
    m1, s1 = mean1.to(torch.float64)[..., None], var1.to(torch.float64).clamp_min(1e-300).sqrt()[..., None]
    m2, s2 = mean2.to(torch.float64)[..., None], var2.to(torch.float64).clamp_min(1e-300).sqrt()[..., None]
    width = (expected_improvement_below(upper, m1, sd=s1) - expected_improvement_below(lower, m1, sd=s1)).mean(0)
    depth = expected_improvement_below(height, m2, sd=s2).mean(0)
    return (width * depth).sum(-1)


class LogExpectedHypervolumeImprovement(AcquisitionFunction):
    """``log EHVI(x)`` of two objectives, each with its own surrogate, times (in log space) the probability of
    feasibility of each black-box constraint's surrogate, if any.

    Parameters
    ----------
    models : two Surrogates
        The objectives' models.
    front, ref : arrays
        The feasible Pareto front ``(n, 2)`` and the reference point ``(2,)``, each objective on its model's
        scale (:meth:`~graphbo.models.Surrogate.transform_outcome`, increasing).
    constraint_models : sequence of Surrogate, optional
    """

    def __init__(self, models: Sequence[Surrogate], front: np.ndarray, *, ref: np.ndarray,
                 constraint_models: Sequence[Surrogate] = ()):
        if len(models) != 2:
            raise ValueError(f"LogExpectedHypervolumeImprovement takes two objective models, got {len(models)}")
        super().__init__(models[0])
        self.models = list(models)
        self.front, self.ref = np.asarray(front, dtype=float).reshape(-1, 2), np.asarray(ref, dtype=float)
        self.constraint_models = list(constraint_models)

    def __call__(self, X: Any) -> torch.Tensor:
        p1, p2 = self.models[0].posterior(X), self.models[1].posterior(X)
        ehvi = expected_hypervolume_improvement_2d(p1.mean, p1.variance, mean2=p2.mean, var2=p2.variance,
                                                   front=self.front, ref=self.ref)
        out = torch.log(ehvi.clamp_min(1e-300))
        if self.constraint_models:
            from .constrained import log_probability_of_feasibility

            for cm in self.constraint_models:
                out = out + log_probability_of_feasibility(cm, X)
        return out
