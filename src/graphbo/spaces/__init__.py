"""Search spaces: variables with per-variable graphs, and their product."""

from .space import Space, as_generator
from .variables import Binary, Categorical, GraphSpectrum, GraphVariable, Ordinal, Variable

__all__ = ["Space", "Variable", "Binary", "Categorical", "Ordinal", "GraphVariable", "GraphSpectrum", "as_generator"]
