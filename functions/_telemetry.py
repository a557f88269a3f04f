"""The service's OpenTelemetry wiring: configure from the environment, instrument the app and the client.

`install(app, client, settings, environ)` runs once per app: `state.telemetry.configure_from_env` installs
the SDK providers when an OTLP endpoint is set (nothing otherwise); when telemetry is on, FastAPI is
instrumented with the contrib package (a server span per request, named by its route; `/healthz`,
`/readyz` and `/metrics` left out) and the Inngest client gets its run spans. A request's query string is
cut from its span unless the operator allows text in spans: it may hold what someone typed.

This module must never hold a business rule; it wires.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import inngest
from fastapi import FastAPI
from opentelemetry.trace import Span

from functions.inngest.tracing import install_run_spans
from state import telemetry
from state.settings import Settings

__all__ = ["install"]

_UNTRACED = "/healthz,/readyz,/metrics"
_URL_KEYS = ("http.url", "url.full", "http.target")
"""The request attributes that carry the query string (the old and the stable HTTP conventions)."""


def install(app: FastAPI, client: inngest.Inngest, settings: Settings, environ: Mapping[str, str] | None) -> bool:
    """Configure telemetry from the environment and, when it is on, instrument `app` and `client`."""
    if not telemetry.configure_from_env(environ, capture_text=settings.telemetry_capture_text):
        return False
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor

    FastAPIInstrumentor.instrument_app(
        app,
        server_request_hook=_without_query,
        tracer_provider=telemetry.tracer_provider(),
        meter_provider=telemetry.meter_provider(),
        excluded_urls=_UNTRACED,
        exclude_spans=["receive", "send"],
    )
    install_run_spans(client)
    return True


def _without_query(span: Span, scope: dict[str, Any]) -> None:
    """Cut the query string from the request's span (unless text is allowed): it may hold what someone typed."""
    if telemetry.capture_text() or not scope.get("query_string") or not span.is_recording():
        return
    recorded = getattr(span, "attributes", None) or {}
    for key in _URL_KEYS:
        value = recorded.get(key)
        if isinstance(value, str) and "?" in value:
            span.set_attribute(key, value.split("?", 1)[0])
    if "url.query" in recorded:
        span.set_attribute("url.query", "")
