"""What an MCP caller is told when an act is refused: the project's code, message and details, nothing else.

`refusal(exc)` turns any error a tool or resource raised into the API's error body `{code, message, details}`:
a pydantic `ValidationError` of a tool's arguments is `invalid_request` (or `text_invalid` for text holding a
NUL byte or a lone surrogate), with each problem's path, message and type (never the input value); a core
error keeps its stable code and message (`organization_forbidden`, `memory_duplicate`, `invalid_input`
with the tool's paths, ...); a lost database connection is `database_unavailable`; anything else is
`internal_error`, logged here with its type only. The HTTP status the API would answer is in `status`. No
refusal carries a traceback, a file path or the request's text. This module must never decide a scope.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from context.errors import PolicyPublishError
from functions._outages import is_database_outage
from functions.errors import ApiError, http_status
from memory.errors import InvalidToolInputError
from state.errors import CodedError

__all__ = ["Refusal", "refusal"]

logger = logging.getLogger("functions.mcp")


@dataclass(frozen=True, slots=True)
class Refusal:
    """One refused act, as the API's error envelope says it."""

    status: int
    """The HTTP status the API answers the same refusal with."""
    code: str
    """The stable machine-readable code."""
    message: str
    """One human sentence."""
    details: Any = None
    """Structured detail: the schema problems with their paths, the failed sources."""

    def body(self) -> dict[str, Any]:
        """The envelope `{"error": {code, message, details}}`."""
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


def _problems(errors: list[Any]) -> list[dict[str, Any]]:
    return [
        {"loc": list(e.get("loc", ())), "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))} for e in errors
    ]


def refusal(exc: BaseException) -> Refusal:
    """The refusal an error of an MCP act answers with (see the module)."""
    if isinstance(exc, ValidationError):
        problems = _problems(list(exc.errors()))
        if {p["type"] for p in problems} & {"text_invalid", "string_unicode"}:
            return Refusal(422, "text_invalid", "text must not hold a NUL byte or a lone surrogate", problems)
        return Refusal(422, "invalid_request", "the arguments do not match the tool's input schema", problems)
    if isinstance(exc, ApiError):
        if exc.status >= 500 and is_database_outage(exc):
            return _outage()
        return Refusal(exc.status, exc.code, str(exc), exc.details)
    if isinstance(exc, CodedError):
        code = str(exc.code)
        status = http_status(code)
        if status >= 500 and code != "overloaded" and is_database_outage(exc):
            return _outage()
        details: Any = None
        if isinstance(exc, PolicyPublishError | InvalidToolInputError):
            details = _problems(list(exc.errors))
        elif isinstance(getattr(exc, "sources", None), list):
            details = {"sources": list(exc.sources)}  # type: ignore[attr-defined]
        if status >= 500:
            logger.warning("an MCP act failed with %s: %s", code, type(exc).__name__)
        return Refusal(status, code, str(exc), details)
    if is_database_outage(exc):
        return _outage()
    logger.error("an MCP act failed with %s", type(exc).__name__, exc_info=exc)
    return Refusal(500, "internal_error", "the service failed; the failure is logged")


def _outage() -> Refusal:
    logger.warning("an MCP act failed with database_unavailable")
    return Refusal(503, "database_unavailable", "the database is unreachable; retry later")
