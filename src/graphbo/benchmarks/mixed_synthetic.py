"""Mixed continuous/categorical synthetic problems: Func2C, Func3C, Ackley5C.

Func2C and Func3C were proposed with CoCaBO (Ru, Alvi, Nguyen, Osborne,
Roberts, "Bayesian optimisation over multiple continuous and categorical
inputs", ICML 2020; reference code ``rubinxin/CoCaBO_code``,
``testFunctions/syntheticFunctions.py``). Ackley5C was added by BO-FM (Oh,
Gavves, Welling, "Mixed variable Bayesian optimization with frequency
modulated kernels", UAI 2021, Sec. 5.1, Table 1 and footnote 9; reference code
``ChangYong-Oh/FrequencyModulatedKernelBO``,
``experiments/data/benchmark_functions.py``). The search spaces are those of
BO-FM's Table 1; every categorical variable is a :class:`Categorical` (a
complete graph), as BO-FM treats them as nominal.

Definitions (as in the reference code; ``x`` is the continuous input on its
native range ``[-1, 1]``):

* Func2C and Func3C evaluate 2-D test functions at ``z = 2 x`` in
  ``[-2, 2]^2``, each scaled down: Rosenbrock / 300, six-hump camel / 10 and
  Beale / 50. The categorical choices pick which scaled functions are added up
  (see :class:`Func2C` and :class:`Func3C`).
* Ackley5C is the 6-D Ackley function (``a = 20``, ``b = 0.2``,
  ``c = 2 pi``) at ``(x, h_1/8 - 1, ..., h_5/8 - 1)``, with each
  ``h_i in {0, ..., 16}``, i.e. each categorical value stands for one of the
  17 equally spaced points ``-1, -0.875, ..., 1``.

Unlike the reference code, no ``1e-6 * U(0, 1)`` noise is added: the
objectives here are deterministic.

The known global minima: only the six-hump camel term can be negative, and
its minimum, ``-1.0316284534898774`` at ``(+-0.0898420, -+0.7126564)``, lies
inside ``[-2, 2]^2``. So Func2C's minimum is ``0.2`` times it
(``-0.2063257``; BO-FM reports ``-0.2063`` for ModLap) and Func3C's is ``0.7``
times it (``-0.7221399``; BO-FM reports ``-0.7215 +- 0.0004``). Ackley5C's
minimum is ``0`` at ``x = 0``, all ``h_i = 8``.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from ..spaces import Categorical, Continuous, Space
from .base import Benchmark

__all__ = [
    "Func2C", "Func3C", "Ackley5C",
    "rosenbrock", "six_hump_camel", "beale", "ackley",
    "SIX_HUMP_CAMEL_MIN", "SIX_HUMP_CAMEL_ARGMIN",
]

#: Global minimum value of the (unscaled) six-hump camel function and one of its two minimisers
#: (the other is its negation).
SIX_HUMP_CAMEL_MIN = -1.0316284534898774
SIX_HUMP_CAMEL_ARGMIN = (0.08984201368301331, -0.7126564032704135)


# -- component test functions (vectorised, native domains) ----------------------------------------
def rosenbrock(z1, z2):
    """2-D Rosenbrock ``100 (z2 - z1^2)^2 + (z1 - 1)^2``; minimum 0 at ``(1, 1)``."""
    z1, z2 = np.asarray(z1, dtype=float), np.asarray(z2, dtype=float)
    return 100.0 * (z2 - z1 * z1) ** 2 + (z1 - 1.0) ** 2


def six_hump_camel(z1, z2):
    """Six-hump camel ``(4 - 2.1 z1^2 + z1^4/3) z1^2 + z1 z2 + (4 z2^2 - 4) z2^2``; minimum -1.0316."""
    z1, z2 = np.asarray(z1, dtype=float), np.asarray(z2, dtype=float)
    s1, s2 = z1 * z1, z2 * z2
    return (4.0 - 2.1 * s1 + s1 * s1 / 3.0) * s1 + z1 * z2 + (4.0 * s2 - 4.0) * s2


def beale(z1, z2):
    """Beale ``sum_k (c_k - z1 + z1 z2^k)^2``, ``c = (1.5, 2.25, 2.625)``; minimum 0 at ``(3, 0.5)``."""
    z1, z2 = np.asarray(z1, dtype=float), np.asarray(z2, dtype=float)
    return ((1.5 - z1 + z1 * z2) ** 2 + (2.25 - z1 + z1 * z2 ** 2) ** 2
            + (2.625 - z1 + z1 * z2 ** 3) ** 2)


def ackley(z, *, a: float = 20.0, b: float = 0.2, c: float = 2.0 * math.pi):
    """Ackley function over the last axis of ``z``; minimum 0 at the origin."""
    z = np.asarray(z, dtype=float)
    rms = np.sqrt(np.mean(z * z, axis=-1))
    return -a * np.exp(-b * rms) - np.exp(np.mean(np.cos(c * z), axis=-1)) + a + math.e


def _scaled_components(x1, x2):
    """CoCaBO's three scaled 2-D functions at ``z = 2 x``, stacked: rows Rosenbrock, camel, Beale."""
    z1, z2 = 2.0 * np.asarray(x1, dtype=float), 2.0 * np.asarray(x2, dtype=float)
    return np.stack([rosenbrock(z1, z2) / 300.0, six_hump_camel(z1, z2) / 10.0, beale(z1, z2) / 50.0])


def _pick(table, index):
    """``table[index[n], n]`` for every column ``n``."""
    index = np.asarray(index, dtype=np.int64)
    return np.take_along_axis(table, index[None, :], axis=0)[0]


