"""The idle stop of the embedded server: a "last used" stamp, and a detached watcher that stops it when idle.

A command that leaves the embedded server running (`AC_CONTEXT_EMBEDDED_IDLE_MINUTES` > 0) touches the
stamp `<data_dir>/embedded-last-used` (which holds the idle timeout in seconds) and makes sure one
watcher runs: `python -m state._embedded_watcher <data_dir>`, started in its own session so it outlives
the command. The watcher holds an exclusive `flock` on `<data_dir>/embedded-watcher.pid` for its whole
life (a second one exits at once; the lock is the test of "a watcher runs") and polls: while a process
holds the server (the wheel's handle list) or a client backend is connected, it touches the stamp; once
the stamp is older than the timeout, it takes the wheel's start-up lock, checks again, and stops the
server (`pg_ctl stop -m fast`). It exits when the server is stopped, by itself or anyone else.

This module holds the stamp, the watcher's pid and its start, which `state.embedded` uses; the watcher's
loop is `state._embedded_watcher`, which uses `state.embedded` in turn. This module must never import
`state.embedded`, and never stop a server.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

__all__ = [
    "STAMP_FILE",
    "WATCHER_FILE",
    "WATCHER_MODULE",
    "idle_timeout_s",
    "last_used",
    "pid_alive",
    "signal_watcher",
    "start_watcher",
    "touch_last_used",
    "watcher_pid",
]

STAMP_FILE = "embedded-last-used"
"""Its mtime is the last time the server was used; its text the idle timeout in seconds."""
WATCHER_FILE = "embedded-watcher.pid"
"""The watcher's pid, and the file whose `flock` it holds while it runs."""
WATCHER_MODULE = "state._embedded_watcher"
"""The module the watcher runs as (`python -m`)."""


def touch_last_used(data_dir: Path, timeout_s: float | None = None) -> None:
    """Mark the server used now (writing the idle timeout when given: the latest command's setting wins)."""
    stamp = data_dir / STAMP_FILE
    if timeout_s is None:
        with contextlib.suppress(FileNotFoundError):
            os.utime(stamp)
        return
    stamp.write_text(json.dumps({"idle_timeout_s": timeout_s}))


def idle_timeout_s(data_dir: Path) -> float | None:
    """The idle timeout the stamp holds, or None when there is no (readable) stamp."""
    try:
        return float(json.loads((data_dir / STAMP_FILE).read_text())["idle_timeout_s"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def last_used(data_dir: Path) -> float | None:
    """The stamp's mtime (seconds since the epoch), or None."""
    try:
        return (data_dir / STAMP_FILE).stat().st_mtime
    except OSError:
        return None


def pid_alive(pid: int) -> bool:
    """Whether process `pid` exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def watcher_pid(data_dir: Path) -> int | None:
    """The pid of the running watcher of `data_dir`, or None when none holds the lock."""
    path = data_dir / WATCHER_FILE
    try:
        handle = path.open("r")
    except OSError:
        return None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            text = handle.read().strip()
            return int(text) if text.isdigit() else None
        fcntl.flock(handle, fcntl.LOCK_UN)
        return None


def start_watcher(data_dir: Path) -> None:
    """Start a detached watcher for `data_dir` unless one runs (a racing second one exits at once)."""
    if watcher_pid(data_dir) is not None:
        return
    root = str(Path(__file__).resolve().parents[1])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    log = data_dir / "embedded-watcher.log"
    # sh starts the watcher in the background and exits: the watcher is nobody's child, so no command
    # waits for it and none leaves a zombie behind.
    subprocess.run(
        ["/bin/sh", "-c", 'exec "$@" </dev/null >/dev/null 2>>"$LOG" &', "sh", sys.executable, "-m", WATCHER_MODULE,
         str(data_dir)],
        env=env | {"LOG": str(log)}, start_new_session=True, check=True, timeout=30,
    )  # fmt: skip


def signal_watcher(data_dir: Path) -> None:
    """Ask the running watcher of `data_dir` to exit (after someone else stopped the server)."""
    pid = watcher_pid(data_dir)
    if pid is not None and pid != os.getpid():
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, 15)
