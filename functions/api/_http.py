"""The HTTP plumbing of the service: the error envelope, the exception handlers and the bearer scheme.

Every error answers `{"error": {"code", "message", "details"}}` with a stable machine-readable `code`: the
code of the core error that caused it (mapped to a status by `functions.errors.http_status`), or one of
this layer's own (`auth_missing`, `auth_invalid`, `auth_not_configured`, `invalid_request`, `json_invalid`,
`body_unreadable`, `not_found`, `method_not_allowed`, ...). FastAPI's and Starlette's own answers (an unknown
route, a wrong method, a body that is not JSON) use the envelope too. A body nested too deep is refused by
the edge before any parser sees it, with `json_too_deep` (422 `invalid_request`, detail type
`json_too_deep`, the shape a too-deep free-form field gets). An error whose cause is a lost or
refused database connection answers 503 `database_unavailable`, whichever layer raised it. The bearer
value itself is checked at the edge (`functions.api._auth`) and each route's scope by its dependency
(`functions.api._scopes`). This module must never put request text into a log line or a metric.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPBearer
from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from context.errors import ContextError, PolicyPublishError
from functions._outages import DATABASE_ERRORS, cause_chain, is_database_outage
from functions.errors import ApiError, FunctionsError, http_status
from knowledge.errors import KnowledgeError
from memory.errors import InvalidToolInputError, MemoryStoreError
from state.errors import StateError

__all__ = [
    "ERROR_RESPONSES",
    "ERROR_STATUSES",
    "ErrorBody",
    "ErrorEnvelope",
    "bearer",
    "error_response",
    "error_responses",
    "install_error_handlers",
    "is_database_outage",
    "json_too_deep",
    "route_errors",
]

logger = logging.getLogger("functions.http")

bearer = HTTPBearer(
    auto_error=False,
    description="An API key (`ack_<id>_<secret>`, operator or organization scope) or the operator token "
    "`AC_CONTEXT_API_TOKEN`.",
)
"""The OpenAPI security scheme of `/v1/` (the check itself is `functions.api._auth.authenticate`)."""

_STATUS_CODES = {400: "bad_request", 404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}


class ErrorBody(BaseModel):
    """What went wrong."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    code: str
    """A stable, machine-readable code (`invalid_request`, `database_unavailable`, `overloaded`, ...)."""
    message: str
    """One human sentence; never the request's text."""
    details: Any = None
    """Structured detail when there is some: the schema errors with their paths, the failed sources."""


class ErrorEnvelope(BaseModel):
    """The one shape of every error this service answers."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    error: ErrorBody
    """The error."""


ERROR_STATUSES: dict[int, str] = {
    400: "The body is not JSON (`json_invalid`) or not UTF-8 (`body_unreadable`).",
    401: "No, a wrong or a revoked key (`auth_missing`, `auth_invalid`, `auth_revoked`).",
    403: "The key's scope does not allow it (`operator_scope_required`, `organization_forbidden`, "
    "`platform_forbidden`, `policy_forbidden`).",
    404: "`organization_not_found`: the organization the request names does not exist.",
    409: "The resource is in a state that refuses the request.",
    410: "The resource was deleted.",
    413: "The body passed the route's size limit while streaming in.",
    415: "The content type is not one this route reads.",
    422: "The request does not match the schema (`invalid_request`) or a rule of the core.",
    429: "Too many requests (`rate_limited`, with Retry-After).",
    500: "`internal_error`: the service failed; the failure is logged.",
    502: "`event_send_failed`: the row is written but its Inngest event could not be sent.",
    503: "`database_unavailable`, `overloaded` (with Retry-After), or a required source that failed.",
}
"""What each error status this service answers means, in general; a route may say more for its own."""


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for `statuses`, each the error envelope with the general description."""
    return {status: {"model": ErrorEnvelope, "description": ERROR_STATUSES[status]} for status in statuses}


def route_errors(extra: dict[int, str | None]) -> dict[int | str, dict[str, Any]]:
    """OpenAPI `responses` for the errors one route answers beyond `ERROR_RESPONSES`.

    `extra` maps a status to what it means on this route, or to None for the general `ERROR_STATUSES` text.
    """
    return {
        status: {"model": ErrorEnvelope, "description": description or ERROR_STATUSES[status]}
        for status, description in extra.items()
    }


