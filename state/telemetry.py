"""OpenTelemetry traces and metrics: the one tracer and meter the layer records through, and their setup.

Off unless configured. With neither `OTEL_EXPORTER_OTLP_ENDPOINT` nor `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
set, `configure_from_env` installs nothing: no SDK provider, no exporter, no thread, and every span call in
the code goes to the OpenTelemetry API's no-op tracer (the global proxy). With one set, it installs a
`TracerProvider` with a `BatchSpanProcessor` over the OTLP http/protobuf exporter, a `MeterProvider` with the
OTLP metric exporter (when a metrics endpoint is known), and the asyncpg instrumentation, once per process;
the service then instruments its FastAPI app and its Inngest client (`enabled()` says whether to).
`OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` name the resource (`ac-context` by default).

Names follow the GenAI semantic conventions where they apply (`gen_ai.operation.name` = `retrieval`,
`search_memory`, `upsert_memory`, `delete_memory`; `gen_ai.retrieval.top_k`; `gen_ai.memory.*`), kept here as
constants so a rename of those development-stage names is one edit; the layer's own attributes are `ac.*`.

Never text: no document, memory or query text enters a span, an event or a metric unless the operator turns
`AC_CONTEXT_TELEMETRY_CAPTURE_TEXT` on (`capture_text()`; `set_text` is the one way text is written). Spans
record an error's type only, never its message (a message may quote a document), and asyncpg spans never
carry statement parameters; the exporter drops the message and stack the contrib instrumentations record on
an exception event (`textless`). Tests and benches install their own providers with `use(...)`, which restores
the previous state on exit, so no provider leaks into the global one.

This module must never import another room of the project, nor the SDK unless telemetry is configured.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opentelemetry import metrics, trace
from opentelemetry.trace import Span, Status, StatusCode
from opentelemetry.util.types import AttributeValue

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter, Histogram, MeterProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import TracerProvider

__all__ = [
    "DATA_SOURCE_ID",
    "MEMORY_CONTENT",
    "MEMORY_ID",
    "MEMORY_NAMESPACE",
    "MEMORY_QUERY",
    "MEMORY_RESULT_COUNT",
    "MEMORY_SCOPE",
    "MEMORY_STORE_NAME",
    "OPERATION",
    "REQUEST_MODEL",
    "RETRIEVAL_QUERY",
    "RETRIEVAL_TOP_K",
    "AttributeValue",
    "Instruments",
    "bypassed",
    "capture_text",
    "configure_from_env",
    "enabled",
    "failed",
    "instruments",
    "memory_operation",
    "meter_provider",
    "set_text",
    "span",
    "textless",
    "tracer",
    "tracer_provider",
    "use",
]

logger = logging.getLogger(__name__)

SCOPE_NAME = "ac_context"
"""The instrumentation scope of every span and instrument the layer makes."""
DEFAULT_SERVICE_NAME = "ac-context"
"""`service.name` when neither `OTEL_SERVICE_NAME` nor `OTEL_RESOURCE_ATTRIBUTES` names one."""

# The GenAI semantic conventions (semantic-conventions-genai: registry `gen_ai.*`, memory operations).
OPERATION = "gen_ai.operation.name"
DATA_SOURCE_ID = "gen_ai.data_source.id"
REQUEST_MODEL = "gen_ai.request.model"
RETRIEVAL_TOP_K = "gen_ai.retrieval.top_k"
RETRIEVAL_QUERY = "gen_ai.retrieval.query.text"
"""Text: written only through `set_text`."""
MEMORY_STORE_NAME = "gen_ai.memory.store.name"
MEMORY_NAMESPACE = "gen_ai.memory.namespace"
MEMORY_SCOPE = "gen_ai.memory.scope"
MEMORY_ID = "gen_ai.memory.id"
MEMORY_RESULT_COUNT = "gen_ai.memory.search.result.count"
MEMORY_QUERY = "gen_ai.memory.query"
"""Text: written only through `set_text`."""
MEMORY_CONTENT = "gen_ai.memory.content"
"""Text: written only through `set_text`."""
ERROR_TYPE = "error.type"
MEMORY_STORE = "agent.memories"
"""The `gen_ai.memory.store.name` of every memory operation: the one table of revision chains."""


@dataclass(frozen=True)
class Instruments:
    """The layer's few metric instruments (the Prometheus `/metrics` beside them stays as it is)."""

    brief_duration: Histogram
    """`ac_context.brief.duration` (s): one brief build, by `ac.outcome`."""
    source_outcomes: Counter
    """`ac_context.context.source.outcomes`: one per source read, by `ac.context.source` and `ac.outcome`."""
    memory_operations: Counter
    """`ac_context.memory.operations`: one per memory read or write, by `gen_ai.operation.name` and `ac.outcome`."""

    @classmethod
    def of(cls, meter: metrics.Meter) -> Instruments:
        """The instruments made by `meter`."""
        return cls(
            brief_duration=meter.create_histogram(
                "ac_context.brief.duration", unit="s", description="How long one brief build took."
            ),
            source_outcomes=meter.create_counter(
                "ac_context.context.source.outcomes", description="Context source reads, by source and outcome."
            ),
            memory_operations=meter.create_counter(
                "ac_context.memory.operations", description="Memory reads and writes, by operation and outcome."
            ),
        )


