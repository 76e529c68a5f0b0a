"""Pieces shared by the acquisition optimisers: scores as arrays, starts, best neighbours."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

__all__ = ["as_scores", "best_per_owner"]


def as_scores(values: Any) -> np.ndarray:
    """Acquisition values (a tensor, array or sequence) as a 1-d float64 NumPy array."""
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    return np.asarray(values, dtype=float).reshape(-1)


def best_per_owner(values: np.ndarray, owner: np.ndarray) -> np.ndarray:
    """Positions of the best value of each owner group (the first on ties, in position order).

    ``owner[k]`` names the start that candidate ``k`` is a neighbour of; sorting by
    ``(owner, -value)`` makes each group's first element its best.
    """
    srt = np.lexsort((-values, owner))
    first = np.ones(srt.size, dtype=bool)
    first[1:] = owner[srt][1:] != owner[srt][:-1]
    return srt[first]
