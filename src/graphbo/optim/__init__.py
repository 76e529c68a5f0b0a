"""Optimisers of acquisition functions: they search a space for the input that maximises any
acquisition function (BoTorch keeps ``acquisition/`` and ``optim/`` apart the same way).

* :func:`~graphbo.optim.graph_local_search.optimize_acquisition_on_graph`: random + spray
  vertices, then breadth-first local search on the graph Cartesian product (COMBO).
* :func:`~graphbo.optim.mixed.optimize_acquisition_mixed`: alternating hill climbing on the
  discrete part and L-BFGS-B on the continuous part (BO-FM).
* :func:`~graphbo.optim.evolutionary.optimize_acquisition_ea`: NASBOT's evolutionary algorithm
  over architectures.
* :func:`~graphbo.optim.sdp_relaxation.minimize_binary_quadratic_sdp`: SDP relaxation and
  random-hyperplane rounding of a binary quadratic (BOCS-SDP; needs cvxpy, imported on use).
"""

from .evolutionary import EAResult, optimize_acquisition_ea
from .graph_local_search import optimize_acquisition_on_graph
from .mixed import optimize_acquisition_mixed

__all__ = ["optimize_acquisition_on_graph", "optimize_acquisition_mixed", "optimize_acquisition_ea", "EAResult"]
