"""The multi-fidelity benchmark protocol, for optimizers that choose a fidelity per evaluation (BOHB).

A benchmark supports fidelities when it has

* ``max_fidelity`` -- a positive integer: the full fidelity, in the
  benchmark's own unit (training epochs for :class:`~graphbo.benchmarks.nas_sgd.NASSGD`);
  an evaluation at it is the benchmark's ordinary evaluation, ``bench(config)``;
* ``evaluate(config, epochs=k)`` for every integer ``1 <= k <= max_fidelity`` --
  the objective at fidelity ``k``; it returns a number or a mapping with the
  number under ``"value"`` (as ``NASSGD.evaluate`` does).

A low fidelity is a cheaper, noisier or biased estimate of the full-fidelity
value; its cost is counted as ``k / max_fidelity`` full evaluations
(:mod:`graphbo.experiments.runner`).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

__all__ = ["supports_fidelity", "max_fidelity", "evaluate_at_fidelity"]


def max_fidelity(bench: Any) -> int | None:
    """``bench.max_fidelity`` if the benchmark follows the protocol, else ``None``.

    Raises ``ValueError`` when the attribute is there but is not a positive integer.
    """
    value = getattr(bench, "max_fidelity", None)
    if value is None or not callable(getattr(bench, "evaluate", None)):
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{type(bench).__name__}.max_fidelity must be a positive integer, got {value!r}")
    return int(value)


def supports_fidelity(bench: Any) -> bool:
    """Whether ``bench`` follows the multi-fidelity protocol."""
    return max_fidelity(bench) is not None


def evaluate_at_fidelity(bench: Any, config: Mapping[str, Any], *, fidelity: int) -> float:
    """The objective of ``bench`` at ``config`` and ``fidelity``: ``bench.evaluate(config, epochs=fidelity)``."""
    top = max_fidelity(bench)
    if top is None:
        raise ValueError(f"benchmark {getattr(bench, 'name', type(bench).__name__)!r} has no fidelities "
                         "(it needs max_fidelity and evaluate(config, epochs=k))")
    if isinstance(fidelity, bool) or not isinstance(fidelity, numbers.Integral) or not 1 <= fidelity <= top:
        raise ValueError(f"fidelity must be an integer in 1..{top}, got {fidelity!r}")
    out = bench.evaluate(config, epochs=int(fidelity))
    if isinstance(out, Mapping):
        out = out["value"]
    return float(out)
