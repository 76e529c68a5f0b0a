"""Bridges from graphbo to other libraries.

Each submodule imports its third-party library when it is itself imported, so
importing this package costs nothing and needs none of them:

* :mod:`graphbo.integrations.gpytorch` -- the diffusion and frequency-modulated
  kernels as ``gpytorch.kernels.Kernel`` subclasses, for BoTorch models such as
  ``SingleTaskGP`` (needs ``gpytorch``; ``botorch`` for the models).
* :mod:`graphbo.integrations.optuna` -- COMBO and BO-FM as Optuna samplers (needs ``optuna``).
"""
