"""graphbo's graph kernels as GPyTorch kernels, for BoTorch models.

:class:`DiffusionKernel` (COMBO, Oh et al. 2019) and
:class:`FrequencyModulatedKernel` (BO-FM, Oh et al. 2021) are
``gpytorch.kernels.Kernel`` subclasses built from a :class:`graphbo.Space`.
Their hyper-parameters are GPyTorch parameters with constraints (and optional
priors), so they can be fitted by ``botorch.fit.fit_gpytorch_mll`` and used in
any exact GPyTorch/BoTorch model::

    import torch
    from botorch.models import SingleTaskGP
    from botorch.fit import fit_gpytorch_mll
    from gpytorch.kernels import ScaleKernel
    from gpytorch.mlls import ExactMarginalLogLikelihood
    from graphbo.integrations.gpytorch import DiffusionKernel, encode

    train_X = encode(space, configs)                 # float64 index rows, (n, len(space))
    train_Y = torch.tensor(values, dtype=torch.float64).unsqueeze(-1)
    model = SingleTaskGP(train_X, train_Y, covar_module=ScaleKernel(DiffusionKernel(space)))
    fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    posterior = model.posterior(encode(space, candidates))

Inputs
------
Both kernels take the rows of :meth:`graphbo.Space.to_index` as a floating
tensor of shape ``(..., n, len(space))`` (BoTorch works in float64): a discrete
variable's column holds its value *index* (``0 .. k-1``, an integer stored as a
float), a continuous variable's column its unit coordinate in ``[0, 1]``.
:func:`encode` and :func:`decode` convert between configurations and rows.
Do not give the model an input transform that rescales the discrete columns
(``Normalize`` would turn indices into fractions): the kernels check that every
discrete entry is an integer index in range and raise ``ValueError`` otherwise.
With a custom ``covar_module`` BoTorch only checks the inputs for NaNs, so
index rows raise no unit-cube warning. ``Standardize`` on the outcomes (BoTorch's
default) is fine. The signal variance is not part of these kernels: wrap them
in ``gpytorch.kernels.ScaleKernel``. float32 inputs give float32 values that
agree with float64 to float32 precision (:class:`FrequencyModulatedKernel`
computes in float64 and casts its result).

Batches
-------
``batch_shape`` gives each batch member its own hyper-parameters. Batched kernels
can be indexed (``kernel[j]``) and expanded (``kernel.expand_batch``) as GPyTorch's
own kernels, which GPyTorch also does inside batched multi-output models;
``active_dims`` and the space's column indices are not batched and stay whole.

Hyper-parameters
----------------
Both kernels reuse graphbo's own kernel code (:mod:`graphbo.kernels`), which is
written in torch and differentiable in its hyper-parameters: this module maps
the constrained GPyTorch parameters onto the unconstrained ones graphbo's
kernels take (``log beta``, ...) and broadcasts over GPyTorch's batch shapes.

Notes on ``beta``: a large ``beta_i`` makes variable ``i``'s factor nearly
constant (the variable is *irrelevant*); ``beta_i -> 0`` makes the factor the
identity (only equal values correlate, the variable is *decisive*). So after
fitting, the variables that matter have the *smaller* betas.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Iterable, Mapping

import numpy as np
import torch
try:
    from gpytorch.constraints import Interval, Positive
    from gpytorch.kernels import Kernel
    from gpytorch.priors import Prior
except ModuleNotFoundError as _exc:  # pragma: no cover - depends on the install
    raise ModuleNotFoundError(f'graphbo.integrations.gpytorch needs GPyTorch/BoTorch ({_exc}): '
                              'pip install "graphbo[botorch]"') from _exc

from .._validation import check_int, check_mapping
from ..kernels.diffusion import GraphDiffusionKernel
from ..kernels.frequency_modulated import KERNELS as FM_KERNELS
from ..kernels.frequency_modulated import FMKernel
from ..spaces.space import Space
from ..spaces.variables import GraphSpectrum, Ordinal, Variable

__all__ = ["DiffusionKernel", "FrequencyModulatedKernel", "FM_KERNELS", "encode", "decode",
           "mixed_alternating_spec"]


# -- encoding helpers ---------------------------------------------------------------------------------
def encode(space: Space, configs: Iterable[Mapping[str, Any]], *, dtype: torch.dtype = torch.float64,
           device: torch.device | str | None = None) -> torch.Tensor:
    """Rows ``(n, len(space))`` of configurations, as the kernels of this module take them.

    Raises ``ValueError`` (from :meth:`Space.to_index`) naming any invalid value.
    """
    rows = [np.asarray(space.to_index(c), dtype=float) for c in configs]
    if not rows:
        return torch.empty(0, len(space), dtype=dtype, device=device)
    return torch.tensor(np.stack(rows), dtype=dtype, device=device)


def decode(space: Space, X: torch.Tensor | np.ndarray) -> list[dict[str, Any]]:
    """Configurations of rows ``(n, len(space))`` (e.g. candidates returned by a BoTorch optimizer).

    Discrete columns are rounded to the nearest index first.
    """
    rows = np.asarray(torch.as_tensor(X).detach().cpu(), dtype=float).reshape(-1, len(space))
    rows = rows.copy()
    rows[:, space.discrete_indices] = np.round(rows[:, space.discrete_indices])
    return [space.from_index(r) for r in rows]


def mixed_alternating_spec(space: Space, *, dtype: torch.dtype = torch.float64,
                           device: torch.device | str | None = None) -> dict[str, Any]:
    """Keyword arguments describing ``space`` to ``botorch.optim.optimize_acqf_mixed_alternating``.

    Returns ``bounds`` (``2 x len(space)``; continuous columns ``[0, 1]``, discrete ones
    ``[0, k-1]``), ``discrete_dims`` (ordinal variables: their indices, searched by BoTorch as
    ordered integers, which is their path graph), ``cat_dims`` (binary, categorical and
    general-graph variables: their indices, searched as unordered categories, so a
    :class:`~graphbo.GraphVariable`'s own edges shape the kernel but not the search) and
    ``options`` that keep BoTorch on integer indices: random initialisation instead of its
    default continuous relaxation, and local search (not relaxation) for every ordinal
    variable however many values it has. Update ``options`` with your own settings as needed.
    """
    bounds = torch.zeros(2, len(space), dtype=dtype, device=device)
    bounds[1] = 1.0
    discrete: dict[int, list[float]] = {}
    categorical: dict[int, list[float]] = {}
    for j, var in enumerate(space.variables):
        if isinstance(var, Variable):
            k = int(var.n_values)
            bounds[1, j] = k - 1
            (discrete if isinstance(var, Ordinal) else categorical)[j] = [float(i) for i in range(k)]
    max_values = max([len(v) for v in discrete.values()], default=0)
    options = {"initialization_strategy": "random", "max_discrete_values": max(20, max_values)}
    return {"bounds": bounds, "discrete_dims": discrete, "cat_dims": categorical, "options": options}


# -- shared machinery ---------------------------------------------------------------------------------
def _check_space(space: Any, who: str) -> Space:
    if not isinstance(space, Space):
        raise TypeError(f"{who}: space must be a graphbo.Space, got {type(space).__name__}")
    return space


def _check_batch_shape(batch_shape: Any) -> torch.Size:
    """``None`` (as ``torch.Size([])``) or a sequence of non-negative ints, as a ``torch.Size``."""
    if batch_shape is None:
        return torch.Size([])
    if isinstance(batch_shape, (str, bytes, Mapping)) or not isinstance(batch_shape, Iterable):
        raise TypeError(f"batch_shape must be None or a torch.Size (a sequence of ints), got {batch_shape!r}")
    return torch.Size([check_int(f"batch_shape[{i}]", n, minimum=0) for i, n in enumerate(batch_shape)])


def _check_active_dims(active_dims: Any, space: Space) -> tuple[int, ...] | None:
    """``None`` or one non-negative column index per variable of ``space``."""
    if active_dims is None:
        return None
    if isinstance(active_dims, torch.Tensor):
        active_dims = active_dims.tolist()
    if isinstance(active_dims, (str, bytes, Mapping)) or not isinstance(active_dims, Iterable):
        raise TypeError(f"active_dims must be None or a sequence of column indices, got {active_dims!r}")
    dims = tuple(check_int(f"active_dims[{i}]", d, minimum=0) for i, d in enumerate(active_dims))
    if len(dims) != len(space):
        raise ValueError(f"active_dims must give one column per variable of the space ({len(space)}: "
                         f"{list(space.names)!r}), got {list(dims)!r}")
    return dims


def _check_constraint(name: str, constraint: Any) -> Interval:
    if not isinstance(constraint, Interval):
        raise TypeError(f"{name} must be a gpytorch.constraints.Interval (e.g. Positive() or Interval(1e-4, 100.0)), "
                        f"got {type(constraint).__name__}")
    return constraint


def _spectra(space: Space) -> list[GraphSpectrum]:
    """The graph spectra of ``space``'s discrete variables, in the order of ``space.discrete_indices``."""
    return [v.spectrum for v in space.variables if isinstance(v, Variable)]


class _SpaceKernel(Kernel):
    """Common input handling: width check, discrete/continuous split, index validation."""

    has_lengthscale = False

    def __init__(self, space: Space, **kwargs):
        super().__init__(**kwargs)
        self.space = space
        disc = np.asarray(space.discrete_indices, dtype=np.int64)
        cont = np.asarray(space.continuous_indices, dtype=np.int64)
        # Column indices are plain CPU tensors, not buffers: GPyTorch's Kernel.__getitem__ and
        # expand_batch treat every buffer as batched (``buffer[index]``), which would index these
        # per-variable vectors by the batch index. They are moved to the inputs' device per call.
        self._disc_cols = torch.as_tensor(disc)
        self._cont_cols = torch.as_tensor(cont)
        self._disc_sizes = torch.as_tensor(np.asarray(space.n_values)[disc])
        self._cache: dict = {}  # graphbo kernel objects per (dtype, device)

    # -- batches --------------------------------------------------------------------------------------
    def _batch_op(self, method: Callable[..., Kernel], *args) -> Kernel:
        """``method(*args)`` (GPyTorch's ``__getitem__`` / ``expand_batch``) with ``active_dims`` left whole.

        GPyTorch applies the batch index (or expansion) to every buffer, ``active_dims`` included,
        although it has no batch dimension: ``kernel[0]`` of a batched kernel with
        ``active_dims=[0, 2, 4]`` would read column 0 only. The buffer is hidden for the call and
        given back to the original and to the new kernel.
        """
        active = self._buffers.get("active_dims")
        self._buffers["active_dims"] = None
        try:
            new = method(*args)
        finally:
            self._buffers["active_dims"] = active
        if new is not self:
            new._buffers["active_dims"] = None if active is None else active.clone()
        return new

    def __getitem__(self, index) -> Kernel:
        """The kernel of the batch members ``index`` (hyper-parameters indexed, the space unchanged)."""
        return self._batch_op(super().__getitem__, index)

    def expand_batch(self, *sizes) -> Kernel:
        """The kernel with its hyper-parameters expanded to a larger batch shape."""
        return self._batch_op(super().expand_batch, *sizes)

    def _check_width(self, x: torch.Tensor) -> None:
        if x.shape[-1] != len(self.space):
            raise ValueError(
                f"{type(self).__name__}: inputs have {x.shape[-1]} columns, the space has {len(self.space)} "
                f"variables {list(self.space.names)!r} (pass rows of graphbo.integrations.gpytorch.encode, "
                "or set active_dims to the columns that hold them)"
            )

    def _indices(self, x: torch.Tensor) -> torch.Tensor:
        """The discrete columns of ``x`` as int64 value indices, checked."""
        v = x.index_select(-1, self._disc_cols.to(x.device)).detach()
        sizes = self._disc_sizes.to(x.device)
        if v.is_floating_point():
            r = torch.round(v)
            bad = (r != v) | (r < 0) | (r >= sizes)
        else:
            r = v
            bad = (r < 0) | (r >= sizes)
        if bool(bad.any()):
            pos = bad.nonzero()[0]
            q = int(pos[-1])
            j = int(self._disc_cols[q])
            raise ValueError(
                f"{type(self).__name__}: column {j} (variable {self.space.names[j]!r}) holds "
                f"{float(v[tuple(pos)]):g}, which is not a value index in 0..{int(sizes[q]) - 1}. The kernel is "
                "defined on the graph's vertices only: optimise acquisitions over integer indices (e.g. "
                "optimize_acqf_discrete, optimize_acqf_discrete_local_search, optimize_acqf_mixed_alternating) "
                "and give the model no input transform that rescales these columns."
            )
        return r.long()

    def _continuous(self, x: torch.Tensor) -> torch.Tensor:
        return x.index_select(-1, self._cont_cols.to(x.device))

    def _constrained(self, name: str) -> torch.Tensor:
        """Constrained value of the parameter ``raw_<name>``."""
        return getattr(self, f"raw_{name}_constraint").transform(getattr(self, f"raw_{name}"))

    def _set_constrained(self, name: str, value) -> None:
        """Set ``raw_<name>`` so that its constrained value is ``value`` (broadcast to the parameter's shape)."""
        raw = getattr(self, f"raw_{name}")
        value = torch.as_tensor(value, dtype=raw.dtype, device=raw.device).expand_as(raw)
        self.initialize(**{f"raw_{name}": getattr(self, f"raw_{name}_constraint").inverse_transform(value)})


def _register(module: Kernel, name: str, shape: tuple[int, ...], constraint: Interval,
              prior: Prior | None, initial: float) -> None:
    """``raw_<name>`` parameter with its constraint, an optional prior, and a starting value.

    The start is ``initial`` when the constraint allows it, else the constraint's image of 0.
    """
    module.register_parameter(f"raw_{name}", torch.nn.Parameter(torch.zeros(*module.batch_shape, *shape)))
    module.register_constraint(f"raw_{name}", constraint)
    if prior is not None:
        if not isinstance(prior, Prior):
            raise TypeError(f"{name}_prior must be a gpytorch.priors.Prior, got {type(prior).__name__}")
        # module-level functions (not lambdas), so that models with priors can be pickled
        module.register_prior(f"{name}_prior", prior, functools.partial(_prior_value, name=name),
                              functools.partial(_prior_set_value, name=name))
    if constraint.check(torch.tensor(float(initial))):
        module._set_constrained(name, initial)


def _prior_value(module: "_SpaceKernel", name: str) -> torch.Tensor:
    return module._constrained(name)


def _prior_set_value(module: "_SpaceKernel", value, name: str) -> None:
    module._set_constrained(name, value)


def _logit(p: torch.Tensor) -> torch.Tensor:
    return torch.log(p) - torch.log1p(-p)


def _merge_batches(batch: torch.Size, *tensors: tuple[torch.Tensor, int]) -> list[torch.Tensor]:
    """Each ``(tensor, n_trailing_dims)`` broadcast to ``batch`` in front of its trailing dimensions and
    flattened to ``(prod(batch), *trailing)``."""
    out = []
    for t, tail in tensors:
        shape = t.shape[t.dim() - tail:]
        out.append(t.expand(*batch, *shape).reshape(math.prod(batch), *shape))
    return out


def _all_equal(t: torch.Tensor) -> bool:
    """Whether the slices ``t[b]`` of a flattened ``(B, ...)`` tensor are all the same."""
    if t.shape[0] <= 1 or t.stride(0) == 0:  # a single member, or one expanded without copying
        return True
    return bool((t == t[:1]).all())


# -- diffusion kernel ---------------------------------------------------------------------------------
class DiffusionKernel(_SpaceKernel):
    r"""ARD diffusion kernel on the graph Cartesian product of a space's discrete variables (COMBO).

    .. math::
        k(v, v') = \prod_i \frac{[U_i \exp(-\beta_i \Lambda_i) U_i^\top]_{v_i v'_i}}
                                {\operatorname{mean}_j \exp(-\beta_i \lambda_{ij})}

    (COMBO Eq. 5 in the factorised form of its supplement, Eq. 8, each factor
    divided by its mean eigen-weight as graphbo's COMBO does), with
    ``L(G_i) = U_i diag(lambda_i) U_i^T`` the Laplacian eigensystem that each
    variable caches. The value is computed by
    :class:`graphbo.kernels.GraphDiffusionKernel` (one-hot rows times a
    block-diagonal matrix of log factor tables), which is differentiable in
    ``log beta``, so ``fit_gpytorch_mll`` gets exact gradients.

    Parameters
    ----------
    space : graphbo.Space
        The search space. Inputs are its index rows (see the module docstring).
        In a mixed space the kernel acts on the discrete columns only and
        ignores the continuous ones: multiply it by a kernel on the continuous
        columns (``RBFKernel(active_dims=space.continuous_indices.tolist())``),
        or use :class:`FrequencyModulatedKernel`.
    beta_prior : gpytorch.priors.Prior, optional
        Prior on ``beta`` (one per discrete variable). graphbo's COMBO uses a
        horseshoe prior and slice sampling instead of a point estimate.
    beta_constraint : gpytorch.constraints.Interval, optional
        Default ``Positive()``. ``Interval(1e-4, 100.0)`` mirrors the bounds
        of graphbo's slice sampler and keeps ML-II away from the flat regions
        (``beta -> 0`` or ``beta -> inf``).
    batch_shape : torch.Size, optional
        Independent betas per batch (e.g. one per output of a batched multi-output model).
    active_dims : optional
        Columns of the model's inputs that hold the space's row, in order.
    unit_diagonal : bool, optional
        As :class:`graphbo.kernels.GraphDiffusionKernel`: by default the factors of ordinal
        paths and other graphs with unequal heat diagonals are scaled to unit diagonal (as
        graphbo's COMBO does); ``False`` gives supplement Eq. 8 as written for every variable.
    """

    def __init__(self, space: Space, *, beta_prior: Prior | None = None, beta_constraint: Interval | None = None,
                 batch_shape: torch.Size | None = None, active_dims: tuple[int, ...] | None = None,
                 unit_diagonal: bool | None = None, **kwargs):
        space = _check_space(space, "DiffusionKernel")
        if unit_diagonal is not None and not isinstance(unit_diagonal, bool):
            raise TypeError(f"unit_diagonal must be None (automatic), True or False, got {unit_diagonal!r}")
        self.unit_diagonal = unit_diagonal
        if space.discrete_indices.size == 0:
            raise ValueError("DiffusionKernel: the space has no discrete variables; use a continuous kernel")
        constraint = Positive() if beta_constraint is None else _check_constraint("beta_constraint", beta_constraint)
        if beta_prior is not None and not isinstance(beta_prior, Prior):
            raise TypeError(f"beta_prior must be None or a gpytorch.priors.Prior, got {type(beta_prior).__name__}")
        super().__init__(space, batch_shape=_check_batch_shape(batch_shape),
                         active_dims=_check_active_dims(active_dims, space), **kwargs)
        self.n_discrete = int(space.discrete_indices.size)
        self._spectra = _spectra(space)
        _register(self, "beta", (self.n_discrete,), constraint, beta_prior, initial=1.0)

    # -- parameters -----------------------------------------------------------------------------------
    @property
    def beta(self) -> torch.Tensor:
        """Diffusion rates, shape ``(*batch_shape, n_discrete)``, in the order of ``space.discrete_indices``."""
        return self._constrained("beta")

    @beta.setter
    def beta(self, value) -> None:
        self._set_constrained("beta", value)

    def beta_by_name(self) -> dict[str, float | torch.Tensor]:
        """``{variable name: beta}`` (floats without a batch shape, else tensors of ``batch_shape``).

        Small beta = the variable matters; large beta = its factor is nearly constant.
        """
        beta = self.beta.detach()
        names = [self.space.names[j] for j in self.space.discrete_indices]
        if beta.dim() == 1:
            return {n: float(b) for n, b in zip(names, beta)}
        return {n: beta[..., i] for i, n in enumerate(names)}

    # -- kernel ---------------------------------------------------------------------------------------
    def graph_kernel(self, dtype: torch.dtype = torch.float64,
                     device: torch.device | str = "cpu") -> GraphDiffusionKernel:
        """The :class:`graphbo.kernels.GraphDiffusionKernel` (discrete variables only) that computes the values."""
        device = torch.device(device)
        key = ("diffusion", dtype, device)
        if key not in self._cache:
            self._cache[key] = GraphDiffusionKernel(self._spectra, dtype=dtype, device=device,
                                                    unit_diagonal=self.unit_diagonal)
        return self._cache[key]

    def _one_hot(self, g: GraphDiffusionKernel, v: torch.Tensor) -> torch.Tensor:
        return g.one_hot(v.reshape(math.prod(v.shape[:-1]), v.shape[-1])).reshape(*v.shape[:-1], g.D)

    def forward(self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False, last_dim_is_batch: bool = False,
                **params) -> torch.Tensor:
        if last_dim_is_batch:
            raise NotImplementedError("DiffusionKernel does not support last_dim_is_batch=True")
        self._check_width(x1)
        self._check_width(x2)
        dtype = x1.dtype if x1.is_floating_point() else torch.float64
        g = self.graph_kernel(dtype, x1.device)
        same = x2 is x1
        O1 = self._one_hot(g, self._indices(x1))
        O2 = O1 if same else self._one_hot(g, self._indices(x2))
        log_beta = torch.log(self.beta.to(dtype)).reshape(-1, self.n_discrete)
        W = g.log_block_diagonal(log_beta).reshape(*self.batch_shape, g.D, g.D)
        if diag:
            # log k(x1_j, x2_j) = o1_j^T W o2_j
            return torch.exp(((O1 @ W) * O2).sum(-1))
        return torch.exp(O1 @ W @ O2.transpose(-1, -2))


# -- frequency-modulated kernels ----------------------------------------------------------------------
# graphbo FMKernel parameter block -> (GPyTorch name, default constraint, constrained -> unconstrained, start)
_FM_BLOCKS: dict[str, tuple[str, Callable[[], Interval], Callable[[torch.Tensor], torch.Tensor], float]] = {
    "log_theta": ("theta", Positive, torch.log, 1.0),
    "log_beta": ("beta", Positive, torch.log, 1.0),
    "log_alpha": ("alpha", Positive, torch.log, 1.0),
    "log_w": ("w", Positive, torch.log, 1.0),
    "logit_tau": ("tau", lambda: Interval(0.0, 2.0), lambda t: _logit(t / 2.0), 1.0),
    "log_sigma": ("sigma", Positive, torch.log, 1.0),
    "logit_mix": ("mix", lambda: Interval(0.0, 1.0), _logit, 0.5),
}
# unconstrained -> constrained, for loading a graphbo parameter vector
_FM_FROM_UNCONSTRAINED = {
    "log_theta": torch.exp, "log_beta": torch.exp, "log_alpha": torch.exp, "log_w": torch.exp,
    "logit_tau": lambda u: 2.0 * torch.sigmoid(u), "log_sigma": torch.exp, "logit_mix": torch.sigmoid,
}


class FrequencyModulatedKernel(_SpaceKernel):
    r"""A frequency-modulated kernel (BO-FM) on a mixed space, or one of its comparison kernels.

    .. math::
        k((c, v), (c', v')) = \prod_p
            \frac{\sum_i U^p_{v_p i}\, f(\lambda^p_i, r \mid \alpha_p, \beta_p)\, U^p_{v'_p i}}
                 {\operatorname{mean}_i f(\lambda^p_i, 0 \mid \alpha_p, \beta_p)},
        \qquad r^2 = \sum_d (c_d - c'_d)^2 / \theta_d^2

    (BO-FM Eq. 5 with ModLap, Eq. 9; ModDif, Eq. 10; the general family of
    Prop. 1; FNN, Eq. 7; and the product/additive baselines of supplement E),
    computed by :class:`graphbo.kernels.frequency_modulated.FMKernel`.

    Parameters
    ----------
    space : graphbo.Space
        Mixed (or purely discrete, or purely continuous) space; inputs are its rows.
    modulation : str
        One of :data:`FM_KERNELS`: ``"modlap"`` (default), ``"moddif"``, ``"general"``,
        ``"fnn"``, ``"prodlap"``, ``"addlap"``, ``"proddif"``, ``"adddif"``.
    n_terms : int
        Number of terms of the ``general`` family.
    constraints : mapping, optional
        Constraint per hyper-parameter name, overriding the defaults: ``Positive()``
        for ``theta`` (continuous length-scales), ``beta``, ``alpha``, ``w`` (general
        family weights) and ``sigma`` (FNN); ``Interval(0, 2)`` for ``tau`` (general
        family exponent); ``Interval(0, 1)`` for ``mix`` (additive weight).
    priors : mapping, optional
        ``gpytorch.priors.Prior`` per hyper-parameter name.
    batch_shape, active_dims : as for :class:`DiffusionKernel`.

    Notes
    -----
    The hyper-parameters present depend on ``modulation`` (see
    :attr:`hyperparameter_names`); each is a ``raw_<name>`` parameter with a
    ``<name>`` property. The starting values are those of graphbo's BO-FM
    (all ones, ``mix = 0.5``). graphbo's FMKernel builds its tables on the CPU:
    inputs on another device are computed there and the result moved back.
    Batched inputs whose batch members share the second (or first) set of
    points -- as in BoTorch's predictions against the training data -- are
    computed in one call; other batches loop over their members.
    """

    def __init__(self, space: Space, *, modulation: str = "modlap", n_terms: int = 3,
                 constraints: Mapping[str, Interval] | None = None, priors: Mapping[str, Prior] | None = None,
                 batch_shape: torch.Size | None = None, active_dims: tuple[int, ...] | None = None, **kwargs):
        space = _check_space(space, "FrequencyModulatedKernel")
        if not isinstance(modulation, str):
            raise TypeError(f"modulation must be a str, one of {list(FM_KERNELS)}, got {modulation!r}")
        name = modulation.lower()
        if name not in FM_KERNELS:
            raise ValueError(f"FrequencyModulatedKernel: unknown modulation {modulation!r}; modulation must be one of "
                             f"{list(FM_KERNELS)}")
        n_terms = check_int("n_terms", n_terms, minimum=1)
        constraints, priors = check_mapping("constraints", constraints), check_mapping("priors", priors)
        for key, constraint in constraints.items():
            _check_constraint(f"constraints[{key!r}]", constraint)
        for key, prior in priors.items():
            if not isinstance(prior, Prior):
                raise TypeError(f"priors[{key!r}] must be a gpytorch.priors.Prior, got {type(prior).__name__}")
        super().__init__(space, batch_shape=_check_batch_shape(batch_shape),
                         active_dims=_check_active_dims(active_dims, space), **kwargs)
        self.modulation, self.n_terms = name, n_terms
        self._spectra = _spectra(space)
        layout = self.graph_kernel().layout
        #: (graphbo block, GPyTorch name, size) in graphbo's parameter order
        self._blocks = [(block, _FM_BLOCKS[block][0], size) for block, size in layout]
        self.hyperparameter_names: tuple[str, ...] = tuple(n for _, n, _ in self._blocks)
        for arg, given in (("constraints", constraints), ("priors", priors)):
            unknown = sorted(set(given) - set(self.hyperparameter_names))
            if unknown:
                raise ValueError(f"FrequencyModulatedKernel({name!r}): {arg} names no hyper-parameter(s) "
                                 f"{unknown!r}; the keys must be among {list(self.hyperparameter_names)!r}")
        for block, pname, size in self._blocks:
            _, default, _, start = _FM_BLOCKS[block]
            _register(self, pname, (size,), constraints.get(pname, default()), priors.get(pname), initial=start)

    def __getattr__(self, name: str):
        # ``kernel.beta`` etc.: the constrained value of ``raw_<name>``
        if not name.startswith("raw_") and name in _FM_NAMES:
            modules = self.__dict__.get("_parameters", {})
            if f"raw_{name}" in modules:
                return self._constrained(name)
        return super().__getattr__(name)

    def __setattr__(self, name: str, value) -> None:
        if name in _FM_NAMES and f"raw_{name}" in self.__dict__.get("_parameters", {}):
            self._set_constrained(name, value)
        else:
            super().__setattr__(name, value)

    # -- graphbo parameter vector ------------------------------------------------------------------------
    def graph_kernel(self, dtype: torch.dtype = torch.float64) -> FMKernel:
        """The :class:`graphbo.kernels.frequency_modulated.FMKernel` that computes the values (CPU)."""
        key = ("fm", dtype)
        if key not in self._cache:
            self._cache[key] = FMKernel(self.modulation, self._spectra, n_continuous=len(self.space.continuous_indices),
                                        n_terms=self.n_terms, dtype=dtype)
        return self._cache[key]

    def graphbo_params(self, dtype: torch.dtype = torch.float64) -> torch.Tensor:
        """The hyper-parameters as graphbo's unconstrained vector, ``(*batch_shape, size)``; differentiable."""
        parts = [_FM_BLOCKS[block][2](self._constrained(pname).to(dtype)) for block, pname, _ in self._blocks]
        return torch.cat(parts, dim=-1)

    def set_graphbo_params(self, params: torch.Tensor | np.ndarray) -> None:
        """Set the hyper-parameters from graphbo's unconstrained vector (e.g. a fitted ``MixedGP``'s kernel part)."""
        params = torch.as_tensor(params, dtype=torch.float64)
        size = sum(n for _, _, n in self._blocks)
        if params.dim() == 0 or params.shape[-1] != size:
            raise ValueError(f"{self.modulation!r} kernel: expected a parameter vector of length {size}, "
                             f"got shape {tuple(params.shape)}")
        k = 0
        for block, pname, n in self._blocks:
            self._set_constrained(pname, _FM_FROM_UNCONSTRAINED[block](params[..., k:k + n]))
            k += n

    # -- kernel ---------------------------------------------------------------------------------------
    def forward(self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False, last_dim_is_batch: bool = False,
                **params) -> torch.Tensor:
        if last_dim_is_batch:
            raise NotImplementedError("FrequencyModulatedKernel does not support last_dim_is_batch=True")
        self._check_width(x1)
        self._check_width(x2)
        device = x1.device
        # Computed in float64 whatever the inputs' dtype, and returned in that dtype: in float32
        # graphbo's FMKernel floors ``alpha r^2`` at 1e-300 (which rounds to 0) before raising it to
        # ``tau / 2``, so the general family's gradients at r = 0 come out NaN. The tables are
        # built on the CPU, where float64 costs about what float32 does.
        out_dtype = x1.dtype if x1.is_floating_point() else torch.float64
        dtype = torch.float64
        k = self.graph_kernel(dtype)
        cpu = torch.device("cpu")
        V1, C1 = self._indices(x1).to(cpu), self._continuous(x1).to(cpu, dtype)
        same = x2 is x1
        V2, C2 = (V1, C1) if same else (self._indices(x2).to(cpu), self._continuous(x2).to(cpu, dtype))
        theta = self.graphbo_params(dtype).to(cpu)
        n1, n2 = x1.shape[-2], x2.shape[-2]
        batch = torch.broadcast_shapes(self.batch_shape, x1.shape[:-2], x2.shape[:-2])
        th, v1, c1, v2, c2 = _merge_batches(batch, (theta, 1), (V1, 2), (C1, 2), (V2, 2), (C2, 2))
        B = th.shape[0]
        shared_theta = _all_equal(th)

        def flat(t: torch.Tensor) -> torch.Tensor:  # (B, n, c) -> (B * n, c)
            return t.reshape(B * t.shape[1], t.shape[-1])
        if diag:
            if n1 != n2:
                raise RuntimeError("diag=True needs x1 and x2 with the same number of points")
            if same or (torch.equal(v1, v2) and torch.equal(c1, c2)):
                if shared_theta:  # k(x, x) is pointwise: all batches in one call
                    out = k.diag(th[0], flat(v1), C=flat(c1)).reshape(B, n1)
                else:
                    out = torch.stack([k.diag(th[b], v1[b], C=c1[b]) for b in range(B)])
            else:  # k(x1_j, x2_j) for different points: diagonal of the cross Gram matrix
                out = torch.stack([torch.diagonal(k(th[b], v1[b], c1[b], v2[b], c2[b])) for b in range(B)])
            return out.reshape(*batch, n1).to(device, out_dtype)
        if B == 1:
            out = k(th[0], v1[0], c1[0], v2[0], c2[0])
        elif shared_theta and _all_equal(v2) and _all_equal(c2):  # e.g. candidates against the training data
            out = k(th[0], flat(v1), flat(c1), v2[0], c2[0]).reshape(B, n1, n2)
        elif shared_theta and _all_equal(v1) and _all_equal(c1):
            out = k(th[0], v1[0], c1[0], flat(v2), flat(c2))
            out = out.reshape(n1, B, n2).transpose(0, 1)
        else:
            out = torch.stack([k(th[b], v1[b], c1[b], v2[b], c2[b]) for b in range(B)])
        return out.reshape(*batch, n1, n2).to(device, out_dtype)


_FM_NAMES = frozenset(v[0] for v in _FM_BLOCKS.values())
