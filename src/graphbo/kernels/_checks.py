"""Argument checks shared by the kernels' constructors (see :mod:`graphbo._validation`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..spaces.variables import GraphSpectrum

__all__ = ["check_spectra"]


def check_spectra(name: str, spectra: Any, *, min_length: int = 0) -> list[GraphSpectrum]:
    """``spectra`` as a list of :class:`~graphbo.spaces.GraphSpectrum` (one per variable, e.g.
    ``[v.spectrum for v in space.variables]``) of at least ``min_length`` entries; otherwise a
    ``TypeError`` or ``ValueError`` naming ``name``."""
    if isinstance(spectra, (str, bytes, GraphSpectrum)) or not isinstance(spectra, Sequence):
        raise TypeError(f"{name} must be a sequence of GraphSpectrum (e.g. [v.spectrum for v in space.variables]), "
                        f"got {type(spectra).__name__}")
    for i, s in enumerate(spectra):
        if not isinstance(s, GraphSpectrum):
            raise TypeError(f"{name}[{i}] must be a GraphSpectrum (a variable's .spectrum), got {type(s).__name__}")
    if len(spectra) < min_length:
        raise ValueError(f"{name} must hold at least {min_length} GraphSpectrum, got {len(spectra)}")
    return list(spectra)
