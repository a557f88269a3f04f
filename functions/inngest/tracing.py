"""One span per Inngest function run request: `inngest_run <function id>`, parent of the steps it runs.

Inngest calls the endpoint once per step (replaying the handler from the top with the memoized results), so
a run is a series of these spans, each naming the run id and attempt; the ingestion steps inside
(`knowledge.ingestion.core.step_span`) are their children. The middleware is added to the client only
when telemetry is on (`state.telemetry.enabled`), so a service without an OTLP endpoint runs none of it.
A failed request is marked by its error's type only: an error's message may quote a document.

This module must never read event data beyond its name, nor put a step's output on a span.
"""

from __future__ import annotations

from typing import Any

import inngest
from opentelemetry import context
from opentelemetry.trace import Span, set_span_in_context

from state import telemetry

__all__ = ["RunSpans", "install_run_spans"]


class RunSpans(inngest.Middleware):
    """Opens the request's span before the handler runs and ends it before the response is sent."""

    def __init__(self, client: inngest.Inngest, raw_request: object) -> None:
        super().__init__(client, raw_request)
        self._span: Span | None = None
        self._token: object = None

    async def transform_input(self, ctx: Any, function: Any, steps: Any) -> None:
        """Start the span (once per request) and make it current for the handler and its steps."""
        if self._span is not None:
            return
        attributes: dict[str, telemetry.AttributeValue] = {
            "inngest.function.id": str(function.id),
            "inngest.run.id": str(getattr(ctx, "run_id", "")),
            "inngest.attempt": int(getattr(ctx, "attempt", 0)),
            "inngest.event.name": str(getattr(getattr(ctx, "event", None), "name", "")),
            "inngest.steps.memoized": int(getattr(steps, "size", 0)),
        }
        self._span = telemetry.tracer().start_span(f"inngest_run {function.id}", attributes=attributes)
        self._token = context.attach(set_span_in_context(self._span))

    async def transform_output(self, result: Any) -> None:
        """Mark the span failed by the type of a handler's error."""
        error = getattr(result, "error", None)
        if self._span is not None and isinstance(error, BaseException):
            telemetry.failed(self._span, error)

    async def before_response(self) -> None:
        """End the span and give the request its previous context back."""
        if self._span is None:
            return
        if self._token is not None:
            context.detach(self._token)  # type: ignore[arg-type]
            self._token = None
        self._span.end()
        self._span = None


def install_run_spans(client: inngest.Inngest) -> bool:
    """Add `RunSpans` to `client` when telemetry is on; answer whether it was added."""
    if not telemetry.enabled():
        return False
    client.add_middleware(RunSpans)
    return True
