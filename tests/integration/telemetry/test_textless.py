"""The exporter the service installs drops what the contrib instrumentations record of an exception beyond its
type (message, stack, status description): a message may quote a row or a request. Our own spans never
record a message in the first place (`state.telemetry.span`)."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from state import telemetry

MARK = "Quokkamarmot"


def _exported(exporter: InMemorySpanExporter, *, textless: bool) -> str:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(telemetry.textless(exporter) if textless else exporter))
    tracer = provider.get_tracer("test")
    with pytest.raises(ValueError), tracer.start_as_current_span("SELECT") as span:
        span.set_status(Status(StatusCode.ERROR, f"ValueError: {MARK}"))
        raise ValueError(f"the row holds {MARK}")
    provider.shutdown()
    [finished] = exporter.get_finished_spans()
    parts = [str(finished.status.description), finished.name]
    for event in finished.events:
        parts += [event.name, *(f"{k}={v}" for k, v in (event.attributes or {}).items())]
    return "\n".join(parts)


def test_an_exception_event_leaves_with_its_type_and_without_its_message_or_stack() -> None:
    exporter = InMemorySpanExporter()
    text = _exported(exporter, textless=True)
    assert MARK not in text, text
    assert "exception.type=ValueError" in text
    assert "exception.stacktrace" not in text
    assert exporter.get_finished_spans()[0].status.status_code is StatusCode.ERROR


def test_without_the_wrapper_the_sdk_would_export_the_message() -> None:
    assert MARK in _exported(InMemorySpanExporter(), textless=False), "the case the wrapper exists for"


async def test_our_own_spans_record_an_errors_type_never_its_message() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with telemetry.use(provider, asyncpg=False), pytest.raises(ValueError), telemetry.span("step"):
        raise ValueError(f"the document says {MARK}")
    [finished] = exporter.get_finished_spans()
    assert finished.attributes is not None and finished.attributes["error.type"] == "ValueError"
    assert finished.events == () or all(MARK not in str(e.attributes) for e in finished.events)
    assert MARK not in str(finished.status.description)
