"""Search spaces: variables with per-variable graphs, continuous variables, and their product."""

from .io import SpaceFileError, load_space, save_space, space_from_dict, space_to_dict
from .space import Space, as_generator
from .variables import (Binary, Categorical, Continuous, GraphSpectrum, GraphVariable, Integer, IntegerRange, Ordinal,
                        Variable)

__all__ = ["Space", "Variable", "Binary", "Categorical", "Ordinal", "GraphVariable", "GraphSpectrum", "Continuous",
           "Integer", "IntegerRange", "as_generator", "load_space", "save_space", "space_from_dict", "space_to_dict",
           "SpaceFileError"]
