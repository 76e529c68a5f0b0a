"""Errors that graphbo raises across layers (importable from ``graphbo`` itself)."""

from __future__ import annotations

__all__ = ["SpaceExhaustedError", "ObjectiveFailingError"]


class SpaceExhaustedError(RuntimeError):
    """Every configuration of the space has already been evaluated or is pending."""


class ObjectiveFailingError(RuntimeError):
    """The first evaluations of a run all failed with the same error: most likely a mistake in the objective
    (a wrong signature, a missing import), so the run stops rather than spend its budget on it."""
