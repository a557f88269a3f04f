"""The service with OpenTelemetry recorded in memory: the SDK's `InMemorySpanExporter` and `InMemoryMetricReader`
installed through `state.telemetry.use`, never as the process's global providers, so no test after these one
records through them (the global provider can be set once per process)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from functions.app import create_app
from knowledge.documents.objects import LocalObjectStore
from state import telemetry
from state.db import Database
from state.settings import load_settings
from tests.integration.functions.conftest import FAKE_MODEL, TOKEN, Service, fake_embedders
from tests.integration.functions.executor import InngestExecutor
from tests.integration.functions.support import RecordingInngest, asgi_client, new_signing_key, use_platform_model


@dataclass
class Recorded:
    """What the in-memory providers recorded, beside the service they recorded."""

    service: Service
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def metric_points(self) -> list[tuple[str, dict[str, Any], Any]]:
        """(instrument name, attributes, value) of every data point collected so far."""
        data = self.metrics.get_metrics_data()
        points: list[tuple[str, dict[str, Any], Any]] = []
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        value = getattr(point, "value", None)
                        if value is None:
                            value = getattr(point, "count", None)
                        points.append((metric.name, dict(point.attributes or {}), value))
        return points


Traced = Callable[..., AbstractAsyncContextManager[Recorded]]


@pytest.fixture
def traced(db: Database, tmp_path: Path) -> Traced:
    """`async with traced(capture_text=False) as recorded:` the service, recording through in-memory providers."""

    @asynccontextmanager
    async def run(*, capture_text: bool = False) -> AsyncIterator[Recorded]:
        async with db.connection() as conn:
            await use_platform_model(conn, FAKE_MODEL)
        exporter = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
        reader = InMemoryMetricReader()
        meter_provider = MeterProvider(metric_readers=[reader])
        with telemetry.use(tracer_provider, meter_provider, capture_text=capture_text):
            key = new_signing_key()
            client = RecordingInngest(app_id="ac-context", is_production=True, signing_key=key)
            settings = load_settings(api_token=TOKEN, data_dir=tmp_path, max_upload_bytes=2 * 1024 * 1024)
            app = create_app(
                settings,
                db=db,
                inngest_client=client,
                object_store=LocalObjectStore(tmp_path / "objects"),
                embedders=fake_embedders(),
            )
            async with app.router.lifespan_context(app), asgi_client(app) as http:
                service = Service(app, http, client, InngestExecutor(http, signing_key=key), db, key)
                yield Recorded(service, exporter, reader)
        tracer_provider.shutdown()
        meter_provider.shutdown()

    return run
