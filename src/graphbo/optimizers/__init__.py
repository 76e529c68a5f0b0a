"""Optimizers: COMBO and baselines, all with one ask/tell protocol.

TPE and SMAC wrap Optuna and SMAC3, imported only when used
(``pip install "graphbo[tpe]"`` / ``"graphbo[smac]"``).
"""

from .base import Observation, Optimizer
from .bocs import BOCS
from .bofm import BOFM
from .cocabo import CoCaBO, CoCaBOLearnedMix, CoCaBOMix0, CoCaBOMix05, CoCaBOMix1
from .combo import COMBO
from .random_search import RandomSearch
from .regularized_evolution import RegularizedEvolution
from .simulated_annealing import SimulatedAnnealing
from .smac import SMAC
from .tpe import TPE

METHODS = {
    "combo": COMBO,
    "bofm": BOFM,
    "rs": RandomSearch,
    "random": RandomSearch,
    "sa": SimulatedAnnealing,
    "re": RegularizedEvolution,
    "bocs": BOCS,
    "tpe": TPE,
    "smac": SMAC,
    # CoCaBO (Ru et al. 2020) and its fixed mixture weights as compared by BO-FM (CoCaBO-0.0/0.5/1.0)
    "cocabo": CoCaBO,
    "cocabo-0": CoCaBOMix0,
    "cocabo-0.0": CoCaBOMix0,
    "cocabo-0.5": CoCaBOMix05,
    "cocabo-1": CoCaBOMix1,
    "cocabo-1.0": CoCaBOMix1,
    "cocabo-learn": CoCaBOLearnedMix,
}

__all__ = ["Optimizer", "Observation", "COMBO", "RandomSearch", "SimulatedAnnealing", "RegularizedEvolution",
           "BOCS", "BOFM", "TPE", "SMAC", "CoCaBO", "METHODS"]
