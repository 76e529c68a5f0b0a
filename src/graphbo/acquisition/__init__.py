"""Acquisition functions: scores of candidate inputs computed from a surrogate's posterior.

They accept any model implementing :class:`graphbo.models.Surrogate`; the procedures that
maximise them live in :mod:`graphbo.optim`.
"""

from .ei import LogExpectedImprovement, log_expected_improvement, log_h, log_mean_expected_improvement

__all__ = ["LogExpectedImprovement", "log_h", "log_expected_improvement", "log_mean_expected_improvement"]
