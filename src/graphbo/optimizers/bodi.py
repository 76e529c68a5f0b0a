"""BODi: Bayesian optimisation over discrete spaces with dictionary-based embeddings.

Deshwal, Ament, Balandat, Bakshy, Doppa & Eriksson, "Bayesian Optimization over High-Dimensional
Combinatorial Spaces via Dictionary-based Embeddings", AISTATS 2023 (arXiv:2303.01774). A published
successor of COMBO for binary and categorical spaces, here a baseline graphbo's methods are measured
against. At every suggestion:

1. **Dictionary.** ``m`` random configurations ``a_1..a_m`` of the space (default ``m = 128``), drawn
   afresh, each with a sparsity of its own ("diverse random" dictionary):

   * every variable binary: element ``i`` has ``k_i`` ones at uniformly random positions, ``k_i``
     uniform on ``{1, ..., d - 2}`` (the authors' ``generate_random_basis_vector``; at least one one);
   * otherwise (categorical levels, ordinal levels taken as categories): element ``i`` draws level
     probabilities ``theta_i`` uniformly from the simplex over the largest number of levels ``L``, and
     each coordinate independently from ``theta_i`` (restricted to a random subset of the variable's
     own ``L_j`` levels and renormalised when ``L_j < L``). For binary variables this is the same
     distribution given ``k_i`` (the ones are at uniformly random positions), with ``k_i`` uniform on
     ``{0, ..., d}``.

2. **Embedding.** ``phi(x)_i = h(x, a_i) / d``, the fraction of coordinates where ``x`` and ``a_i``
   differ (the Hamming distance over ``d``; categorical: the number of differing coordinates). The
   authors' kernel uses the similarity ``1 - h / d``; a stationary kernel sees the same differences.

3. **Surrogate.** A GP on the embedding (BoTorch ``SingleTaskGP``) with a constant mean and the kernel
   ``s * Matern-5/2`` with one length-scale per dictionary element (ARD over the ``m`` embedding
   coordinates, no length-scale prior); ``s`` with a Gamma(2, 0.15) prior (concentration, rate) and
   at least 1e-6; Gaussian noise with a Gamma(0.9, 10) prior and at least 1e-6. The observations are
   standardised; the hyper-parameters are fitted by maximising the marginal likelihood plus the log
   priors (L-BFGS-B, ``botorch.fit.fit_gpytorch_mll``), from GPyTorch's initial values at every
   suggestion.

4. **Acquisition.** Expected improvement on the best observed value, maximised by local search:
   ``n_candidates`` (2,000) uniformly random configurations plus every Hamming neighbour (one variable
   changed to any other level) of the best observation are scored; the ``n_restarts`` (20) best start
   a steepest-ascent local search over Hamming neighbours, at most ``n_local_steps`` (50) moves each.

The authors' values, from their code (github.com/aryandeshwal/BODi, ``bodi/dictionary_kernel.py``,
``bodi/run_experiment.py``, ``bodi/optimize.py``): the dictionary construction, the similarity
embedding, the Matern-5/2 ARD kernel inside a scaled kernel, the priors and floors (the noise floor is
BoTorch's ``MIN_INFERRED_NOISE_LEVEL`` of their time, 1e-6), the standardisation, expected improvement
with the best observed value as incumbent, 2,000 random candidates plus the best point's neighbours,
20 restarts and 50 local steps, and a new dictionary at every iteration. The README recommends 64 or
128 dictionary elements.

Where graphbo differs, and why:

* The initial design is graphbo's (``n_initial`` uniformly random configurations, the same for every
  method of a seed); the authors draw 20 points with a random number of ones each.
* Expected improvement is computed as its logarithm (BoTorch's ``LogExpectedImprovement``): the same
  ranking wherever EI is representable, and no ties at zero far from the data.
* A suggestion is never a configuration already evaluated, failed or pending: the local search moves
  through any configuration, and the suggestion is the best-scoring one it met that is none of these
  (a uniformly random new configuration if it met none). Known constraints of the space score refused
  configurations below every allowed one (:func:`graphbo.optim.known_constraints.allowed_only`).
* Pending evaluations are a kriging believer, as in graphbo's other model-based methods: the fitted GP
  is conditioned on each pending configuration at its posterior mean (the authors use q-EI for
  batches).
* The GP is fitted on at most ``max_train`` observations (:func:`graphbo.optimizers.base.training_subset`).

Requires BoTorch and GPyTorch (``pip install "graphbo[botorch]"``), imported when the optimizer is
constructed, never at ``import graphbo``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Callable, Sequence

import numpy as np

from .._lazy import require
from .._validation import check_int
from ..exceptions import SpaceExhaustedError
from ..optim.known_constraints import REFUSED_SCORE, allowed_only
from ..spaces.space import Space
from ..spaces.variables import Variable
from .base import DEFAULT_MAX_TRAIN, Configs, Optimizer, check_max_train

__all__ = ["BODi", "diverse_dictionary", "hamming_embedding", "hamming_neighbours", "levels_of"]

#: the smallest noise variance the GP infers (BoTorch's ``MIN_INFERRED_NOISE_LEVEL`` of early 2023, which the
#: authors' code names)
NOISE_FLOOR = 1e-6
#: the smallest signal variance (the authors' ``outputscale_constraint``)
OUTPUTSCALE_FLOOR = 1e-6
#: Gamma priors (concentration, rate) of the signal and the noise variance, from the authors' code
OUTPUTSCALE_PRIOR = (2.0, 0.15)
NOISE_PRIOR = (0.9, 10.0)
#: booleans compared at once when embedding (rows x dictionary x variables): bounds the memory of a batch
_EMBED_CHUNK = 1 << 24
#: rows scored in one call of the acquisition
_SCORE_CHUNK = 4096


def levels_of(space: Space) -> np.ndarray:
    """The number of levels of each variable of a discrete space, in row order (a conditional variable's
    declared values, without the inactive vertex the space adds)."""
    return np.array([int(v.n_values) for v in space.declared_variables], dtype=np.int64)


def diverse_dictionary(levels: Sequence[int] | np.ndarray, m: int, *, rng: np.random.Generator) -> np.ndarray:
    """``m`` dictionary elements (index rows, ``(m, d)`` int64) with diverse sparsities (module docstring, 1).

    ``levels[j]`` is the number of levels of variable ``j``. When every variable has two levels, element ``i``
    has ``k_i`` ones at uniformly random positions, ``k_i`` uniform on ``{1, ..., max(1, d - 2)}``; otherwise
    it draws level probabilities uniformly from the simplex and each coordinate from them.
    """
    lv = np.asarray(levels, dtype=np.int64).reshape(-1)
    d = lv.size
    out = np.zeros((m, d), dtype=np.int64)
    if d == 0 or m == 0:
        return out
    if np.all(lv == 2):
        ones = rng.integers(1, max(1, d - 2) + 1, size=m)
        for i in range(m):
            out[i, rng.permutation(d)[: ones[i]]] = 1
        return out
    top = int(lv.max())
    for i in range(m):
        theta = rng.dirichlet(np.ones(top))
        for j in range(d):
            n = int(lv[j])
            if n == top:
                p = theta
            else:
                p = theta[rng.choice(top, size=n, replace=False)]
                p = p / p.sum()
            out[i, j] = rng.choice(n, p=p)
    return out


def hamming_embedding(rows: np.ndarray, dictionary: np.ndarray) -> np.ndarray:
    """``phi(x)_i``: the fraction of coordinates where each row differs from dictionary element ``i``,
    shape ``(n, m)`` float64 (``n`` rows, ``m`` elements)."""
    X = np.asarray(rows).reshape(len(rows), -1)
    A = np.asarray(dictionary).reshape(len(dictionary), -1)
    n, d = X.shape
    out = np.empty((n, A.shape[0]), dtype=np.float64)
    if n == 0 or A.shape[0] == 0:
        return out
    step = max(1, _EMBED_CHUNK // max(1, A.shape[0] * d))
    for s in range(0, n, step):
        out[s : s + step] = np.count_nonzero(X[s : s + step, None, :] != A[None, :, :], axis=2)
    out /= max(d, 1)
    return out


def hamming_neighbours(rows: np.ndarray, levels: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every row with one variable changed to another of its levels.

    Returns ``(neighbours, owner)``: ``neighbours`` has ``len(rows) * sum(levels - 1)`` rows (of the rows'
    dtype), and ``owner[k]`` is the position in ``rows`` of the row ``neighbours[k]`` was made from.
    """
    R = np.asarray(rows)
    lv = np.asarray(levels, dtype=np.int64).reshape(-1)
    blocks, owners = [], []
    for j, n in enumerate(lv):
        if n < 2:
            continue
        keep = np.arange(n)[None, :] != R[:, j : j + 1]
        b, level = np.nonzero(keep)
        block = R[b].copy()
        block[:, j] = level
        blocks.append(block)
        owners.append(b)
    if not blocks:
        return np.empty((0, R.shape[1]), dtype=R.dtype), np.empty(0, dtype=np.int64)
    return np.concatenate(blocks), np.concatenate(owners).astype(np.int64)


