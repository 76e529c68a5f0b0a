"""Pest control along a chain of stations (COMBO supplement Sec. 4.2.2).

Pests spread in one direction along ``N`` stations. At each station one of
four pesticides (1-4) or none (0) is used. The pest fraction follows the
contamination-control dynamics (supplement Eq. (14)); pesticides differ in
price and effectiveness, buying one often earns a price discount, and using
one often makes the pests tolerant to it.
"""

from __future__ import annotations

import numpy as np

from ..spaces import Categorical, Ordinal, Space
from .base import Benchmark

__all__ = ["PestControl"]

# Constants of the COMBO reference code's pest-control scoring function.
THRESHOLD = 0.1  # u: a station counts as infested when its pest fraction exceeds u
INIT_BETA = (1.0, 30.0)  # initial pest fraction Z_0 ~ Beta(1, 30)
SPREAD_BETA = (1.0, 17.0 / 3.0)  # spread rate alpha_i ~ Beta(1, 17/3)
CONTROL_ALPHA = 1.0  # effectiveness of pesticide l ~ Beta(1, T^(l))
# per pesticide 1..4 (index 0 unused: no pesticide)
PRICE = np.array([0.0, 1.0, 0.8, 0.7, 0.5])  # list price
MAX_DISCOUNT = np.array([0.0, 0.2, 0.3, 0.3, 0.0])  # discount when bought at every station
CONTROL_BETA = np.array([1.0, 2.0 / 7.0, 3.0 / 7.0, 3.0 / 7.0, 5.0 / 7.0])  # initial T^(l)
TOLERANCE_RATE = np.array([0.0, 1.0 / 7.0, 2.5 / 7.0, 2.0 / 7.0, 0.5 / 7.0])  # growth of T^(l) over all stations
GRAPHS = ("complete", "path")  # graph on each station's actions


