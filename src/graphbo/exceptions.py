"""Errors that graphbo raises across layers (importable from ``graphbo`` itself)."""

from __future__ import annotations

__all__ = ["SpaceExhaustedError"]


class SpaceExhaustedError(RuntimeError):
    """Every configuration of the space has already been evaluated or is pending."""
