"""Read-your-writes across processes: the `AC-Consistency-Token` a write answers and a later request brings.

While the service reads on standbys (`AC_CONTEXT_READ_DATABASE_URLS`), a `/v1/` request whose writes
committed (a memory remembered or forgotten, a source deleted) answers `AC-Consistency-Token: lsn:…`, the
primary's WAL position after them. A request that brings the header has its standby reads wait until the
standby has replayed that position (or run on the primary past `AC_CONTEXT_READ_YOUR_WRITES_WAIT_MS`),
whichever process serves it. A malformed token is 400 `invalid_consistency_token`, before the route runs.
Without standbys the header is neither read nor written: the service answers as it did before.

This module must never hold a rule about which reads may go to a standby (`state.db.Database.on_standby`).
"""

from __future__ import annotations

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from functions.api._http import error_response
from state.replicas import format_lsn, parse_consistency_token, reading_after, written_lsn

__all__ = ["TOKEN_HEADER", "ConsistencyTokens"]

TOKEN_HEADER = "AC-Consistency-Token"
"""The header a write answers and a read may bring."""


class ConsistencyTokens:
    """The ASGI middleware that reads and answers the consistency token (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Only a /v1/ request is looked at: anything else (Inngest's /api/inngest among them) passes through
        # without a call back into the service (tests/integration/functions/test_ingestion_paths.py).
        slot = scope["app"].state.slot if scope["type"] == "http" and scope["path"].startswith("/v1/") else None
        if slot is None or not slot.ready or slot.get().db.replicas is None:
            await self.app(scope, receive, send)
            return
        brought = Headers(scope=scope).get(TOKEN_HEADER)
        try:
            after = 0 if brought is None else parse_consistency_token(brought)
        except ValueError as exc:
            response = error_response(400, "invalid_consistency_token", f"{TOKEN_HEADER}: {exc}")
            await response(scope, receive, send)
            return

        with reading_after(after) as written:

            async def answer(message: Message) -> None:
                lsn = written_lsn(written)
                if message["type"] == "http.response.start" and lsn is not None:
                    MutableHeaders(scope=message)[TOKEN_HEADER] = format_lsn(lsn)
                await send(message)

            await self.app(scope, receive, answer)
