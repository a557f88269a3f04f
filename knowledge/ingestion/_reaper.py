"""The ingestion pool's reaper: a tiny process that kills the pool's workers the moment their parent is gone.

A worker can only watch its parent once its own code runs, and a spawned worker first spends seconds
importing (the parent's main module, then the pool's): a parent killed in that window used to leave it
running for good. This process closes the window from outside. The pool starts it, before any worker,
with the read end of the pool's lifeline pipe, the same read end every worker receives when it is spawned
(so it is in place before the worker runs a line of Python). Only the pool's process holds the write end,
so a read here returns end-of-file exactly when that process dies, or closes the pool. Then every other
process holding the same pipe is a worker of this pool: each is sent SIGKILL through a pidfd, so a pid
reused meanwhile is never hit. The resource tracker leaves by itself once the last holder of its own pipe
is gone.

Run as `python -I -S _reaper.py FD PARENT_PID` (standard library only, so it starts in milliseconds). It
needs Linux's /proc; the pool does not start it elsewhere. This module must never import the project, and
never signal a process that does not hold the lifeline.
"""

from __future__ import annotations

import os
import signal
import sys
import time

__all__ = ["holders", "main", "reap"]

_ROUNDS = 3
"""Looks for holders after the first kill, so one caught between fork and exec is not missed."""


def holders(target: str, *, skip: set[int]) -> list[int]:
    """The pids (outside `skip`) of the processes with an open descriptor whose link reads `target`."""
    return [
        int(entry.name)
        for entry in os.scandir("/proc")
        if entry.name.isdigit() and int(entry.name) not in skip and _holds(int(entry.name), target)
    ]


def _holds(pid: int, target: str) -> bool:
    """Whether process `pid` has an open descriptor whose link reads `target`."""
    try:
        descriptors = os.listdir(f"/proc/{pid}/fd")
    except OSError:  # gone, or not ours to read
        return False
    for fd in descriptors:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == target:
                return True
        except OSError:  # closed while we looked
            continue
    return False


def _kill(pid: int, target: str) -> None:
    """SIGKILL `pid` if it still holds `target`, through a pidfd so that a reused pid is never signalled."""
    try:
        handle = os.pidfd_open(pid)
    except ProcessLookupError:  # already gone
        return
    except OSError:  # a kernel without pidfds: the plain signal, checked first
        if _holds(pid, target):
            os.kill(pid, signal.SIGKILL)
        return
    try:
        if _holds(pid, target):  # checked after the pidfd is open: the pidfd names this very process
            signal.pidfd_send_signal(handle, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.close(handle)


def reap(target: str, *, skip: set[int]) -> int:
    """Kill every process outside `skip` that holds `target`; returns how many were signalled."""
    killed = 0
    for _ in range(_ROUNDS):
        pids = holders(target, skip=skip)
        if not pids:
            break
        for pid in pids:
            _kill(pid, target)
        killed += len(pids)
        time.sleep(0.05)
    return killed


def main(argv: list[str]) -> int:
    """Wait for the lifeline on descriptor `argv[1]` to close, then kill its other holders but `argv[2]`."""
    fd, parent = int(argv[1]), int(argv[2])
    target = os.readlink(f"/proc/self/fd/{fd}")
    while True:
        try:
            if not os.read(fd, 4096):  # nobody writes: end-of-file means the write end is closed
                break
        except InterruptedError:
            continue
    reap(target, skip={os.getpid(), parent})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
