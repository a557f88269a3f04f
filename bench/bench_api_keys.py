"""Benchmark of what an API key costs a request: the one lookup at the edge, beside the operator token.

One tenant with a few CRM rows and a knowledge document, the service app over in-process HTTP, and three
bearers: the operator token `AC_CONTEXT_API_TOKEN` (no lookup), an operator key and an organization key
(one primary-key lookup each). It measures `authenticate_key` alone, `GET /v1/memory/tools` (a route that
reads nothing, so the lookup is all the database work), and the front door brief sequentially and at 16
concurrent callers (where the lookup competes with the build for pool connections). The operator's brief
pays the organization existence check instead of the lookup, so the two paths each make one extra query.

It uses `DATABASE_URL` when set, else its own embedded server in a temporary folder. Nothing here asserts a
timing; the numbers decide whether a key cache is worth its revocation window (docs/decisions.md, issue 21).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from bench._scratch import bench_server, scratch_database
from functions.app import create_app
from knowledge.documents.objects import LocalObjectStore
from knowledge.embedding.registry import EmbedderRegistry, FakeEmbedder
from state.api_keys import authenticate_key, mint_key
from state.db import Database
from state.migrate import apply_migrations
from state.settings import load_settings
from tests.integration.functions.support import RecordingInngest, asgi_client, new_signing_key, use_platform_model

TOKEN = "bench-operator-token-0123456789abcdef"
LOOKUPS = 2000
TOOLS = 1000
BRIEFS = 200
CONCURRENT, PER_CALLER = 16, 20


def _stats(samples_s: list[float], unit: float) -> dict[str, float]:
    ordered = sorted(samples_s)
    return {
        "median": round(statistics.median(ordered) * unit, 3),
        "p95": round(ordered[int(len(ordered) * 0.95) - 1] * unit, 3),
    }


async def _timed(call: Callable[[], Awaitable[Any]], rounds: int) -> list[float]:
    for _ in range(10):
        await call()
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - started)
    return samples


async def _seed(db: Database, org: uuid.UUID) -> None:
    async with db.connection() as conn:
        await conn.execute("INSERT INTO public.organizations (id, name) VALUES ($1, 'Bench')", org)
        await conn.execute(
            "INSERT INTO public.crm_companies (organization_id, name, lifecycle_stage) "
            "SELECT $1, 'Company ' || g, 'lead' FROM generate_series(1, 20) g",
            org,
        )
        await use_platform_model(conn)


async def _concurrent(http: httpx.AsyncClient, body: dict[str, Any], headers: dict[str, str]) -> dict[str, Any]:
    samples: list[float] = []

    async def caller() -> None:
        for _ in range(PER_CALLER):
            started = time.perf_counter()
            answer = await http.post("/v1/context/briefs", json=body, headers=headers)
            samples.append(time.perf_counter() - started)
            assert answer.status_code in (200, 503), answer.text

    started = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(CONCURRENT)))
    wall = time.perf_counter() - started
    return {**_stats(samples, 1000), "answers_per_s": round(len(samples) / wall, 1)}


async def _measure(db: Database, data_dir: Path) -> dict[str, Any]:
    org = uuid.uuid4()
    await _seed(db, org)
    org_key = (await mint_key(db, organization_id=org, name="bench")).secret
    operator_key = (await mint_key(db, organization_id=None, name="bench")).secret
    bearers = {"operator_token": TOKEN, "operator_key": operator_key, "organization_key": org_key}
    embedders = EmbedderRegistry()
    embedders.register(FakeEmbedder.model_id, FakeEmbedder, dimensions=FakeEmbedder.dimensions)
    client = RecordingInngest(app_id="ac-context", is_production=True, signing_key=new_signing_key())
    settings = load_settings(api_token=TOKEN, data_dir=data_dir, max_concurrent_briefs=CONCURRENT)
    app = create_app(
        settings, db=db, inngest_client=client, object_store=LocalObjectStore(data_dir / "o"), embedders=embedders
    )
    result: dict[str, Any] = {
        "authenticate_key_us": _stats(await _timed(lambda: authenticate_key(db, org_key), LOOKUPS), 1e6)
    }
    body = {"organization_id": str(org), "query": "Which companies are leads?"}
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        for label, value in bearers.items():
            headers = {"Authorization": f"Bearer {value}"}
            tools = await _timed(lambda h=headers: http.get("/v1/memory/tools", headers=h), TOOLS)
            briefs = await _timed(lambda h=headers: http.post("/v1/context/briefs", json=body, headers=h), BRIEFS)
            result[label] = {
                "memory_tools_ms": _stats(tools, 1000),
                "brief_ms": _stats(briefs, 1000),
                f"brief_at_{CONCURRENT}_concurrent_ms": await _concurrent(http, body, headers),
            }
    return result


async def _main(server: str, data_dir: Path) -> dict[str, Any]:
    async with scratch_database(server, "ac_bench_keys") as url:
        await apply_migrations(url)
        db = await Database.open(load_settings(pool_min_size=4, pool_max_size=10), url=url, migrate=False)
        try:
            measured = await _measure(db, data_dir)
        finally:
            await db.close()
    return {"rounds": {"lookups": LOOKUPS, "tools": TOOLS, "briefs": BRIEFS}, **measured}


def run() -> dict[str, Any]:
    """Measure and return the numbers (uses DATABASE_URL, else an embedded server in a temp folder)."""
    with tempfile.TemporaryDirectory(prefix="ac-bench-keys-") as tmp, bench_server(Path(tmp) / "pg") as server:
        return asyncio.run(_main(server, Path(tmp)))
