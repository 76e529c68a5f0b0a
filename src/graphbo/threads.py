"""Thread counts of torch and the BLAS libraries, decided in one place.

graphbo's models never change process-wide thread settings themselves. The
layers that own a run (:func:`graphbo.minimize`, :class:`graphbo.Study`, the
command line and the comparison runner) wrap each suggestion in
:func:`limit_threads`, with the count the user chose (``n_threads=`` /
``--threads``).

Why it matters: graphbo's GP algebra is dominated by small matrices, where a
thread pool costs more than it saves. On the 2-core development machine one
thread made COMBO about 3x faster than torch's default on an otherwise idle
machine (see ``docs/measurements.md``, "Threads"); ``None`` leaves the
libraries' own settings alone.

``"auto"`` (:data:`AUTO`) is the default that respects the user: one thread,
unless the environment already chooses a count (``OMP_NUM_THREADS``,
``MKL_NUM_THREADS``, ``OPENBLAS_NUM_THREADS``; torch reads the first two at
start-up), in which case graphbo leaves the settings alone.
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterator, Literal, Union

__all__ = ["limit_threads", "resolve_threads", "check_threads", "DEFAULT_THREADS", "AUTO", "ENVIRONMENT_VARIABLES"]

#: threads per suggestion when the user does not choose (one: see the module docstring)
DEFAULT_THREADS = 1

#: the thread setting that gives :data:`DEFAULT_THREADS` unless the environment chooses a count
AUTO: Literal["auto"] = "auto"

#: environment variables by which a user chooses thread counts for torch and the BLAS libraries
ENVIRONMENT_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")

Threads = Union[int, None, Literal["auto"]]


def check_threads(n_threads: object, name: str = "n_threads") -> Threads:
    """``n_threads`` if it is a positive integer, ``None`` or ``"auto"``; else a ``ValueError`` naming ``name``."""
    if n_threads is None or n_threads == AUTO:
        return None if n_threads is None else AUTO
    if isinstance(n_threads, bool) or not isinstance(n_threads, int) or n_threads < 1:
        raise ValueError(f"{name} must be a positive integer, None or 'auto', got {n_threads!r}")
    return n_threads


def resolve_threads(n_threads: Threads) -> int | None:
    """The thread count :func:`limit_threads` sets for ``n_threads``: the integer itself, ``None`` (leave the
    settings alone), and for ``"auto"`` :data:`DEFAULT_THREADS` unless one of :data:`ENVIRONMENT_VARIABLES` is
    set, then ``None``."""
    n = check_threads(n_threads)
    if n != AUTO:
        return n if isinstance(n, int) else None
    return None if any(os.environ.get(v, "").strip() for v in ENVIRONMENT_VARIABLES) else DEFAULT_THREADS


@contextlib.contextmanager
def limit_threads(n_threads: Threads) -> Iterator[None]:
    """Run a block with ``n_threads`` torch intra-op threads and BLAS/OpenMP threads.

    The previous settings are restored on exit; ``None`` changes nothing; ``"auto"`` is one thread unless
    the environment chooses (:func:`resolve_threads`).
    """
    n = resolve_threads(n_threads)
    if n is None:
        yield
        return
    import torch
    from threadpoolctl import threadpool_limits

    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        with threadpool_limits(limits=n):
            yield
    finally:
        torch.set_num_threads(old)
