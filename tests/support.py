"""Small helpers shared by tests that are not fixtures: a private folder, a free port, a server coming up."""

from __future__ import annotations

import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx


def embedded_test_dir() -> Path:
    """A private folder for an embedded server, outside pytest's temp root.

    pytest resets its temp root to mode 0700 whenever any pytest process starts, which would cut the
    server's own system user off from its data folder in the middle of a run.
    """
    return Path(tempfile.mkdtemp(prefix="ac-context-test-"))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on at the moment."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_answering(
    process: subprocess.Popen[bytes], url: str, *, exited: Callable[[], str] = lambda: "the server exited"
) -> None:
    """Poll `url` until it answers 200 (up to a minute); fail with `exited()` when the process ends first."""
    for _ in range(600):
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert process.poll() is None, exited()
        time.sleep(0.1)
    raise AssertionError(f"{url} never answered 200")
