"""Optimizers: COMBO and baselines, all with one ask/tell protocol."""

from .base import Observation, Optimizer
from .combo import COMBO
from .random_search import RandomSearch

METHODS = {"combo": COMBO, "random": RandomSearch, "rs": RandomSearch}

__all__ = ["Optimizer", "Observation", "COMBO", "RandomSearch", "METHODS"]
