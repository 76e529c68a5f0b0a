import os
from pathlib import Path

import pytest

# One thread for torch and BLAS in the test process and the subprocesses it starts (they inherit the
# environment), as graphbo's own runs use (docs/architecture.md, "Threads"): the tests' matrices are small,
# and torch's default of one thread per core made the suite several times slower on 2 cores whenever the
# other core was busy (test_treebo.py: 54 s with the default, 11 s with one thread). A value the caller
# sets is kept. Set before anything imports torch, so OpenMP starts with it.
for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_name, "1")


@pytest.fixture
def maxsat28_path():
    """wMaxSAT28's file: from ``$GRAPHBO_MAXSAT_DIR`` when that is set, else the copy graphbo ships."""
    from graphbo.benchmarks.maxsat import instance_path

    folder = os.environ.get("GRAPHBO_MAXSAT_DIR")
    if folder:
        return Path(folder) / "maxcut-johnson8-2-4.clq.wcnf"
    return instance_path("maxsat28")


# -- search spaces several modules build (tests/support.py defines them; a test takes one as an argument) --------


@pytest.fixture
def categorical_binary_integer_two_continuous_space():
    """a: categorical x/y/z, b: binary, c: integer 0-6, u and v: continuous [0, 1]
    (:func:`support.categorical_binary_integer_two_continuous_space`)."""
    import support  # here, not above: it imports torch, which must start after the thread settings above

    return support.categorical_binary_integer_two_continuous_space()
