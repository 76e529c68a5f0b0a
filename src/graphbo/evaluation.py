"""Evaluating one configuration, in this process or a worker: ``_evaluate`` calls the objective, interrupts it
after a timeout where it can, and classifies the outcome (a value, or a failure with its reason); it never raises
an ``Exception``. Used by :meth:`graphbo.Study.optimize` and by :func:`graphbo.minimize`'s workers.

This module imports nothing of graphbo's models, so that a worker process unpickling :func:`_evaluate` stays
light.
"""

from __future__ import annotations

import copy
import math
import os
import signal
import threading
import time
from typing import Any, Callable, Mapping

import numpy as np

from ._validation import as_real
from .outcomes import Outcome, as_outcome

__all__: list[str] = []

class _EvaluationTimeout(BaseException):
    """Raised by the alarm inside an evaluation that ran past its timeout (a BaseException, so that
    an objective catching ``Exception`` does not swallow it)."""


#: after the first alarm, the alarm repeats every this many seconds until the objective returns: an objective
#: that catches the first ``_EvaluationTimeout`` (``except BaseException``) is interrupted again
ALARM_REPEAT = 1.0


def _call(objective: Callable, config: dict[str, Any], timeout: float | None, thread_fallback: bool) -> Any:
    """``objective(config)``, interrupted after ``timeout`` seconds where possible.

    In a main thread (this process with ``n_workers=1``, or a process-pool worker)
    a ``SIGALRM`` timer interrupts Python code and sleeps, and repeats every
    :data:`ALARM_REPEAT` seconds until the objective gives up; once the alarm has
    gone off the evaluation is a timeout even if the objective swallowed it and
    returned a value. Elsewhere (a Dask worker's thread, a caller's thread), with
    ``thread_fallback``, the objective runs in a daemon thread that is abandoned at
    the timeout: the caller moves on, the abandoned evaluation runs to its end in
    the background.
    """
    if timeout is None:
        return objective(config)
    if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
        fired: list[bool] = []

        def on_alarm(signum, frame):
            fired.append(True)
            raise _EvaluationTimeout()

        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout, ALARM_REPEAT)
        try:
            value = objective(config)
        except (Exception, SystemExit):
            if fired:  # the objective caught the timeout and failed otherwise
                raise _EvaluationTimeout() from None
            raise
        finally:
            _stop_alarm(previous)
        if fired:  # the objective caught the timeout and went on
            raise _EvaluationTimeout()
        return value
    if not thread_fallback:
        return objective(config)
    box: dict[str, Any] = {}

    def target():
        try:
            box["value"] = objective(config)
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    worker = threading.Thread(target=target, name="graphbo-evaluation", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise _EvaluationTimeout()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _stop_alarm(previous: Any) -> None:
    """Cancel the repeating timer and restore the previous handler, even if an alarm goes off meanwhile."""
    while True:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
            break
        except _EvaluationTimeout:  # delivered just before the timer was cancelled: cancel again
            continue
    while True:
        try:
            signal.signal(signal.SIGALRM, previous)
            break
        except _EvaluationTimeout:  # pragma: no cover - a last alarm already pending
            continue


def _evaluate(objective: Callable, config: dict[str, Any], timeout: float | None = None,
              thread_fallback: bool = True, tag: str | None = None) -> tuple[bool, float | Outcome | None, str | None,
                                                                            float]:
    """Evaluate and classify: ``(ok, value, error message, seconds)``. Never raises an ``Exception``.

    Failures: the objective raised any exception but ``KeyboardInterrupt`` (``SystemExit``,
    ``asyncio.CancelledError`` and every other ``BaseException`` included), returned something that is not a
    real number (``None``, a string, a bool, a complex number, a masked value, an array or tensor of several
    numbers, an integer too large for a float) or a non-finite one, or ran past ``timeout``. A list, tuple,
    1-d array or dict is read as several values and constraints (:func:`graphbo.outcomes.as_outcome`) and
    returned as an :class:`~graphbo.outcomes.Outcome` for the study to check.
    ``KeyboardInterrupt`` propagates. The objective gets a deep copy of ``config``, so changing it changes
    nothing of the study's. A process the objective forked that returns here exits at once (``os._exit``):
    only the process that asked records the result. ``tag``: a file to write this process's id into first
    (the loop's own process pool uses it to know which worker evaluates what).
    """
    if tag is not None:
        with open(tag, "w") as fh:
            fh.write(str(os.getpid()))
    config = copy.deepcopy(config)
    asker = os.getpid()
    t0 = time.perf_counter()
    try:
        try:
            raw = _call(objective, config, timeout, thread_fallback)
        except _EvaluationTimeout:
            return False, None, f"timed out after {timeout:g} s", time.perf_counter() - t0
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit, asyncio.CancelledError, ...: a failed trial
            return False, None, _describe_error(exc), time.perf_counter() - t0
    except _EvaluationTimeout:  # the alarm went off just as the objective returned or raised
        return False, None, f"timed out after {timeout:g} s", time.perf_counter() - t0
    finally:
        if os.getpid() != asker:  # a child the objective forked, back in graphbo's code: it records nothing
            os._exit(0)
    seconds = time.perf_counter() - t0
    if timeout is not None and seconds > timeout:  # the alarm did not stop it (its handler replaced, the signal
        return False, None, f"timed out after {timeout:g} s (returned after {seconds:.3g} s)", seconds  # blocked)
    if isinstance(raw, (list, tuple, Mapping)) or (isinstance(raw, np.ndarray) and raw.ndim == 1 and raw.size > 1):
        try:  # several objectives, or values with constraints: checked against the study by its tell
            return True, as_outcome(raw), None, seconds
        except TypeError as exc:
            return False, None, f"objective returned {exc}", seconds
    try:
        value = as_real(raw)
    except (TypeError, ValueError) as exc:
        return False, None, f"objective returned {exc}", seconds
    except Exception as exc:  # a returned object whose ndim, item() or repr fails
        return False, None, f"objective returned an unusable {type(raw).__name__} ({_describe_error(exc)})", seconds
    if not math.isfinite(value):
        return False, None, f"objective returned {value!r}, not a finite number", seconds
    return True, value, None, seconds


def _describe_error(exc: BaseException) -> str:
    """``Type: message`` of an exception, bounded in length (and safe if its ``str`` fails)."""
    try:
        text = str(exc)
    except Exception:
        text = "<message not printable>"
    if len(text) > 2000:
        text = text[:2000] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
