"""The public constructors other than the optimizers (those are in ``tests/optimizers/test_public_api.py``).

Spaces and variables, kernels, surrogate models, the architecture space and the GPyTorch kernels
check their arguments at the boundary: a wrong type raises ``TypeError``, a value outside the
allowed ones ``ValueError``, and the message names the argument (and, for a choice, the allowed
values), before anything else happens.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
import pytest
import torch

import graphbo as gb
from graphbo.kernels import FMKernel, GraphDiffusionKernel
from graphbo.models import DiffusionGP
from graphbo.models.mixed_gp import MixedGP
from graphbo.models.otmann_gp import OTMANNGP
from graphbo.nas.domain.space import ArchitectureSpace


def binary_ordinal3_space():
    return gb.Space({"a": gb.Binary(), "o": gb.Ordinal([1, 2, 3])})


def categorical_continuous_space():
    return gb.Space({"c": gb.Categorical(["x", "y", "z"]), "r": gb.Continuous(0.0, 1.0)})


def spectra(space):
    return [v.spectrum for v in space.variables if isinstance(v, gb.Variable)]


def diffusion_kernel():
    return GraphDiffusionKernel(spectra(binary_ordinal3_space()))


def fm_kernel(space=None):
    space = categorical_continuous_space() if space is None else space
    return FMKernel("modlap", spectra(space), n_continuous=len(space.continuous_indices))


def otmann(kind):
    from graphbo.nas.distance.otmann import OTMANN

    return OTMANN(kind)


# (what is built, how, the error, a pattern the message matches: the argument's name and what is allowed)
CASES = [
    # -- spaces ------------------------------------------------------------------------------------------
    ("Space", lambda: gb.Space(5), TypeError, "variables must be a dict"),
    ("Space", lambda: gb.Space("ab"), TypeError, "variables must be a dict"),
    ("Space", lambda: gb.Space([("a",)]), TypeError, r"variables must .* \(name, variable\) pairs"),
    ("Space", lambda: gb.Space({}), ValueError, "variables is empty"),
    ("Space", lambda: gb.Space({"x": "not a variable"}), ValueError, "variable 'x' must be a graphbo variable"),
    ("Space", lambda: gb.Space({"": gb.Binary()}), ValueError, "variable names must be non-empty strings"),
    ("Categorical", lambda: gb.Categorical(3), TypeError, "choices must be a sequence"),
    ("Categorical", lambda: gb.Categorical("abc"), ValueError, "choices must be a sequence"),
    ("Categorical", lambda: gb.Categorical([]), ValueError, "choices is empty"),
    ("Categorical", lambda: gb.Categorical([[1], [2]]), ValueError, r"value \[1\] is not hashable"),
    ("Ordinal", lambda: gb.Ordinal(None), TypeError, "values must be a sequence"),
    ("Ordinal", lambda: gb.Ordinal([1, 2], edge_weight=0), ValueError, "edge_weight must be > 0"),
    ("Ordinal", lambda: gb.Ordinal([1, 2], edge_weight="heavy"), TypeError, "edge_weight must be a number"),
    ("Ordinal", lambda: gb.Ordinal([1, 2], edge_weight=math.inf), ValueError, "edge_weight must be finite"),
    ("GraphVariable", lambda: gb.GraphVariable({1, 2}, [[0, 1], [1, 0]]), TypeError, "values must be a sequence"),
    ("GraphVariable", lambda: gb.GraphVariable(["a", "b"], "ring"), TypeError, "adjacency must be a"),
    ("GraphVariable", lambda: gb.GraphVariable(["a", "b"], [[0, 1]]), ValueError, "adjacency has shape"),
    ("Continuous", lambda: gb.Continuous("0", 1), TypeError, "low must be a number"),
    ("Continuous", lambda: gb.Continuous(0, None), TypeError, "high must be a number"),
    ("Continuous", lambda: gb.Continuous(0, math.inf), ValueError, "high=inf"),
    ("Continuous", lambda: gb.Continuous(1, 0), ValueError, "low < high"),
    ("Continuous", lambda: gb.Continuous(0, 1, log=True), ValueError, "log scale needs low > 0"),
    ("Continuous", lambda: gb.Continuous(1, 2, log="yes"), TypeError, "log must be True or False"),
    ("Integer", lambda: gb.Integer(1.5, 4), ValueError, "low is not an integer"),
    ("Integer", lambda: gb.Integer(1, "4"), TypeError, "high must be a number"),
    ("Integer", lambda: gb.Integer(4, 1), ValueError, "low <= high"),
    ("Integer", lambda: gb.Integer(1, 4, log=1), TypeError, "log must be True or False"),
    ("Integer", lambda: gb.Integer(1, 4, max_ordinal=0), ValueError, "max_ordinal must be >= 1"),
    ("IntegerRange", lambda: gb.IntegerRange(0, 10.5), ValueError, "high is not an integer"),
    ("IntegerRange", lambda: gb.IntegerRange(1, 100, log=None), TypeError, "log must be True or False"),
    ("ArchitectureSpace", lambda: ArchitectureSpace("rnn"), ValueError, "domain"),
    ("ArchitectureSpace", lambda: ArchitectureSpace("mlp-reg", constraints={}), TypeError, "constraints must be"),
    ("ArchitectureSpace", lambda: ArchitectureSpace("mlp-class", n_outputs=0), ValueError, "n_outputs"),
    ("ArchitectureSpace", lambda: ArchitectureSpace("mlp-reg", n_outputs=2), ValueError, "n_outputs"),
    # -- kernels -----------------------------------------------------------------------------------------
    ("GraphDiffusionKernel", lambda: GraphDiffusionKernel(gb.Binary().spectrum), TypeError,
     "spectra must be a sequence of GraphSpectrum"),
    ("GraphDiffusionKernel", lambda: GraphDiffusionKernel([]), ValueError, "spectra must hold at least 1"),
    ("GraphDiffusionKernel", lambda: GraphDiffusionKernel([np.eye(2)]), TypeError, r"spectra\[0\] must be"),
    ("GraphDiffusionKernel", lambda: GraphDiffusionKernel(spectra(binary_ordinal3_space()), dtype=torch.int64),
     ValueError, "dtype must be a torch floating dtype"),
    ("GraphDiffusionKernel", lambda: GraphDiffusionKernel(spectra(binary_ordinal3_space()), dtype="float64"),
     TypeError, "dtype must be a torch floating dtype"),
    ("GraphDiffusionKernel", lambda: GraphDiffusionKernel(spectra(binary_ordinal3_space()), device="tpu"),
     ValueError, r"device must be .*'cpu'"),
    ("GraphDiffusionKernel", lambda: GraphDiffusionKernel(spectra(binary_ordinal3_space()), device=0), TypeError,
     "device must be"),
    ("FMKernel", lambda: FMKernel("lap", spectra(categorical_continuous_space()), n_continuous=1), ValueError,
     r"name must be one of \['modlap', 'moddif', 'general', 'fnn', 'prodlap', 'addlap', 'proddif', 'adddif'\]"),
    ("FMKernel", lambda: FMKernel(None, spectra(categorical_continuous_space()), n_continuous=1), TypeError,
     "name must be the kernel's name"),
    ("FMKernel", lambda: FMKernel("modlap", None, n_continuous=1), TypeError, "spectra must be a sequence"),
    ("FMKernel", lambda: FMKernel("modlap", spectra(categorical_continuous_space()), n_continuous=-1), ValueError,
     "n_continuous must be >= 0"),
    ("FMKernel", lambda: FMKernel("modlap", spectra(categorical_continuous_space()), n_continuous=1.5), TypeError,
     "n_continuous must be"),
    ("FMKernel", lambda: FMKernel("general", spectra(categorical_continuous_space()), n_continuous=1, n_terms=0),
     ValueError,
     "n_terms must be >= 1"),
    ("FMKernel", lambda: FMKernel("modlap", spectra(categorical_continuous_space()), n_continuous=1, dtype=np.float64),
     TypeError,
     "dtype"),
    ("OTMANNKernel", lambda: gb.OTMANNKernel("rnn"), ValueError, "kind"),
    # -- surrogate models ---------------------------------------------------------------------------------
    ("DiffusionGP", lambda: DiffusionGP(fm_kernel()), TypeError, "kernel must be a graphbo.GraphDiffusionKernel"),
    ("DiffusionGP", lambda: DiffusionGP(diffusion_kernel(), n_burn=-1), ValueError, "n_burn must be >= 0"),
    ("DiffusionGP", lambda: DiffusionGP(diffusion_kernel(), n_burn=2.5), TypeError, "n_burn must be an integer"),
    ("DiffusionGP", lambda: DiffusionGP(diffusion_kernel(), n_samples=0), ValueError, "n_samples must be >= 1"),
    ("DiffusionGP", lambda: DiffusionGP(diffusion_kernel(), tau_beta=0.0), ValueError, "tau_beta must be > 0"),
    ("DiffusionGP", lambda: DiffusionGP(diffusion_kernel(), tau_noise="small"), TypeError,
     "tau_noise must be a number"),
    ("MixedGP", lambda: MixedGP(diffusion_kernel(), categorical_continuous_space()), TypeError,
     "kernel must be a graphbo.FMKernel"),
    ("MixedGP", lambda: MixedGP(fm_kernel(), {"c": 1}), TypeError, "space must be a graphbo.Space"),
    ("MixedGP", lambda: MixedGP(fm_kernel(binary_ordinal3_space()), categorical_continuous_space()), ValueError,
     "kernel has 2 discrete and 0 continuous inputs"),
    ("MixedGP", lambda: MixedGP(fm_kernel(), categorical_continuous_space(), n_restarts=0), ValueError,
     "n_restarts must be >= 1"),
    ("MixedGP", lambda: MixedGP(fm_kernel(), categorical_continuous_space(), log_y=1), TypeError,
     "log_y must be True or False"),
    ("MixedGP", lambda: MixedGP(fm_kernel(), categorical_continuous_space(), maxiter="many"), TypeError,
     "maxiter must be an integer"),
    ("OTMANNGP", lambda: OTMANNGP("rnn"), ValueError, r"kind must be one of \['cnn', 'mlp'\]"),
    ("OTMANNGP", lambda: OTMANNGP("mlp", nu_strs=[0.1, -0.2]), ValueError, r"nu_strs\[1\] must be >= 0"),
    ("OTMANNGP", lambda: OTMANNGP("mlp", nu_strs=0.1), TypeError, "nu_strs must be a sequence"),
    ("OTMANNGP", lambda: OTMANNGP("mlp", p=0), ValueError, "p must be > 0"),
    ("OTMANNGP", lambda: OTMANNGP("mlp", p_bar="two"), TypeError, "p_bar must be a number"),
    ("OTMANNGP", lambda: OTMANNGP("mlp", otmann="default"), TypeError, "otmann must be None or"),
    ("OTMANNGP", lambda: OTMANNGP("mlp", otmann=otmann("cnn")), ValueError, "otmann compares cnn networks"),
    ("OTMANNGP", lambda: OTMANNGP("mlp", n_burn=-1), ValueError, "n_burn must be >= 0"),
    ("OTMANNGP", lambda: OTMANNGP("mlp", n_samples=0), ValueError, "n_samples must be >= 1"),
    ("OTMANNGP", lambda: OTMANNGP("mlp", alpha_bounds=(1.0, 0.5)), ValueError, "alpha_bounds must satisfy low < high"),
    ("OTMANNGP", lambda: OTMANNGP("mlp", noise_bounds=(0.0, 0.2)), ValueError, r"noise_bounds\[0\] must be > 0"),
    ("OTMANNGP", lambda: OTMANNGP("mlp", beta_bounds=(1e-9,)), ValueError, "beta_bounds must have at least 2"),
    ("OTMANNGP", lambda: OTMANNGP("mlp", beta_bar_bounds=(0.1, 1.0, 10.0)), ValueError,
     r"beta_bar_bounds must be a pair"),
    ("OTMANNGP", lambda: OTMANNGP("mlp", beta_bar_bounds="wide"), TypeError, "beta_bar_bounds must be a sequence"),
    # -- pruners -----------------------------------------------------------------------------------------
    ("MedianPruner", lambda: gb.MedianPruner(n_startup_trials=-1), ValueError, "n_startup_trials"),
    ("MedianPruner", lambda: gb.MedianPruner(interval_steps=0), ValueError, "interval_steps"),
    ("SuccessiveHalvingPruner", lambda: gb.SuccessiveHalvingPruner(min_resource=0), ValueError, "min_resource"),
    ("SuccessiveHalvingPruner", lambda: gb.SuccessiveHalvingPruner(reduction_factor=1.5), TypeError,
     "reduction_factor"),
]


def _id(case):
    name, _, error, pattern = case
    return f"{name}-{error.__name__}-{pattern[:30]}"


@pytest.mark.parametrize("name, make, error, pattern", CASES, ids=[_id(c) for c in CASES])
def test_a_wrong_argument_names_itself(name, make, error, pattern):
    with pytest.raises(error, match=pattern):
        make()


#: public classes with no constructor of their own to check here: the optimizers (tests/optimizers/test_public_api.py),
#: errors, abstract bases, records the library builds for the user, ``Binary`` (no arguments); ``Study`` and
#: the acquisition functions are not covered here
NOT_HERE = {"Binary", "Optimizer", "Observation", "COMBO", "BOFM", "NASBOT", "RandomSearch", "SimulatedAnnealing",
            "RegularizedEvolution", "BOCS", "BOCSSDP", "BODi", "TPE", "SMAC", "BOHB", "CoCaBO", "NASRandom", "NASEvolution", "TreeBO",
            "SpaceExhaustedError", "SpaceFileError", "StorageError", "InvalidArchitectureError",
            "Surrogate", "AcquisitionFunction", "Posterior", "MinimizeResult", "Trial", "Study", "Variable",
            "GraphSpectrum", "LogExpectedImprovement", "NegativeLowerConfidenceBound", "TrialPruned"}


def test_every_public_constructor_has_a_case():
    constructors = {n for n in gb.__all__ if inspect.isclass(getattr(gb, n))} | {"Integer"}
    covered = {name for name, *_ in CASES}
    assert constructors - NOT_HERE <= covered, sorted(constructors - NOT_HERE - covered)
    assert not NOT_HERE & covered


def test_valid_arguments_are_kept_in_their_canonical_types():
    assert gb.Ordinal([1, 2], edge_weight=2).edge_weight == 2.0
    var = gb.Continuous(np.float32(0.5), np.int64(3), log=np.bool_(True))
    assert (var.low, var.high, var.log) == (0.5, 3.0, True) and type(var.low) is float
    assert gb.Integer(1.0, 4.0).values == (1, 2, 3, 4)
    assert isinstance(gb.Integer(0, 100, max_ordinal=200), gb.Ordinal)
    kern = FMKernel("ModLap", spectra(categorical_continuous_space()), n_continuous=1.0)
    assert (kern.name, kern.Dc, type(kern.Dc)) == ("modlap", 1, int)
    gp = DiffusionGP(diffusion_kernel(), n_burn=np.int64(3), n_samples=2.0, tau_beta=1)
    assert (gp.n_burn, gp.n_samples, gp.tau_beta) == (3, 2, 1.0) and type(gp.n_samples) is int
    otgp = OTMANNGP("mlp", nu_strs=np.array([0.1, 0.2]), noise_bounds=[0.01, 0.1])
    assert otgp.nu_strs == (0.1, 0.2) and otgp.m == 2


# -- the GPyTorch kernels -----------------------------------------------------------------------------------
GPYTORCH_CASES = [
    ("DiffusionKernel", lambda g: g.DiffusionKernel({"a": gb.Binary()}), TypeError, "space must be a graphbo.Space"),
    ("DiffusionKernel", lambda g: g.DiffusionKernel(categorical_continuous_space(), beta_constraint=(0.0, 1.0)),
     TypeError, "beta_constraint must be a gpytorch.constraints.Interval"),
    ("DiffusionKernel", lambda g: g.DiffusionKernel(categorical_continuous_space(), beta_prior="horseshoe"), TypeError,
     "beta_prior must be None or a gpytorch.priors.Prior"),
    ("DiffusionKernel", lambda g: g.DiffusionKernel(categorical_continuous_space(), batch_shape=2), TypeError,
     "batch_shape must be None or a torch.Size"),
    ("DiffusionKernel", lambda g: g.DiffusionKernel(categorical_continuous_space(), batch_shape=[-1]), ValueError,
     r"batch_shape\[0\] must be >= 0"),
    ("DiffusionKernel", lambda g: g.DiffusionKernel(categorical_continuous_space(), active_dims=[0]), ValueError,
     r"active_dims must give one column per variable of the space \(2"),
    ("DiffusionKernel", lambda g: g.DiffusionKernel(categorical_continuous_space(), active_dims=[0, "1"]), TypeError,
     r"active_dims\[1\] must be an integer"),
    ("FrequencyModulatedKernel", lambda g: g.FrequencyModulatedKernel(categorical_continuous_space(),
                                                                      modulation="laplace"),
     ValueError, r"modulation must be one of \['modlap'"),
    ("FrequencyModulatedKernel", lambda g: g.FrequencyModulatedKernel(categorical_continuous_space(), modulation=9),
     TypeError, "modulation must be a str"),
    ("FrequencyModulatedKernel", lambda g: g.FrequencyModulatedKernel(categorical_continuous_space(),
                                                                      modulation="general", n_terms=0),
     ValueError, "n_terms must be >= 1"),
    ("FrequencyModulatedKernel", lambda g: g.FrequencyModulatedKernel(categorical_continuous_space(),
                                                                      constraints=[("beta", 1)]),
     TypeError, "constraints must be a dict"),
    ("FrequencyModulatedKernel", lambda g: g.FrequencyModulatedKernel(categorical_continuous_space(),
                                                                      constraints={"beta": 1.0}),
     TypeError, r"constraints\['beta'\] must be a gpytorch.constraints.Interval"),
    ("FrequencyModulatedKernel", lambda g: g.FrequencyModulatedKernel(categorical_continuous_space(),
                                                                      priors={"beta": None}),
     TypeError, r"priors\['beta'\] must be a gpytorch.priors.Prior"),
    ("FrequencyModulatedKernel", lambda g: g.FrequencyModulatedKernel(categorical_continuous_space(),
                                                                      modulation="prodlap",
                                                                      priors={"alpha": _gamma_prior()}),
     ValueError, r"priors names no hyper-parameter\(s\) \['alpha'\]; the keys must be among \['theta', 'beta'\]"),
    ("FrequencyModulatedKernel", lambda g: g.FrequencyModulatedKernel(categorical_continuous_space(), batch_shape="2"),
     TypeError, "batch_shape"),
]


def _gamma_prior():
    from gpytorch.priors import GammaPrior

    return GammaPrior(2.0, 1.0)


@pytest.mark.parametrize("name, make, error, pattern", GPYTORCH_CASES, ids=[_id(c) for c in GPYTORCH_CASES])
def test_a_wrong_gpytorch_kernel_argument_names_itself(name, make, error, pattern):
    pytest.importorskip("gpytorch")
    from graphbo.integrations import gpytorch as integration

    with pytest.raises(error, match=pattern):
        make(integration)


def test_the_gpytorch_kernels_accept_valid_arguments():
    pytest.importorskip("gpytorch")
    from gpytorch.constraints import Interval

    from graphbo.integrations.gpytorch import DiffusionKernel, FrequencyModulatedKernel

    kern = DiffusionKernel(categorical_continuous_space(), beta_constraint=Interval(1e-4, 100.0), batch_shape=(2,),
                           active_dims=torch.tensor([3, 1]))
    assert kern.batch_shape == torch.Size([2]) and kern.active_dims.tolist() == [3, 1]
    fm = FrequencyModulatedKernel(categorical_continuous_space(), modulation="General", n_terms=2.0,
                                  priors={"beta": _gamma_prior()})
    assert (fm.modulation, fm.n_terms) == ("general", 2)


@pytest.mark.parametrize("target, n_positional", [
    ("graphbo.models.diffusion_gp:DiffusionGP", 1), ("graphbo.models.mixed_gp:MixedGP", 2),
    ("graphbo.models.otmann_gp:OTMANNGP", 1), ("graphbo.kernels.diffusion:GraphDiffusionKernel", 1),
    ("graphbo.kernels.frequency_modulated:FMKernel", 2), ("graphbo.kernels.otmann:OTMANNKernel", 1),
    ("graphbo.optim.graph_local_search:optimize_acquisition_on_graph", 2),
    ("graphbo.optim.mixed:optimize_acquisition_mixed", 2),
    ("graphbo.acquisition.hypervolume:LogExpectedHypervolumeImprovement", 2),
    ("graphbo.optimizers.combo:COMBO", 1), ("graphbo.optimizers.bofm:BOFM", 1),
    ("graphbo.optimizers.nasbot:NASBOT", 1),
])
def test_options_after_the_defining_arguments_are_keyword_only(target, n_positional):
    """``DiffusionGP(kernel, 100, 10, 5.0)`` cannot say which number is which: past its defining arguments
    (the kernel; a space; a search's acquisition and space) everything is named."""
    import importlib
    import inspect

    module, name = target.split(":")
    obj = getattr(importlib.import_module(module), name)
    params = [p for p in inspect.signature(obj).parameters.values() if p.name != "self"]
    kinds = [p.kind for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)]
    positional = [k for k in kinds if k in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    assert len(positional) == n_positional and kinds[:n_positional] == positional
