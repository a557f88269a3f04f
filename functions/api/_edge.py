"""The edge of the service: what every HTTP request passes before any route reads a byte of its body.

In this order, on the headers alone: the bearer token of `/v1/` (401 or 503 in the envelope, the body never
read), the freshness of an Inngest signature in production (401 `inngest_signature_refused`, a log line without the
body), and the declared `Content-Length` against the route's limit (413). Then the body is counted while it
streams in, and the first byte past the limit ends the request with 413: a route never holds more than its
limit. Limits: uploads `AC_CONTEXT_MAX_UPLOAD_BYTES` plus the multipart framing, `/api/inngest`
`AC_CONTEXT_MAX_INNGEST_BYTES`, every other route `AC_CONTEXT_MAX_JSON_BYTES`. An exception no handler took
answers 500 `internal_error` in the envelope. Each request's latency is observed by route template.

The bearer token is the operator token or an API key (`functions.api._auth`: at most one indexed lookup);
the caller it names is left in the request scope, where the route's scope dependency reads it
(`functions.api._scopes`).

This module must never log or measure a header value, a path parameter or a body.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from functions._signature_freshness import SIGNED_METHODS, signature_refusal
from functions.api._auth import CALLER, Caller, authenticate
from functions.api._http import error_response
from functions.api._knowledge_batch import MAX_BATCH_BYTES
from functions.errors import ApiError

__all__ = ["UPLOAD_FRAMING_BYTES", "EdgeGuard"]

logger = logging.getLogger("functions.http")

UPLOAD_FRAMING_BYTES = 64 * 1024
"""What an upload may carry beyond the document: the multipart boundaries and the small form fields."""
BATCH_PATH = "/v1/knowledge/sources:batch"
"""The batch registration route: its body is many documents, bounded by `MAX_BATCH_BYTES`, not the JSON limit."""


class _TooLarge(Exception):
    """The body passed its limit while streaming in."""


@dataclass
class _Limits:
    json_bytes: int
    upload_bytes: int
    inngest_bytes: int
    inngest_path: str
    signature_max_age_s: float


def _limits(app: Any) -> _Limits:
    settings = app.state.settings
    return _Limits(
        json_bytes=settings.max_json_bytes,
        upload_bytes=settings.max_upload_bytes + UPLOAD_FRAMING_BYTES,
        inngest_bytes=settings.max_inngest_bytes,
        inngest_path=app.state.inngest_path,
        signature_max_age_s=settings.inngest_signature_max_age_s,
    )


class EdgeGuard:
    """The ASGI middleware that guards every route (see the module docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [500]

        async def send_status(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            await self._guard(scope, receive, send_status)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            metrics = scope["app"].state.metrics
            metrics.observe_request(scope["method"], template, status[0], time.perf_counter() - started)

    async def _guard(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = scope["app"]
        limits = _limits(app)
        headers = Headers(scope=scope)
        path: str = scope["path"]
        upload = batch = False
        if path.startswith("/v1/") or path == "/v1":
            caller = await authenticate(app, headers.get("authorization"))
            if not isinstance(caller, Caller):
                await caller(scope, receive, send)
                return
            scope[CALLER] = caller
            upload = scope["method"] == "POST" and path == "/v1/knowledge/sources"
            batch = scope["method"] == "POST" and path == BATCH_PATH
            limit = limits.upload_bytes if upload else MAX_BATCH_BYTES if batch else limits.json_bytes
        elif path == limits.inngest_path:
            if app.state.inngest.is_production:
                # Exactly one signature of the server's shape, read from the raw list (not `headers.get`, which
                # takes the first of repeated headers while the SDK verifies the last): what is checked for
                # freshness here is the one value the SDK can verify (`functions._signature_freshness`).
                reason = signature_refusal(
                    scope["headers"], method=scope["method"], now=time.time(), max_age_s=limits.signature_max_age_s
                )
                if reason is not None:
                    method = scope["method"] if scope["method"] in SIGNED_METHODS else "request"
                    logger.warning("refused an Inngest %s: %s", method, reason)
                    await _answer(scope, receive, send, ApiError(401, "inngest_signature_refused", reason))
                    return
            limit = limits.inngest_bytes
        else:
            limit = limits.json_bytes
        too_large = ApiError(
            413,
            "document_too_large" if upload else "batch_too_large" if batch else "request_too_large",
            f"the request body is larger than the {limit}-byte limit of this route",
        )
        declared = headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            await _answer(scope, receive, send, too_large)
            return
        await self._bounded(scope, receive, send, limit, too_large)

    async def _bounded(self, scope: Scope, receive: Receive, send: Send, limit: int, too_large: ApiError) -> None:
        received = 0
        exceeded = False
        response_started = False

        async def bounded_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    exceeded = True
                    raise _TooLarge
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal response_started
            if exceeded and not response_started:
                return  # whatever the route made of the cut body, the answer is 413
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, bounded_receive, guarded_send)
        except Exception as exc:
            if response_started:
                raise
            if not exceeded:
                logger.exception("unhandled %s on %s %s", type(exc).__name__, scope["method"], _template(scope))
                await error_response(500, "internal_error", "the service failed; the failure is logged")(
                    scope, receive, send
                )
                return
        if exceeded and not response_started:
            await _answer(scope, receive, send, too_large)


def _template(scope: Scope) -> str:
    return getattr(scope.get("route"), "path", None) or "unmatched"


async def _answer(scope: Scope, receive: Receive, send: Send, error: ApiError) -> None:
    response = error_response(error.status, error.code, str(error), error.details)
    if error.status == 401:
        response.headers["WWW-Authenticate"] = "Bearer"
    await response(scope, receive, send)
