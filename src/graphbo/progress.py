"""The progress bar of graphbo's loops (:func:`graphbo.minimize`, :meth:`graphbo.Study.optimize`).

One tqdm bar on standard error: the finished trials (complete and failed) out
of the budget, the best value so far in the user's sign (the highest for a
maximising study) and the seconds the last suggestion took. ``show_progress``
``None`` shows it only when standard error is a terminal, so logs, pipes, CI
and tests stay clean; ``True`` and ``False`` force it on or off. The bar is
closed when the run ends, by an error or Ctrl-C included, so the terminal is
left on a fresh line.
"""

from __future__ import annotations

import sys
from typing import IO, Any, Iterable, Sequence, TypeVar

T = TypeVar("T")

__all__ = ["check_show_progress", "ProgressBar", "progress_over"]


def check_show_progress(show_progress: Any) -> bool | None:
    """``show_progress`` if it is ``True``, ``False`` or ``None``; ``TypeError`` naming the argument otherwise."""
    if show_progress is None or isinstance(show_progress, bool):
        return show_progress
    raise TypeError(f"show_progress must be True, False or None (show when standard error is a terminal), "
                    f"got {show_progress!r} ({type(show_progress).__name__})")


def _is_terminal(stream: IO[str]) -> bool:
    """Whether ``stream`` is a terminal (``False`` for a stream without ``isatty`` or a closed one)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


class ProgressBar:
    """A run's bar, or nothing when it is not shown; a context manager that closes it.

    Parameters
    ----------
    budget : int
        The bar's total: finished trials the run ends at.
    done : int
        Trials already finished (a resumed study's), the bar's start.
    best : float or None
        The best value of those trials, in the user's sign.
    direction : {"minimize", "maximize"}
    show : bool or None
        ``None``: only when standard error is a terminal.
    description : str
        The bar's label (the method's name).
    """

    def __init__(self, budget: int, *, done: int = 0, best: float | None = None, direction: str = "minimize",
                 show: bool | None = None, description: str = "graphbo") -> None:
        self.best = best
        self._pick = max if direction == "maximize" else min
        self._suggest: float | None = None
        self._bar: Any = None
        stream = sys.stderr  # read now: a caller (pytest's capture) may have replaced it
        if show if show is not None else _is_terminal(stream):
            from tqdm import tqdm  # type: ignore[import-untyped]  # tqdm ships no type information

            self._bar = tqdm(total=budget, initial=min(done, budget), desc=description, unit="trial", file=stream,
                             dynamic_ncols=True, leave=True, postfix=self._postfix())

    @property
    def shown(self) -> bool:
        return self._bar is not None

    def _postfix(self) -> str:
        best = "-" if self.best is None else f"{self.best:.6g}"
        suggest = "" if self._suggest is None else f", suggest {self._suggest:.2f}s"
        return f"best {best}{suggest}"

    def finished(self, value: float | None, suggest_seconds: float | None) -> None:
        """A trial finished: ``value`` (``None`` for a failed one, which counts but is never the best) and the
        seconds its suggestion took."""
        if value is not None:
            self.best = value if self.best is None else self._pick(self.best, value)
        if suggest_seconds is not None:
            self._suggest = float(suggest_seconds)
        if self._bar is not None:
            self._bar.set_postfix_str(self._postfix(), refresh=False)
            self._bar.update(1)

    def close(self) -> None:
        """Close the bar (idempotent): its last state stays on the terminal, the cursor on a new line."""
        if self._bar is not None:
            bar, self._bar = self._bar, None
            bar.close()

    def __enter__(self) -> "ProgressBar":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def progress_over(items: Sequence[T], description: str, *, show: bool | None = None) -> Iterable[T]:
    """``items``, with a bar over them on standard error (``graphbo report`` reading its run files); ``show``
    as for :class:`ProgressBar`. The bar closes when the iteration ends."""
    show = check_show_progress(show)
    if not (_is_terminal(sys.stderr) if show is None else show) or not items:
        return items
    from tqdm import tqdm

    return tqdm(items, desc=description, file=sys.stderr, leave=False, dynamic_ncols=True)
