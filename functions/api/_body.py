"""The one reading of a request body: the route's media type admitted, the body parsed once, shared by all.

A check and a use that read the same input two ways is how a scope breaks: the scope check once skipped a
body it did not take for JSON (`application/jsonx`) that the route then parsed as JSON, and an organization
key wrote into another organization. So every `/v1/` route is a `BodyRoute`, and before FastAPI or any
dependency reads a byte of the body, `BodyRoute` does this, once:

1. It admits the body by its `Content-Type`: exactly one media type the route declares (case-insensitive, as
   RFC 9110 says), or 415 `unsupported_media_type`. JSON is `application/json` with at most a
   `charset=utf-8` parameter; multipart is `multipart/form-data` with its `boundary`. No list, no suffix, no
   `+json` type, no missing type on a body that has bytes. A route that takes no body refuses one.
2. It parses the body: JSON as strict UTF-8 (no other charset, no `NaN`), recording every `organization_id`
   and `platform` value a repeated key would otherwise hide; multipart with the route's form limits.
3. It leaves the result in the request (`parsed_body`). FastAPI's body parameter receives that same parsed
   value (Starlette's `Request.json` cache holds it), a route that reads its body by hand reads it through
   `parsed_body`, and the scope check (`functions.api._scopes`) checks that value: no one parses twice.

What a route accepts is declared once: its OpenAPI `requestBody` content types where it reads its body by
hand, else FastAPI's body field (JSON, or multipart for form parameters), else nothing. A multipart route's
file limit is declared by its scope (`organization_scope(max_files=…)`). This module must never hold a
scope rule: it reads; `_scopes` decides.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from fastapi import params
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute

from functions.errors import ApiError

__all__ = [
    "FORM_FIELDS",
    "JSON",
    "MULTIPART",
    "BodyRoute",
    "ParsedBody",
    "accepted_media_types",
    "form_file_limit",
    "media_type",
    "parsed_body",
    "unread_routes",
]

JSON: Final = "application/json"
MULTIPART: Final = "multipart/form-data"
FORM_FIELDS: Final = 10
"""Most non-file fields a multipart body may carry (every route's form has at most six)."""
_PARSED = "ac_context.body"
"""The request-scope key under which the parsed body is left."""
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz")
"""The characters of an RFC 9110 token, lower-cased."""

FORM_LIMITS: dict[Callable[..., Any], int] = {}
"""Scope dependencies that declare a multipart route's file limit (`organization_scope(max_files=…)`)."""


@dataclass(frozen=True)
class ParsedBody:
    """A request body as its route reads it."""

    kind: Literal["none", "json", "form"]
    """No body, a JSON document, or a multipart form."""
    value: Any = None
    """The parsed JSON value (None for an empty body), or the `FormData`."""
    repeated: dict[str, list[Any]] = field(default_factory=dict)
    """For JSON: every value of an `organization_id` or `platform` key in any object, in order, including
    the ones a repeated key hides (the parsed value keeps the last, as every JSON parser here does)."""

    @property
    def form(self) -> FormData:
        """The multipart form (for a route that declares multipart only)."""
        if not isinstance(self.value, FormData):
            raise ApiError(415, "unsupported_media_type", f"send {MULTIPART}")
        return self.value


def media_type(header: str) -> tuple[str, dict[str, str]] | None:
    """`(type/subtype, parameters)` of one Content-Type value, lower-cased; None when it is not exactly one."""
    head, *parameters = header.split(";")
    kind, slash, sub = head.strip().lower().partition("/")
    if not slash or not _is_token(kind) or not _is_token(sub):
        return None
    out: dict[str, str] = {}
    for parameter in parameters:
        name, equals, value = parameter.strip().partition("=")
        name = name.strip().lower()
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
            if '"' in value or any(ord(c) < 0x20 for c in value):
                return None
        elif not _is_token(value.lower()):
            return None
        if not equals or not _is_token(name) or name in out or not value:
            return None
        out[name] = value
    return f"{kind}/{sub}", out


def _is_token(text: str) -> bool:
    return bool(text) and all(c in _TOKEN for c in text)


def accepted_media_types(route: APIRoute) -> frozenset[str]:
    """The media types a route reads: its documented request body's, else its body field's, else none."""
    documented = ((route.openapi_extra or {}).get("requestBody") or {}).get("content")
    if isinstance(documented, dict):
        return frozenset(str(k).lower() for k in documented)
    body = route.body_field
    if body is None:
        return frozenset()
    return frozenset({MULTIPART if isinstance(body.field_info, params.Form) else JSON})


def form_file_limit(route: APIRoute) -> int:
    """The most files a multipart body of this route may carry (1 unless its scope says more)."""
    pending = list(route.dependant.dependencies)
    while pending:
        dependency = pending.pop()
        if dependency.call in FORM_LIMITS:
            return FORM_LIMITS[dependency.call]
        pending.extend(dependency.dependencies)
    return 1


def _unsupported(accepts: frozenset[str], why: str) -> ApiError:
    wanted = " or ".join(sorted(accepts)) if accepts else "no body"
    return ApiError(415, "unsupported_media_type", f"{why}; this route reads {wanted}")


def _refusing_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class _Recorder:
    """A JSON object hook that records every value of the keys a scope reads, repeated keys included."""

    KEYS = ("organization_id", "platform")

    def __init__(self) -> None:
        self.values: dict[str, list[Any]] = {}

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        for key, value in pairs:
            if key in self.KEYS:
                self.values.setdefault(key, []).append(value)
        return dict(pairs)


def _parse_json(raw: bytes) -> ParsedBody:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ApiError(400, "body_unreadable", "the body could not be read as UTF-8 JSON") from None
    recorder = _Recorder()
    try:
        value = json.loads(text, object_pairs_hook=recorder, parse_constant=_refusing_constant)
    except (ValueError, RecursionError):
        raise ApiError(400, "json_invalid", "the body is not valid JSON") from None
    return ParsedBody("json", value, recorder.values)


async def _admit(request: Request, accepts: frozenset[str], max_files: int) -> ParsedBody:
    """Admit and parse the body of one request to a route that reads `accepts` (see the module docstring)."""
    header = request.headers.getlist("content-type")
    if len(header) > 1:
        raise _unsupported(accepts, "send one Content-Type header")
    parsed = media_type(header[0]) if header else None
    if header and parsed is None:
        raise _unsupported(accepts, "the Content-Type is not one media type")
    if parsed is None or not accepts:
        if await request.body():
            raise _unsupported(accepts, "a body needs a Content-Type" if accepts else "this route takes no body")
        return ParsedBody("none")
    kind, parameters = parsed
    if kind not in accepts:
        raise _unsupported(accepts, f"{kind} is not read here")
    if kind == JSON:
        if set(parameters) - {"charset"} or parameters.get("charset", "utf-8").lower() != "utf-8":
            raise _unsupported(accepts, "JSON takes no parameter but charset=utf-8")
        raw = await request.body()
        body = _parse_json(raw) if raw else ParsedBody("none")
        request._json = body.value  # FastAPI's body parameter reads this same value (Request.json's cache)
        return body
    if kind == MULTIPART:
        if "boundary" not in parameters:
            raise _unsupported(accepts, "multipart/form-data needs its boundary")
        try:
            form = await request.form(max_files=max_files, max_fields=FORM_FIELDS)
        except HTTPException as exc:  # Starlette's answer to a malformed multipart body or a limit passed
            raise ApiError(400, "body_unreadable", f"the multipart body could not be read: {exc.detail}") from None
        return ParsedBody("form", form)
    raise _unsupported(accepts, f"{kind} is not read here")  # a route documented a type this module cannot read


def parsed_body(request: Request) -> ParsedBody:
    """The body of this request as its route reads it; fails closed (415) on a route that is not a BodyRoute."""
    body = request.scope.get(_PARSED)
    if not isinstance(body, ParsedBody):
        raise ApiError(415, "unsupported_media_type", "this route does not read a body")
    return body


class BodyRoute(APIRoute):
    """An `APIRoute` that admits and parses its body once, before FastAPI or any dependency reads it."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """FastAPI's handler, behind the one reading of the body."""
        handler = super().get_route_handler()
        accepts = accepted_media_types(self)
        max_files = form_file_limit(self)

        async def read_once(request: Request) -> Response:
            body = await _admit(request, accepts, max_files)
            request.scope[_PARSED] = body
            try:
                return await handler(request)
            finally:
                if isinstance(body.value, FormData):
                    await body.value.close()  # its spooled files, whether or not the route ran

        return read_once


def unread_routes(routes: Sequence[BaseRoute]) -> list[str]:
    """The `/v1/` routes that are not `BodyRoute`s (the app refuses to build with any), as their paths."""
    out = []
    for context in iter_route_contexts(routes):
        path = str(context.path or "")
        if (path == "/v1" or path.startswith("/v1/")) and not isinstance(context.original_route, BodyRoute):
            out.append(path)
    return out
