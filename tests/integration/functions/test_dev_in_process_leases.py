"""In-process runs and their leases (functions.outbox.delivery, functions.outbox.holders, migration 0096): a short lease
renewed while the run is alive, a dead holder's rows taken over at start, and a real `ac-context serve`
killed mid-ingestion that, restarted, brings its source to ready or failed."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from uuid import UUID

import httpx
import pytest

from functions.app import create_app
from functions.outbox.delivery import IN_PROCESS_LEASE_S
from functions.outbox.holders import host_prefix, this_holder
from knowledge.documents.objects import LocalObjectStore
from state import outbox
from state.db import Database
from state.outbox import OutboxEntry, OutboxEvent
from state.settings import load_settings
from tests.factories import Factory
from tests.integration.functions.conftest import FAKE_MODEL, TOKEN, fake_embedders
from tests.integration.functions.support import asgi_client
from tests.support import free_port, wait_until_answering

AUTH = {"Authorization": f"Bearer {TOKEN}"}
DOC = b"# Onboarding\n\nNew customers get a kickoff call within two business days of signing."
ENTRY = [sys.executable, "-c", "from functions.cli import main; main()", "serve"]


@asynccontextmanager
async def ingestion_held(db: Database) -> AsyncIterator[None]:
    """Hold the fake model's write lock exclusive (what a switch's cleanup takes): every ingestion waits on it."""
    async with db.connection() as conn, conn.transaction():
        await conn.execute("SELECT agent.knowledge_model_lock_exclusive($1)", FAKE_MODEL)
        yield


async def _row_when(db: Database, row_id: UUID, ok: object, what: str) -> OutboxEntry:
    """The row once `ok(row)` holds; a generous deadline."""
    for _ in range(1200):
        (row,) = await outbox.rows(db, [row_id])
        if ok(row):  # type: ignore[operator]
            return row
        await asyncio.sleep(0.05)
    raise AssertionError(f"the outbox row never {what}: {row}")


async def _source_status(db: Database, source_id: str) -> str:
    return str(await db.fetchval("SELECT status FROM agent.knowledge_sources WHERE id = $1", UUID(source_id)))


def _lease_ahead_of_heartbeat(row: OutboxEntry) -> timedelta:
    assert row.lease is not None and row.lease.heartbeat_at is not None, row
    return row.lease.until - row.lease.heartbeat_at


async def test_a_running_in_process_run_renews_its_short_lease_so_no_one_takes_it(
    db: Database, factory: Factory, tmp_path: Path, fake_live_model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INNGEST_DEV", "1")
    monkeypatch.setenv("INNGEST_BASE_URL", "http://127.0.0.1:9")
    settings = load_settings(api_token=TOKEN, data_dir=tmp_path, inngest_mode="dev", outbox_poll_interval_s=0.05)
    app = create_app(settings, db=db, object_store=LocalObjectStore(tmp_path / "objects"), embedders=fake_embedders())
    app.state.outbox.in_process_lease_s, app.state.outbox.heartbeat_s = 1.0, 0.1
    org = str(await factory.organization())
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        async with ingestion_held(db):
            files = {"file": ("onboarding.md", DOC, "text/markdown")}
            body = await http.post("/v1/knowledge/sources", headers=AUTH, files=files, data={"organization_id": org})
            row_id = UUID(body.json()["event_id"])
            claimed = await _row_when(db, row_id, lambda r: r.lease.holder is not None, "was claimed")
            assert claimed.lease is not None and claimed.lease.heartbeat_at is not None
            first = claimed.lease.heartbeat_at
            renewed = await _row_when(
                db, row_id,
                lambda r: r.lease.heartbeat_at is not None and r.lease.heartbeat_at - first > timedelta(seconds=3),
                "was renewed past three lease lengths",
            )  # fmt: skip
            assert renewed.lease is not None and renewed.lease.holder == this_holder()
            assert _lease_ahead_of_heartbeat(renewed) <= timedelta(seconds=1.5), "the lease is short"
            assert await outbox.claim(db, limit=10, lease_s=60, ids=[row_id], holder="other:1:1") == [], (
                "a run that is alive keeps its row past its lease"
            )
        await _row_when(db, row_id, lambda r: r.delivered_by == "in-process", "was run")
        assert await _source_status(db, body.json()["source_id"]) == "ready"


async def test_a_starting_process_takes_over_the_rows_of_a_dead_holder_on_this_machine(
    db: Database, tmp_path: Path
) -> None:
    settings = load_settings(api_token=TOKEN, data_dir=tmp_path, run_functions="in-process", inngest_mode="dev")
    app = create_app(settings, db=db, object_store=LocalObjectStore(tmp_path), embedders=fake_embedders())
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = f"{host_prefix()}{int(gone.stdout)}:1"
    async with db.connection() as conn, conn.transaction():
        orphan, alive, elsewhere = await outbox.enqueue(conn, [OutboxEvent("e"), OutboxEvent("e"), OutboxEvent("e")])
    for row_id, holder in ((orphan, dead), (alive, this_holder()), (elsewhere, "another-host:1:1")):
        await outbox.claim(db, limit=1, lease_s=3600, ids=[row_id], holder=holder)
    async with app.router.lifespan_context(app):
        app.state.outbox.runner = None  # the rows are not real work: only the takeover is under test
        assert await app.state.outbox.take_over_dead_holders() == 1
    (taken,) = await outbox.claim(db, limit=10, lease_s=60, ids=[orphan, alive, elsewhere], holder="next:1:1")
    assert taken.id == orphan, "only the dead holder of this machine loses its lease at once"
    assert taken.attempts == 1 and "interrupted" in (taken.last_error or ""), "the interruption is an attempt"


async def test_a_run_interrupted_five_times_is_given_up_and_fails_its_source(
    db: Database, factory: Factory, tmp_path: Path, fake_live_model: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INNGEST_DEV", "1")
    monkeypatch.setenv("INNGEST_BASE_URL", "http://127.0.0.1:9")
    settings = load_settings(api_token=TOKEN, data_dir=tmp_path, inngest_mode="dev", outbox_poll_interval_s=3600)
    app = create_app(settings, db=db, object_store=LocalObjectStore(tmp_path / "objects"), embedders=fake_embedders())
    org = str(await factory.organization())
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        runner, app.state.outbox.runner = app.state.outbox.runner, None  # the upload's event only waits
        files = {"file": ("onboarding.md", DOC, "text/markdown")}
        body = (
            await http.post("/v1/knowledge/sources", headers=AUTH, files=files, data={"organization_id": org})
        ).json()
        dead = f"{host_prefix()}999999999:1"  # a run that killed its process four times already, the last one this
        async with db.connection() as conn:
            await conn.execute(
                "UPDATE agent.event_outbox SET attempts = 4, claimed_by = $2, next_attempt_at = now() WHERE id = $1",
                UUID(body["event_id"]), dead,
            )  # fmt: skip
        app.state.outbox.runner = runner
        await app.state.outbox.drain_once()
    (row,) = await outbox.rows(db, [UUID(body["event_id"])])
    assert row.delivered_by == "given-up" and "interrupted" in (row.last_error or ""), row
    assert await _source_status(db, body["source_id"]) == "failed", "nothing waits pending forever"


def _serve_env(tmp_path: Path, db_url: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("AC_CONTEXT_", "INNGEST_"))}
    return {
        **keep,
        "HOME": str(tmp_path),
        "AC_CONTEXT_DATA_DIR": str(tmp_path / "data"),
        "AC_CONTEXT_ALLOW_TEST_MODELS": "1",
        "AC_CONTEXT_API_TOKEN": TOKEN,
        "AC_CONTEXT_RUN_FUNCTIONS": "in-process",
        "AC_CONTEXT_OUTBOX_POLL_INTERVAL_S": "0.2",
        "INNGEST_DEV": "1",
        "INNGEST_BASE_URL": "http://127.0.0.1:9",
        "DATABASE_URL": db_url,
    }


async def test_an_in_process_run_killed_mid_ingestion_is_resumed_after_a_restart(
    db: Database, db_url: str, factory: Factory, tmp_path: Path, fake_live_model: str
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = _serve_env(tmp_path, db_url)
    org = str(await factory.organization())
    log = tmp_path / "serve.out"
    async with ingestion_held(db):
        with log.open("wb") as out:
            first = subprocess.Popen([*ENTRY, "--port", str(port)], env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            await asyncio.to_thread(wait_until_answering, first, f"{base}/readyz", exited=log.read_text)
            files = {"file": ("onboarding.md", DOC, "text/markdown")}
            async with httpx.AsyncClient(base_url=base, timeout=30) as http:
                form = {"organization_id": org}
                created = await http.post("/v1/knowledge/sources", headers=AUTH, files=files, data=form)
            body = created.json()
            row_id = UUID(body["event_id"])
            running = await _row_when(db, row_id, lambda r: r.lease.holder is not None, "was claimed by the server")
            assert running.lease is not None and running.lease.holder is not None
            assert running.lease.holder.startswith(f"{host_prefix()}{first.pid}:"), "held by the server process"
            assert _lease_ahead_of_heartbeat(running) <= timedelta(seconds=IN_PROCESS_LEASE_S + 1)
            assert IN_PROCESS_LEASE_S <= 60, "an interrupted run waits at most a minute for its lease"
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=30)
    assert await _source_status(db, body["source_id"]) == "pending", "killed mid-ingestion"
    with log.open("ab") as out:
        second = subprocess.Popen([*ENTRY, "--port", str(port)], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        status = await _source_status(db, body["source_id"])
        while status not in ("ready", "failed") and time.monotonic() < deadline:
            assert second.poll() is None, log.read_text()
            await asyncio.sleep(0.2)
            status = await _source_status(db, body["source_id"])
        assert status == "ready", log.read_text()
        (row,) = await outbox.rows(db, [row_id])
        assert row.delivered_by == "in-process" and row.attempts == 1, row
        assert "took over the event" in log.read_text(), "the restart took the dead holder's row at once"
    finally:
        second.terminate()
        second.wait(timeout=30)
