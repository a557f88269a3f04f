"""`ac-context … --send-event` with no Inngest server: the events wait in the outbox and dev mode runs them."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from typer.testing import CliRunner

from functions.app import create_app
from functions.cli import app as cli_app
from functions.cli._events import EXIT_QUEUED
from functions.events import EVENT_BATCH, EVENT_RETRY
from knowledge.ingestion.sources import get_source
from state import outbox
from state.db import Database
from state.settings import get_settings, load_settings
from tests.factories import Factory
from tests.integration.functions.conftest import TOKEN

Invoke = Callable[..., Any]
DOC = "# Onboarding\n\nNew customers get a kickoff call within two business days of signing."


@pytest.fixture
def cli(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Invoke]:
    """`ac-context …` on the test database, with no Inngest server anywhere (a closed port)."""
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("AC_CONTEXT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("INNGEST_DEV", "1")
    monkeypatch.setenv("INNGEST_BASE_URL", "http://127.0.0.1:9")  # nothing answers here
    monkeypatch.delenv("AC_CONTEXT_DEBUG", raising=False)

    def invoke(*args: str) -> Any:
        get_settings.cache_clear()
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(CliRunner().invoke, cli_app, list(args)).result()

    yield invoke
    get_settings.cache_clear()


async def _until(db: Database, source_id: UUID, status: str) -> None:
    for _ in range(1200):  # a generous deadline: a minute
        if (await get_source(db, source_id)).status == status:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"source {source_id} never became {status}: {await get_source(db, source_id)}")


async def _waiting(db: Database) -> list[outbox.OutboxEntry]:
    async with db.connection() as conn:
        ids = [r["id"] for r in await conn.fetch("SELECT id FROM agent.event_outbox WHERE sent_at IS NULL")]
    return await outbox.rows(db, ids)


async def test_ingest_send_event_with_no_server_waits_in_the_outbox_and_reaches_ready_in_dev_mode(
    cli: Invoke, db: Database, factory: Factory, tmp_path: Path
) -> None:
    org = await factory.organization()
    doc = tmp_path / "onboarding.md"
    doc.write_text(DOC)
    result = cli("ingest", str(doc), "--org", str(org), "--send-event", "--json")
    assert result.exit_code == EXIT_QUEUED, result.output
    (row,) = json.loads(result.stdout)
    assert row["status"] == "pending (event queued)" and row["event_error"], row
    assert "event_queued" in result.stderr and "Traceback" not in result.output
    source_id = UUID(row["source_id"])
    assert (await get_source(db, source_id)).status == "pending"
    (waiting,) = await _waiting(db)
    assert waiting.name == EVENT_BATCH and waiting.data["source_ids"] == [str(source_id)] and waiting.last_error

    settings = load_settings(
        api_token=TOKEN, data_dir=tmp_path / "data", inngest_mode="dev", outbox_poll_interval_s=0.05
    )
    service = create_app(settings, db=db)
    async with service.router.lifespan_context(service):
        assert service.state.functions_mode == "in-process"
        await _until(db, source_id, "ready")
        # The runner marks the row after the handler returns: under load the source reads ready first.
        for _ in range(1200):
            (done,) = await outbox.rows(db, [waiting.id])
            if done.delivered_by is not None:
                break
            await asyncio.sleep(0.05)
    assert done.delivered_by == "in-process"


async def test_sources_retry_send_event_with_no_server_resets_and_queues_in_one_transaction(
    cli: Invoke, db: Database, factory: Factory, tmp_path: Path
) -> None:
    org = await factory.organization()
    bad = tmp_path / "broken.pdf"
    bad.write_text("%PDF-1.4 this is not a PDF")
    (failed,) = json.loads(cli("ingest", str(bad), "--org", str(org), "--json").stdout)
    source_id = UUID(failed["source_id"])
    assert (await get_source(db, source_id)).status == "failed"
    result = cli("sources", "retry", str(source_id), "--send-event")
    assert result.exit_code == EXIT_QUEUED, result.output
    assert "event_queued" in result.stderr and "Traceback" not in result.output
    assert (await get_source(db, source_id)).status == "pending", "reset with its event waiting, never stranded"
    (waiting,) = await _waiting(db)
    assert waiting.name == EVENT_RETRY and waiting.data["source_id"] == str(source_id)

    switch = cli("switch-model", "local/wordllama-l2-supercat-256", "--send-event", "--json")
    assert switch.exit_code == EXIT_QUEUED, switch.output
    assert json.loads(switch.stdout)["event_status"] == "queued"