@dataclass(frozen=True)
class _State:
    tracer: trace.Tracer
    instruments: Instruments
    enabled: bool = False
    capture_text: bool = False
    bypass: bool = False
    tracer_provider: TracerProvider | None = None
    meter_provider: MeterProvider | None = None


def _global_state() -> _State:
    """The API's global proxies: no-op until (and unless) a provider is set globally."""
    return _State(tracer=trace.get_tracer(SCOPE_NAME), instruments=Instruments.of(metrics.get_meter(SCOPE_NAME)))


_state = _global_state()
_configured = False
_lock = threading.Lock()


def tracer() -> trace.Tracer:
    """The tracer every span of the layer is made by."""
    return _state.tracer


def instruments() -> Instruments:
    """The metric instruments of the current state."""
    return _state.instruments


def enabled() -> bool:
    """True when a provider is installed (OTLP configured, or a test's `use`): instrument the app and client."""
    return _state.enabled


def bypassed() -> bool:
    """True only inside a bench's `use(bypass=True)`: the code skips its spans and instruments entirely."""
    return _state.bypass


def capture_text() -> bool:
    """True when an operator allowed document, memory and query text in spans (off by default)."""
    return _state.capture_text


def tracer_provider() -> TracerProvider | None:
    """The installed tracer provider, or None when telemetry is off."""
    return _state.tracer_provider


def meter_provider() -> MeterProvider | None:
    """The installed meter provider, or None when telemetry is off (or exports no metrics)."""
    return _state.meter_provider


