"""What recording brief receipts costs the front door (issue 47): the same briefs with recording on and off,
interleaved, through the real app.

Seeds one organization on a scratch database (a person with 40 user-scope memories, so each brief cites
memory revisions, and 20 organization memories), serves `functions.app.create_app` in-process and sends
front door briefs (`POST /v1/context/briefs`, the operator token) from `CLIENTS` concurrent clients over the
ASGI transport: `ROUNDS` rounds alternating on/off (`Services.receipts.enabled`), `PER_CLIENT` briefs per
client per round, after a warm-up. Recording on includes its background flush running beside the briefs
(batches of 200 or every second, on the primary). Reports each side's p50/p95/mean latency, the receipts
written, and two micro figures: one `ReceiptRecorder.record` call (the only work on the brief's path) and
the flush's throughput (receipts per second in batches of 200, with 3 citations each). Nothing here
asserts a timing.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import httpx
import inngest

from bench._scratch import bench_server, scratch_database
from functions.app import create_app
from knowledge.documents.objects import LocalObjectStore
from state.brief_receipts import BriefReceipt, SourceCounts
from state.db import Database
from state.migrate import apply_migrations
from state.settings import load_settings

TOKEN = "bench-receipts-token-0123456789"
ROUNDS = 12
CLIENTS = 4
PER_CLIENT = 25
WARMUP = 20


async def _seed(db: Database) -> tuple[UUID, UUID]:
    async with db.connection() as conn:
        org = await conn.fetchval("INSERT INTO public.organizations (name) VALUES ('Bench receipts') RETURNING id")
        user = await conn.fetchval(
            "INSERT INTO public.users (organization_id, email) VALUES ($1, 'bench@example.com') RETURNING id", org
        )
        definition = await conn.fetchval(
            "INSERT INTO agent.definitions (organization_id, definition_kind, name) VALUES ($1, 'agent', 'bench agent')"
            " RETURNING id",
            org,
        )
        for n in range(60):
            scope, owner = ("user", user) if n < 40 else ("organization", org)
            await conn.execute(
                "INSERT INTO agent.memories (organization_id, definition_id, scope, user_id, scope_owner_id,"
                " subject_key, text) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                org, definition, scope, user if scope == "user" else None, owner,
                f"{scope}:{owner}:preference.n{n}", f"remember fact number {n} about the renewal",
            )  # fmt: skip
    return org, user


async def _brief(http: httpx.AsyncClient, body: dict[str, Any]) -> float:
    started = time.perf_counter()
    answer = await http.post("/v1/context/briefs", json=body, headers={"Authorization": f"Bearer {TOKEN}"})
    elapsed = time.perf_counter() - started
    assert answer.status_code == 200, answer.text
    return elapsed * 1000


async def _round(http: httpx.AsyncClient, body: dict[str, Any]) -> list[float]:
    async def client() -> list[float]:
        return [await _brief(http, body) for _ in range(PER_CLIENT)]

    return [t for ts in await asyncio.gather(*(client() for _ in range(CLIENTS))) for t in ts]


def _summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[int(0.95 * (len(ordered) - 1))], 2),
        "mean_ms": round(statistics.fmean(ordered), 2),
    }


def _receipt(org: UUID, refs: int) -> BriefReceipt:
    return BriefReceipt(
        org, datetime.now(UTC), "http", "front_door", "front_door", 400,
        sources={"memory": SourceCounts(tokens=300, dropped=3), "conversation": SourceCounts(tokens=100)},
        cited=tuple(("crm.company", str(uuid4())) for _ in range(refs)),
    )  # fmt: skip


async def _micro(db: Database, org: UUID, recorder_class: Any) -> dict[str, float]:
    recorder = recorder_class(db, capacity=10**7, batch=10**7, interval_s=3600)
    receipts = [_receipt(org, 3) for _ in range(20_000)]
    started = time.perf_counter()
    for r in receipts:
        recorder.record(r)
    record_us = (time.perf_counter() - started) / len(receipts) * 1e6
    recorder.batch = 200
    started = time.perf_counter()
    written = await recorder.flush()
    flush_s = time.perf_counter() - started
    await recorder.aclose()
    return {
        "record_call_us": round(record_us, 2),
        "flush_receipts_per_s": round(written / flush_s),
        "flush_batch_ms": round(flush_s / (written / 200) * 1000, 2),
    }


async def _run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ac-bench-receipts-") as tmp, bench_server(Path(tmp)) as server:
        async with scratch_database(server, "ac_bench_receipts") as url:
            await apply_migrations(url)
            db = await Database.open(load_settings(pool_min_size=2, pool_max_size=8), url=url, migrate=False)
            try:
                org, user = await _seed(db)
                app = create_app(
                    load_settings(api_token=TOKEN, data_dir=Path(tmp)), db=db,
                    inngest_client=inngest.Inngest(app_id="ac-bench", is_production=False),
                    object_store=LocalObjectStore(Path(tmp) / "objects"),
                )  # fmt: skip
                body = {"organization_id": str(org), "user_id": str(user), "query": "What about the renewal?"}
                times: dict[str, list[float]] = {"on": [], "off": []}
                async with app.router.lifespan_context(app):
                    transport = httpx.ASGITransport(app=app)
                    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as http:
                        recorder = app.state.slot.get().receipts
                        recorder_class = type(recorder)  # the services' recorder, for the micro figures
                        for _ in range(WARMUP):
                            await _brief(http, body)
                        for n in range(ROUNDS):
                            mode = "on" if n % 2 == 0 else "off"
                            recorder.enabled = mode == "on"
                            times[mode] += await _round(http, body)
                            print(f"-- round {n} ({mode}): {_summary(times[mode])}", file=sys.stderr, flush=True)
                        recorder.enabled = True
                        await recorder.flush()
                    async with db.connection() as conn:
                        written = await conn.fetchval("SELECT count(*) FROM agent.brief_receipts")
                        cites = await conn.fetchval("SELECT count(*) FROM agent.brief_citations")
                micro = await _micro(db, org, recorder_class)
            finally:
                await db.close()
    on, off = _summary(times["on"]), _summary(times["off"])
    return {
        "load": {"clients": CLIENTS, "per_client_per_round": PER_CLIENT, "rounds": ROUNDS, "interleaved": True},
        "recording_on": on,
        "recording_off": off,
        "p50_delta_ms": round(on["p50_ms"] - off["p50_ms"], 2),
        "p95_delta_ms": round(on["p95_ms"] - off["p95_ms"], 2),
        "receipts_written": written,
        "citations_written": cites,
        "micro": micro,
    }


def run() -> dict[str, Any]:
    return asyncio.run(_run())
