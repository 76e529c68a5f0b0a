"""Acquisition functions and their optimisers."""

from .ei import log_expected_improvement, log_h, log_mean_expected_improvement
from .graph_local_search import SpaceExhaustedError, optimize_acquisition_on_graph

__all__ = [
    "log_h",
    "log_expected_improvement",
    "log_mean_expected_improvement",
    "optimize_acquisition_on_graph",
    "SpaceExhaustedError",
]
