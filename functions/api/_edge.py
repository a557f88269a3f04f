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

Admission, the last check on the headers: a front door brief (`ADMITTED_ROUTES`) takes one of the process's
brief slots (`functions._briefs.BriefSlots`) before its body is read and holds it until its answer is sent;
with every slot taken it answers 503 `overloaded` with `Retry-After` at once, without reading the body,
parsing anything or asking the database (a full process answers so even before the key is looked up).

A body a route may parse as JSON is measured for depth while it streams in (`functions.api._json_depth`):
the chunk that nests it deeper than `MAX_JSON_DEPTH` ends the request with 422 `invalid_request` (detail
type `json_too_deep`), on every route alike, so no parser ever recurses into it.

This module must never log or measure a header value, a path parameter or a body.
"""

from __future__ import annotations

import logging
import time
import traceback
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from functions._briefs import BriefSlots
from functions.api._auth import CALLER, Caller, authenticate
from functions.api._http import error_response, json_too_deep
from functions.api._json_depth import JsonDepth
from functions.api._knowledge_batch import MAX_BATCH_BYTES
from functions.errors import ApiError
from functions.inngest.signatures import SIGNED_METHODS, signature_refusal

__all__ = ["ADMITTED_ROUTES", "UPLOAD_FRAMING_BYTES", "EdgeGuard"]

logger = logging.getLogger("functions.http")

UPLOAD_FRAMING_BYTES = 64 * 1024
"""What an upload may carry beyond the document: the multipart boundaries and the small form fields."""
BATCH_PATH = "/v1/knowledge/sources:batch"
"""The batch registration route: its body is many documents, bounded by `MAX_BATCH_BYTES`, not the JSON limit."""


ADMITTED_ROUTES = frozenset({("POST", "/v1/context/briefs")})
"""The (method, path) of the requests that take a brief slot at the edge, before their body is read."""
_REFUSED_ROUTE = "ac_context.refused_route"
"""The scope key naming the route template of a request the admission refused before routing."""


class _TooLarge(Exception):
    """The body passed its limit (of size or depth) while streaming in."""


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
            template = getattr(route, "path", None) or scope.get(_REFUSED_ROUTE) or "unmatched"
            metrics = scope["app"].state.metrics
            metrics.observe_request(scope["method"], template, status[0], time.perf_counter() - started)

    async def _guard(self, scope: Scope, receive: Receive, send: Send) -> None:
        app = scope["app"]
        limits = _limits(app)
        headers = Headers(scope=scope)
        path: str = scope["path"]
        upload = batch = False
        if path.startswith("/v1/") or path == "/v1":
            full = _admission_slots(scope)
            if full is not None and full.active >= full.capacity:
                await _overloaded(scope, receive, send, full)  # shed before a key lookup waits on the database
                return
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
                # freshness here is the one value the SDK can verify (`functions.inngest.signatures`).
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
        slots = _admission_slots(scope)
        if slots is None:
            await self._bounded(scope, receive, send, limit, too_large)
            return
        token = slots.try_acquire()
        if token is None:
            await _overloaded(scope, receive, send, slots)
            return
        try:
            await self._bounded(scope, receive, send, limit, too_large)
        finally:
            slots.release(token)

    async def _bounded(self, scope: Scope, receive: Receive, send: Send, limit: int, too_large: ApiError) -> None:
        received = 0
        cut: ApiError | None = None  # why the body was cut off: past its limit, or nested too deep
        response_started = False
        depth = _depth_of_json_body(scope)

        async def bounded_receive() -> Message:
            nonlocal received, cut
            message = await receive()
            if message["type"] == "http.request":
                chunk = message.get("body", b"")
                received += len(chunk)
                if received > limit:
                    cut = too_large
                    raise _TooLarge
                if depth is not None and depth.too_deep(chunk):
                    cut = json_too_deep(depth.limit)
                    raise _TooLarge
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal response_started
            if cut is not None and not response_started:
                return  # whatever the route made of the cut body, the answer is the cut's
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        try:
            await self.app(scope, bounded_receive, guarded_send)
        except Exception as exc:
            if response_started:
                raise
            if cut is None:
                # The frames, never the message: an exception's text may quote a request or a document.
                frames = "".join(traceback.format_tb(exc.__traceback__))
                logger.error("unhandled %s on %s %s\n%s", type(exc).__name__, scope["method"], _template(scope), frames)
                await error_response(500, "internal_error", "the service failed; the failure is logged")(
                    scope, receive, send
                )
                return
        if cut is not None and not response_started:
            await _answer(scope, receive, send, cut)


def _depth_of_json_body(scope: Scope) -> JsonDepth | None:
    """A depth count for a body that a route may parse as JSON (no content type, or a JSON one); else None.

    The Inngest endpoint is left to the SDK, which parses its own (signed) bodies.
    """
    if scope["path"] == scope["app"].state.inngest_path:
        return None
    content_type = Headers(scope=scope).get("content-type", "")
    return JsonDepth() if not content_type or "json" in content_type.lower() else None


def _admission_slots(scope: Scope) -> BriefSlots | None:
    """The brief slots a request must take at the edge: its route's, once the services are open; else None."""
    if (scope["method"], scope["path"]) not in ADMITTED_ROUTES:
        return None
    slot = scope["app"].state.slot
    if not slot.ready:
        return None  # the route answers 503 database_unavailable
    slots = getattr(slot.get().builder, "slots", None)
    return slots if isinstance(slots, BriefSlots) else None


async def _overloaded(scope: Scope, receive: Receive, send: Send, slots: BriefSlots) -> None:
    """503 `overloaded` with `Retry-After`, counted; the body is never read."""
    scope[_REFUSED_ROUTE] = scope["path"]  # an admitted path is its own route template
    refusal = slots.refusal()
    headers = {"Retry-After": str(refusal.retry_after_s)}
    await error_response(503, refusal.code, str(refusal), None, headers)(scope, receive, send)


def _template(scope: Scope) -> str:
    return getattr(scope.get("route"), "path", None) or "unmatched"


async def _answer(scope: Scope, receive: Receive, send: Send, error: ApiError) -> None:
    response = error_response(error.status, error.code, str(error), error.details)
    if error.status == 401:
        response.headers["WWW-Authenticate"] = "Bearer"
    await response(scope, receive, send)
