"""The HTTP plumbing of the service: the error envelope, the exception handlers and the bearer token check.

Every error answers `{"error": {"code", "message", "details"}}` with a stable machine-readable `code`: the
code of the core error that caused it (mapped to a status by `functions.errors.http_status`), or one of
this layer's own (`auth_missing`, `auth_invalid`, `auth_not_configured`, `invalid_request`, ...). The token
is compared in constant time. This module must never put request text into a log line or a metric.
"""

from __future__ import annotations

import hmac
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError

from context.errors import ContextError, PolicyPublishError
from functions.errors import ApiError, FunctionsError, http_status
from knowledge.errors import KnowledgeError
from memory.errors import InvalidToolInputError, MemoryStoreError
from state.errors import StateError

__all__ = ["error_response", "install_error_handlers", "require_token"]

logger = logging.getLogger("functions.http")


def error_response(status: int, code: str, message: str, details: Any = None) -> JSONResponse:
    """The one error envelope."""
    return JSONResponse(status_code=status, content={"error": {"code": code, "message": message, "details": details}})


def _jsonable_errors(errors: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for err in errors:
        out.append({"loc": list(err.get("loc", ())), "msg": str(err.get("msg", "")), "type": str(err.get("type", ""))})
    return out


def _core_error(exc: Exception) -> JSONResponse:
    code = str(getattr(exc, "code", "error"))
    status = http_status(code)
    details: Any = None
    if isinstance(exc, PolicyPublishError):
        details = _jsonable_errors(list(exc.errors))
    elif isinstance(exc, InvalidToolInputError):
        details = _jsonable_errors(list(exc.errors))
    elif isinstance(getattr(exc, "sources", None), list):
        details = {"sources": list(exc.sources)}  # type: ignore[attr-defined]
    if status >= 500:
        logger.warning("request failed with %s: %s", code, type(exc).__name__)
    return error_response(status, code, str(exc), details)


def install_error_handlers(app: FastAPI) -> None:
    """Map every error the core or this layer raises to the envelope with its code."""

    async def api_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        return error_response(exc.status, exc.code, str(exc), exc.details)

    async def validation_error(_: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError | ValidationError)
        return error_response(
            422, "invalid_request", "the request does not match the schema", _jsonable_errors(list(exc.errors()))
        )

    async def core_error(_: Request, exc: Exception) -> JSONResponse:
        return _core_error(exc)

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(ValidationError, validation_error)
    for kind in (ContextError, KnowledgeError, MemoryStoreError, StateError, FunctionsError):
        app.add_exception_handler(kind, core_error)


def require_token(request: Request) -> None:
    """The `/v1/` guard: a `Bearer` token equal to `AC_CONTEXT_API_TOKEN`, compared in constant time."""
    expected: str | None = request.app.state.api_token
    if not expected:
        raise ApiError(503, "auth_not_configured", "AC_CONTEXT_API_TOKEN is not set, so /v1/ refuses every call")
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(401, "auth_missing", "send 'Authorization: Bearer <token>'")
    if not hmac.compare_digest(token.strip().encode(), expected.encode()):
        raise ApiError(401, "auth_invalid", "the bearer token is not valid")
