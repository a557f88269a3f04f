"""Off unless configured: with no OTLP endpoint the service installs no SDK provider, no exporter and no
thread, instruments nothing, and the code's spans go to the API's no-op tracer; with one set, spans and
metrics reach the endpoint over OTLP http/protobuf. Each runs in a fresh interpreter, because the global
providers can be set once per process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

ROOT = Path(__file__).resolve().parents[3]

SERVICE = """
import json, sys, threading
from pathlib import Path
import asyncpg.connection
from opentelemetry import metrics, trace
from functions.app import create_app
from state import telemetry
from state.settings import load_settings

app = create_app(load_settings(api_token="t" * 32, data_dir=Path(sys.argv[1])))
with telemetry.span("probe") as span:
    recording = span.is_recording()
telemetry.instruments().brief_duration.record(0.5, {"ac.outcome": "ok"})
provider = telemetry.tracer_provider()
if provider is not None:
    provider.force_flush()
    meters = telemetry.meter_provider()
    meters.force_flush()
print(json.dumps({
    "tracer_provider": type(trace.get_tracer_provider()).__name__,
    "meter_provider": type(metrics.get_meter_provider()).__name__,
    "sdk_loaded": sorted(m for m in sys.modules if m.startswith("opentelemetry.sdk")) != [],
    "threads": sorted(t.name for t in threading.enumerate() if t is not threading.main_thread()),
    "app_instrumented": bool(getattr(app, "_is_instrumented_by_opentelemetry", False)),
    "asyncpg_wrapped": hasattr(asyncpg.connection.Connection.fetch, "__wrapped__"),
    "middleware": [getattr(m, "__name__", "") for m in app.state.inngest.middleware],
    "recording": recording,
    "enabled": telemetry.enabled(),
}))
"""


def _run(tmp_path: Path, **env: str) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    clean.update({"INNGEST_DEV": "1", **env})
    out = subprocess.run(
        [sys.executable, "-c", SERVICE, str(tmp_path)],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    answer: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return answer


def test_with_no_otlp_endpoint_nothing_is_installed_instrumented_or_started(tmp_path: Path) -> None:
    seen = _run(tmp_path)
    assert seen["tracer_provider"] == "ProxyTracerProvider", "the global provider stays the API's proxy"
    assert seen["meter_provider"] == "_ProxyMeterProvider"
    assert seen["sdk_loaded"] is False, "the SDK is not even imported"
    assert seen["threads"] == [], "no exporter thread"
    assert seen["app_instrumented"] is False and seen["asyncpg_wrapped"] is False
    assert "RunSpans" not in seen["middleware"]  # type: ignore[operator]
    assert seen["recording"] is False and seen["enabled"] is False


class _Collector(BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, str, int]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.received.append((self.path, self.headers.get("Content-Type", ""), len(body)))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


@pytest.fixture
def collector() -> Iterator[tuple[str, list[tuple[str, str, int]]]]:
    """A plain HTTP server that takes OTLP posts and notes their path, type and size."""
    _Collector.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", _Collector.received
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_with_an_otlp_endpoint_spans_and_metrics_are_exported_over_http_protobuf(
    tmp_path: Path, collector: tuple[str, list[tuple[str, str, int]]]
) -> None:
    endpoint, received = collector
    seen = _run(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=endpoint, OTEL_SERVICE_NAME="ctx-test")
    assert seen["tracer_provider"] == "TracerProvider" and seen["meter_provider"] == "MeterProvider"
    assert seen["app_instrumented"] is True and seen["asyncpg_wrapped"] is True
    assert "RunSpans" in seen["middleware"]  # type: ignore[operator]
    assert seen["recording"] is True
    paths = {(path, kind) for path, kind, size in received if size > 0}
    assert ("/v1/traces", "application/x-protobuf") in paths, received
    assert ("/v1/metrics", "application/x-protobuf") in paths, received
