"""graphbo: Bayesian optimisation over discrete, mixed and architecture spaces.

The public names are imported lazily (PEP 562), so ``import graphbo`` (and the
command line) stay quick until a model is actually needed. Every name of
``__all__`` is listed, grouped, in ``docs/api.md``. The bridges to other
libraries are not imported from here, since they need those libraries:
:mod:`graphbo.integrations.gpytorch` (``DiffusionKernel``,
``FrequencyModulatedKernel`` for BoTorch) and :mod:`graphbo.integrations.optuna`
(``COMBOSampler``, ``BOFMSampler``).

``__init__.pyi`` next to this file declares the same names with their types for
type checkers (``tests/project/test_exports.py`` keeps the two in step).
"""

from ._lazy import lazy_exports as _lazy_exports

__version__ = "1.0.0"

#: public name -> the module that defines it (imported on first access)
_EXPORTS: dict[str, str] = {
    # -- search spaces ----------------------------------------------------------------------------
    "Space": "graphbo.spaces",
    "Variable": "graphbo.spaces",
    "Binary": "graphbo.spaces",
    "Categorical": "graphbo.spaces",
    "Ordinal": "graphbo.spaces",
    "GraphVariable": "graphbo.spaces",
    "GraphSpectrum": "graphbo.spaces",
    "Continuous": "graphbo.spaces",
    "Integer": "graphbo.spaces",
    "IntegerRange": "graphbo.spaces",
    "load_space": "graphbo.spaces",
    "save_space": "graphbo.spaces",
    "space_from_dict": "graphbo.spaces",
    "space_to_dict": "graphbo.spaces",
    "from_configspace": "graphbo.spaces.configspace",
    "to_configspace": "graphbo.spaces.configspace",
    "ArchitectureSpace": "graphbo.nas.domain.space",
    # -- optimizers (every class of graphbo.optimizers.METHODS) --------------------------------------
    "Optimizer": "graphbo.optimizers",
    "Observation": "graphbo.optimizers",
    "COMBO": "graphbo.optimizers",
    "BOFM": "graphbo.optimizers",
    "NASBOT": "graphbo.optimizers",
    "RandomSearch": "graphbo.optimizers",
    "SimulatedAnnealing": "graphbo.optimizers",
    "RegularizedEvolution": "graphbo.optimizers",
    "BOCS": "graphbo.optimizers",
    "BOCSSDP": "graphbo.optimizers",
    "BODi": "graphbo.optimizers",
    "TPE": "graphbo.optimizers",
    "SMAC": "graphbo.optimizers",
    "BOHB": "graphbo.optimizers",
    "CoCaBO": "graphbo.optimizers",
    "NASRandom": "graphbo.optimizers",
    "NASEvolution": "graphbo.optimizers",
    "TreeBO": "graphbo.optimizers",
    # -- studies ----------------------------------------------------------------------------------------
    "minimize": "graphbo.loop",
    "MinimizeResult": "graphbo.loop",
    "Study": "graphbo.study",
    "Trial": "graphbo.storage.base",
    "report": "graphbo.pruners",
    "should_prune": "graphbo.pruners",
    "TrialPruned": "graphbo.pruners",
    "MedianPruner": "graphbo.pruners",
    "SuccessiveHalvingPruner": "graphbo.pruners",
    # -- surrogate models -------------------------------------------------------------------------------
    "Surrogate": "graphbo.models.base",
    "Posterior": "graphbo.models.base",
    "DiffusionGP": "graphbo.models.diffusion_gp",
    "MixedGP": "graphbo.models.mixed_gp",
    "OTMANNGP": "graphbo.models.otmann_gp",
    # -- acquisition functions and their optimisers ---------------------------------------------------
    "AcquisitionFunction": "graphbo.acquisition.base",
    "LogExpectedImprovement": "graphbo.acquisition.ei",
    "NegativeLowerConfidenceBound": "graphbo.acquisition.confidence_bound",
    "optimize_acquisition_on_graph": "graphbo.optim.graph_local_search",
    "optimize_acquisition_mixed": "graphbo.optim.mixed",
    "optimize_acquisition_ea": "graphbo.optim.evolutionary",
    # -- kernels ------------------------------------------------------------------------------------------
    "GraphDiffusionKernel": "graphbo.kernels.diffusion",
    "FMKernel": "graphbo.kernels.frequency_modulated",
    "OTMANNKernel": "graphbo.kernels.otmann",
    # -- errors -------------------------------------------------------------------------------------------
    "SpaceExhaustedError": "graphbo.exceptions",
    "SpaceFileError": "graphbo.spaces.io",
    "StorageError": "graphbo.storage.base",
    "InvalidArchitectureError": "graphbo.nas.domain.architecture",
    # -- threads ------------------------------------------------------------------------------------------
    "limit_threads": "graphbo.threads",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = _lazy_exports("graphbo", _EXPORTS, globals())