@contextmanager
def span(name: str, attributes: Mapping[str, AttributeValue] | None = None) -> Iterator[Span]:
    """A span made current for the block; an exception marks it failed with its type only, never its message."""
    if _state.bypass:  # benches only: the OpenTelemetry API is not touched at all
        yield trace.INVALID_SPAN
        return
    with _state.tracer.start_as_current_span(
        name, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as current:
        try:
            yield current
        except BaseException as exc:
            failed(current, exc)
            raise


@contextmanager
def memory_operation(
    operation: str, organization_id: object, attributes: Mapping[str, AttributeValue] | None = None
) -> Iterator[Span]:
    """One memory operation's span (`search_memory`, `upsert_memory`, `delete_memory`), counted by outcome."""
    outcome = "ok"
    named = {OPERATION: operation, MEMORY_STORE_NAME: MEMORY_STORE, MEMORY_NAMESPACE: str(organization_id)}
    try:
        with span(f"{operation} {MEMORY_STORE}", {**named, **(attributes or {})}) as current:
            yield current
    except BaseException as exc:
        outcome = type(exc).__name__
        raise
    finally:
        if not _state.bypass:
            _state.instruments.memory_operations.add(1, {OPERATION: operation, "ac.outcome": outcome})


def failed(current: Span, exc: BaseException) -> None:
    """Mark `current` failed by the type of `exc` (its message may quote text: never recorded)."""
    current.set_attribute(ERROR_TYPE, type(exc).__name__)
    current.set_status(Status(StatusCode.ERROR))


def set_text(current: Span, key: str, text: str) -> None:
    """Write `text` under `key` only when the operator allowed text in spans."""
    if _state.capture_text:
        current.set_attribute(key, text)


def _endpoint_set(environ: Mapping[str, str], *names: str) -> bool:
    return any(environ.get(name, "").strip() for name in names)


def configure_from_env(environ: Mapping[str, str] | None = None, *, capture_text: bool = False) -> bool:
    """Install the SDK providers once when an OTLP endpoint is set; answer whether telemetry is on.

    Nothing happens (and False is answered) without `OTEL_EXPORTER_OTLP_ENDPOINT` or
    `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, or with `OTEL_SDK_DISABLED=true`. A test's `use` state wins.
    """
    global _state, _configured
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return _state.enabled
    if not _endpoint_set(env, "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return _state.enabled
    with _lock:
        if _configured:
            return True
        tracer_provider, meter_provider = _install_sdk(env, capture_text)
        _state = _State(
            tracer=tracer_provider.get_tracer(SCOPE_NAME),
            instruments=Instruments.of(metrics.get_meter(SCOPE_NAME)),
            enabled=True,
            capture_text=capture_text,
            tracer_provider=tracer_provider,
            meter_provider=meter_provider,
        )
        _configured = True
    logger.info("OpenTelemetry: exporting traces%s over OTLP", " and metrics" if meter_provider else "")
    return True


def _install_sdk(env: Mapping[str, str], capture_text: bool) -> tuple[TracerProvider, MeterProvider | None]:
    """Set the global SDK providers with OTLP http/protobuf exporters, and instrument asyncpg."""
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    named = env.get("OTEL_SERVICE_NAME", "").strip() or "service.name=" in env.get("OTEL_RESOURCE_ATTRIBUTES", "")
    resource = Resource.create({} if named else {"service.name": DEFAULT_SERVICE_NAME})
    tracer_provider = SdkTracerProvider(resource=resource)
    exporter = OTLPSpanExporter()
    tracer_provider.add_span_processor(BatchSpanProcessor(exporter if capture_text else textless(exporter)))
    trace.set_tracer_provider(tracer_provider)
    meter_provider: SdkMeterProvider | None = None
    if _endpoint_set(env, "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"):
        meter_provider = SdkMeterProvider(
            resource=resource, metric_readers=[PeriodicExportingMetricReader(OTLPMetricExporter())]
        )
        metrics.set_meter_provider(meter_provider)
    _instrument_asyncpg(tracer_provider)
    return tracer_provider, meter_provider


def textless(exporter: SpanExporter) -> SpanExporter:
    """`exporter`, handed spans whose exception events keep the type alone and whose status has no description.

    The contrib instrumentations (asyncpg, FastAPI) record an exception's message and stack on their spans;
    a message may quote a row or a request, so without the text switch it never leaves the process.
    """
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.sdk.trace.export import SpanExporter as Base
    from opentelemetry.sdk.trace.export import SpanExportResult

    def scrubbed(span: ReadableSpan) -> ReadableSpan:
        events = [
            Event(e.name, {k: v for k, v in (e.attributes or {}).items() if k == "exception.type"}, e.timestamp)
            if e.name == "exception"
            else e
            for e in span.events
        ]
        return ReadableSpan(
            name=span.name,
            context=span.context,
            parent=span.parent,
            resource=span.resource,
            attributes=span.attributes,
            events=events,
            links=span.links,
            kind=span.kind,
            status=Status(span.status.status_code),
            start_time=span.start_time,
            end_time=span.end_time,
            instrumentation_scope=span.instrumentation_scope,
        )

    class Textless(Base):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return exporter.export([scrubbed(s) for s in spans])

        def shutdown(self) -> None:
            exporter.shutdown()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return exporter.force_flush(timeout_millis)

    return Textless()


def _instrument_asyncpg(provider: TracerProvider) -> Any:
    """Wrap asyncpg's calls in client spans (the statement, never its parameters: they hold text)."""
    from opentelemetry.instrumentation.asyncpg import AsyncPGInstrumentor

    instrumentor = AsyncPGInstrumentor(capture_parameters=False)  # type: ignore[no-untyped-call]
    instrumentor.instrument(tracer_provider=provider)
    return instrumentor


@contextmanager
def use(
    tracer_provider: TracerProvider | None = None,
    meter_provider: MeterProvider | None = None,
    *,
    capture_text: bool = False,
    bypass: bool = False,
    asyncpg: bool = True,
) -> Iterator[None]:
    """Record through these providers for the block (tests, benches), never through the global ones.

    `bypass` makes `span` skip the OpenTelemetry API entirely (a bench's baseline). With a tracer provider,
    asyncpg is instrumented for the block (unless `asyncpg` is False) and uninstrumented after.
    """
    global _state
    previous = _state
    tracing = tracer_provider.get_tracer(SCOPE_NAME) if tracer_provider is not None else previous.tracer
    meter = meter_provider.get_meter(SCOPE_NAME) if meter_provider is not None else metrics.get_meter(SCOPE_NAME)
    _state = _State(
        tracer=tracing,
        instruments=Instruments.of(meter),
        enabled=tracer_provider is not None,
        capture_text=capture_text,
        bypass=bypass,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
    )
    instrumentor = _instrument_asyncpg(tracer_provider) if tracer_provider is not None and asyncpg else None
    try:
        yield
    finally:
        if instrumentor is not None:
            instrumentor.uninstrument()
        _state = previous
