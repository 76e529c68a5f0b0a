"""What the adapters of external libraries share: TPE (Optuna), SMAC and BOHB (SMAC3).

* The library is imported when the optimizer is constructed, never at
  ``import graphbo``; if it is missing, :func:`import_extra` raises an
  ``ImportError`` naming the extra that installs it (``pip install "graphbo[tpe]"``).
* The library is seeded by one integer drawn from ``self.rng`` after graphbo's
  shared initial design (:attr:`ExternalOptimizer.library_seed`).
* Variables map onto the library's parameters by value *index* for the
  discrete variables and by native value for the others
  (:meth:`~ExternalOptimizer._params_of`, :meth:`~ExternalOptimizer._row_of`).
* Trials the library proposed wait in ``_trials``, keyed by row and fidelity,
  until graphbo is told their value or their failure
  (:meth:`~ExternalOptimizer._pop_trial` tolerates an ulp of round-off in the
  continuous coordinates).
* A told value (after :meth:`Optimizer.tell`'s checks) or a failure
  (:meth:`~ExternalOptimizer.mark_failed`) reaches the library through one hook,
  :meth:`~ExternalOptimizer._tell_library`.
* Single-fidelity suggestions (:meth:`~ExternalOptimizer._suggest`, TPE and
  SMAC): ``SpaceExhaustedError`` once every configuration is evaluated or
  pending; a proposal of a configuration already evaluated or pending is
  retried, up to ``max_retries`` times, then a uniformly random new
  configuration is suggested. :attr:`n_duplicates` and :attr:`n_fallbacks`
  count these events.
"""

from __future__ import annotations

import contextlib
import itertools
from typing import Any, Callable, ContextManager, Iterator, Mapping, TypeVar

import numpy as np

from .._lazy import PIP_LINE, MissingExtraError
from ..exceptions import SpaceExhaustedError
from ..spaces.space import Space
from ..spaces.variables import Variable
from .base import Optimizer

__all__ = ["ExternalOptimizer", "import_extra"]

T = TypeVar("T")


def import_extra(method: str, library: str, *, extra: str, load: Callable[[], T]) -> T:
    """``load()`` (which imports ``library``), or a one-line :class:`~graphbo._lazy.MissingExtraError`
    naming the extra that installs it."""
    try:
        return load()
    except MissingExtraError:
        raise
    except ImportError as exc:
        raise MissingExtraError(f"{method} needs {library}: " + PIP_LINE.format(extra=extra),
                                name=exc.name) from exc


