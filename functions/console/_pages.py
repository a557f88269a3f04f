"""How a console page is answered: the templates, the security headers, and refusals as pages.

Every template renders with Jinja2's autoescape on (forced here, whatever a file is named), so a title,
a filename, a chunk, a memory, a failure reason or a query shows as text. Every answer under `/console`
carries a strict Content-Security-Policy (`default-src 'self'`, no inline script or style,
`frame-ancestors 'none'`), `X-Frame-Options: DENY`, `nosniff`, no referrer and no caching. A page
route's refusal (an error of the core, an `ApiError`, a malformed path) is a page with its status and
code, what happened and what to do, never a traceback or JSON; a request without a session is sent to the
sign-in page, which says why a session the browser held ended.

This module must never mark text safe that came from a request or the database.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.routing import APIRoute
from jinja2 import Environment, FileSystemLoader
from pydantic import ValidationError
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from functions._outages import is_database_outage
from functions.console._advice import HEADINGS, what_to_do
from functions.console._session import SignInRequired
from functions.errors import ApiError, http_status
from state.errors import CodedError

__all__ = ["BLANK", "CSP", "STATIC_DIR", "ConsoleHeaders", "ConsoleRoute", "error_page", "render", "templates"]

logger = logging.getLogger("functions.console")

HERE = Path(__file__).resolve().parent
STATIC_DIR = HERE / "static"
"""The vendored stylesheet, served at `/console/static`."""
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
"""The Content-Security-Policy of every console answer: nothing inline, nothing from elsewhere, no framing."""
_HEADERS = {
    "content-security-policy": CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}

BLANK = "\u2014"
"""What a page shows for a value that is not there (Python's `None`): an em dash, never the word None."""


def _shown(value: Any) -> Any:
    """Each `{{ … }}` value as a page shows it: `None` as `BLANK`, anything else as it is (then escaped)."""
    return BLANK if value is None else value


templates = Environment(
    loader=FileSystemLoader(HERE / "templates"), autoescape=True, auto_reload=False, finalize=_shown
)
"""The console's templates; autoescape is on for every one of them, and `None` shows as `BLANK`."""


def render(request: Request, name: str, *, status_code: int = 200, **context: Any) -> HTMLResponse:
    """The template `name` rendered with `context` (and the request's session, when it has one)."""
    context.setdefault("session", getattr(request.state, "console_session", None))
    context.setdefault("org", None)
    context.setdefault("org_counts", getattr(request.state, "org_counts", None))
    return HTMLResponse(templates.get_template(name).render(request=request, **context), status_code=status_code)


def error_page(request: Request, status: int, code: str, message: str) -> HTMLResponse:
    """A refusal as a page: what happened (its message), what to do (`what_to_do`), and its code."""
    return render(
        request, "error.html", status_code=status, code=code, message=message, advice=what_to_do(status, code),
        heading=HEADINGS.get(status, "Refused" if status < 500 else "The console failed"),
    )  # fmt: skip


def _validation(request: Request, exc: RequestValidationError) -> HTMLResponse:
    errors = list(exc.errors())
    if any(e.get("loc", ("",))[0] == "path" for e in errors):  # a malformed id names nothing: as an unknown one
        return error_page(request, 404, "not_found", "nothing in the console has this address")
    fields = ", ".join(sorted({str(e.get("loc", ("", "?"))[-1]) for e in errors}))
    return error_page(request, 422, "invalid_request", f"these fields are not valid: {fields}")


class ConsoleRoute(APIRoute):
    """A console page route: a refusal becomes a page, a missing session the sign-in page."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """The route's handler, wrapped so every refusal answers as a page."""
        handler = super().get_route_handler()

        async def page(request: Request) -> Response:
            try:
                return await handler(request)
            except SignInRequired as exc:
                target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                ended = f"&ended={exc.reason}" if exc.reason else ""  # the sign-in page says why, in a sentence
                return RedirectResponse(f"/console/sign-in?next={quote(target, safe='')}{ended}", status_code=303)
            except RequestValidationError as exc:
                return _validation(request, exc)
            except ValidationError as exc:  # a body the page builds for a route's function (a brief's query)
                kinds = {str(e.get("type")) for e in exc.errors()}
                code = "text_invalid" if kinds & {"text_invalid", "string_unicode"} else "invalid_request"
                return error_page(request, 422, code, "the form's text is not valid (no NUL byte, within its size)")
            except ApiError as exc:
                return error_page(request, exc.status, exc.code, str(exc))
            except CodedError as exc:
                status = http_status(exc.code)
                if status >= 500:
                    logger.warning("a console page failed with %s", exc.code)
                return error_page(request, status, exc.code, str(exc))
            except Exception as exc:
                if is_database_outage(exc):
                    return error_page(request, 503, "database_unavailable", "the database is unreachable; retry")
                logger.exception("a console page failed with %s", type(exc).__name__)
                return error_page(request, 500, "internal_error", "the console failed; the failure is logged")

        return page


class ConsoleHeaders:
    """ASGI middleware: the security headers on every answer under `/console` (pages, assets, refusals)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith("/console"):
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in _HEADERS.items():
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, send_with_headers)
