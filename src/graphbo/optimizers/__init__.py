"""Optimizers: COMBO and baselines, all with one ask/tell protocol.

TPE and SMAC wrap Optuna and SMAC3, imported only when used
(``pip install "graphbo[tpe]"`` / ``"graphbo[smac]"``).
"""

from .base import Observation, Optimizer
from .bocs import BOCS
from .bofm import BOFM
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
}

__all__ = ["Optimizer", "Observation", "COMBO", "RandomSearch", "SimulatedAnnealing", "RegularizedEvolution",
           "BOCS", "BOFM", "TPE", "SMAC", "METHODS"]