class ExternalOptimizer(Optimizer):
    """Base of the adapters of external libraries; see the module documentation.

    Subclasses import their library before calling this ``__init__`` (which
    takes the arguments of :class:`Optimizer`), and implement
    :meth:`_tell_library`; the single-fidelity ones also :meth:`_proposals`
    and, if need be, :meth:`_trial_params`, :meth:`_repeated` and
    :meth:`_proposals_done`, and set ``max_retries``.
    """

    #: the wrapped library is told one number per evaluation
    supports_outcomes = False
    #: the wrapped library tracks its own asks: its suggestion is kept as it is
    avoids_near_repeats = False

    max_retries: int = 20

    def __init__(self, space: Space, **common: Any):
        if getattr(space, "conditions", None) or getattr(space, "constraints", None):
            raise ValueError(f"method {self.name!r} hands its library a flat product of variables: a space with "
                             "conditions or known constraints needs one of graphbo's own methods (combo, bofm, rs, "
                             "sa, re, ...), or the library itself with its own conditional space")
        super().__init__(space, **common)
        #: the library's seed: one integer drawn from ``self.rng`` after the initial design
        self.library_seed = int(self.rng.integers(2**31))
        self._trials: dict[tuple[bytes, int | None], Any] = {}  # (row key, fidelity) -> the library's pending trial
        self.n_duplicates = 0
        self.n_fallbacks = 0

    # -- conversions ----------------------------------------------------------------------------
    def _params_of(self, row: np.ndarray) -> dict[str, Any]:
        """The library's parameters of a graphbo row."""
        return {n: int(x) if isinstance(v, Variable) else v.from_unit(x)
                for n, v, x in zip(self.space.names, self.space.variables, row)}

    def _row_of(self, params: Mapping[str, Any]) -> np.ndarray:
        """graphbo row of the library's parameters, canonical (``to_index(from_index(row))`` gives it back)."""
        space = self.space
        row = np.array([int(params[n]) if isinstance(v, Variable) else v.to_unit(params[n])
                        for n, v in zip(space.names, space.variables)], dtype=space.row_dtype)
        if not space.is_discrete:  # unit coordinates: the round trip through native values may move them by an ulp
            row = space.to_index(space.from_index(row))
        return row

    # -- the library's pending trials -------------------------------------------------------------
    def _trial_key(self, row: np.ndarray, fidelity: int | None = None) -> tuple[bytes, int | None] | None:
        """The key of the pending trial proposed for ``row`` (at ``fidelity``), or ``None``."""
        key = (row.tobytes(), fidelity)
        if key in self._trials:
            return key
        if not self.space.is_discrete:
            for other in self._trials:  # tolerate an ulp of round-off in the unit coordinates
                if other[1] == fidelity and np.allclose(np.frombuffer(other[0], dtype=row.dtype), row,
                                                        rtol=0.0, atol=1e-12):
                    return other
        return None

    def _pop_trial(self, row: np.ndarray, fidelity: int | None = None) -> Any:
        """The pending trial proposed for ``row`` (or ``None``), removed from the pending ones."""
        key = self._trial_key(row, fidelity)
        return None if key is None else self._trials.pop(key)

    # -- told values and failures -------------------------------------------------------------------
    def _quiet(self) -> ContextManager[Any]:
        """A block in which the library logs nothing."""
        return contextlib.nullcontext()

    def _tell_library(self, row: np.ndarray, value: float | None, fidelity: int | None = None) -> None:
        """Tell the library the value of ``row`` (``None``: the evaluation failed)."""
        raise NotImplementedError

    def _observe(self, row: np.ndarray, value: float) -> None:
        with self._quiet():
            self._tell_library(row, value)

    def mark_failed(self, config: Mapping[str, Any]) -> None:
        """As :meth:`Optimizer.mark_failed`; the library is told that the trial failed (its model ignores it)."""
        super().mark_failed(config)
        with self._quiet():
            self._tell_library(self.space.to_index(config), None)

    # -- single-fidelity suggestions ------------------------------------------------------------------
    def _proposals(self) -> Iterator[Any]:
        """The library's trials, asked one at a time (the iterator ends when the library has no more)."""
        raise NotImplementedError

    def _trial_params(self, trial: Any) -> Mapping[str, Any]:
        """The parameters of a trial the library proposed."""
        return trial.params

    def _repeated(self, trial: Any, key: bytes) -> None:
        """The library proposed a configuration already evaluated or pending (row key ``key``)."""

    def _proposals_done(self) -> None:
        """Called after the proposals of one suggestion, also when they raised."""

    def _suggest(self) -> np.ndarray:
        exclude = self._exclude
        if len(exclude) >= self.space.size:
            raise SpaceExhaustedError(f"all {self.space.size} configurations have been evaluated or are pending")
        with self._quiet():
            try:
                for trial in itertools.islice(self._proposals(), self.max_retries + 1):
                    row = self._row_of(self._trial_params(trial))
                    key = row.tobytes()
                    if key not in exclude:
                        self._trials[(key, None)] = trial
                        return row
                    self.n_duplicates += 1
                    self._repeated(trial, key)
            finally:
                self._proposals_done()
        self.n_fallbacks += 1
        return self._distinct_random_rows(1, exclude)[0]
