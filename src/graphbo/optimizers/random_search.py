"""Random search: distinct uniformly random configurations."""

from __future__ import annotations

import numpy as np

from .base import Optimizer

__all__ = ["RandomSearch"]


class RandomSearch(Optimizer):
    """Suggests uniformly random configurations never asked before."""

    name = "rs"

    def _suggest(self) -> np.ndarray:
        from ..exceptions import SpaceExhaustedError

        if len(self._exclude) >= self.space.size:
            raise SpaceExhaustedError(f"all {self.space.size} configurations have been evaluated")
        return self._distinct_random_rows(1, self._exclude)[0]