ERROR_RESPONSES: dict[int | str, dict[str, Any]] = error_responses(401, 403, 413, 422, 500, 503)
"""The error answers every `/v1/` route documents, in the envelope (each route adds its own: 400, 404, ...)."""


def error_response(
    status: int, code: str, message: str, details: Any = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    """The one error envelope."""
    return JSONResponse(
        status_code=status, content={"error": {"code": code, "message": message, "details": details}}, headers=headers
    )


def json_too_deep(limit: int) -> ApiError:
    """422 `invalid_request` for a body nested deeper than `limit`, shaped like a field's `json_too_deep`."""
    message = f"JSON nested deeper than {limit} levels"
    details = [{"loc": ["body"], "msg": message, "type": "json_too_deep"}]
    return ApiError(422, "invalid_request", f"the request body is {message}", details=details)


def _jsonable_errors(errors: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for err in errors:
        out.append({"loc": list(err.get("loc", ())), "msg": str(err.get("msg", "")), "type": str(err.get("type", ""))})
    return out


async def _is_outage(request: Request, exc: BaseException) -> bool:
    """A database error in the chain; or an OS error in it while a probe of the database fails too."""
    if is_database_outage(exc):
        return True
    health = getattr(request.app.state, "health", None)
    if health is None or not any(isinstance(e, OSError) for e in cause_chain(exc)):
        return False
    return not await health.probe()


def _outage(request: Request) -> JSONResponse:
    health = getattr(request.app.state, "health", None)
    if health is not None:
        health.mark_down("a request lost its database connection")
    logger.warning("request failed with database_unavailable")
    return error_response(503, "database_unavailable", "the database is unreachable; retry later", None, _retry())


def _retry(seconds: int = 2) -> dict[str, str]:
    return {"Retry-After": str(seconds)}


async def _core_error(request: Request, exc: Exception) -> JSONResponse:
    code = str(getattr(exc, "code", "error"))
    status = http_status(code)
    if status >= 500 and code != "overloaded" and await _is_outage(request, exc):
        return _outage(request)
    details: Any = None
    if isinstance(exc, PolicyPublishError):
        details = _jsonable_errors(list(exc.errors))
    elif isinstance(exc, InvalidToolInputError):
        details = _jsonable_errors(list(exc.errors))
    elif isinstance(getattr(exc, "sources", None), list):
        details = {"sources": list(exc.sources)}  # type: ignore[attr-defined]
    headers = None
    retry_after = getattr(exc, "retry_after_s", None)
    if isinstance(retry_after, int):
        headers = _retry(retry_after)
    if status >= 500:
        logger.warning("request failed with %s: %s", code, type(exc).__name__)
    return error_response(status, code, str(exc), details, headers)


def install_error_handlers(app: FastAPI) -> None:
    """Map every error the core, this layer or the framework raises to the envelope with its code."""

    async def api_error(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        if exc.status >= 500 and await _is_outage(request, exc):
            return _outage(request)
        return error_response(exc.status, exc.code, str(exc), exc.details)

    async def validation_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError | ValidationError)
        errors = list(exc.errors())
        kinds = {e.get("type") for e in errors}
        if "json_invalid" in kinds:
            return error_response(400, "json_invalid", "the body is not valid JSON", _jsonable_errors(errors))
        if kinds & {"text_invalid", "string_unicode"}:
            message = "text must not hold a NUL byte or a lone surrogate"
            return error_response(422, "text_invalid", message, _jsonable_errors(errors))
        return error_response(422, "invalid_request", "the request does not match the schema", _jsonable_errors(errors))

    async def core_error(request: Request, exc: Exception) -> JSONResponse:
        return await _core_error(request, exc)

    async def http_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        if exc.status_code == 400:
            return error_response(400, "body_unreadable", "the body could not be read as UTF-8 JSON")
        code = _STATUS_CODES.get(exc.status_code, f"http_{exc.status_code}")
        return error_response(exc.status_code, code, str(exc.detail), None, dict(exc.headers or {}) or None)

    async def outage(request: Request, exc: Exception) -> JSONResponse:
        if await _is_outage(request, exc):
            return _outage(request)
        raise exc

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(ValidationError, validation_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    for kind in (ContextError, KnowledgeError, MemoryStoreError, StateError, FunctionsError):
        app.add_exception_handler(kind, core_error)
    for raw in (*DATABASE_ERRORS[1:], OSError):
        app.add_exception_handler(raw, outage)
