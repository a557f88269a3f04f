"""The command line's reads over HTTP: `search`, `brief` and the lists ask a running service when one answers.

A service is the one `AC_CONTEXT_SERVICE_URL` names (with the operator token `AC_CONTEXT_API_TOKEN`), or else
the `ac-context serve` whose `service.json` is in the data folder and serves the same database
(`functions._service_file`). The command then sends the request the HTTP API documents and prints the answer
exactly as it prints its own read: the same text and JSON, and a refusal in the service's envelope is the
same one line with its code and exit 1 (`CliError`, so `functions.cli.errors` prints it with its hint).
Nothing of the read path is imported on this path (no database driver, no settings, no tokenizer), and the
HTTP client is the standard library's `http.client` (`import httpx` costs 0.4 s, `http.client` 11 ms of CPU).

A service announced in the folder that does not take the connection within `CONNECT_TIMEOUT_S` (killed, not
yet listening, stopping) is passed over silently and the command reads the database itself; a configured
URL that does not answer is an error (`service_unavailable`), since the person asked for that service.
`--direct` (anywhere on the command line) always reads the database here. This module must never hold a
business rule: it moves a request and its answer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final

from functions._service_file import configured_data_dir, configured_database_url, read_service_file
from functions.cli.errors import DIRECT_FLAG, CliError

__all__ = [
    "CONNECT_TIMEOUT_S",
    "DIRECT",
    "DIRECT_FLAG",
    "READ_TIMEOUT_S",
    "Service",
    "ServiceRefusal",
    "ask",
    "ask_pages",
    "find_service",
]

DIRECT: ContextVar[bool] = ContextVar("ac_context_direct", default=False)
"""Whether `--direct` was given: read the database here even when a service runs."""
CONNECT_TIMEOUT_S: Final = 0.5
"""How long a connection to the service may take before the command reads the database itself."""
READ_TIMEOUT_S: Final = 60.0
"""How long the service may take to answer once connected: a brief at a big tenant under load takes well under
a second, so a minute means the service is stuck (an announced one is then passed over, a configured one refused)."""


@dataclass(frozen=True, slots=True)
class Service:
    """A service the command line sends its reads to."""

    url: str
    """Its base URL, without a trailing slash."""
    token: str
    """The bearer value it accepts (the operator token)."""
    configured: bool
    """True for `AC_CONTEXT_SERVICE_URL` (not answering is an error), False for the data folder's note."""


class ServiceRefusal(CliError):
    """The service answered its error envelope: the same code and message the direct path would have raised."""

    def __init__(self, code: str, message: str, *, status: int, details: Any = None) -> None:
        super().__init__(code, message)
        self.status = status
        self.details = details


class _Unreachable(Exception):
    """No answer: the connection was refused, timed out or broke before a status line."""


def _variable(environ: Mapping[str, str], name: str) -> str | None:
    for key, value in environ.items():
        if key.upper() == name and value.strip():
            return value.strip()
    return None


def find_service(environ: Mapping[str, str] | None = None) -> Service | None:
    """The service to ask, or None to read the database here (`--direct`, no URL set, no live note)."""
    if DIRECT.get():
        return None
    env = os.environ if environ is None else environ
    url = _variable(env, "AC_CONTEXT_SERVICE_URL")
    if url is not None:
        return Service(url.rstrip("/"), _variable(env, "AC_CONTEXT_API_TOKEN") or "", configured=True)
    note = read_service_file(configured_data_dir(env), database_url=configured_database_url(env))
    return None if note is None else Service(note.url, note.token, configured=False)


def _send(service: Service, method: str, path: str, body: Any, query: Mapping[str, Any] | None) -> tuple[int, bytes]:
    from urllib.parse import urlencode, urlsplit

    parts = urlsplit(service.url)
    target = parts.path.rstrip("/") + path
    params = {k: _param(v) for k, v in (query or {}).items() if v is not None}
    if params:
        target += "?" + urlencode(params)
    headers = {"Accept": "application/json", "Authorization": f"Bearer {service.token}"}
    data = b""
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    host = parts.hostname or "127.0.0.1"
    try:
        return _exchange(parts.scheme, host, parts.port, method, target, headers, data)
    except (OSError, ValueError) as exc:  # refused, timed out, broken, or not an HTTP answer
        raise _Unreachable(f"{type(exc).__name__}: {exc}".rstrip(": ")) from exc


def _exchange(
    scheme: str, host: str, port: int | None, method: str, target: str, headers: dict[str, str], data: bytes
) -> tuple[int, bytes]:
    """One exchange through the standard library's client.

    Its import (11 ms of CPU) is the price of not keeping an HTTP parser here.
    """
    import http.client

    kind = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
    conn = kind(host, port, timeout=CONNECT_TIMEOUT_S)
    try:
        conn.connect()
        if conn.sock is not None:
            conn.sock.settimeout(READ_TIMEOUT_S)
        conn.request(method, target, body=data or None, headers=headers)
        answer = conn.getresponse()
        return answer.status, answer.read()
    except http.client.HTTPException as exc:
        raise ValueError(str(exc)) from exc
    finally:
        conn.close()


def _param(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _answer(service: Service, status: int, raw: bytes) -> Any:
    try:
        decoded = json.loads(raw) if raw else None
    except ValueError:
        decoded = None
    if 200 <= status < 300 and decoded is not None:
        return decoded
    error = decoded.get("error") if isinstance(decoded, dict) else None
    if isinstance(error, dict) and isinstance(error.get("code"), str):
        message = str(error.get("message") or error["code"])
        raise ServiceRefusal(error["code"], message, status=status, details=error.get("details"))
    raise CliError("service_error", f"the service at {service.url} answered HTTP {status} without its envelope")


def _unavailable(service: Service, why: str) -> CliError:
    return CliError(
        "service_unavailable",
        f"no service answers at {service.url} ({why})",
        hint="start it, unset AC_CONTEXT_SERVICE_URL, or add --direct to read the database here",
    )


def ask(method: str, path: str, *, body: Any = None, query: Mapping[str, Any] | None = None) -> Any | None:
    """The service's JSON answer, or None when the command should read the database itself.

    A refusal in the envelope raises `ServiceRefusal`; a configured URL that does not answer raises
    `service_unavailable`; an announced service that does not answer is None.
    """
    service = find_service()
    if service is None:
        return None
    try:
        status, raw = _send(service, method, path, body, query)
    except _Unreachable as exc:
        if service.configured:
            raise _unavailable(service, str(exc)) from None
        return None
    return _answer(service, status, raw)


def ask_pages(
    path: str, query: Mapping[str, Any], *, cursor: str | None, limit: int, everything: bool, max_limit: int
) -> tuple[list[dict[str, Any]], int, str | None] | None:
    """One page of a `/v1/` list (`items`, `total`, `next_cursor`), or every page from `cursor` on.

    With `everything`, as `functions.cli._paging.read_pages` reads them; None to read the database here.
    """
    first = ask("GET", path, query={**query, "cursor": cursor, "limit": max_limit if everything else limit})
    if first is None:
        return None
    page, items = first, list(first["items"])
    if everything:
        service = find_service()
        assert service is not None  # the first page came from it
        while page["next_cursor"] is not None:
            try:
                after = {**query, "cursor": page["next_cursor"], "limit": max_limit}
                status, raw = _send(service, "GET", path, None, after)
            except _Unreachable as exc:
                raise _unavailable(service, str(exc)) from None  # half a list read here would not be the same list
            page = _answer(service, status, raw)
            items.extend(page["items"])
    return items, page["total"], page["next_cursor"]