class BODi(Optimizer):
    """BODi (Deshwal et al., AISTATS 2023): a GP on Hamming distances to a random dictionary, for discrete spaces.

    See the module docstring for the method, the authors' values and where graphbo differs.

    Parameters
    ----------
    space : Space
        Every variable must be discrete (Binary, Categorical, Ordinal, GraphVariable): ordinal levels and a
        graph variable's vertices are taken as unordered categories, as the method defines them.
    seed : int or None
        Seed of every random choice (the dictionaries, the candidates, the fit's restarts).
    n_initial : int, default 10
        Uniformly random configurations before the model takes over.
    initial_configs : list of dict, optional
        Configurations to ask first (they count towards ``n_initial``).
    n_dictionary : int, default 128
        Dictionary elements ``m``: the dimension of the embedding (the README recommends 64 or 128).
    n_candidates : int, default 2000
        Uniformly random configurations scored to choose the local searches' starts.
    n_restarts : int, default 20
        Local searches, from the best-scoring candidates.
    n_local_steps : int, default 50
        Moves per local search at most (each to the best Hamming neighbour, while it improves).
    max_train : int or None, default 500
        Observations the GP is fitted on at most (:func:`graphbo.optimizers.base.training_subset`).

    Raises
    ------
    ValueError
        If a variable of ``space`` is continuous (the message names every such variable).
    graphbo._lazy.MissingExtraError
        If BoTorch or GPyTorch is not installed (``pip install "graphbo[botorch]"``).
    """

    name = "bodi"

    def __init__(self, space: Space, *, seed: int | None = None, n_initial: int = 10,
                 initial_configs: Configs | None = None, n_dictionary: int = 128, n_candidates: int = 2000,
                 n_restarts: int = 20, n_local_steps: int = 50, max_train: int | None = DEFAULT_MAX_TRAIN):
        self.n_dictionary = check_int("n_dictionary", n_dictionary, minimum=1)
        self.n_candidates = check_int("n_candidates", n_candidates, minimum=1)
        self.n_restarts = check_int("n_restarts", n_restarts, minimum=1)
        self.n_local_steps = check_int("n_local_steps", n_local_steps, minimum=0)
        self.max_train = check_max_train(max_train)
        super().__init__(space, seed=seed, n_initial=n_initial, initial_configs=initial_configs)
        continuous = [f"{name!r} ({var!r})" for name, var in zip(space.names, space.variables)
                      if not isinstance(var, Variable)]
        if continuous:
            raise ValueError(f"{type(self).__name__} handles discrete variables only (Binary, Categorical, Ordinal, "
                             f"GraphVariable); continuous: {', '.join(continuous)}. For spaces with continuous "
                             "variables use method 'bofm'")
        require("gpytorch", type(self).__name__, extra="botorch")
        require("botorch", type(self).__name__, extra="botorch")
        #: the number of levels of each variable
        self.levels = levels_of(space)
        #: the dictionary of the latest model-based suggestion (``(m, d)`` index rows), ``None`` before it
        self.dictionary: np.ndarray | None = None

    # -- the suggestion ------------------------------------------------------------------------------------
    def _suggest(self) -> np.ndarray:
        exclude = self._exclude
        if len(exclude) >= self.space.size:
            raise SpaceExhaustedError(f"all {self.space.size} configurations have been evaluated or are pending")
        if self.n_told < 2:  # nothing to standardise yet
            return self._distinct_random_rows(1, exclude)[0]
        import torch

        y_all = self.y
        train = self._training_indices(y_all)
        X, y = self.X[train], y_all[train]
        dictionary = self._canonical(diverse_dictionary(self.levels, self.n_dictionary, rng=self.rng))
        self.dictionary = dictionary
        torch_seed = int(self.rng.integers(2**63))
        pool = self.space.sample_index(self.n_candidates, self.rng)
        incumbent = self.X[self._incumbent_index()]
        spray = self._canonical(hamming_neighbours(incumbent[None, :], self.levels)[0])
        pool = np.unique(np.concatenate([pool, spray]).astype(self.space.row_dtype), axis=0)
        with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
            torch.manual_seed(torch_seed)
            warnings.simplefilter("ignore")  # BoTorch's and GPyTorch's fitting and jitter notices
            score = allowed_only(self._acquisition(X, y, dictionary), self.space)
            row = self._search(score, pool, exclude)
        return row if row is not None else self._distinct_random_rows(1, exclude)[0]

    def _canonical(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` in the space's canonical form (inactive conditional variables on their vertex)."""
        rows = np.asarray(rows, dtype=self.space.row_dtype)
        return self.space.canonical(rows) if self.space.conditions else rows

    def _acquisition(self, X: np.ndarray, y: np.ndarray, dictionary: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """Log-EI of the GP fitted on ``(X, y)`` embedded by ``dictionary``, conditioned on the pending
        configurations at its posterior mean, as a function of index rows (larger is better)."""
        import torch
        from botorch.acquisition.analytic import LogExpectedImprovement
        from botorch.exceptions.errors import ModelFittingError
        from botorch.fit import fit_gpytorch_mll
        from botorch.models import SingleTaskGP
        from gpytorch.constraints import GreaterThan
        from gpytorch.kernels import MaternKernel, ScaleKernel
        from gpytorch.likelihoods import GaussianLikelihood
        from gpytorch.mlls import ExactMarginalLogLikelihood
        from gpytorch.priors import GammaPrior

        dtype = torch.float64
        mean = float(np.mean(y))
        std = float(np.std(y, ddof=1)) if y.size > 1 else 0.0
        std = std if std > 0 and math.isfinite(std) else 1.0
        ys = (y - mean) / std
        Z = torch.as_tensor(hamming_embedding(X, dictionary), dtype=dtype)
        Y = torch.as_tensor(ys, dtype=dtype).reshape(-1, 1)
        likelihood = GaussianLikelihood(noise_prior=GammaPrior(torch.tensor(NOISE_PRIOR[0], dtype=dtype),
                                                               torch.tensor(NOISE_PRIOR[1], dtype=dtype)),
                                        noise_constraint=GreaterThan(NOISE_FLOOR))
        kernel = ScaleKernel(MaternKernel(nu=2.5, ard_num_dims=dictionary.shape[0]),
                             outputscale_prior=GammaPrior(torch.tensor(OUTPUTSCALE_PRIOR[0], dtype=dtype),
                                                          torch.tensor(OUTPUTSCALE_PRIOR[1], dtype=dtype)),
                             outputscale_constraint=GreaterThan(OUTPUTSCALE_FLOOR))
        model = SingleTaskGP(Z, Y, likelihood=likelihood, covar_module=kernel, outcome_transform=None)
        model.to(dtype)
        try:
            fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
        except ModelFittingError:  # every attempt failed: the model keeps the parameters BoTorch left
            pass
        model.eval()
        pending = list(self._pending.values())
        if pending:  # kriging believer: each pending configuration "observed" at the posterior mean
            Zp = torch.as_tensor(hamming_embedding(np.stack(pending), dictionary), dtype=dtype)
            with torch.no_grad():
                believed = model.posterior(Zp).mean
            believer = model.condition_on_observations(Zp, believed)
        else:
            believer = model
        acq = LogExpectedImprovement(believer, best_f=float(np.min(ys)), maximize=False)

        def score(rows: np.ndarray) -> np.ndarray:
            out = np.empty(len(rows), dtype=np.float64)
            with torch.no_grad():
                for s in range(0, len(rows), _SCORE_CHUNK):
                    Zc = torch.as_tensor(hamming_embedding(rows[s : s + _SCORE_CHUNK], dictionary), dtype=dtype)
                    out[s : s + _SCORE_CHUNK] = acq(Zc.unsqueeze(-2)).detach().cpu().numpy().reshape(-1)
            return np.where(np.isnan(out), -np.inf, out)

        return score

    def _search(self, score: Callable[[np.ndarray], Any], pool: np.ndarray, exclude: Any) -> np.ndarray | None:
        """The best-scoring configuration met, neither excluded nor refused: ``pool`` scored, then steepest-ascent
        local searches over Hamming neighbours from its ``n_restarts`` best; ``None`` if it met none."""
        best: list[Any] = [None, -math.inf]

        def consider(rows: np.ndarray, values: np.ndarray) -> None:
            for k in np.argsort(-values, kind="stable"):
                if values[k] <= best[1] or values[k] <= REFUSED_SCORE:
                    return
                if rows[k].tobytes() not in exclude:
                    best[0], best[1] = rows[k].copy(), float(values[k])
                    return

        values = np.asarray(score(pool), dtype=float)
        consider(pool, values)
        top = np.argsort(-values, kind="stable")[: self.n_restarts]
        current, current_value = pool[top].copy(), values[top].copy()
        active = np.arange(top.size)
        for _ in range(self.n_local_steps):
            if not active.size:
                break
            neighbours, owner = hamming_neighbours(current[active], self.levels)
            if self.space.conditions:  # canonical, and without the moves that change nothing
                neighbours = self._canonical(neighbours)
                changed = np.any(neighbours != current[active][owner], axis=1)
                neighbours, owner = neighbours[changed], owner[changed]
            if not neighbours.shape[0]:
                break
            nv = np.asarray(score(neighbours), dtype=float)
            consider(neighbours, nv)
            order = np.lexsort((-nv, owner))  # each owner's best neighbour first
            first = order[np.r_[True, owner[order][1:] != owner[order][:-1]]]
            has = np.zeros(active.size, dtype=bool)
            best_nv = np.full(active.size, -math.inf)
            best_at = np.zeros(active.size, dtype=np.int64)
            has[owner[first]] = True
            best_nv[owner[first]] = nv[first]
            best_at[owner[first]] = first
            improved = has & (best_nv > current_value[active])
            moved = active[improved]
            current[moved] = neighbours[best_at[improved]]
            current_value[moved] = best_nv[improved]
            active = moved
        return best[0]
