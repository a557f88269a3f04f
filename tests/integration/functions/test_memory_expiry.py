"""Memory expiry through the interfaces (issue 22): `/v1/memory/remember` takes `expires_at` or `ttl` and
applies the deployment's namespace defaults, refusals name the field; `memory-expiry-sweep` runs hourly and
closes expired chains; `ac-context memory sweep` does the same once, and `remember --ttl` sets an expiry."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import inngest
import pytest
from typer.testing import CliRunner

from functions._services import ServiceSlot
from functions.app import create_app
from functions.cli import app as cli_app
from functions.inngest.catalog import build_functions
from functions.inngest.memory_expiry import CRON, FUNCTION_ID
from knowledge.documents.objects import LocalObjectStore
from state.db import Database
from state.settings import get_settings, load_settings
from tests.factories import Factory
from tests.integration.functions.conftest import TOKEN, Service, fake_embedders
from tests.integration.functions.executor import InngestExecutor
from tests.integration.functions.support import RecordingInngest, asgi_client, new_signing_key
from tests.integration.functions.support import error_code as code
from tests.integration.memory.helpers import raw_memory
from tests.support import cli_error_line
from tests.unit.functions.test_knowledge_sweep import is_hourly

CRON_EVENT = {"name": "inngest/scheduled.timer", "data": {"cron": CRON}}
Invoke = Callable[..., Any]


@pytest.fixture
async def weekly(db: Database, tmp_path: Path, fake_live_model: str) -> AsyncIterator[Service]:
    """The service with observations expiring after a week and preferences forbidden to expire."""
    key = new_signing_key()
    client = RecordingInngest(app_id="ac-context", is_production=True, signing_key=key)
    settings = load_settings(
        api_token=TOKEN, data_dir=tmp_path, memory_observation_ttl="P7D", memory_preference_may_expire=False
    )
    app = create_app(
        settings,
        db=db,
        inngest_client=client,
        object_store=LocalObjectStore(tmp_path / "o"),
        embedders=fake_embedders(),
    )
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        yield Service(app, http, client, InngestExecutor(http, signing_key=key), db, key)


async def _invocation(factory: Factory) -> dict[str, str]:
    tenant = await factory.tenant(users=1)
    definition = await factory.definition(tenant.id)
    run = await factory.run(tenant.id, definition_id=definition, user_id=tenant.user)
    return {
        "organization_id": str(tenant.id),
        "definition_id": str(definition),
        "run_id": str(run),
        "user_id": str(tenant.user),
    }


async def test_remember_over_http_takes_an_expiry_applies_the_settings_and_names_a_refused_field(
    weekly: Service, factory: Factory
) -> None:
    invocation = await _invocation(factory)

    async def remember(**arguments: object) -> Any:
        args = {"text": "Buys through a committee", "scope": "organization", **arguments}
        body = {"invocation": invocation, "arguments": args}
        return await weekly.http.post("/v1/memory/remember", json=body, headers=weekly.auth)

    before = datetime.now(UTC)
    default = await remember(attribute="observation.buying")
    assert default.status_code == 200, default.text
    expires = datetime.fromisoformat(default.json()["expires_at"])
    assert before + timedelta(days=7) <= expires <= datetime.now(UTC) + timedelta(days=7), "the settings' default"
    ttl = await remember(attribute="observation.budget", ttl="PT12H")
    assert ttl.status_code == 200 and ttl.json()["expires_at"] is not None
    kept = await remember(attribute="preference.tone")
    assert kept.status_code == 200 and kept.json()["expires_at"] is None

    refusals = [
        (remember(attribute="observation.a", expires_at="2001-01-01T00:00:00Z"), "memory_invalid_expiry", "expires_at"),
        (remember(attribute="preference.b", ttl="P30D"), "memory_invalid_expiry", "ttl"),
        (remember(attribute="observation.c", ttl="thirty days"), "invalid_input", "ttl"),
        (remember(attribute="observation.d", expires_at="2030-02-30T00:00:00Z"), "invalid_input", "expires_at"),
    ]
    for pending, wanted, field in refusals:
        answer = await pending
        assert (answer.status_code, code(answer)) == (422, wanted), answer.text
        assert [d["loc"] for d in answer.json()["error"]["details"]] == [[field]], answer.text

    openapi = (await weekly.http.get("/openapi.json", headers=weekly.auth)).json()
    described = json.dumps(openapi["components"]["schemas"]["RememberCallIn"])
    assert "expires_at" in described and "ttl" in described and "ISO 8601" in described


async def test_the_sweep_function_runs_hourly_and_closes_expired_chains(service: Service, factory: Factory) -> None:
    client = inngest.Inngest(app_id="ac-context", is_production=False)
    [fn] = [f for f in build_functions(client, ServiceSlot()) if f.id == f"ac-context-{FUNCTION_ID}"]
    [trigger] = fn.get_config("http://app.example/api/inngest").main.triggers
    assert isinstance(trigger, inngest.TriggerCron) and is_hourly(trigger.cron), trigger

    org = await factory.organization()
    definition = await factory.definition(org)
    expired = datetime.now(UTC) - timedelta(minutes=5)
    for n in range(3):
        await raw_memory(
            service.db, org=org, definition=definition, attribute=f"observation.n{n}",
            created_at=expired - timedelta(days=1), expires_at=expired,
        )  # fmt: skip
    await raw_memory(service.db, org=org, definition=definition, attribute="observation.kept")
    run = await service.executor.run(FUNCTION_ID, CRON_EVENT, retries=2)
    assert run.status == "completed" and run.output == {"tombstoned": 3}, run
    again = await service.executor.run(FUNCTION_ID, CRON_EVENT, retries=2)
    assert again.output == {"tombstoned": 0}


@pytest.fixture
def cli(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Invoke]:
    """Run `ac-context …` on the test database, in a thread (the command owns its event loop)."""
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("AC_CONTEXT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("AC_CONTEXT_DEBUG", raising=False)

    def invoke(*args: str, env: dict[str, str] | None = None) -> Any:
        get_settings.cache_clear()
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(CliRunner().invoke, cli_app, list(args), env=env).result()

    yield invoke
    get_settings.cache_clear()


def test_the_cli_remembers_with_a_ttl_refuses_a_past_expiry_in_one_line_and_sweeps(
    cli: Invoke, factory: Factory, db: Database, session_loop: asyncio.AbstractEventLoop
) -> None:
    async def world() -> tuple[UUID, UUID, list[str]]:
        org = await factory.organization()
        user = await factory.user(org)
        definition = await factory.definition(org)
        run = await factory.run(org, definition_id=definition, user_id=user, status="running")
        return (
            org,
            definition,
            ["--org", str(org), "--definition", str(definition), "--run", str(run), "--user", str(user)],
        )

    org, definition, who = session_loop.run_until_complete(world())
    remembered = cli("memory", "remember", "--attribute", "observation.x", "--text", "t", "--ttl", "P2D", *who)
    assert remembered.exit_code == 0 and ", expires " in remembered.stdout, remembered.output
    defaulted = cli(
        "memory", "remember", "--attribute", "observation.y", "--text", "t", *who, "--json",
        env={"AC_CONTEXT_MEMORY_OBSERVATION_TTL": "never"},
    )  # fmt: skip
    assert defaulted.exit_code == 0 and json.loads(defaulted.stdout)["expires_at"] is None, "the setting is read"
    line = cli_error_line(
        cli(
            "memory",
            "remember",
            "--attribute",
            "observation.z",
            "--text",
            "t",
            "--expires-at",
            "2001-01-01T00:00Z",
            *who,
        ),
        "memory_invalid_expiry",
        progress=re.compile("^$"),
    )
    assert "expires_at" in line and "in the past" in line

    expired = datetime.now(UTC) - timedelta(minutes=1)
    session_loop.run_until_complete(
        raw_memory(db, org=org, definition=definition, created_at=expired - timedelta(days=1), expires_at=expired)
    )
    swept = cli("memory", "sweep", "--json")
    assert swept.exit_code == 0 and json.loads(swept.stdout) == {"tombstoned": 1}, swept.output
    assert "closed 0 expired" in cli("memory", "sweep").stdout
