"""Trust regions on graph and mixed spaces (CASMOPOLITAN: Wan, Nguyen, Ha, Ru, Lu, Osborne, ICML 2021).

A trust region is a ball around a centre: in Hamming distance over the categorical variables
(the number of variables whose value differs from the centre's, CASMOPOLITAN's categorical
trust region) and, for continuous variables, a box of side ``length`` in unit coordinates
centred on the centre's continuous part (its mixed trust region), clipped to [0, 1].
CASMOPOLITAN puts integer variables in the box, rounded; here, by default (``ordinals="box"``),
so does every ordinal variable of three or more values (its index ``i`` of ``k`` at unit
coordinate ``i / (k - 1)``): it may move at most ``max(1, floor(length (k - 1) / 2 + 1/2))``
steps from the centre's, and it does not count in the Hamming distance. ``ordinals="hamming"``
counts ordinals with the categorical variables instead, as graphbo did before (a changed
ordinal may then take any of its values). :class:`Region` is one such region
(membership and uniform-ish sampling); :class:`TrustRegion` is the state machine that moves
it (CASMOPOLITAN's trust-region adjustment, after TuRBO, Eriksson et al. 2019):

* the centre is the best point observed since the last restart;
* an observation is a *success* if it improves on that best by more than
  ``min_improvement * |best|``, else a *failure*; counting starts once the region holds
  ``n_initial`` observations (its initial design);
* ``succ_tol`` consecutive successes expand the region: ``radius <- floor(min(factor * radius,
  radius_max))``, ``length <- min(factor * length, length_max)``;
* ``fail_tol`` consecutive failures shrink it: ``radius <- floor(radius / factor)``,
  ``length <- max(length / factor, length_min)``;
* once ``radius <= radius_min`` (or ``length <= length_min``) the region restarts: counters and
  sizes go back to their initial values, the centre is forgotten, and a new initial design
  of ``n_initial`` random points is asked before the model takes over again.

Defaults are CASMOPOLITAN's (the authors' reference code, xingchenwan/Casmopolitan): ``factor`` 1.5, ``succ_tol`` 3, ``fail_tol`` 40, discrete radius
initial 20 / minimum 1 / maximum 30 (capped here at the number of discrete variables, as the
paper's per-problem settings do), continuous length initial 0.8 / minimum 0.5**7 /
maximum 1.6, ``min_improvement`` 1e-3. docs/trust_regions.md has the rules and the
differences from the reference implementation.

The state is a plain JSON-serialisable dict (:meth:`TrustRegion.state`,
:meth:`TrustRegion.load_state`), which the optimizers keep in their resumable state.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from .._validation import check_choice, check_float, check_int, check_mapping
from ..spaces.space import Space
from ..spaces.variables import Ordinal

__all__ = ["Region", "TrustRegion", "DEFAULTS", "as_trust_region_options"]

#: CASMOPOLITAN's constants (``radius_max=None``: the number of discrete variables, at most 30)
DEFAULTS: dict[str, Any] = {
    "radius_init": 20,
    "radius_min": 1,
    "radius_max": None,
    "length_init": 0.8,
    "length_min": 0.5 ** 7,
    "length_max": 1.6,
    "factor": 1.5,
    "succ_tol": 3,
    "fail_tol": 40,
    "min_improvement": 1e-3,
    "restart": "random",
    "ordinals": "box",
}

#: ``restart`` choices: a new uniformly random initial design (CASMOPOLITAN without guided restart)
RESTARTS = ("random",)
#: ``ordinals`` choices: ordinals of three or more values in the box (CASMOPOLITAN's integers) or in the ball
ORDINALS = ("box", "hamming")


def window_indices(space: Space, ordinals: str = "box") -> np.ndarray:
    """Columns of the ordinal variables a region bounds by steps (``ordinals="box"``): the
    :class:`~graphbo.Ordinal` variables of three or more values (none for ``"hamming"``)."""
    if ordinals == "hamming":
        return np.zeros(0, dtype=np.int64)
    return np.array([j for j in space.discrete_indices
                     if isinstance(space.variables[j], Ordinal) and space.n_values[j] >= 3], dtype=np.int64)


def window_steps(length: float, n_values: np.ndarray) -> np.ndarray:
    """Steps an ordinal of ``n_values`` values may move from the centre's in a box of side ``length``:
    the values whose rounding cell (unit coordinates within half a step of ``i / (k - 1)``) meets
    ``c +- length / 2``, at least one."""
    n_values = np.asarray(n_values, dtype=np.int64)
    return np.maximum(1, np.floor(length * (n_values - 1) / 2 + 0.5)).astype(np.int64)


def as_trust_region_options(name: str, value: Any) -> dict[str, Any] | None:
    """An optimizer's ``trust_region`` argument (``False``, ``True`` or a dict of :data:`DEFAULTS`'
    keys) as ``None`` (no trust region) or a dict of options; errors name ``name`` and the key."""
    if isinstance(value, bool):
        return {} if value else None
    options = check_mapping(name, value)
    unknown = sorted(set(options) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"{name}: unknown option(s) {unknown}; choose among {sorted(DEFAULTS)}")
    return options


class Region:
    """A Hamming ball (categorical part) times a box (ordinal and continuous parts) in a space's index rows.

    Parameters
    ----------
    space : Space
    centre : ndarray (d,)
        Index row of the centre.
    radius : int
        Largest number of ball variables (discrete ones not in the box) that may differ from the centre.
    length : float
        Side of the box in unit coordinates: the continuous box is ``centre +- length / 2``
        clipped to [0, 1]; an ordinal of ``k`` values may move :func:`window_steps` steps.
    ordinals : {"box", "hamming"}
        Whether ordinals of three or more values are in the box (default) or the ball.
    """

    def __init__(self, space: Space, centre: np.ndarray, *, radius: int, length: float = 1.0,
                 ordinals: str = "box") -> None:
        self.space = space
        self.centre = np.asarray(centre, dtype=space.row_dtype).reshape(-1)
        self.radius = int(radius)
        self.length = float(length)
        self.cont = space.continuous_indices
        #: ordinal columns bounded by steps, and how many steps each may move
        self.window = window_indices(space, check_choice("ordinals", ordinals, ORDINALS))
        self.steps = window_steps(self.length, space.n_values[self.window])
        #: discrete columns of the Hamming ball
        self.disc = np.setdiff1d(space.discrete_indices, self.window).astype(np.int64)
        c = self.centre[self.cont].astype(float)
        self.lower = np.clip(c - self.length / 2, 0.0, 1.0)
        self.upper = np.clip(c + self.length / 2, 0.0, 1.0)
        cw = self.centre[self.window].astype(np.int64)
        self.window_lower = np.maximum(cw - self.steps, 0)
        self.window_upper = np.minimum(cw + self.steps, space.n_values[self.window] - 1)
        self._movable = self.disc[space.n_values[self.disc] > 1]

    def distance(self, rows: np.ndarray) -> np.ndarray:
        """Hamming distance of each row's ball part (the discrete variables not in the box) from the centre's."""
        rows = np.asarray(rows).reshape(-1, len(self.space))
        return np.count_nonzero(rows[:, self.disc] != self.centre[self.disc], axis=1)

    def contains(self, rows: np.ndarray) -> np.ndarray:
        """Boolean mask: which rows lie in the region (distance <= radius, ordinal and continuous parts in the box)."""
        rows = np.asarray(rows).reshape(-1, len(self.space))
        inside = self.distance(rows) <= self.radius
        if self.window.size:
            w = rows[:, self.window]
            inside &= np.all((w >= self.window_lower) & (w <= self.window_upper), axis=1)
        if self.cont.size:
            x = rows[:, self.cont].astype(float)
            inside &= np.all((x >= self.lower - 1e-12) & (x <= self.upper + 1e-12), axis=1)
        return inside

    def clamp(self, rows: np.ndarray) -> np.ndarray:
        """Rows with every continuous coordinate that snapping (an integer variable's rounding) put
        outside the box moved back in, in place; returns ``rows``. The new coordinate is the
        snapped value nearest the crossed bound found by bisection towards the centre's (which is
        inside and on the grid)."""
        for i, j in enumerate(self.cont):
            lo, hi = self.lower[i] - 1e-12, self.upper[i] + 1e-12
            x = rows[:, j]
            out = (x < lo) | (x > hi)
            if not out.any():
                continue
            snap = self.space.variables[j].snap
            a, b = x[out].astype(float), np.full(int(out.sum()), float(self.centre[j]))
            for _ in range(60):
                mid = (a + b) / 2
                s = snap(mid)
                ok = (s >= lo) & (s <= hi)
                a, b = np.where(ok, a, mid), np.where(ok, mid, b)
            rows[out, j] = snap(b)
        return rows

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` random index rows in the region.

        Ball part as CASMOPOLITAN samples its trust region: ``min(radius, #variables)``
        variables chosen uniformly without replacement, each set to a uniformly random value
        (possibly its own), so the distance is at most the radius. Ordinals in the box uniform
        over their allowed steps; continuous part uniform in the box, then snapped (:meth:`clamp`
        keeps it inside).
        """
        d = len(self.space)
        rows = np.repeat(self.centre[None, :], n, axis=0)
        m = self._movable.size
        k = min(self.radius, m)
        if k > 0 and n > 0:
            # the k variables of smallest random key are the ones resampled
            keys = rng.random((n, m))
            chosen = np.argsort(keys, axis=1, kind="stable")[:, :k]
            cols = self._movable[chosen]
            values = np.floor(rng.random((n, k)) * self.space.n_values[cols]).astype(np.int64)
            np.put_along_axis(rows, cols, values.astype(rows.dtype), axis=1)
        if self.window.size and n > 0:
            span = self.window_upper - self.window_lower + 1
            rows[:, self.window] = self.window_lower + np.floor(rng.random((n, self.window.size)) * span).astype(np.int64)
        if self.cont.size and n > 0:
            u = rng.random((n, self.cont.size))
            x = self.lower + u * (self.upper - self.lower)
            for i, j in enumerate(self.cont):
                rows[:, j] = self.space.variables[j].snap(x[:, i])
            self.clamp(rows)
        assert rows.shape == (n, d)
        return rows


