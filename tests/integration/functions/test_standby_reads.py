"""Reads on a real hot standby (issue 35): a standby made by `pg_basebackup` from the test server, streaming.

Briefs and searches are served by the standby and writes by the primary; a memory remembered is in the next
brief every time, the standby delayed; a standby stopped mid-brief, one lagging past the bound, one cancelling
a query on a recovery conflict and one promoted each leave a complete brief from the primary and a counted
fallback; a consistency token from another service instance is honoured. One standby serves the module (a
base backup costs seconds); each test sets its replay delay and conflict delay and puts them back.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

import asyncpg
import httpx
import pytest

from context.models import ContextPolicy, ContextSourceSpec
from functions.app import create_app
from functions.inngest.context_segment import FUNCTION_ID as SEGMENT
from functions.inngest.context_segment import RETRIES
from state.db import Database
from state.replicas import ReadRouter
from state.settings import load_settings
from state.standby import standby_status, standby_url, start_standby, stop_standby
from tests.factories import Factory
from tests.integration.functions.conftest import TOKEN, Service, fake_embedders
from tests.integration.functions.executor import InngestExecutor
from tests.integration.functions.support import RecordingInngest, asgi_client, new_signing_key
from tests.integration.memory.helpers import raw_memory
from tests.support import HANG_S, READ_S, embedded_test_dir, free_port, wait_until_answering

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("DATABASE_URL")), reason="the standby is made of the embedded server"
)

PREFERENCE = "preference.language"
SERVE = [sys.executable, "-c", "from functions.cli import main; main()", "serve"]


def _segment(org: UUID, user: UUID, agent: UUID, run: UUID, token: str) -> dict[str, Any]:
    """A `context/segment.brief.requested` event of the person's run, reading their preferences."""
    policy = ContextPolicy(
        sources=[ContextSourceSpec(name="personal_memory", required=True, token_budget=400)], total_token_budget=800
    )
    subject = {"organization_id": str(org), "user_id": str(user), "definition_id": str(agent)}
    return {
        "name": "context/segment.brief.requested",
        "data": {
            "run_id": str(run), "segment": 0, "waited": False, "consistency_token": token,
            "request": {"subject": subject, "query": "language", "entities": [], "run_id": str(run)},
            "policy": policy.model_dump(mode="json"),
        },
    }  # fmt: skip


@pytest.fixture(scope="module")
def standby_dir(pg_server_url: str) -> Iterator[Path]:
    """A hot standby of the test server, for the module."""
    folder = embedded_test_dir()
    try:
        start_standby(pg_server_url, folder)
        yield folder
    finally:
        stop_standby(folder, mode="immediate")
        shutil.rmtree(folder, ignore_errors=True)


async def _standby_setting(folder: Path, **values: str) -> None:
    """Set standby settings now (ALTER SYSTEM and a reload on the standby)."""
    conn = await asyncpg.connect(standby_url(folder))
    try:
        for name, value in values.items():
            await conn.execute(f"ALTER SYSTEM SET {name} = '{value}'")
        await conn.execute("SELECT pg_reload_conf()")
        for name, value in values.items():
            while await conn.fetchval("SELECT current_setting($1)", name) not in {value, _unit(value)}:
                await asyncio.sleep(0.01)
    finally:
        await conn.close()


def _unit(value: str) -> str:
    return value.replace(" ", "")


@pytest.fixture
async def standby(standby_dir: Path, db: Database, db_url: str) -> AsyncIterator[ReadRouter]:
    """The test database's standby reads: the router, once the standby has the database."""
    if not standby_status(standby_dir).running:
        await asyncio.to_thread(start_standby, "", standby_dir)  # a test stopped it: start it again as it was
    name = urlsplit(db_url).path.lstrip("/")
    url = standby_url(standby_dir, name)
    await _until_connects(url)
    router = db.use_standbys([url], load_settings(read_recheck_s=0.05))
    try:
        yield router
    finally:
        await _standby_setting(standby_dir, recovery_min_apply_delay="0", max_standby_streaming_delay="30s")


