"""The outbox against a real event API on loopback: each row on its own schedule, so one poisoned event never
holds back the others, and /readyz reports a stuck event without failing readiness (functions.outbox.delivery,
functions.api.ops)."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import inngest
import pytest
from fastapi import FastAPI

from functions.app import create_app
from knowledge.documents.objects import LocalObjectStore
from state import outbox
from state.db import Database
from state.outbox import OutboxEvent
from state.settings import load_settings
from tests.integration.functions.conftest import TOKEN, fake_embedders
from tests.integration.functions.support import asgi_client, new_signing_key

EVENT_KEY = "test-event-key"
MAX_EVENT_BYTES = 256 * 1024
"""Inngest's limit on one event: a request holding a larger one is refused whole."""


@dataclass
class EventApi:
    """What the loopback event API saw: every request's size in events, and the ids it accepted."""

    url: str
    requests: list[int] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)


@pytest.fixture
def event_api() -> Iterator[EventApi]:
    """An HTTP server speaking Inngest's event API (`POST /e/<key>`, a JSON list of events, `{ids, status}`)."""
    seen = EventApi(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            events = json.loads(body)
            seen.requests.append(len(events))
            if self.path != f"/e/{EVENT_KEY}":
                self._answer(401, {"error": "Event key not found", "status": 401})
            elif any(len(json.dumps(e)) > MAX_EVENT_BYTES for e in events):
                self._answer(400, {"error": f"event is over the {MAX_EVENT_BYTES} byte limit", "status": 400})
            else:
                seen.accepted.extend(e["id"] for e in events)
                self._answer(200, {"ids": [e["id"] for e in events], "status": 200})

        def _answer(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    seen.url = f"http://127.0.0.1:{server.server_port}"
    try:
        yield seen
    finally:
        server.shutdown()
        server.server_close()


async def _app(db: Database, tmp_path: Path, event_api: EventApi, *, event_key: str) -> FastAPI:
    client = inngest.Inngest(
        app_id="ac-context",
        is_production=True,
        signing_key=new_signing_key(),
        event_key=event_key,
        event_api_base_url=event_api.url,
    )
    settings = load_settings(api_token=TOKEN, data_dir=tmp_path, outbox_poll_interval_s=3600)
    return create_app(
        settings, db=db, inngest_client=client, object_store=LocalObjectStore(tmp_path), embedders=fake_embedders()
    )


@pytest.fixture
async def running(
    db: Database, tmp_path: Path, event_api: EventApi
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    """The service with the right event key, its drainer idle (the tests drain by hand)."""
    app = await _app(db, tmp_path, event_api, event_key=EVENT_KEY)
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        yield app, http


async def _waiting_for_ten_minutes(db: Database, *events: OutboxEvent) -> list[UUID]:
    """Write `events` as if they had waited ten minutes (past the drainer's grace and the stuck threshold)."""
    async with db.connection() as conn, conn.transaction():
        ids = await outbox.enqueue(conn, events)
        await conn.execute(
            "UPDATE agent.event_outbox SET created_at = now() - interval '10 minutes' WHERE id = ANY ($1)", ids
        )
    return ids


def _good(n: int) -> OutboxEvent:
    return OutboxEvent("test/good", {"n": n})


POISONED = OutboxEvent("test/oversized", {"blob": "x" * (MAX_EVENT_BYTES + 1)})


async def test_one_poisoned_row_beside_eleven_good_ones_never_delays_them(
    running: tuple[FastAPI, httpx.AsyncClient], db: Database, event_api: EventApi
) -> None:
    app, _ = running
    poisoned, *good = await _waiting_for_ten_minutes(db, POISONED, *(_good(n) for n in range(11)))
    await app.state.outbox.drain_once()
    assert sorted(event_api.accepted) == sorted(str(i) for i in good), "all eleven good events leave in one drain"
    rows = {r.id: r for r in await outbox.rows(db, [poisoned, *good])}
    assert all(rows[i].delivered_by == "inngest" and rows[i].attempts == 0 for i in good)
    bad = rows[poisoned]
    assert bad.sent_at is None and bad.attempts == 1 and "byte limit" in (bad.last_error or "")
    assert bad.lease is not None and bad.lease.holder is None, "the poisoned row waits its own backoff, unheld"

    later = await _waiting_for_ten_minutes(db, _good(12))
    async with db.connection() as conn:  # the poisoned row's backoff is over: it is due beside a new good one
        await conn.execute("UPDATE agent.event_outbox SET next_attempt_at = now() WHERE id = $1", poisoned)
    await app.state.outbox.drain_once()
    assert str(later[0]) in event_api.accepted, "a good row claimed with the poisoned one still leaves"
    (again,) = await outbox.rows(db, [poisoned])
    assert again.attempts == 2 and again.sent_at is None, "the poisoned row keeps its own attempts count"


async def test_readyz_reports_a_stuck_row_and_stays_ready_while_the_others_leave(
    running: tuple[FastAPI, httpx.AsyncClient], db: Database
) -> None:
    app, http = running
    first, *_ = await _waiting_for_ten_minutes(db, POISONED, *(_good(n) for n in range(3)))
    await app.state.outbox.drain_once()
    one = await http.get("/readyz")
    assert one.status_code == 200 and one.json()["outbox"]["stuck"] == 1, one.json()
    async with db.connection() as conn:  # the first one's backoff runs on: the next drain meets only the second
        await conn.execute(
            "UPDATE agent.event_outbox SET next_attempt_at = now() + interval '1 hour' WHERE id = $1", first
        )
    await _waiting_for_ten_minutes(db, POISONED, *(_good(n) for n in range(3, 6)))
    await app.state.outbox.drain_once()
    ready = await http.get("/readyz")
    body = ready.json()
    assert ready.status_code == 200 and body["status"] == "ready", "events still leave: two stuck ones are theirs"
    assert body["outbox"]["stuck"] == 2 and body["outbox"]["oldest_stuck_age_s"] >= 600
    assert "byte limit" in body["outbox"]["last_error"]
    metrics = (await http.get("/metrics")).text
    assert "ac_context_outbox_stuck_events 2.0" in metrics and "ac_context_outbox_waiting_events 2.0" in metrics


async def test_readyz_fails_when_no_event_can_be_delivered(db: Database, tmp_path: Path, event_api: EventApi) -> None:
    app = await _app(db, tmp_path, event_api, event_key="a-key-inngest-does-not-know")
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        ids = await _waiting_for_ten_minutes(db, *(_good(n) for n in range(12)))
        await app.state.outbox.drain_once()
        assert event_api.requests == [12, 1, 1], "after the batch, two rows refused alone and none sent: it stops"
        assert all(r.attempts == 1 and r.sent_at is None for r in await outbox.rows(db, ids))
        down = await http.get("/readyz")
        body = down.json()["error"]["details"]
        assert down.status_code == 503 and body["status"] == "events_undeliverable", body
        assert "Event key not found" in body["reason"] and body["outbox"]["stuck"] == 12


async def test_two_poisoned_rows_that_sort_first_cannot_hold_the_good_ones_back_drain_after_drain(
    running: tuple[FastAPI, httpx.AsyncClient], db: Database, event_api: EventApi
) -> None:
    app, _ = running
    ids = await _waiting_for_ten_minutes(db, POISONED, POISONED, *(_good(n) for n in range(3)))
    async with db.connection() as conn:  # the two poisoned rows sort before the good ones by id
        for n, row_id in enumerate(ids[:2]):
            await conn.execute("UPDATE agent.event_outbox SET id = $1 WHERE id = $2", UUID(int=n + 1), row_id)
    good = {str(i) for i in ids[2:]}
    for _ in range(40):  # each drain with every backoff over, as if the drainer came back after them
        await app.state.outbox.drain_once()
        if good <= set(event_api.accepted):
            break
        async with db.connection() as conn:
            await conn.execute("UPDATE agent.event_outbox SET next_attempt_at = now() WHERE sent_at IS NULL")
    assert good <= set(event_api.accepted), "the good rows left although two poisoned ones sort first"
