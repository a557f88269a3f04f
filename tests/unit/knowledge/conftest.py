"""Guards for the knowledge unit tests: no socket may leave the machine, no real API key is ever used."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CORPUS = Path(__file__).resolve().parents[3] / ".." / "shared" / "corpus"
_LOCAL_NAMES = {"localhost", "localhost.localdomain", ""}


def _is_local(host: object) -> bool:
    if isinstance(host, bytes):
        host = host.decode()
    if not isinstance(host, str) or host in _LOCAL_NAMES:
        return isinstance(host, str)
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


class NetworkBlockedError(RuntimeError):
    """A test tried to reach a host other than this machine."""


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Refuse DNS lookups and connections to anything but loopback; dummy credentials for every provider."""
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_local(host):
            raise NetworkBlockedError(f"network access to {host!r} is blocked in unit tests")
        return real_getaddrinfo(host, *args, **kwargs)

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address[0]):
            raise NetworkBlockedError(f"network access to {address!r} is blocked in unit tests")
        real_connect(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # the discard port: refused at once
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    yield


@pytest.fixture
def corpus() -> Path:
    """The shared corpus, read in place (never copied into the repository)."""
    assert CORPUS.is_dir(), f"the shared corpus must be at {CORPUS}"
    return CORPUS
