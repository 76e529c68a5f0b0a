"""Thread counts of torch and the BLAS libraries, decided in one place.

graphbo's models never change process-wide thread settings themselves. The
layers that own a run (:func:`graphbo.minimize`, :class:`graphbo.Study`, the
command line and the comparison runner) wrap each suggestion in
:func:`limit_threads`, with the count the user chose (``n_threads=`` /
``--threads``).

Why it matters: graphbo's GP algebra is dominated by small matrices, where a
thread pool costs more than it saves. On the 2-core development machine one
thread made COMBO about 3x faster than torch's default (see
``docs/measurements.md``); ``None`` leaves the libraries' own settings alone.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

__all__ = ["limit_threads", "DEFAULT_THREADS"]

#: threads per suggestion when the user does not choose (one: see the module docstring)
DEFAULT_THREADS = 1


def _check(n_threads: int | None) -> int | None:
    if n_threads is None:
        return None
    if isinstance(n_threads, bool) or not isinstance(n_threads, int) or n_threads < 1:
        raise ValueError(f"n_threads must be a positive integer or None, got {n_threads!r}")
    return n_threads


@contextlib.contextmanager
def limit_threads(n_threads: int | None) -> Iterator[None]:
    """Run a block with ``n_threads`` torch intra-op threads and BLAS/OpenMP threads.

    The previous settings are restored on exit; ``None`` changes nothing.
    """
    n = _check(n_threads)
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
