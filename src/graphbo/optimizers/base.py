"""The ask/tell protocol shared by every graphbo optimizer.

An optimizer holds no I/O. It proposes configurations with :meth:`ask`
and learns their values with :meth:`tell`; :attr:`best` is the best
evaluation so far. ``tell`` validates its input and leaves the stored data
untouched when it raises. Minimisation everywhere.
"""

from __future__ import annotations

import inspect
import itertools
import math
from collections.abc import Set
from dataclasses import dataclass
from typing import AbstractSet, Any, Iterable, Iterator, Mapping, Sequence, TypeVar, cast, overload

import numpy as np

from .._validation import as_real, check_configs, check_int, check_seed
from ..spaces.space import Space, as_generator

__all__ = ["Optimizer", "Observation", "Configs", "signature_without"]

#: the type of ``initial_configs``: configurations (dicts of variable name -> value)
Configs = Sequence[Mapping[str, Any]]
_T = TypeVar("_T")


@dataclass(frozen=True)
class Observation:
    """A told evaluation."""

    config: dict[str, Any]
    value: float


class Optimizer:
    """Base class: bookkeeping of evaluations, the initial design and validation.

    Every optimizer takes the space first and everything else by keyword, with these names for the
    arguments they share. This class checks them (``TypeError`` or ``ValueError`` naming the argument);
    each subclass checks its own options first thing in its ``__init__``.

    Parameters
    ----------
    space : Space
    seed : int or None
        Every random choice of the optimizer flows from this seed (a non-negative integer).
    n_initial : int
        Number of uniformly random, distinct configurations asked before the
        method's own suggestions start.
    initial_configs : list of dict, optional
        Configurations to ask first (they count towards ``n_initial``).
    """

    name = "base"
    #: the space classes the optimizer accepts (the NAS optimizers take a ``graphbo.nas.ArchitectureSpace``)
    space_types: tuple[type, ...] = (Space,)

    def __init__(self, space: Space, *, seed: int | None = None, n_initial: int = 10,
                 initial_configs: Configs | None = None):
        if not isinstance(space, self.space_types):
            expected = " or ".join(f"a graphbo.{t.__name__}" if t is Space else f"a {t.__module__}.{t.__name__}"
                                   for t in self.space_types)
            raise TypeError(f"space must be {expected}, got {type(space).__name__}")
        seed = check_seed(seed)
        n_initial = check_int("n_initial", n_initial, minimum=0)
        initial_configs = check_configs("initial_configs", initial_configs)
        self.space = space
        self.seed = seed
        self.rng = as_generator(seed)
        self._X: list[np.ndarray] = []
        self._y: list[float] = []
        self._evaluated: set[bytes] = set()
        self._pending: dict[bytes, np.ndarray] = {}
        self._initial = self._initial_design([space.to_index(c) for c in initial_configs], n_initial)

    def _initial_design(self, rows: list[np.ndarray], n_initial: int) -> list[np.ndarray]:
        """The rows asked first: those of ``initial_configs``, then distinct random ones up to ``n_initial``."""
        n_random = int(max(0, min(n_initial, self.space.size) - len(rows)))
        return rows + self._distinct_random_rows(n_random, {r.tobytes() for r in rows})

    def _distinct_random_rows(self, n: int, taken: AbstractSet[bytes]) -> list[np.ndarray]:
        """``n`` distinct random rows, none in ``taken`` (read, never copied: an ask costs O(1) in the trials)."""
        rows: list[np.ndarray] = []
        new: set[bytes] = set()
        while len(rows) < n:
            for r in self.space.sample_index(n - len(rows), self.rng):
                key = r.tobytes()
                if key not in taken and key not in new and len(rows) < n:
                    new.add(key)
                    rows.append(r)
        return rows

    # -- protocol ---------------------------------------------------------------
    @overload
    def ask(self, n: None = None) -> dict[str, Any]: ...
    @overload
    def ask(self, n: int) -> list[dict[str, Any]]: ...

    def ask(self, n: int | None = None) -> dict[str, Any] | list[dict[str, Any]]:
        """The next configuration to evaluate; with ``n``, a list of ``n`` distinct ones.

        Asked configurations stay *pending* until told: they are never suggested
        again, and model-based methods account for them (COMBO: kriging believer),
        so several can be evaluated in parallel.
        """
        if n is not None:
            return [self._ask_one() for _ in range(self._check_n(n))]
        return self._ask_one()

    @staticmethod
    def _check_n(n: Any) -> int:
        """``ask``'s ``n`` as a positive int (``ValueError`` otherwise)."""
        try:
            ok = not isinstance(n, (bool, str)) and int(n) == n and n >= 1
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise ValueError(f"ask: n must be a positive integer, got {n!r}")
        return int(n)

    def _ask_one(self) -> dict[str, Any]:
        row = None
        while self._initial:
            cand = self._initial.pop(0)
            if cand.tobytes() not in self._evaluated and cand.tobytes() not in self._pending:
                row = cand
                break
        if row is None:
            row = np.asarray(self._suggest(), dtype=self.space.row_dtype)
        config = self.space.from_index(row)
        if len(self.space.continuous_indices):
            # A continuous coordinate may not survive the trip to a value and back bit for bit;
            # key the pending row by what ``tell`` will compute from the returned config.
            row = self.space.to_index(config)
        self._pending[row.tobytes()] = row
        return config

    def tell(self, config: Mapping[str, Any], value: float) -> None:
        """Record that ``config`` evaluated to ``value``.

        Raises ``ValueError`` (and stores nothing) if the configuration is not
        in the space or the value is not a finite number.
        """
        row, v = self._check_told(config, value)
        self._observe(row, v)
        key = row.tobytes()
        self._pending.pop(key, None)
        self._X.append(row)
        self._y.append(v)
        self._evaluated.add(key)

    def _check_told(self, config: Mapping[str, Any], value: Any) -> tuple[np.ndarray, float]:
        """``tell``'s checks: the index row of ``config`` and ``value`` as a finite float, or ``ValueError``."""
        row = self.space.to_index(config)
        try:
            v = as_real(value)  # a real number: not a str, bytes, bool, complex or array of several
        except (TypeError, ValueError) as exc:
            raise ValueError(f"tell: value for {dict(config)!r} must be a real number, got {exc}") from None
        if not math.isfinite(v):
            raise ValueError(f"tell: value {value!r} for {dict(config)!r} is not finite")
        return row, v

    def mark_failed(self, config: Mapping[str, Any]) -> None:
        """Record that evaluating ``config`` failed: it is never suggested again, the model is not told.

        The configuration leaves the pending set and joins the excluded ones
        (with the evaluated). To penalise it instead, :meth:`tell` a value.
        """
        row = self.space.to_index(config)
        key = row.tobytes()
        self._pending.pop(key, None)
        self._evaluated.add(key)

    # -- results ------------------------------------------------------------------
    @property
    def n_told(self) -> int:
        return len(self._y)

    @property
    def n_pending(self) -> int:
        """Configurations asked for and not yet told (evaluations in flight)."""
        return len(self._pending)

    @property
    def X(self) -> np.ndarray:
        """Index rows of the told evaluations, shape ``(n, d)``."""
        return np.array(self._X, dtype=self.space.row_dtype).reshape(-1, len(self.space))

    @property
    def y(self) -> np.ndarray:
        return np.array(self._y, dtype=float)

    @property
    def history(self) -> list[Observation]:
        return [Observation(self.space.from_index(r), v) for r, v in zip(self._X, self._y)]

    @property
    def best(self) -> Observation | None:
        """The best (lowest) evaluation told so far, or ``None``."""
        if not self._y:
            return None
        i = int(np.argmin(self._y))
        return Observation(self.space.from_index(self._X[i]), self._y[i])

    # -- resumable state ----------------------------------------------------------------
    def get_state(self) -> dict[str, Any]:
        """JSON-serialisable state beyond the told data: random generator, initial design, method state.

        Together with the told evaluations (replayed through :meth:`tell`), it
        restores the optimizer exactly: a resumed run continues with the same
        suggestions as an uninterrupted one.
        """
        return {
            "rng": self.rng.bit_generator.state,
            "initial": [r.tolist() for r in self._initial],
            "method": self._method_state(),
        }

    def set_state(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`get_state` returned (after the told data has been replayed)."""
        self._load_method_state(state.get("method") or {})
        self._initial = [np.asarray(r, dtype=self.space.row_dtype) for r in state["initial"]]
        self._pending.clear()
        self.rng.bit_generator.state = state["rng"]  # last: restoring method state may draw numbers

    def _method_state(self) -> dict[str, Any]:
        return {}

    def _load_method_state(self, state: Mapping[str, Any]) -> None:
        pass

    # -- hooks for subclasses ------------------------------------------------------
    def _suggest(self) -> np.ndarray:
        """Index row of the method's next suggestion (after the initial design)."""
        raise NotImplementedError

    def _observe(self, row: np.ndarray, value: float) -> None:
        """Called by :meth:`tell` after validation, before the data is stored."""

    @property
    def _exclude(self) -> set[bytes]:
        """The rows never to suggest (evaluated, failed or pending), as a read-only view: nothing is copied.

        Typed ``set`` for the acquisition optimisers' signatures, which only test membership, take its
        length or iterate over it; it has no ``add``.
        """
        return cast("set[bytes]", _Excluded(self._evaluated, self._pending))


class _Excluded(Set[bytes]):
    """The union of the evaluated rows and the pending ones, without building it.

    ``in`` and ``len`` cost O(1) in the evaluated rows (``len`` counts the pending rows not evaluated, a few:
    the evaluations in flight); iteration gives each row once. The set operators (``|``, ``-``, ...) of
    :class:`collections.abc.Set` return plain sets.
    """

    __slots__ = ("_evaluated", "_pending")

    def __init__(self, evaluated: AbstractSet[bytes], pending: Mapping[bytes, Any]):
        self._evaluated = evaluated
        self._pending = pending

    def __contains__(self, key: object) -> bool:
        return key in self._evaluated or key in self._pending

    def __len__(self) -> int:
        return len(self._evaluated) + sum(1 for k in self._pending if k not in self._evaluated)

    def __iter__(self) -> Iterator[bytes]:
        return itertools.chain(self._evaluated, (k for k in self._pending if k not in self._evaluated))

    @classmethod
    def _from_iterable(cls, it: Iterable[_T]) -> set[_T]:
        return set(it)


def signature_without(cls: type, name: str) -> inspect.Signature:
    """The signature of ``cls.__init__`` without the option ``name``: for a subclass whose
    ``__init__(self, space, **options)`` fixes that option (``bofm-modlap``, ``cocabo-0.5``)."""
    sig = inspect.signature(getattr(cls, "__init__"))
    return sig.replace(parameters=[p for p in sig.parameters.values() if p.name != name])
