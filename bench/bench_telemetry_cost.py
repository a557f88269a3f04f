"""What OpenTelemetry costs a FRONT_DOOR brief (issue 46): Python CPU per build, three ways, interleaved.

- `unset`: no OTLP endpoint, as a service runs by default: the code's span calls go to the API's no-op
  tracer (the global proxy), nothing is installed;
- `bypassed`: the same code with `state.telemetry.use(bypass=True)`: the spans and instruments are skipped
  entirely (the OpenTelemetry API is not called), the baseline the "costs no measurable CPU" claim is
  against;
- `sdk`: the SDK on, as with an endpoint: a `TracerProvider` whose `BatchSpanProcessor` hands every span
  to an exporter that drops it, a `MeterProvider` with an in-memory reader, asyncpg instrumented (reported,
  not a goal: it is what an operator pays for turning telemetry on).

One database, one process, one builder; `ROUNDS` rounds, each running `PER_ROUND` builds of every mode in a
rotating order, so a drift of the shared machine falls on all three alike. The figure per mode is the median
over rounds of `time.process_time` per build (every thread of the process: the exporter's thread counted);
the ratio `unset / bypassed` is the goal. The seed is small by default (`BENCH_TELEMETRY_SOURCES` sources
of 20 chunks in the asking tenant, its application rows at `BENCH_TELEMETRY_SCALE`, 40 memories of the
asking person); `DATABASE_URL` names a server to reuse (the seeded database `ac_bench_telemetry_cost` is
kept there and reused by the next run). Nothing here asserts a timing.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import asyncpg
import numpy as np
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from bench import _search_seed as seed
from bench._goals import goal
from bench.bench_brief_cost import _request
from context.builder import DefaultContextBuilder
from context.packer import ContextPacker
from context.policies import FRONT_DOOR
from context.sources import default_registry
from knowledge.embedding.registry import get_embedder
from state import telemetry
from state.db import Database
from state.embedded import embedded_server_url, server_dsn, stop_embedded_server
from state.settings import load_settings

DATABASE = "ac_bench_telemetry_cost"
SOURCES = int(os.environ.get("BENCH_TELEMETRY_SOURCES", "100"))
SCALE = float(os.environ.get("BENCH_TELEMETRY_SCALE", "0.2"))
ROUNDS = int(os.environ.get("BENCH_TELEMETRY_ROUNDS", "30"))
PER_ROUND = int(os.environ.get("BENCH_TELEMETRY_PER_ROUND", "20"))
WARM = 20
MEMORIES = 40
MODES = ("unset", "bypassed", "sdk")
SPAN_CALLS = 200_000
"""No-op spans timed alone, for the per-span figure beside the builds'."""