class TrustRegion:
    """CASMOPOLITAN's trust-region state machine (module docstring has the rules).

    Parameters
    ----------
    space : Space
    n_initial : int
        Observations a region holds before its success and failure counters start (its
        initial design; the optimizer's ``n_initial``).
    **options
        Keys of :data:`DEFAULTS`; ``ValueError``/``TypeError`` name the bad one.
    """

    def __init__(self, space: Space, n_initial: int, **options: Any) -> None:
        unknown = sorted(set(options) - set(DEFAULTS))
        if unknown:
            raise ValueError(f"trust_region: unknown option(s) {unknown}; choose among {sorted(DEFAULTS)}")
        o = {**DEFAULTS, **options}
        self.space = space
        self.n_initial = check_int("n_initial", n_initial, minimum=0)
        self.ordinals = check_choice("trust_region ordinals", o["ordinals"], ORDINALS)
        window = window_indices(space, self.ordinals)
        ball = np.setdiff1d(space.discrete_indices, window).astype(np.int64)
        n_disc = int(np.count_nonzero(space.n_values[ball] > 1))
        #: whether the region has a Hamming ball (categorical variables) and a box (ordinal or continuous ones)
        self.has_discrete = n_disc > 0
        self.has_continuous = space.continuous_indices.size > 0 or window.size > 0
        rmax = min(30, n_disc) if o["radius_max"] is None else o["radius_max"]
        self.radius_max = check_int("trust_region radius_max", rmax, minimum=0)
        rinit = min(int(o["radius_init"]), self.radius_max) if "radius_init" not in options else o["radius_init"]
        self.radius_init = check_int("trust_region radius_init", rinit, minimum=0, maximum=self.radius_max)
        # with one or two discrete variables the default minimum leaves room for one shrink
        rmin = min(1, self.radius_init - 1) if "radius_min" not in options else o["radius_min"]
        self.radius_min = check_int("trust_region radius_min", rmin, minimum=-1)
        self.length_min = check_float("trust_region length_min", o["length_min"], minimum=0.0, strict_minimum=True)
        self.length_max = check_float("trust_region length_max", o["length_max"], minimum=self.length_min)
        self.length_init = check_float("trust_region length_init", o["length_init"], minimum=self.length_min,
                                       maximum=self.length_max)
        self.factor = check_float("trust_region factor", o["factor"], minimum=1.0, strict_minimum=True)
        self.succ_tol = check_int("trust_region succ_tol", o["succ_tol"], minimum=1)
        self.fail_tol = check_int("trust_region fail_tol", o["fail_tol"], minimum=1)
        self.min_improvement = check_float("trust_region min_improvement", o["min_improvement"], minimum=0.0)
        self.restart_rule = check_choice("trust_region restart", o["restart"], RESTARTS)
        if self.has_discrete and self.radius_init <= self.radius_min:
            raise ValueError(f"trust_region radius_init ({self.radius_init}) must exceed radius_min "
                             f"({self.radius_min}); a region that small restarts at once")
        self.n_restarts = 0
        #: initial-design rows of the current region still to ask (after a restart)
        self.queue: list[np.ndarray] = []
        #: a restart happened and its initial design has not been drawn yet
        self.restart_pending = False
        self._reset()

    def _reset(self) -> None:
        self.radius = self.radius_init
        self.length = self.length_init
        self.n_success = 0
        self.n_failure = 0
        self.n_observed = 0
        self.best_value: float | None = None
        self.centre: np.ndarray | None = None

    # -- the state machine ------------------------------------------------------------------
    def observe(self, row: np.ndarray, value: float) -> str:
        """Update with one observation; returns what happened: ``"initial"`` (counters not started),
        ``"success"``, ``"failure"``, ``"expand"``, ``"shrink"`` or ``"restart"``."""
        value = float(value)
        counting = self.n_observed >= self.n_initial and self.best_value is not None
        event = "initial"
        if counting:
            assert self.best_value is not None
            if value < self.best_value - self.min_improvement * abs(self.best_value):
                self.n_success, self.n_failure, event = self.n_success + 1, 0, "success"
            else:
                self.n_success, self.n_failure, event = 0, self.n_failure + 1, "failure"
        self.n_observed += 1
        if self.best_value is None or value < self.best_value:
            self.best_value, self.centre = value, np.asarray(row, dtype=self.space.row_dtype).copy()
        if self.n_success >= self.succ_tol:
            self.radius = int(math.floor(min(self.factor * self.radius, self.radius_max)))
            self.length = min(self.factor * self.length, self.length_max)
            self.n_success, event = 0, "expand"
        elif self.n_failure >= self.fail_tol:
            self.radius = int(math.floor(self.radius / self.factor))
            self.length = max(self.length / self.factor, self.length_min)
            self.n_failure, event = 0, "shrink"
        if self.too_small:
            self.restart()
            event = "restart"
        return event

    @property
    def too_small(self) -> bool:
        """The restart condition: ``radius <= radius_min`` or ``length <= length_min`` (for the parts the space has)."""
        return (self.has_discrete and self.radius <= self.radius_min) or (
            self.has_continuous and self.length <= self.length_min)

    def restart(self) -> None:
        """Start a new region: initial sizes, no centre, a new initial design to draw."""
        self._reset()
        self.n_restarts += 1
        self.queue = []
        self.restart_pending = True

    def design_row(self, exclude: set[bytes], rng: np.random.Generator) -> np.ndarray | None:
        """The next row of a restarted region's initial design, or ``None`` once it is asked (the
        model's turn). The design, ``n_initial`` distinct random rows not in ``exclude``, is drawn
        from ``rng`` at the first call after a restart (fewer if the space has fewer left)."""
        if self.restart_pending:
            self.restart_pending = False
            taken, self.queue = set(exclude), []
            for _ in range(100):
                if len(self.queue) >= self.n_initial:
                    break
                for r in self.space.sample_index(self.n_initial - len(self.queue), rng):
                    if r.tobytes() not in taken:
                        taken.add(r.tobytes())
                        self.queue.append(r)
        while self.queue:
            row = self.queue.pop(0)
            if row.tobytes() not in exclude:
                return row
        return None

    def region(self) -> Region | None:
        """The current region, or ``None`` while it has no centre (before its first observation)."""
        if self.centre is None:
            return None
        return Region(self.space, self.centre, radius=self.radius, length=self.length, ordinals=self.ordinals)

    # -- resumable state ------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The state as plain JSON values."""
        return {
            "radius": self.radius, "length": self.length, "n_success": self.n_success,
            "n_failure": self.n_failure, "n_observed": self.n_observed, "best_value": self.best_value,
            "centre": None if self.centre is None else self.centre.tolist(), "n_restarts": self.n_restarts,
            "restart_pending": self.restart_pending, "queue": [r.tolist() for r in self.queue],
        }

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore what :meth:`state` returned."""
        dt = self.space.row_dtype
        self.radius, self.length = int(state["radius"]), float(state["length"])
        self.n_success, self.n_failure = int(state["n_success"]), int(state["n_failure"])
        self.n_observed, self.n_restarts = int(state["n_observed"]), int(state["n_restarts"])
        self.best_value = None if state["best_value"] is None else float(state["best_value"])
        self.centre = None if state["centre"] is None else np.asarray(state["centre"], dtype=dt)
        self.restart_pending = bool(state["restart_pending"])
        self.queue = [np.asarray(r, dtype=dt) for r in state["queue"]]
