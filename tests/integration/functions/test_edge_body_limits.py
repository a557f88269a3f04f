"""Bounded requests against a real uvicorn server in a subprocess: a 64 MiB JSON body without a token is
refused before it is read, and a chunked 64 MiB body with a token is cut off at the JSON limit, while the
server's resident memory stays within 100 MB of its idle size (read from /proc)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.functions.conftest import TOKEN
from tests.support import HANG_S, free_port, wait_until_answering

BODY = 64 * 1024 * 1024
CHUNK = 1024 * 1024
HEADROOM = 100 * 1024 * 1024


def _rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


class Peak:
    """The highest resident size of a process, sampled in a thread."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, _rss(pid), threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss(self.pid))
            time.sleep(0.01)

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        time.sleep(0.3)
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss(self.pid))


@pytest.fixture
def server(db_url: str, fake_live_model: str, tmp_path: Path) -> Iterator[tuple[int, int]]:
    """`functions.app:app` under uvicorn in a subprocess, on the test database; (port, pid)."""
    port = free_port()
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "AC_CONTEXT_API_TOKEN": TOKEN,
        "AC_CONTEXT_INNGEST_MODE": "dev",
        "AC_CONTEXT_DATA_DIR": str(tmp_path),
    }
    command = [sys.executable, "-m", "uvicorn", "functions.app:app", "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_until_answering(process, f"http://127.0.0.1:{port}/readyz")
        yield port, process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


def _read_response(sock: socket.socket) -> tuple[int, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        part = sock.recv(65536)
        if not part:
            break
        data += part
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    length = next(int(h.split(":")[1]) for h in lines if h.lower().startswith("content-length:"))
    while len(body) < length:
        part = sock.recv(65536)
        if not part:
            break
        body += part
    return int(lines[0].split()[1]), body


def _push(sock: socket.socket, total: int, *, chunked: bool) -> int:
    """Send up to `total` body bytes; return how many the server let through before it closed."""
    sent = 0
    piece = b" " * CHUNK
    try:
        while sent < total:
            sock.sendall(b"%x\r\n%s\r\n" % (CHUNK, piece) if chunked else piece)
            sent += CHUNK
        if chunked:
            sock.sendall(b"0\r\n\r\n")
    except OSError:
        pass
    return sent


def test_a_64_mib_body_without_a_token_is_refused_before_it_is_read(server: tuple[int, int]) -> None:
    port, pid = server
    idle = _rss(pid)
    with Peak(pid) as peak, socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        head = (
            "POST /v1/knowledge/search HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"Content-Length: {BODY}\r\n\r\n"
        )
        sock.sendall(head.encode())
        status, body = _read_response(sock)
        _push(sock, BODY, chunked=False)
    assert status == 401 and b'"auth_missing"' in body
    assert peak.peak - idle < HEADROOM, f"the server grew by {(peak.peak - idle) / 2**20:.0f} MiB"


def test_a_chunked_64_mib_body_with_a_token_is_cut_at_the_json_limit(server: tuple[int, int]) -> None:
    port, pid = server
    idle = _rss(pid)
    result: dict[str, tuple[int, bytes]] = {}
    with Peak(pid) as peak, socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        head = (
            "POST /v1/knowledge/search HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {TOKEN}\r\nTransfer-Encoding: chunked\r\n\r\n"
        )
        sock.sendall(head.encode())
        reader = threading.Thread(target=lambda: result.setdefault("answer", _read_response(sock)), daemon=True)
        reader.start()
        _push(sock, BODY, chunked=True)
        reader.join(timeout=HANG_S)
    status, body = result["answer"]
    assert status == 413 and b'"request_too_large"' in body
    assert peak.peak - idle < HEADROOM, f"the server grew by {(peak.peak - idle) / 2**20:.0f} MiB"

    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        head = (
            "POST /v1/knowledge/search HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {TOKEN}\r\nContent-Length: {BODY}\r\n\r\n"
        )
        sock.sendall(head.encode())
        status, body = _read_response(sock)
    assert status == 413 and b'"request_too_large"' in body, "a declared length past the limit is refused unread"
