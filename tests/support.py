"""Small helpers shared by tests that are not fixtures: a private folder, a free port, a server coming up, a
CLI error line."""

from __future__ import annotations

import re
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


CLI_ERROR_LINE = re.compile(r"^error: ([a-z_]+): \S.*$")
"""The one line a CLI command prints on stderr for a project error."""


def cli_error_line(result: Any, code: str, *, progress: re.Pattern[str]) -> str:
    """Assert one line `error: <code>: …` on stderr (beside lines matching `progress`), exit 1; return the line."""
    assert result.exit_code == 1, (result.exit_code, result.output, result.exception)
    lines = [line for line in result.stderr.strip().splitlines() if not progress.match(line)]
    assert len(lines) == 1, f"one line, got: {result.stderr!r}"
    match = CLI_ERROR_LINE.match(lines[0])
    assert match and match.group(1) == code, lines[0]
    assert "Traceback" not in result.output
    return lines[0]
