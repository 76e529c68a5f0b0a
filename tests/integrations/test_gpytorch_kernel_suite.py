"""graphbo's GPyTorch kernels against GPyTorch's own kernel test case.

``gpytorch.test.base_kernel_test_case.BaseKernelTestCase`` is the suite GPyTorch runs on
its own kernels: batched inputs against separate calls, ``diag=True``, ``active_dims``,
indexing batched kernels (``kernel[0]``), ``expand_batch``, pickling and ``.to(dtype)``.
Each class below runs it on one graphbo kernel.

How the suite is fed:

* Inputs. The base class draws ``torch.randn`` rows, which are not index rows. The data
  factories here keep its shapes -- ``(50, 10)``, ``(2, 3, 2)``, ``(3, 2, 50, 2)`` -- and fill
  each column with what a variable of a fixed "data space" accepts: value indices for a
  discrete variable, unit coordinates for a continuous one. The kernel's space is the data
  space restricted to the columns the kernel reads: ``active_dims`` in the two ``active_dims``
  tests (the plain kernel of those tests reads the same columns after the test selects them),
  both columns otherwise.
* Precision. The data come in torch's default dtype, float32, so every case checks the
  float32 kernels against GPyTorch's tolerances.
* ARD. graphbo's kernels always have one hyper-parameter per variable (there is no shared
  "no ARD" form), so both factories build the same kernel; ``create_kernel_ard`` checks that
  ``num_dims`` is the number of variables it was asked for.
* Hyper-parameters. Every raw parameter is moved off its starting value by a random amount
  drawn from a fixed seed (so that two kernels built alike are equal, as the ``active_dims``
  cases assume), different per batch member, so that the batch and indexing cases compare
  kernels whose members really differ.
"""

from __future__ import annotations

import unittest

import pytest
import torch

pytest.importorskip("botorch")

from gpytorch.test.base_kernel_test_case import BaseKernelTestCase  # noqa: E402

import graphbo as gb  # noqa: E402
from graphbo.integrations.gpytorch import FM_KERNELS, DiffusionKernel, FrequencyModulatedKernel  # noqa: E402

_ADJ = [[0, 1, 0, 1], [1, 0, 2, 0], [0, 2, 0, 1], [1, 0, 1, 0]]
_VARIABLES = {
    "bin": gb.Binary,
    "cat": lambda: gb.Categorical(["p", "q", "r", "s"]),
    "ord": lambda: gb.Ordinal([1, 2, 3, 4, 5]),
    "graph": lambda: gb.GraphVariable(list("wxyz"), _ADJ),
    "cont": lambda: gb.Continuous(0.0, 1.0),
}
# column kinds of the data spaces: 10 columns for the unbatched data, 2 for the batched data
DISCRETE = {10: ["bin", "cat", "ord", "graph", "cat", "ord", "bin", "graph", "cat", "ord"], 2: ["cat", "ord"]}
MIXED = {10: ["cat", "cont", "ord", "bin", "cont", "graph", "ord", "cont", "cat", "cont"], 2: ["ord", "cont"]}
# the columns that the kernel reads, per test (BaseKernelTestCase's active_dims)
_READS = {"test_active_dims_list": (10, [0, 2, 4, 6]), "test_active_dims_range": (10, list(range(3, 9)))}


def _space_of_kinds(kinds: list[str]) -> gb.Space:
    return gb.Space({f"v{j}_{kind}": _VARIABLES[kind]() for j, kind in enumerate(kinds)})


def _rows(kinds: list[str], *batch: int) -> torch.Tensor:
    """Random rows of the data space with columns ``kinds``: indices for discrete columns, [0, 1] for continuous."""
    space = _space_of_kinds(kinds)
    u = torch.rand(*batch, len(kinds))
    cols = []
    for j, kind in enumerate(kinds):
        cols.append(u[..., j] if kind == "cont" else torch.floor(u[..., j] * int(space.n_values[j])))
    return torch.stack(cols, dim=-1)


class _GraphboKernelCase(BaseKernelTestCase):
    seed = 0
    columns: dict[int, list[str]] = MIXED

    def build(self, space: gb.Space, **kwargs):
        raise NotImplementedError

    def setUp(self):
        super().setUp()
        width, reads = _READS.get(self._testMethodName, (2, [0, 1]))
        self.kernel_kinds = [self.columns[width][j] for j in reads]

    def create_kernel_no_ard(self, **kwargs):
        kernel = self.build(_space_of_kinds(self.kernel_kinds), **kwargs)
        gen = torch.Generator().manual_seed(1)  # the same kernel each call (the active_dims cases build two)
        with torch.no_grad():
            for _, raw in sorted(kernel.named_parameters()):
                raw.add_(0.3 * torch.randn(raw.shape, generator=gen, dtype=raw.dtype))
        return kernel

    def create_kernel_ard(self, num_dims, **kwargs):
        assert num_dims == len(self.kernel_kinds), (num_dims, self.kernel_kinds)
        return self.create_kernel_no_ard(**kwargs)

    def create_data_no_batch(self):
        return _rows(self.columns[10], 50)

    def create_data_single_batch(self):
        return _rows(self.columns[2], 2, 3)

    def create_data_double_batch(self):
        return _rows(self.columns[2], 3, 2, 50)


class TestDiffusionKernelDiscrete(_GraphboKernelCase, unittest.TestCase):
    columns = DISCRETE

    def build(self, space, **kwargs):
        return DiffusionKernel(space, **kwargs)


class TestDiffusionKernelMixed(_GraphboKernelCase, unittest.TestCase):
    columns = MIXED

    def build(self, space, **kwargs):
        return DiffusionKernel(space, **kwargs)


def _fm_case(modulation: str) -> type:
    def build(self, space, **kwargs):
        return FrequencyModulatedKernel(space, modulation=modulation, **kwargs)
    name = f"TestFrequencyModulatedKernel_{modulation}"
    return type(name, (_GraphboKernelCase, unittest.TestCase), {"build": build, "columns": MIXED,
                                                                "__module__": __name__})


for _modulation in FM_KERNELS:
    _cls = _fm_case(_modulation)
    globals()[_cls.__name__] = _cls
del _cls, _modulation
