"""How `ac-context serve` starts: dev mode on this machine unless production is asked for explicitly.

Dev mode (the default) talks to a local Inngest dev server, listens on the loopback interface only, and
uses `AC_CONTEXT_API_TOKEN` or a token it generates and prints once. Production mode is chosen only by
`AC_CONTEXT_INNGEST_MODE=production`, and refuses to start, in one line naming them, without its keys
(`functions._production`); either mode refuses a malformed step encryption key in one line. This module
decides and prints; uvicorn is started by the command, with `KEEP_ALIVE_S` and `BACKLOG` (the Dockerfile
passes the same to `uvicorn functions.app:app`; a test compares them).
"""

from __future__ import annotations

import ipaddress
import os
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Final

from functions._production import check_production
from functions._service_file import (
    ServiceNote,
    configured_data_dir,
    configured_database_url,
    database_fingerprint,
    remove_service_file,
    service_url,
    write_service_file,
)
from functions.errors import InngestConfigError
from functions.inngest.encryption import parse_keys
from state.settings import load_settings

__all__ = [
    "BACKLOG",
    "DEFAULT_PORT",
    "INNGEST_CONFIG",
    "KEEP_ALIVE_S",
    "ServePlan",
    "announced",
    "inngest_line",
    "plan_serve",
]

DEFAULT_PORT: Final = 8000
"""`serve`'s port unless `--port` names another; `inngest.dev.json`'s `sdk-url` names the same (a test checks)."""
INNGEST_CONFIG: Final = "inngest.dev.json"
"""The Inngest dev server's config file at the project's root, pointing at `DEFAULT_PORT`."""
KEEP_ALIVE_S: Final = 75
"""uvicorn's `timeout_keep_alive` (docs/decisions.md, "Which uvicorn settings serve an overload?").

It outlasts the idle time of the clients and proxies in front (httpx 5 s, aiohttp 15 s, a load balancer's
60 s). At uvicorn's default of 5 s, equal to httpx's, the server closed an idle connection in the same instant
a client reused it, and that request got no answer.
"""
BACKLOG: Final = 2048
"""uvicorn's `backlog` (its default, said here): connections the kernel holds before the loop accepts them.
`limit_concurrency` stays off: its 503 is plain text outside the envelope and it counts idle keep-alive
connections; the edge's brief admission is the limit that answers in the envelope."""

_LOOPBACK_NAMES = frozenset({"localhost"})


@dataclass
class ServePlan:
    """The environment the app is served with, and the lines to print before it starts."""

    production: bool
    env: dict[str, str] = field(default_factory=dict)
    """Variables to set before uvicorn imports `functions.app:app`."""
    lines: list[str] = field(default_factory=list)
    """What to tell the person who started it."""


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def plan_serve(environ: Mapping[str, str], *, host: str, port: int) -> ServePlan:
    """The plan for `serve`; `InngestConfigError` (one line) when it must not start."""
    production = environ.get("AC_CONTEXT_INNGEST_MODE", "").strip().lower() == "production"
    if production:
        check_production(load_settings(), environ)
        return ServePlan(
            production=True,
            lines=[f"production mode on http://{host}:{port} (docs at /docs, console at /console)"],
        )
    parse_keys(load_settings().step_encryption_keys)  # a bad step key is one line here, before anything prints
    if not _is_loopback(host):
        raise InngestConfigError(
            f"dev mode listens on 127.0.0.1 only, not {host}; set AC_CONTEXT_INNGEST_MODE=production "
            "(with its keys) to serve a network"
        )
    plan = ServePlan(production=False, env={"AC_CONTEXT_INNGEST_MODE": "dev", "INNGEST_DEV": "1"})
    token = environ.get("AC_CONTEXT_API_TOKEN", "").strip()
    if not token:
        token = secrets.token_urlsafe(24)
        plan.env["AC_CONTEXT_API_TOKEN"] = token
        plan.lines.append(f"API token for this run (printed once; set AC_CONTEXT_API_TOKEN to choose one): {token}")
    else:
        plan.lines.append("API token: AC_CONTEXT_API_TOKEN from the environment")
    plan.lines.append(
        f"dev mode: open http://{host}:{port}/docs and Authorize with the token; {inngest_line(host, port)}"
    )
    plan.lines.append(f"console: http://{host}:{port}/console (sign in with the token or an API key)")
    plan.lines.append(functions_line(environ))
    return plan


def inngest_line(host: str, port: int) -> str:
    """How to start the Inngest dev server against this service: `inngest.dev.json` when it names this port."""
    if port == DEFAULT_PORT and host in ("127.0.0.1", "localhost"):
        return f"Inngest dev server: npx inngest-cli@latest dev --config {INNGEST_CONFIG}"
    return (
        f"Inngest dev server: npx inngest-cli@latest dev -u http://{host}:{port}/api/inngest "
        f"({INNGEST_CONFIG} names port {DEFAULT_PORT})"
    )


def functions_line(environ: Mapping[str, str]) -> str:
    """The banner line saying where dev mode runs the work of its events (the service checks again at start)."""
    mode = environ.get("AC_CONTEXT_RUN_FUNCTIONS", "auto").strip().lower()
    origin = (
        environ.get("INNGEST_EVENT_API_BASE_URL") or environ.get("INNGEST_BASE_URL") or "http://127.0.0.1:8288"
    ).rstrip("/")
    if mode == "in-process":
        return "functions: in-process (AC_CONTEXT_RUN_FUNCTIONS=in-process)"
    import httpx

    try:
        httpx.get(origin, timeout=0.5)
    except httpx.HTTPError:
        if mode == "inngest":
            return f"functions: Inngest at {origin}, which does not answer yet; events wait in the outbox"
        return f"functions: in-process (no Inngest dev server answers at {origin})"
    return f"functions: the Inngest dev server at {origin}"


@contextmanager
def announced(environ: Mapping[str, str], *, host: str, port: int, token: str | None) -> Iterator[None]:
    """While the service runs, its `service.json` in the data folder, so `ac-context` sends it its reads.

    Written before uvicorn binds (a command in that instant finds the port closed and reads directly), removed
    when uvicorn returns (a stop, SIGTERM, or a port it could not bind); a killed service leaves it behind, and
    the command line then finds its pid gone. Without an operator token there is nothing to announce: the
    command line could not authenticate.
    """
    if not token:
        yield
        return
    data_dir, pid = configured_data_dir(environ), os.getpid()
    note = ServiceNote(service_url(host, port), pid, token, database_fingerprint(configured_database_url(environ)))
    write_service_file(data_dir, note)
    try:
        yield
    finally:
        remove_service_file(data_dir, pid)
