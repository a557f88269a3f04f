"""The name of the running process as a holder of outbox leases, and whether another holder here is alive.

A holder is `host:pid:start`, where `start` is the process's start time as the kernel counts it
(`/proc/<pid>/stat`), so a pid reused by a later process is not mistaken for the holder. A holder on
another machine cannot be checked from here: its lease ends on its own. This module must never touch the
database: it names processes, and `functions.outbox.delivery` decides what to do with their rows.
"""

from __future__ import annotations

import os
import socket
from functools import cache

__all__ = ["holder_alive", "host_prefix", "this_holder"]


def _start_time(pid: int) -> str | None:
    """The kernel's start time of `pid` (clock ticks since boot), or None when no such process exists."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            text = stat.read()
    except FileNotFoundError:
        return None
    except OSError:  # no /proc here: the pid alone says the process exists
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return "?"
        return "?"
    # the command name (field 2) may hold spaces and parentheses: the fields after it follow the last ')'
    return text.rsplit(")", 1)[1].split()[19]


def host_prefix() -> str:
    """The prefix every holder on this machine starts with (`host:`)."""
    return f"{socket.gethostname()}:"


def this_holder() -> str:
    """The running process as a lease holder: `host:pid:start`."""
    return _holder(os.getpid())


@cache
def _holder(pid: int) -> str:
    return f"{host_prefix()}{pid}:{_start_time(pid) or '?'}"


def holder_alive(holder: str) -> bool:
    """Whether `holder` (on this machine) still runs: its pid exists and started when the holder says."""
    try:
        pid_text, start = holder.removeprefix(host_prefix()).split(":", 1)
        pid = int(pid_text)
    except ValueError:
        return True  # not a name this module wrote: leave its lease to end on its own
    now = _start_time(pid)
    return now is not None and (start == "?" or now == "?" or now == start)