# -- shared machinery -----------------------------------------------------------------------------
class _MixedSynthetic(Benchmark):
    """Continuous variables first (native range ``[-1, 1]``), then categoricals valued ``0 .. k-1``."""

    default_budget = 200
    default_n_initial = 10
    _n_continuous: int
    _n_choices: tuple[int, ...]
    #: a configuration attaining :attr:`optimum`
    optimal_config: dict[str, Any]

    def __init__(self):
        cont = {f"x{i + 1}": Continuous(-1.0, 1.0) for i in range(self._n_continuous)}
        cats = {f"h{i + 1}": Categorical(list(range(k))) for i, k in enumerate(self._n_choices)}
        self.space = Space({**cont, **cats})
        self._cont_names = tuple(cont)
        self._cat_names = tuple(cats)

    def _values(self, h: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Objective for categorical values ``h`` (n, n_cat) and native continuous ``x`` (n, n_cont)."""
        raise NotImplementedError

    def __call__(self, config: Mapping[str, Any]) -> float:
        self.space.validate(config)
        h = np.array([[int(config[n]) for n in self._cat_names]], dtype=np.int64)
        x = np.array([[float(config[n]) for n in self._cont_names]], dtype=float)
        return float(self._values(h, x)[0])

    def evaluate_batch(self, rows) -> np.ndarray:
        """Objective at many rows of :attr:`space` (unit coordinates for ``x``, value indices for ``h``)."""
        rows = np.atleast_2d(np.asarray(rows, dtype=float))
        u = np.clip(rows[:, : self._n_continuous], 0.0, 1.0)
        x = -1.0 + 2.0 * u
        h = np.rint(rows[:, self._n_continuous:]).astype(np.int64)
        if np.any(h < 0) or np.any(h >= np.array(self._n_choices)):
            raise ValueError(f"{self.name}: categorical index out of range in rows {rows.tolist()!r}")
        return self._values(h, x)

    def evaluate_index(self, row) -> float:
        return float(self.evaluate_batch(np.asarray(row, dtype=float).reshape(1, -1))[0])


class Func2C(_MixedSynthetic):
    """Func2C (Ru et al. 2020, CoCaBO; BO-FM Table 1): ``x in [-1, 1]^2``, ``h1`` 3 choices, ``h2`` 5.

    With ``z = 2 x`` and the scaled functions ``R = Rosenbrock(z)/300``,
    ``C = six-hump camel(z)/10``, ``B = Beale(z)/50``::

        f = g1[h1] + g2[h2],   g1 = (R, C, B),   g2 = (R, C, B, B, B)

    (in the reference code every ``h2 >= 2`` selects Beale). Minimum
    ``0.2 * -1.0316285 = -0.2063257`` at ``h1 = h2 = 1``,
    ``x = +-(0.0449210, -0.3563282)``.
    """

    name = "func2c"
    optimum = 0.2 * SIX_HUMP_CAMEL_MIN
    _n_continuous = 2
    _n_choices = (3, 5)
    optimal_config = {"x1": SIX_HUMP_CAMEL_ARGMIN[0] / 2, "x2": SIX_HUMP_CAMEL_ARGMIN[1] / 2, "h1": 1, "h2": 1}

    def _values(self, h, x):
        comp = _scaled_components(x[:, 0], x[:, 1])
        return _pick(comp, h[:, 0]) + _pick(comp, np.minimum(h[:, 1], 2))


class Func3C(_MixedSynthetic):
    """Func3C (Ru et al. 2020, CoCaBO; BO-FM Table 1): ``x in [-1, 1]^2``, ``h1, h2, h3`` with 3, 5, 4 choices.

    As :class:`Func2C` plus a third term chosen by ``h3``::

        f = g1[h1] + g2[h2] + g3[h3],   g3 = (5 C, 2 R, 2 B, 3 B)

    (the reference code adds ``h3 * Beale/50`` for ``h3 >= 2``). Minimum
    ``0.7 * -1.0316285 = -0.7221399`` at ``h1 = h2 = 1``, ``h3 = 0``,
    ``x = +-(0.0449210, -0.3563282)``.
    """

    name = "func3c"
    optimum = 0.7 * SIX_HUMP_CAMEL_MIN
    _n_continuous = 2
    _n_choices = (3, 5, 4)
    optimal_config = {"x1": SIX_HUMP_CAMEL_ARGMIN[0] / 2, "x2": SIX_HUMP_CAMEL_ARGMIN[1] / 2,
                      "h1": 1, "h2": 1, "h3": 0}

    def _values(self, h, x):
        comp = _scaled_components(x[:, 0], x[:, 1])
        r, c, b = comp
        third = np.stack([5.0 * c, 2.0 * r, 2.0 * b, 3.0 * b])
        return _pick(comp, h[:, 0]) + _pick(comp, np.minimum(h[:, 1], 2)) + _pick(third, h[:, 2])


class Ackley5C(_MixedSynthetic):
    """Ackley5C (BO-FM, Oh et al. 2021, Sec. 5.1 and Table 1): ``x in [-1, 1]``, five 17-choice ``h_i``.

    ``f = Ackley(x, h1/8 - 1, ..., h5/8 - 1)`` in 6 dimensions (``a = 20``,
    ``b = 0.2``, ``c = 2 pi``), the BO-FM reference code's construction;
    minimum 0 at ``x = 0``, every ``h_i = 8``.
    """

    name = "ackley5c"
    optimum = 0.0
    _n_continuous = 1
    _n_choices = (17,) * 5
    optimal_config = {"x1": 0.0, **{f"h{i}": 8 for i in range(1, 6)}}

    def _values(self, h, x):
        z = np.concatenate([x, h * 0.125 - 1.0], axis=1)
        return ackley(z)