class PestControl(Benchmark):
    """Pest control: 25 stations, each a categorical choice of 5 (COMBO supplement Sec. 4.2.2).

    Station ``i`` takes action ``A_i in {0, 1, 2, 3, 4}`` (0: no pesticide).
    For each of ``T = 100`` simulations the pest fraction evolves as

    * no pesticide: ``Z_i = alpha_i (1 - Z_{i-1}) + Z_{i-1}``, ``alpha_i ~ Beta(1, 17/3)``;
    * pesticide ``l``: ``Z_i = (1 - g_i) Z_{i-1}`` with effectiveness
      ``g_i ~ Beta(1, T^(l)_i)``, where ``T^(l)_i`` starts at ``(2, 3, 3, 5)/7`` and
      grows by ``(1, 2.5, 2, 0.5) / 7 / N`` after each use of ``l`` (tolerance),

    from ``Z_0 ~ Beta(1, 30)``. A use of pesticide ``l`` costs
    ``C^(l) (1 - D^(l) n_l / N)``, with list prices ``C = (1, 0.8, 0.7, 0.5)``,
    maximal discounts ``D = (0.2, 0.3, 0.3, 0)`` and ``n_l`` the number of
    stations that use ``l``. The objective (supplement Eq. (15)) is the total
    price paid plus ``sum_{i=1}^{N} mean_k 1{Z_{i-1,k} > 0.1}``, the fraction of
    simulations infested on arrival at each station. All constants are those
    of the COMBO reference code.

    Parameters
    ----------
    seed : int, default 0
        Seed of the simulation stream.
    n_stages : int, default 25
        Number of stations ``N`` (25 in the supplement and reference code;
        the COMBO main text says 21).
    graph : {"complete", "path"}, default "complete"
        Graph on each station's five actions: ``"complete"`` (a categorical
        variable, as the COMBO paper treats this problem) or ``"path"``
        (``0 - 1 - 2 - 3 - 4`` with unit edges, as the COMBO reference code
        builds it; an :class:`~graphbo.spaces.Ordinal` variable).
    noisy : bool, default False
        Score each plan with its own simulation stream, drawn from
        ``numpy.random.default_rng([seed, *plan])``, instead of the instance's
        one: the objective is then noisy across plans, as the reference code's
        (which draws fresh simulations at every evaluation), while a plan
        evaluated twice gets the same value and a run is reproducible.

    Notes
    -----
    As in the reference code, the discount counts every station that uses
    the pesticide (the whole plan, not only earlier purchases), and the
    infestation term counts ``Z_0 .. Z_{N-1}``, not the final ``Z_N``.

    The reference code draws its simulations from NumPy's unseeded global
    generator, so its objective is noisy. Here the simulation stream is fixed
    by ``seed``: it is what ``numpy.random.default_rng(seed)`` yields (drawn
    once at construction, which is equivalent to a fresh generator in each
    evaluation since the draws do not depend on the configuration), so the
    same configuration always gives the same value for a given ``seed``
    (``noisy=True`` gives each configuration a stream of its own instead). The
    effectiveness ``Beta(1, b)`` is drawn by inversion, ``1 - (1 - U)^(1/b)``, from
    one uniform ``U`` per station and simulation, so configurations share
    their random numbers (common random numbers). The simulations are
    vectorised.

    By default each station is a categorical variable (complete graph on its 5
    values), following the COMBO paper's treatment of this problem as
    multi-categorical; the COMBO reference code puts a path graph on the
    values instead (``graph="path"``). The objective is the same either way.
    """

    name = "pestcontrol"
    default_budget = 320
    default_n_initial = 20

    n_simulations = 100
    n_choices = 5

    def __init__(self, seed: int = 0, n_stages: int = 25, *, graph: str = "complete", noisy: bool = False):
        if int(n_stages) != n_stages or n_stages < 1:
            raise ValueError(f"PestControl: n_stages must be a positive integer, got {n_stages!r}")
        if graph not in GRAPHS:
            raise ValueError(f"PestControl: graph must be one of {GRAPHS}, got {graph!r}")
        if not isinstance(noisy, (bool, np.bool_)):
            raise ValueError(f"PestControl: noisy must be true or false, got {noisy!r}")
        if noisy and seed is None:
            raise ValueError("PestControl: noisy=True seeds each plan's stream with seed; give an integer seed")
        self.seed = seed
        self.graph = graph
        self.noisy = bool(noisy)
        self.n_stages = int(n_stages)
        n = self.n_stages
        self.init_fraction, self.spread_rates, self.control_uniforms = self._simulations(np.random.default_rng(seed))
        actions = list(range(self.n_choices))
        station = (lambda: Categorical(actions)) if graph == "complete" else (lambda: Ordinal(actions, edge_weight=1.0))
        self.space = Space({f"station{i + 1}": station() for i in range(n)})

    def _simulations(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One simulation stream: ``Z_0`` (T,), spread rates (N, T) and the uniforms of the effectiveness (N, T)."""
        n, t = self.n_stages, self.n_simulations
        return rng.beta(*INIT_BETA, size=t), rng.beta(*SPREAD_BETA, size=(n, t)), rng.random((n, t))

    def stream_of(self, row) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The simulation stream that scores plan ``row``: the instance's, or with ``noisy=True`` the
        plan's own, drawn from ``default_rng([seed, *row])``."""
        if not self.noisy:
            return self.init_fraction, self.spread_rates, self.control_uniforms
        return self._simulations(np.random.default_rng([int(self.seed), *(int(v) for v in np.asarray(row))]))

    def price_paid(self, row) -> float:
        """Total price of the pesticides bought by plan ``row`` (value per station)."""
        a = np.asarray(row, dtype=np.int64)
        counts = np.bincount(a, minlength=self.n_choices).astype(float)
        unit = PRICE * (1.0 - MAX_DISCOUNT * counts / self.n_stages)
        return float(np.dot(counts[1:], unit[1:]))

    def pest_fractions(self, row) -> np.ndarray:
        """Pest fractions ``Z_0 .. Z_N`` of every simulation, shape ``(N + 1, T)``."""
        a = np.asarray(row, dtype=np.int64)
        n = self.n_stages
        # tolerance: beta parameter of the chosen pesticide at each station, from its earlier uses
        onehot = a[:, None] == np.arange(self.n_choices)[None, :]
        uses_before = np.cumsum(onehot, axis=0) - onehot
        beta = CONTROL_BETA[a] + TOLERANCE_RATE[a] / n * uses_before[np.arange(n), a]
        init_fraction, spread_rates, control_uniforms = self.stream_of(a)
        z = np.empty((n + 1, self.n_simulations))
        z[0] = init_fraction
        for i in range(n):
            if a[i] > 0:
                effect = 1.0 - (1.0 - control_uniforms[i]) ** (1.0 / beta[i])  # ~ Beta(1, beta[i])
                z[i + 1] = (1.0 - effect) * z[i]
            else:
                z[i + 1] = spread_rates[i] * (1.0 - z[i]) + z[i]
        return z

    def evaluate_index(self, row) -> float:
        z = self.pest_fractions(row)
        infested = float(np.sum(np.mean(z[:-1] > THRESHOLD, axis=1)))
        return self.price_paid(row) + infested
