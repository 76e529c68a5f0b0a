"""Known constraints in the acquisition optimisers: a refused configuration scores below every allowed one.

:class:`AllowedOnly` wraps any acquisition (a callable from input rows to scores): rows that a known
constraint of the space refuses (:meth:`graphbo.Space.allowed_rows`) score :data:`REFUSED_SCORE`, a finite
number far below any log-EI, so that the graph, mixed and evolutionary optimisers move through allowed
configurations and return one whenever the candidates hold any. Gradients through refused rows are zero.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch

from .utils import as_scores

__all__ = ["AllowedOnly", "allowed_only", "REFUSED_SCORE"]

#: the score of a refused row: far below a log-EI (which stays above -1e6 in float64), finite so that L-BFGS-B
#: sums of several starts stay finite
REFUSED_SCORE = -1e12


class AllowedOnly:
    """``acquisition`` with the rows the space's known constraints refuse scored :data:`REFUSED_SCORE`.

    ``upper_bound`` (when the acquisition has one) is passed through unmasked: it still bounds the masked score.
    """

    def __init__(self, acquisition: Callable[[Any], Any], space: Any):
        self.acquisition, self.space = acquisition, space
        self.model = getattr(acquisition, "model", None)
        self.has_upper_bound = bool(getattr(acquisition, "has_upper_bound", False))

    def _allowed(self, X: Any) -> np.ndarray:
        rows = X.detach().cpu().numpy() if isinstance(X, torch.Tensor) else np.asarray(X)
        return self.space.allowed_rows(rows.astype(self.space.row_dtype, copy=False))

    def __call__(self, X: Any) -> Any:
        scores = self.acquisition(X)
        ok = self._allowed(X)
        if ok.all():
            return scores
        if isinstance(scores, torch.Tensor):
            mask = torch.as_tensor(ok, device=scores.device)
            return torch.where(mask, scores, torch.full_like(scores, REFUSED_SCORE))
        out = as_scores(scores).copy()
        out[~ok] = REFUSED_SCORE
        return out

    def upper_bound(self, X: Any) -> Any:
        return self.acquisition.upper_bound(X)  # type: ignore[attr-defined]


def allowed_only(acquisition: Callable[[Any], Any], space: Any) -> Callable[[Any], Any]:
    """``acquisition`` itself for a space without known constraints, else :class:`AllowedOnly`."""
    return AllowedOnly(acquisition, space) if getattr(space, "constraints", ()) else acquisition