async def _until_connects(url: str) -> None:
    """Wait until the standby has replayed the database's creation."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + HANG_S
    while True:
        try:
            conn = await asyncpg.connect(url)
        except (OSError, asyncpg.PostgresError):
            if loop.time() > deadline:
                raise
            await asyncio.sleep(0.05)
        else:
            await conn.close()
            return


async def _person(factory: Factory) -> tuple[UUID, UUID, UUID, list[UUID]]:
    tenant = await factory.tenant(users=1)
    agent = await factory.definition(tenant.id)
    runs = [await factory.run(tenant.id, definition_id=agent) for _ in range(25)]
    return tenant.id, tenant.user, agent, runs


async def _remember(service: Service, org: UUID, user: UUID, agent: UUID, run: UUID, text: str) -> Any:
    invocation = {"organization_id": str(org), "definition_id": str(agent), "user_id": str(user), "run_id": str(run)}
    arguments = {"attribute": PREFERENCE, "text": text, "scope": "user"}
    answer = await service.http.post(
        "/v1/memory/remember", headers=service.auth, json={"invocation": invocation, "arguments": arguments}
    )
    assert answer.status_code < 300, answer.text
    return answer


async def _brief(service: Service, org: UUID, user: UUID, headers: dict[str, str] | None = None) -> dict[str, Any]:
    body = {"organization_id": str(org), "user_id": str(user), "query": "What language?"}
    answer = await service.http.post("/v1/context/briefs", json=body, headers={**service.auth, **(headers or {})})
    assert answer.status_code == 200, answer.text
    brief: dict[str, Any] = answer.json()["brief"]
    return brief


async def test_briefs_searches_and_lists_are_served_by_the_standby_and_writes_by_the_primary(
    service: Service, standby: ReadRouter, factory: Factory
) -> None:
    org, user, agent, runs = await _person(factory)
    on = await service.db.on_standby(org, lambda: service.db.fetchval("SELECT pg_is_in_recovery()"))
    assert on is True, "a standby read's connection is the standby's"

    async def as_tenant() -> bool:
        async with service.db.tenant(org) as conn:
            return bool(await conn.fetchval("SELECT pg_is_in_recovery()"))

    assert await service.db.on_standby(org, as_tenant) is True, "a tenant session on the standby too"
    assert await service.db.fetchval("SELECT pg_is_in_recovery()") is False, "outside a standby read: the primary"

    host = standby.standbys[0].host()
    await _remember(service, org, user, agent, runs[0], "Answer in Basque")  # a write: the primary's (or it fails)
    before = standby.served[host]
    brief = await _brief(service, org, user)
    assert "Answer in Basque" in brief["text"] and brief["failed_sources"] == []
    assert standby.served[host] == before + 1, "the brief ran on the standby"
    search = await service.http.post(
        "/v1/knowledge/search", headers=service.auth, json={"organization_id": str(org), "query": "language"}
    )
    assert search.status_code == 200, search.text
    assert standby.served[host] == before + 2, "the search ran on the standby"
    listed = await service.http.get("/v1/knowledge/sources", headers=service.auth, params={"organization_id": str(org)})
    assert listed.status_code == 200, listed.text
    assert standby.served[host] == before + 3, "the list ran on the standby"
    assert sum(standby.fallbacks.values()) == 0, f"nothing fell back: {standby.fallbacks}"
    metrics = (await service.http.get("/metrics")).text
    assert f'ac_context_standby_reads_total{{standby="{host}"}}' in metrics
    ready = (await service.http.get("/readyz")).json()
    assert ready["standbys"][0]["state"] == "streaming" and ready["standbys"][0]["lag_bytes"] is not None


async def test_a_memory_remembered_is_in_the_next_brief_200_of_200_times_with_the_standby_delayed(
    service: Service, standby: ReadRouter, standby_dir: Path, factory: Factory
) -> None:
    org, user, agent, runs = await _person(factory)
    await _standby_setting(standby_dir, recovery_min_apply_delay="100ms")
    seen = 0
    for i in range(200):
        await _remember(service, org, user, agent, runs[i // 10], f"Answer in language {i}")
        brief = await _brief(service, org, user)
        seen += f"Answer in language {i}\n" in brief["text"] + "\n"
    assert seen == 200, f"the memory of the turn was in {seen} of 200 briefs"
    assert standby.served[standby.standbys[0].host()] > 0, "the standby served some briefs after waiting"


async def test_a_standby_stopped_mid_brief_leaves_a_complete_brief_from_the_primary(
    service: Service, standby: ReadRouter, standby_dir: Path, factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    org, user, agent, runs = await _person(factory)
    await _remember(service, org, user, agent, runs[0], "Answer in Welsh")
    await _brief(service, org, user)  # the standby's pool holds connections
    source = service.services.registry.find("personal_memory")
    assert source is not None
    read = source.retrieve
    stopped: list[str] = []

    async def stop_then_read(*args: Any) -> Any:
        if Database.serving_standby() is not None and not stopped:
            await asyncio.to_thread(stop_standby, standby_dir, mode="immediate")
            stopped.append("stopped")
        return await read(*args)

    monkeypatch.setattr(source, "retrieve", stop_then_read)
    brief = await _brief(service, org, user)
    assert stopped == ["stopped"], "the standby was stopped in the middle of the brief"
    assert "Answer in Welsh" in brief["text"] and brief["failed_sources"] == [], "a complete brief, from the primary"
    assert standby.fallbacks["standby_down"] >= 1, f"the fallback is counted: {standby.fallbacks}"
    metrics = (await service.http.get("/metrics")).text
    assert 'ac_context_standby_fallbacks_total{reason="standby_down"}' in metrics
    ready = await service.http.get("/readyz")
    assert ready.status_code == 200 and ready.json()["standbys"][0]["state"] == "down", "ready, the standby down"
    again = await _brief(service, org, user)
    assert "Answer in Welsh" in again["text"] and again["failed_sources"] == []
    await asyncio.to_thread(start_standby, "", standby_dir)  # for the next test


async def test_a_standby_lagging_past_the_bound_serves_no_brief(
    service: Service, standby: ReadRouter, standby_dir: Path, factory: Factory
) -> None:
    org, user, agent, _ = await _person(factory)
    standby.max_lag_s = 0.2
    await _standby_setting(standby_dir, recovery_min_apply_delay="1h")
    # Written by another process: nothing here knows of it, only the standby's lag can say it may be missing.
    await raw_memory(service.db, org=org, definition=agent, scope="user", user=user, attribute=PREFERENCE,
                     text="Answer in Breton")  # fmt: skip
    await asyncio.sleep(standby.max_lag_s * 2)  # past the bound (the sampler records the primary's position)
    brief = await _brief(service, org, user)
    assert "Answer in Breton" in brief["text"], "a standby past the bound serves nothing stale"
    assert standby.fallbacks["lagging"] >= 1, f"counted: {standby.fallbacks}"


async def test_a_query_cancelled_on_a_recovery_conflict_is_read_again_on_the_primary(
    service: Service, standby: ReadRouter, standby_dir: Path, factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    org, user, agent, runs = await _person(factory)
    await _remember(service, org, user, agent, runs[0], "Answer in Cornish")
    async with service.db.connection() as conn:
        await conn.execute("CREATE TABLE public.conflict_probe (x int); INSERT INTO public.conflict_probe VALUES (1)")
        await conn.execute("GRANT SELECT ON public.conflict_probe TO ac_tenant")
    await service.db.note_write(org)
    await _standby_setting(standby_dir, max_standby_streaming_delay="10ms")
    source = service.services.registry.find("personal_memory")
    assert source is not None
    read = source.retrieve

    async def locked_out(*args: Any) -> Any:
        if Database.serving_standby() is not None:

            async def lock_on_the_primary() -> None:
                await asyncio.sleep(0.5)  # the standby's query below is running by then
                primary = await asyncpg.connect(service.db.url)
                try:
                    async with primary.transaction():
                        await primary.execute("LOCK TABLE public.conflict_probe IN ACCESS EXCLUSIVE MODE")
                finally:
                    await primary.close()

            locker = asyncio.create_task(lock_on_the_primary())
            try:
                async with service.db.tenant(org) as conn:
                    await conn.fetchval("SELECT pg_sleep(120) FROM public.conflict_probe")
            finally:
                await locker
        return await read(*args)

    monkeypatch.setattr(source, "retrieve", locked_out)
    brief = await _brief(service, org, user)
    assert "Answer in Cornish" in brief["text"] and brief["failed_sources"] == [], "a complete brief, from the primary"
    assert standby.fallbacks["recovery_conflict"] == 1, f"counted as a recovery conflict: {standby.fallbacks}"


async def test_a_promoted_standby_is_no_standby_and_reads_run_on_the_primary(
    service: Service, factory: Factory
) -> None:
    # A promoted standby answers pg_is_in_recovery() false, as the primary does: the primary stands in for it.
    org, user, agent, runs = await _person(factory)
    router = service.db.use_standbys([service.db.url], load_settings())
    await _remember(service, org, user, agent, runs[0], "Answer in Manx")
    brief = await _brief(service, org, user)
    assert "Answer in Manx" in brief["text"] and brief["failed_sources"] == []
    assert router.fallbacks["promoted"] == 1 and not router.served, f"{router.fallbacks} {router.served}"
    ready = (await service.http.get("/readyz")).json()
    assert ready["standbys"][0]["state"] == "promoted"


async def test_a_consistency_token_from_another_instance_is_honoured(
    service: Service, standby: ReadRouter, standby_dir: Path, factory: Factory, db_url: str, tmp_path: Path
) -> None:
    org, user, agent, runs = await _person(factory)
    await _remember(service, org, user, agent, runs[0], "Answer in Gaelic")
    await _brief(service, org, user)  # replayed: the standby is caught up
    await _standby_setting(standby_dir, recovery_min_apply_delay="3s")
    written = await _remember(service, org, user, agent, runs[0], "Answer in Scots")
    token = written.headers["AC-Consistency-Token"]
    assert token.startswith("lsn:")

    # Another instance of the service: its own pools and router, which never saw the write.
    settings = load_settings(
        api_token=TOKEN, data_dir=tmp_path / "other", read_database_urls=standby.standbys[0].url,
        read_your_writes_wait_ms=60_000, read_max_lag_ms=3_600_000,
    )  # fmt: skip
    other_db = await Database.open(settings, url=db_url, migrate=False)
    key = new_signing_key()
    client = RecordingInngest(app_id="ac-context", is_production=True, signing_key=key)
    other = create_app(settings, db=other_db, inngest_client=client, embedders=fake_embedders())
    try:
        async with other.router.lifespan_context(other), asgi_client(other) as http:
            peer = Service(other, http, client, InngestExecutor(http, signing_key=key), other_db, key)
            stale = await _brief(peer, org, user)
            fresh = await _brief(peer, org, user, headers={"AC-Consistency-Token": token})
            # The next turn's write, and its segment brief on the other instance with the token its event carries.
            again = await _remember(service, org, user, agent, runs[0], "Answer in Irish")
            event = _segment(org, user, agent, runs[0], again.headers["AC-Consistency-Token"])
            segment = await peer.executor.run(SEGMENT, event, retries=RETRIES)
            bad = await http.post(
                "/v1/context/briefs", headers={**service.auth, "AC-Consistency-Token": "yesterday"},
                json={"organization_id": str(org), "user_id": str(user), "query": "q"},
            )  # fmt: skip
    finally:
        await other_db.close()
    assert "Answer in Scots" not in stale["text"], "without the token the delayed standby has not got it yet"
    assert "Answer in Scots" in fresh["text"], "with the token the read waits for the write"
    assert segment.status == "completed", segment.output
    assert "Answer in Irish" in segment.output["brief"]["text"], "the segment event's token is honoured too"
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_consistency_token"


async def test_a_consistency_token_is_honoured_by_another_serve_process(
    service: Service, standby: ReadRouter, standby_dir: Path, factory: Factory, db_url: str, tmp_path: Path
) -> None:
    org, user, agent, runs = await _person(factory)
    await _remember(service, org, user, agent, runs[0], "Answer in Latin")
    await _brief(service, org, user)  # replayed: the standby is caught up
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AC_CONTEXT_", "INNGEST_"))}
    env.update({
        "HOME": str(tmp_path), "AC_CONTEXT_DATA_DIR": str(tmp_path / "serve"), "AC_CONTEXT_ALLOW_TEST_MODELS": "1",
        "AC_CONTEXT_API_TOKEN": TOKEN, "AC_CONTEXT_RUN_FUNCTIONS": "in-process", "INNGEST_DEV": "1",
        "INNGEST_BASE_URL": "http://127.0.0.1:9", "DATABASE_URL": db_url,
        "AC_CONTEXT_READ_DATABASE_URLS": standby.standbys[0].url, "AC_CONTEXT_READ_YOUR_WRITES_WAIT_MS": "60000",
        "AC_CONTEXT_READ_MAX_LAG_MS": "3600000", "AC_CONTEXT_SOURCE_TIMEOUT_S": "300",
    })  # fmt: skip
    log = tmp_path / "serve.out"
    with log.open("wb") as out:
        other = subprocess.Popen([*SERVE, "--port", str(port)], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        await asyncio.to_thread(wait_until_answering, other, f"{base}/readyz", exited=log.read_text)
        await _standby_setting(standby_dir, recovery_min_apply_delay="3s")
        token = (await _remember(service, org, user, agent, runs[0], "Answer in Greek")).headers["AC-Consistency-Token"]
        body = {"organization_id": str(org), "user_id": str(user), "query": "What language?"}
        async with httpx.AsyncClient(base_url=base, timeout=READ_S, headers=service.auth) as http:
            stale = await http.post("/v1/context/briefs", json=body)
            fresh = await http.post("/v1/context/briefs", json=body, headers={"AC-Consistency-Token": token})
            ready = (await http.get("/readyz")).json()
    finally:
        other.terminate()
        other.wait(timeout=60)
    assert stale.status_code == fresh.status_code == 200, log.read_text()
    assert "Answer in Greek" not in stale.json()["brief"]["text"], "the other process read the delayed standby"
    assert "Answer in Greek" in fresh.json()["brief"]["text"], "with the token it waited for the write"
    assert ready["standbys"][0]["state"] == "streaming"
