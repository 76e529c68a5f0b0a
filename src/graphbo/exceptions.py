"""Errors that graphbo raises across layers (importable from ``graphbo`` itself)."""

from __future__ import annotations

__all__ = ["SpaceExhaustedError", "ObjectiveFailingError", "ExecutorLostError"]


class SpaceExhaustedError(RuntimeError):
    """Every configuration of the space has already been evaluated or is pending."""


class ObjectiveFailingError(RuntimeError):
    """The first evaluations of a run all failed with the same error: most likely a mistake in the objective
    (a wrong signature, a missing import), so the run stops rather than spend its budget on it."""


class ExecutorLostError(RuntimeError):
    """The executor of a parallel run (a Dask cluster, ...) lost evaluations in flight or refused new ones: the
    run stops, and those trials stay ``running`` in the study, to be evaluated again when it is resumed."""
