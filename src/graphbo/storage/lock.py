"""The writer lock of a study file: who writes it (process id, host, process start, since when), and
whether that writer is still alive.

A store open for writing records its writer (:func:`this_writer`) in the
study file and removes it when it closes. Another writer is refused while the
recorded one is alive; one that died without closing (killed, ``os._exit``, a
segfault) left a *stale* lock. On the same host, :func:`holder_alive` tells: the
process is gone, a zombie, or its id now belongs to a process started at
another time (Linux ``/proc``). A lock from another host cannot be checked here;
``graphbo unlock STUDY.db`` clears it.
"""

from __future__ import annotations

import os
import secrets
import socket
from typing import Any, Mapping

from .base import now

__all__ = ["this_writer", "holder_alive", "describe_writer", "is_ours"]

_TOKEN = secrets.token_hex(8)  # this process; a store adds its own part, so two stores of one process differ


def _proc_start(pid: int) -> int | None:
    """The start time of process ``pid`` in clock ticks since boot (Linux ``/proc/PID/stat`` field 22),
    ``None`` where there is no ``/proc`` or no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()  # after "pid (name) ": state is field 3, start time field 22
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


def _zombie(pid: int) -> bool:
    """Whether ``pid`` has exited and waits to be reaped (Linux ``/proc``); a zombie writes nothing."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:][:1] == b"Z"


def this_writer() -> dict[str, Any]:
    """The lock record of a new writer in this process."""
    pid = os.getpid()
    return {"pid": pid, "host": socket.gethostname(), "process_start": _proc_start(pid), "since": now(),
            "token": f"{_TOKEN}-{secrets.token_hex(4)}"}


def is_ours(lock: Mapping[str, Any] | None, mine: Mapping[str, Any] | None) -> bool:
    return lock is not None and mine is not None and lock.get("token") == mine.get("token")


def holder_alive(lock: Mapping[str, Any]) -> bool | None:
    """Whether the writer of ``lock`` is alive: ``False`` if it is provably gone, ``None`` if it cannot be
    known here (another host, or a record this graphbo cannot read)."""
    pid, host = lock.get("pid"), lock.get("host")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 or host != socket.gethostname():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        pass
    except OSError:
        return None
    if _zombie(pid):
        return False
    started = lock.get("process_start")
    if started is not None and _proc_start(pid) not in (None, started):
        return False  # the id was reused by a process started later
    return True


def describe_writer(lock: Mapping[str, Any]) -> str:
    """``"process 123 on host h (since 2026-...)"``."""
    return f"process {lock.get('pid')} on host {lock.get('host')} (since {lock.get('since')})"
