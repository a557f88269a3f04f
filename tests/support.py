"""Small helpers shared by tests that are not fixtures: a private folder, a free port, waiting for a condition
(a server coming up among them), a CLI error line.

A test asserts what happens, never how fast: a wait here polls for the condition and gives up only after
`HANG_S`, a guard against a hang that a loaded machine never reaches (docs/decisions.md, "Why do tests
assert no wall-clock bound?")."""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx

T = TypeVar("T")

HANG_S = 300.0
"""How long a test waits for a condition before it calls it a hang: minutes, so load only makes it slower."""

READ_S = 30.0
"""The read timeout of a test's HTTP call to a real server: a slow answer is waited for, not failed."""


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


def _hung(what: str | Callable[[], str], value: object) -> AssertionError:
    said = what if isinstance(what, str) else what()
    return AssertionError(f"{said}: still not so after {HANG_S:g} s (last seen: {value!r})")


def wait_until(check: Callable[[], T], what: str | Callable[[], str], *, every: float = 0.1) -> T:
    """Poll `check` until it returns a true value and return it; after `HANG_S` fail with `what` and the last.

    `what` may be a callable, asked only on failure, to name what was last seen.
    """
    deadline = time.monotonic() + HANG_S
    while not (value := check()):
        if time.monotonic() > deadline:
            raise _hung(what, value)
        time.sleep(every)
    return value


async def eventually(check: Callable[[], Awaitable[T]], what: str | Callable[[], str], *, every: float = 0.05) -> T:
    """`wait_until` for an async check, sleeping without blocking the event loop."""
    deadline = time.monotonic() + HANG_S
    while not (value := await check()):
        if time.monotonic() > deadline:
            raise _hung(what, value)
        await asyncio.sleep(every)
    return value


def wait_until_answering(
    process: subprocess.Popen[bytes], url: str, *, exited: Callable[[], str] = lambda: "the server exited"
) -> None:
    """Poll `url` until it answers 200; fail with `exited()` when the process ends first, or after `HANG_S`."""
    last = "no answer"

    def answered() -> bool:
        nonlocal last
        assert process.poll() is None, exited()
        try:
            answer = httpx.get(url, timeout=READ_S)
        except httpx.TransportError as exc:
            last = type(exc).__name__
            return False
        last = f"{answer.status_code} {answer.text[:200]}"
        return answer.status_code == 200

    wait_until(answered, lambda: f"{url} answering 200 (last: {last})")


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


@contextmanager
def keeping_the_session_loop() -> Iterator[None]:
    """Put the test session's event loop back after code that ran `asyncio.run` (the CLI does: it unsets the
    thread's loop on exit). An earlier test's `asyncio.run` may already have left none: then nothing is put back.
    """
    try:
        session_loop: asyncio.AbstractEventLoop | None = asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:
        session_loop = None
    try:
        yield
    finally:
        if session_loop is not None:
            asyncio.set_event_loop(session_loop)
