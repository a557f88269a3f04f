"""One retry rule on every face: the API, the console and the CLI answer the same for the same source state.

A failed source is reset to pending and its `knowledge/source.retry.requested` event is written in the same
transaction (the API answers what its schema promises: `reset: true`, `status: pending`); a pending source
(its event or the sweep owns it) and a ready one are refused with `source_not_failed`, nothing changed and no
event written. Each face runs over the real app or the real `ac-context` command on the test database.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from typer.testing import CliRunner

from functions.cli import app as cli_app
from functions.cli._events import EXIT_QUEUED
from functions.events import EVENT_RETRY
from knowledge.ingestion.registration import register_upload
from knowledge.ingestion.sources import get_source
from state.api_keys import mint_key
from state.db import Database
from state.settings import get_settings
from tests.factories import Factory
from tests.integration.functions.conftest import Service
from tests.integration.functions.test_console import code_of, sign_in

STATES = ("failed", "pending", "ready")
"""The source states a retry meets; only `failed` is retried."""
Invoke = Callable[..., Any]


async def _source(db: Database, service_store: Any, org: UUID, state: str) -> UUID:
    """A source of `org` in `state`: registered (pending), then set failed or ready as the sweep or a run would."""
    registered = await register_upload(
        db, service_store, organization_id=org, data=f"# {state} {org}".encode(), filename=f"{state}.md"
    )
    if state != "pending":
        async with db.connection() as conn:
            await conn.execute(
                "UPDATE agent.knowledge_sources SET status = $2, pending_since = NULL,"
                " failure_reason = CASE WHEN $2 = 'failed' THEN 'x' END WHERE id = $1",
                registered.source_id,
                state,
            )
    return registered.source_id


async def _retry_events(db: Database, source_id: UUID) -> int:
    async with db.connection() as conn:
        return int(
            await conn.fetchval(
                "SELECT count(*) FROM agent.event_outbox WHERE name = $1 AND data->>'source_id' = $2",
                EVENT_RETRY,
                str(source_id),
            )
        )


async def _expect(db: Database, source_id: UUID, state: str, outcome: str) -> None:
    """What every face must leave: a failed source pending with one retry event; any other untouched."""
    after = await get_source(db, source_id)
    if state == "failed":
        assert outcome == "reset", outcome
        assert after.status == "pending" and await _retry_events(db, source_id) == 1
    else:
        assert outcome == "source_not_failed", (state, outcome)
        assert after.status == state and await _retry_events(db, source_id) == 0, "a refused retry changes nothing"


@pytest.mark.parametrize("state", STATES)
async def test_the_api_retries_only_a_failed_source(service: Service, factory: Factory, state: str) -> None:
    org = await factory.organization()
    source_id = await _source(service.db, service.services.object_store, org, state)
    answer = await service.http.post(
        f"/v1/knowledge/sources/{source_id}/retry", params={"organization_id": str(org)}, headers=service.auth
    )
    if answer.status_code == 202:
        body = answer.json()
        assert body["reset"] is True and body["status"] == "pending" and body["event_id"], body
        outcome = "reset"
    else:
        assert answer.status_code == 409, answer.text
        outcome = answer.json()["error"]["code"]
    await _expect(service.db, source_id, state, outcome)


@pytest.mark.parametrize("state", STATES)
async def test_the_console_retries_only_a_failed_source(service: Service, factory: Factory, state: str) -> None:
    org = await factory.organization()
    source_id = await _source(service.db, service.services.object_store, org, state)
    key = (await mint_key(service.db, organization_id=org, name="console")).secret
    _, console = await sign_in(service.http, key)
    assert console is not None
    answer = await console.post(f"/console/orgs/{org}/sources/{source_id}/retry")
    if answer.status_code == 303:
        outcome = "reset"
    else:
        assert answer.status_code == 409, answer.text
        outcome = code_of(answer)
    await _expect(service.db, source_id, state, outcome)


@pytest.fixture
def cli(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Invoke]:
    """`ac-context …` on the test database, with no Inngest server (a closed port): events wait in the outbox."""
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("AC_CONTEXT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("INNGEST_DEV", "1")
    monkeypatch.setenv("INNGEST_BASE_URL", "http://127.0.0.1:9")
    monkeypatch.delenv("AC_CONTEXT_DEBUG", raising=False)

    def invoke(*args: str) -> Any:
        get_settings.cache_clear()
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(CliRunner().invoke, cli_app, list(args)).result()

    yield invoke
    get_settings.cache_clear()


@pytest.mark.parametrize("state", STATES)
async def test_the_cli_retries_only_a_failed_source(
    cli: Invoke, db: Database, factory: Factory, tmp_path: Path, state: str
) -> None:
    from knowledge.documents.objects import LocalObjectStore

    org = await factory.organization()
    source_id = await _source(db, LocalObjectStore(tmp_path / "data" / "objects"), org, state)
    result = cli("sources", "retry", str(source_id), "--send-event", "--json")
    if result.exit_code == EXIT_QUEUED:
        assert json.loads(result.stdout)["status"] == "pending (event queued)", result.output
        outcome = "reset"
    else:
        assert result.exit_code == 1, result.output
        found = re.search(r"error: ([a-z_]+):", result.output)
        assert found is not None, result.output
        outcome = found.group(1)
    await _expect(db, source_id, state, outcome)
