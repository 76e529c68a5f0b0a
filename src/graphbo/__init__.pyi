"""Types of graphbo's public names for type checkers.

At run time ``__init__.py`` imports them lazily (``_EXPORTS``, PEP 562); this stub declares the
same names, from the same modules (``tests/project/test_exports.py`` checks that the two agree).
"""

from .acquisition.base import AcquisitionFunction as AcquisitionFunction
from .acquisition.confidence_bound import NegativeLowerConfidenceBound as NegativeLowerConfidenceBound
from .acquisition.ei import LogExpectedImprovement as LogExpectedImprovement
from .exceptions import SpaceExhaustedError as SpaceExhaustedError
from .kernels.diffusion import GraphDiffusionKernel as GraphDiffusionKernel
from .kernels.frequency_modulated import FMKernel as FMKernel
from .kernels.otmann import OTMANNKernel as OTMANNKernel
from .loop import minimize as minimize, MinimizeResult as MinimizeResult
from .models.base import Posterior as Posterior, Surrogate as Surrogate
from .models.diffusion_gp import DiffusionGP as DiffusionGP
from .models.mixed_gp import MixedGP as MixedGP
from .models.otmann_gp import OTMANNGP as OTMANNGP
from .nas.domain.architecture import InvalidArchitectureError as InvalidArchitectureError
from .nas.domain.space import ArchitectureSpace as ArchitectureSpace
from .optim.evolutionary import optimize_acquisition_ea as optimize_acquisition_ea
from .optim.graph_local_search import optimize_acquisition_on_graph as optimize_acquisition_on_graph
from .optim.mixed import optimize_acquisition_mixed as optimize_acquisition_mixed
from .optimizers import (
    BOCS as BOCS, BOCSSDP as BOCSSDP, BODi as BODi, BOFM as BOFM, BOHB as BOHB, CoCaBO as CoCaBO, COMBO as COMBO,
    NASBOT as NASBOT, NASEvolution as NASEvolution, NASRandom as NASRandom, Observation as Observation, Optimizer as Optimizer,
    RandomSearch as RandomSearch, RegularizedEvolution as RegularizedEvolution,
    SimulatedAnnealing as SimulatedAnnealing, SMAC as SMAC, TPE as TPE, TreeBO as TreeBO,
)
from .pruners import (
    MedianPruner as MedianPruner, report as report, should_prune as should_prune,
    SuccessiveHalvingPruner as SuccessiveHalvingPruner, TrialPruned as TrialPruned,
)
from .spaces import (
    Binary as Binary, Categorical as Categorical, Continuous as Continuous, GraphSpectrum as GraphSpectrum,
    GraphVariable as GraphVariable, Integer as Integer, IntegerRange as IntegerRange, load_space as load_space,
    Ordinal as Ordinal, save_space as save_space, Space as Space, space_from_dict as space_from_dict,
    space_to_dict as space_to_dict, Variable as Variable,
)
from .spaces.configspace import from_configspace as from_configspace, to_configspace as to_configspace
from .spaces.io import SpaceFileError as SpaceFileError
from .storage.base import StorageError as StorageError, Trial as Trial
from .study import Study as Study
from .threads import limit_threads as limit_threads

__version__: str
__all__: list[str]
_EXPORTS: dict[str, str]
