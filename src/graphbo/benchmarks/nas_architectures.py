"""Architecture search benchmarks for NASBOT and its baselines (Kandasamy et al. 2018, Sec. 5).

Each benchmark is a callable ``benchmark(config) -> float`` (lower is better)
whose ``space`` is a :class:`graphbo.nas.ArchitectureSpace`; configurations
are network dicts (:meth:`graphbo.nas.domain.architecture.Architecture.to_dict`).
Run them with ``--method nasbot``, ``rand`` or ``ea``.

* ``nas-mlp`` (:class:`NASMLP`): MLP regression on scikit-learn's diabetes
  data, the validation MSE of the standardised target.
* ``nas-mlp-class`` (:class:`NASMLPClass`): MLP classification of
  scikit-learn's 8x8 digits as 64-d vectors, the validation error.
* ``nas-cnn`` (:class:`NASCNN`): CNN classification of the digits as
  ``1 x 8 x 8`` images, the validation error.
* ``nas-synthetic`` (:class:`NASSynthetic`): the cheap, deterministic
  synthetic objective of :class:`graphbo.nas.training.objectives.SyntheticArchitectureObjective`
  on CNNs (or another domain), for tests and speed measurements.

The training benchmarks train on the CPU with
:class:`graphbo.nas.training.objectives.NASObjective` (Adam, 20 epochs for MLPs and 5
for CNNs, the minimum validation error over the epochs; see
:mod:`graphbo.nas.training.training` for how this differs from the paper's GPU
training). ``seed`` fixes the train/validation split and the training
randomness; ``graphbo run`` passes the run seed modulo 5, as for the other
benchmarks with random instances.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ..nas.domain.architecture import Architecture
from ..nas.domain.space import ArchitectureSpace
from .base import Benchmark

__all__ = ["NASMLP", "NASMLPClass", "NASCNN", "NASSynthetic"]


class _ArchitectureBenchmark(Benchmark):
    domain = "cnn"
    default_method = "nasbot"  # what `graphbo run` uses without --method
    default_budget = 100
    default_n_initial = 10  # the initial pool (App. B.1)
    # Benchmark types its space as a Space; a NAS benchmark's is an ArchitectureSpace, the space the NAS
    # optimizers take (their space_types) and that graphbo run hands them
    space: ArchitectureSpace  # type: ignore[assignment]  # not a Space: see Optimizer.space_types
    objective: Callable[[Architecture], float]  # a NASObjective or SyntheticArchitectureObjective

    def __call__(self, config: Mapping[str, Any] | Architecture) -> float:
        arch = self.space.architecture(config)  # ValueError with the reason for an invalid network
        return float(self.objective(arch))


class _TrainingBenchmark(_ArchitectureBenchmark):
    def __init__(self, seed: int = 0, epochs: int | None = None):
        from ..nas.training.objectives import NASObjective

        self.space = ArchitectureSpace(self.domain)
        self.objective = NASObjective(self.domain, seed=seed, epochs=epochs)
        self.seed = int(seed)


class NASMLP(_TrainingBenchmark):
    """MLP regression on diabetes: validation MSE of the standardised target (NASBOT Sec. 5 style)."""

    name = "nas-mlp"
    domain = "mlp-reg"


class NASMLPClass(_TrainingBenchmark):
    """MLP classification of the 8x8 digits (64-d vectors): validation error."""

    name = "nas-mlp-class"
    domain = "mlp-class"


class NASCNN(_TrainingBenchmark):
    """CNN classification of the 8x8 digits (1 x 8 x 8 images): validation error."""

    name = "nas-cnn"
    domain = "cnn"


class NASSynthetic(_ArchitectureBenchmark):
    """The synthetic architecture objective (:class:`SyntheticArchitectureObjective`), minimum 0.

    Parameters
    ----------
    domain : {"cnn", "mlp-class", "mlp-reg"}, default "cnn"
    """

    optimum = 0.0

    def __init__(self, domain: str = "cnn"):
        from ..nas.training.objectives import SyntheticArchitectureObjective

        self.domain = domain
        self.space = ArchitectureSpace(domain)
        self.objective = SyntheticArchitectureObjective(domain)
        self.name = "nas-synthetic" if domain == "cnn" else f"nas-synthetic-{domain}"
