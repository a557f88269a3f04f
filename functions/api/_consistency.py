"""Read-your-writes for every write, in one place: the write position a request leaves and the token it answers.

While the service reads on standbys (`AC_CONTEXT_READ_DATABASE_URLS`), every request that may have written
records the primary's WAL position for the organization it wrote in (`Database.note_write`), before its
response starts, and answers it as `AC-Consistency-Token: lsn:…`. A request "may have written" when it is
not a read: any method but GET, HEAD and OPTIONS, under `/v1/` or on the console, except the routes in
`READS` (POSTs that only read), whose route ran and answered below 500. So no write path has to remember
anything, and a new route is a write until it is declared a read. The same process's next standby reads of
that organization wait for the position (or run on the primary); a request that brings the header back,
in whichever process, has its standby reads wait too (`state.replicas.reading_after`). A malformed token is
400 `invalid_consistency_token`, before the route runs. Without standbys nothing is read, noted or answered.

The organization noted is the caller's when an organization key calls; for the operator, the one
organization the request names (path, query, body), or `None` (a platform write, which every
organization's reads wait for) when it names none, several, or the platform. The console's writes are
platform writes (it answers no token a browser keeps).

This module must never hold a rule about which reads may go to a standby (`state.db.Database.on_standby`).
"""

from __future__ import annotations

import logging
from typing import Any, Final
from urllib.parse import parse_qs
from uuid import UUID

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from functions.api._auth import CALLER, Caller
from functions.api._body import ParsedBody, parsed_body
from functions.api._http import error_response
from functions.errors import ApiError
from state.replicas import format_lsn, parse_consistency_token, reading_after, written_lsn

__all__ = ["READS", "TOKEN_HEADER", "ConsistencyTokens", "written_in"]

logger = logging.getLogger(__name__)

TOKEN_HEADER = "AC-Consistency-Token"
"""The header a write answers and a read may bring."""
READS: Final = frozenset({
    ("POST", "/v1/context/briefs"),
    ("POST", "/v1/context/policies/validate"),
    ("POST", "/v1/knowledge/search"),
})  # fmt: skip
"""The routes that take a body but only read: they note no write (a brief must not make the next one wait)."""
_READ_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
_CONSOLE: Final = "/console"
_FIELD: Final = "organization_id"
_FALSE: Final = frozenset({"", "0", "f", "false", "n", "no", "off"})


def _writes(scope: Scope) -> bool:
    """Whether this request's route may have written (see the module docstring)."""
    route = getattr(scope.get("route"), "path", None)
    return route is not None and scope["method"] not in _READ_METHODS and (scope["method"], route) not in READS


def _is_false(value: Any) -> bool:
    return value is False or (isinstance(value, str) and value.strip().lower() in _FALSE)


def _uuid(value: Any) -> UUID | None:
    try:
        return value if isinstance(value, UUID) else UUID(str(value))
    except ValueError:
        return None


def written_in(scope: Scope) -> UUID | None:
    """The organization this request's writes belong to, `None` for the platform (every organization)."""
    caller = scope.get(CALLER)
    if isinstance(caller, Caller) and caller.organization_id is not None:
        return caller.organization_id  # an organization key writes in its organization only (its scope check)
    if not scope["path"].startswith("/v1/"):
        return None
    named: list[Any] = []
    platform: list[Any] = []
    if _FIELD in scope.get("path_params", {}):
        named.append(scope["path_params"][_FIELD])
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
    named += query.get(_FIELD, [])
    platform += query.get("platform", [])
    try:
        body = parsed_body(Request(scope))
    except ApiError:
        body = ParsedBody("none")  # a route that reads no body
    if body.kind == "json":
        named += body.repeated.get(_FIELD, [])
        platform += body.repeated.get("platform", [])
    elif body.kind == "form":
        named += body.form.getlist(_FIELD)
        platform += body.form.getlist("platform")
    organizations = {_uuid(v) for v in named if v is not None}
    if not all(_is_false(v) for v in platform) or len(organizations) != 1:
        return None
    return organizations.pop()


class ConsistencyTokens:
    """The ASGI middleware that notes every write and reads and answers the token (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Only /v1/ and the console are looked at: anything else (Inngest's /api/inngest among them) passes
        # through without a call back into the service (tests/integration/functions/test_ingestion_paths.py).
        path = scope["path"] if scope["type"] == "http" else ""
        api, console = path.startswith("/v1/"), path == _CONSOLE or path.startswith(_CONSOLE + "/")
        slot = scope["app"].state.slot if api or console else None
        if slot is None or not slot.ready or slot.get().db.replicas is None:
            await self.app(scope, receive, send)
            return
        db = slot.get().db
        brought = Headers(scope=scope).get(TOKEN_HEADER) if api else None
        try:
            after = 0 if brought is None else parse_consistency_token(brought)
        except ValueError as exc:
            response = error_response(400, "invalid_consistency_token", f"{TOKEN_HEADER}: {exc}")
            await response(scope, receive, send)
            return

        with reading_after(after) as written:

            async def answer(message: Message) -> None:
                if message["type"] == "http.response.start":
                    if message["status"] < 500 and _writes(scope):
                        try:
                            await db.note_write(written_in(scope))  # after every commit of the route
                        except Exception as exc:  # the primary just went: the answer stands, without a token
                            logger.warning("a write's position could not be read: %s", type(exc).__name__)
                    lsn = written_lsn(written)
                    if lsn is not None:
                        MutableHeaders(scope=message)[TOKEN_HEADER] = format_lsn(lsn)
                await send(message)

            await self.app(scope, receive, answer)
