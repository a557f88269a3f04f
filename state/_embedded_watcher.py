"""The watcher of the embedded server's idle stop: `python -m state._embedded_watcher <data_dir>`.

`state._embedded_idle` starts it and keeps the stamp it reads. It holds an exclusive `flock` on
`<data_dir>/embedded-watcher.pid` for its whole life (a second one exits at once) and polls: while a process
holds the server or a client backend is connected, it touches the stamp; once the stamp is older than the
timeout, it takes the wheel's start-up lock, checks again, and stops the server. It exits when the server is
stopped, by itself or anyone else. This module must never stop a server that a process holds or a client
is connected to.
"""

from __future__ import annotations

import fcntl
import os
import sys
import time
from pathlib import Path

from state._embedded_idle import WATCHER_FILE, idle_timeout_s, last_used, touch_last_used
from state.embedded import embedded_status, server_dsn, server_lock, stop_embedded_server

__all__ = ["watch"]


async def _client_backends(url: str) -> int:
    """Client connections to the server, this one not counted."""
    import asyncpg

    conn = await asyncpg.connect(url, timeout=5)
    try:
        count: int = await conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
        )
        return count
    finally:
        await conn.close()


def _busy(data_dir: Path) -> bool | None:
    """Whether a process holds the server or a client is connected; None once the server is stopped."""
    import asyncio

    status = embedded_status(data_dir)
    if not status.running or status.url is None:
        return None
    if status.holder_pids:
        return True
    try:
        return asyncio.run(_client_backends(server_dsn(status.url, "postgres"))) > 0
    except Exception:  # starting or stopping: not idle, look again next time
        return True


def _poll_s(timeout_s: float) -> float:
    return min(30.0, max(0.5, timeout_s / 10))


def watch(data_dir: Path) -> int:
    """Watch the server of `data_dir` until it stops; stop it once idle for the stamp's timeout."""
    handle = (data_dir / WATCHER_FILE).open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0  # another watcher runs
    handle.truncate(0)
    handle.write(str(os.getpid()))
    handle.flush()
    while True:
        timeout = idle_timeout_s(data_dir)
        time.sleep(_poll_s(timeout or 60.0))
        busy = _busy(data_dir)
        if busy is None:
            with server_lock():  # a command starting the server again waits, then finds no watcher
                if _busy(data_dir) is None:
                    return 0
            continue
        if busy:
            touch_last_used(data_dir)
            continue
        used = last_used(data_dir)
        if not timeout or used is None or time.time() - used < timeout:
            continue  # no timeout (0: the command that set it stops the server itself), or not idle long enough
        with server_lock():
            used = last_used(data_dir)
            if _busy(data_dir) is False and used is not None and time.time() - used >= timeout:
                stop_embedded_server(data_dir, stop_watcher=False)
                return 0


if __name__ == "__main__":
    raise SystemExit(watch(Path(sys.argv[1])))