class _Dropping(SpanExporter):
    """Takes every batch and drops it: the SDK's whole cost but the network's."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


async def _embed(texts: list[str]) -> np.ndarray:
    return np.asarray(await get_embedder(seed.MODEL).embed(texts), dtype=np.float32)


async def ensure_seeded(server: str) -> str:
    """The URL of the seeded database on `server`, seeding it first when it is missing."""
    from bench.bench_sources import _seed_tenant
    from state.migrate import apply_migrations

    url = server_dsn(server, DATABASE)
    admin = await asyncpg.connect(server)
    try:
        exists = await admin.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", DATABASE)
        if not exists:
            await admin.execute(f'CREATE DATABASE "{DATABASE}"')
    finally:
        await admin.close()
    conn = await asyncpg.connect(url)
    try:
        if exists and await conn.fetchval("SELECT to_regclass('public.bench_telemetry_scopes') IS NOT NULL"):
            return url
    finally:
        await conn.close()
    await apply_migrations(url)
    db = await Database.open(load_settings(pool_min_size=2, pool_max_size=4), url=url, migrate=False)
    try:
        org = uuid.uuid4()
        async with db.connection() as conn:
            app = await _seed_tenant(conn, org, scale=SCALE, marker="alpha")
            await seed.drop_index(conn)
            await seed.seed_scope(
                conn, np.random.default_rng(46), seed.Vocabulary(), org, sources=SOURCES, chunks_per_source=20,
                words=50, embed=_embed, title="telemetry",
            )  # fmt: skip
            await seed.build_index(conn)
            definition = await conn.fetchval(
                "INSERT INTO agent.definitions (organization_id, definition_kind, name, status)"
                " VALUES ($1, 'agent', 'bench agent', 'published') RETURNING id",
                org,
            )
            user = uuid.UUID(str(app["users"][0]))
            for n in range(MEMORIES):
                attribute = f"preference.p{n}" if n % 4 == 0 else f"observation.o{n}"
                await conn.execute(
                    "INSERT INTO agent.memories (organization_id, definition_id, scope, user_id, scope_owner_id,"
                    " subject_key, text, subject_refs) VALUES ($1, $2, 'user', $3, $3, $4, $5, '[]'::jsonb)",
                    org, definition, user, f"user:{user}:{attribute}",
                    f"the boundary layer note {n} about supersonic wing flow",
                )  # fmt: skip
        doc = {"big": str(org), "app": json.loads(json.dumps(app, default=str))}
        async with db.connection() as conn:
            await conn.execute("CREATE TABLE public.bench_telemetry_scopes (doc text NOT NULL)")
            await conn.execute("INSERT INTO public.bench_telemetry_scopes VALUES ($1)", json.dumps(doc))
    finally:
        await db.close()
    return url


@contextmanager
def _sdk() -> Iterator[_Dropping]:
    exporter = _Dropping()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(exporter))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    try:
        with telemetry.use(tracer_provider, meter_provider):
            yield exporter
    finally:
        tracer_provider.shutdown()
        meter_provider.shutdown()


def _span_ns(calls: int) -> dict[str, float]:
    """Python CPU of one `telemetry.span` enter and exit, unset (the no-op tracer) and bypassed, in ns."""
    out: dict[str, float] = {}
    for name, state in (("unset", _unset()), ("bypassed", telemetry.use(bypass=True))):
        with state:
            started = time.process_time()
            for _ in range(calls):
                with telemetry.span("probe", {"ac.n": 1}):
                    pass
            out[name] = round((time.process_time() - started) * 1e9 / calls, 1)
    return out


def _mode(name: str) -> AbstractContextManager[Any]:
    if name == "bypassed":
        return telemetry.use(bypass=True)
    if name == "sdk":
        return _sdk()
    return _unset()


@contextmanager
def _unset() -> Iterator[None]:
    yield


async def measure(url: str) -> dict[str, Any]:
    """Python CPU per FRONT_DOOR build in each mode, interleaved over rounds."""
    assert type(trace.get_tracer_provider()).__name__ == "ProxyTracerProvider", "no global provider: `unset`"
    assert not telemetry.enabled()
    conn = await asyncpg.connect(url)
    try:
        scopes = json.loads(await conn.fetchval("SELECT doc FROM public.bench_telemetry_scopes"))
    finally:
        await conn.close()
    db = await Database.open(load_settings(pool_min_size=16, pool_max_size=16), url=url, migrate=False)
    try:
        request = _request(scopes)
        builder = DefaultContextBuilder(default_registry(db), ContextPacker(), source_timeout_s=30.0)
        for _ in range(WARM):
            brief = await builder.build(request, FRONT_DOOR)
        cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
        wall: dict[str, list[float]] = {mode: [] for mode in MODES}
        spans = 0
        for n in range(ROUNDS):
            for mode in MODES[n % 3 :] + MODES[: n % 3]:
                with _mode(mode) as exporter:
                    started, wall_started = time.process_time(), time.perf_counter()
                    for _ in range(PER_ROUND):
                        await builder.build(request, FRONT_DOOR)
                    if mode == "sdk":
                        telemetry.tracer_provider().force_flush()  # type: ignore[union-attr]
                    cpu[mode].append((time.process_time() - started) * 1000 / PER_ROUND)
                    wall[mode].append((time.perf_counter() - wall_started) * 1000 / PER_ROUND)
                if mode == "sdk":
                    spans += exporter.spans
        medians = {mode: round(statistics.median(values), 3) for mode, values in cpu.items()}
        per_span = _span_ns(SPAN_CALLS)
        spans_per_brief = spans / (ROUNDS * PER_ROUND)
        # The same calls a build makes, priced alone: what the no-op tracer adds to one brief, as a share.
        added_ms = spans_per_brief * (per_span["unset"] - per_span["bypassed"]) / 1e6
        return {
            "python_cpu_ms_per_brief": medians,
            "python_cpu_ms_per_brief_rounds": {m: [round(v, 3) for v in values] for m, values in cpu.items()},
            "build_ms_median": {mode: round(statistics.median(values), 3) for mode, values in wall.items()},
            "unset_over_bypassed": round(medians["unset"] / medians["bypassed"], 4),
            "sdk_over_bypassed": round(medians["sdk"] / medians["bypassed"], 4),
            "spans_per_brief_sdk": round(spans_per_brief, 1),
            "noop_span_ns": per_span,
            "noop_spans_ms_per_brief_estimate": round(added_ms, 4),
            "noop_spans_share_of_brief_cpu_estimate": round(added_ms / medians["bypassed"], 5),
            "rounds": ROUNDS,
            "builds_per_round": PER_ROUND,
            "tokens": brief.tokens,
            "failed_sources": brief.failed_sources,
            "per_source_tokens": brief.per_source_tokens,
        }
    finally:
        await db.close()


def goal_report(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The goal row: telemetry unset costs the brief no measurable Python CPU over spans bypassed."""
    ratio = result["measured"]["unset_over_bypassed"]
    return [
        goal(
            "brief Python CPU with OTLP unset over spans bypassed (no measurable cost)",
            ratio,
            at_most=1.03,
            note="interleaved rounds on one process and database; the rounds' spread is in the result",
        )
    ]


def run() -> dict[str, Any]:
    """Seed (or reuse) the small database, then the interleaved measurement."""
    with tempfile.TemporaryDirectory(prefix="ac-bench-telemetry-") as tmp:
        external = os.environ.get("DATABASE_URL")
        server = external or embedded_server_url(Path(tmp), keep_running=True)
        try:
            url = asyncio.run(ensure_seeded(server))
            load = os.getloadavg()
            measured = asyncio.run(measure(url))
            result: dict[str, Any] = {
                "load_average": [round(x, 2) for x in (*load, *os.getloadavg())],
                "seed": {"sources": SOURCES, "chunks_per_source": 20, "application_scale": SCALE, "memories": MEMORIES},
                "measured": measured,
            }
            result["goal_report"] = goal_report(result)
            return result
        finally:
            if not external:
                stop_embedded_server(Path(tmp))


if __name__ == "__main__":
    print(json.dumps(run(), indent=2, default=str))
    sys.exit(0)
