"""A real hot standby against every write and every failure (issue 44): a person's erasure is never read back
from a standby whose replay is paused, by the process that erased or by a reader holding the erasure's
token; a standby stopped in the middle of a search or a list leaves a 200 from the primary; a standby
stopped and started under concurrent briefs, searches and lists costs no 5xx.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import asyncpg
import pytest

from functions.app import create_app
from state.db import Database
from state.replicas import ReadRouter, StandbyChoice
from state.settings import load_settings
from state.standby import standby_url, start_standby, stop_standby
from tests.factories import Factory
from tests.integration.functions import test_standby_reads as reads
from tests.integration.functions.conftest import TOKEN, Service, fake_embedders
from tests.integration.functions.executor import InngestExecutor
from tests.integration.functions.support import RecordingInngest, asgi_client, new_signing_key
from tests.integration.functions.test_standby_reads import _brief, _person, _remember

pytestmark = pytest.mark.skipif(
    bool(os.environ.get("DATABASE_URL")), reason="the standby is made of the embedded server"
)
standby_dir = reads.standby_dir  # the fixtures of a standby (one per module: a base backup costs seconds)
standby = reads.standby


async def _on_standby(standby_folder: Path, statement: str) -> None:
    conn = await asyncpg.connect(standby_url(standby_folder))
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


async def test_an_erased_person_is_never_read_back_from_a_paused_standby(
    service: Service, standby: ReadRouter, standby_dir: Path, factory: Factory, db_url: str, tmp_path: Path
) -> None:
    org, user, agent, runs = await _person(factory)
    await _remember(service, org, user, agent, runs[0], "Answer in Basque")
    assert "Answer in Basque" in (await _brief(service, org, user))["text"]  # replayed: the standby has it
    standby.max_lag_s = 3600.0  # only read-your-writes may keep a read off the paused standby, not its lag
    settings = load_settings(
        api_token=TOKEN, data_dir=tmp_path / "other", read_database_urls=standby.standbys[0].url,
        read_your_writes_wait_ms=300, read_max_lag_ms=3_600_000,
    )  # fmt: skip
    other_db = await Database.open(settings, url=db_url, migrate=False)
    key = new_signing_key()
    client = RecordingInngest(app_id="ac-context", is_production=True, signing_key=key)
    other = create_app(settings, db=other_db, inngest_client=client, embedders=fake_embedders())
    await _on_standby(standby_dir, "SELECT pg_wal_replay_pause()")
    try:
        body = {"organization_id": str(org), "user_id": str(user)}
        erased = await service.http.post("/v1/erasures/users", json=body, headers=service.auth)
        assert erased.status_code == 200 and erased.json()["status"] == "complete", erased.text
        token = erased.headers["AC-Consistency-Token"]
        timeouts = standby.fallbacks["read_your_writes_timeout"]
        mine = await _brief(service, org, user)
        async with other.router.lifespan_context(other), asgi_client(other) as http:
            peer = Service(other, http, client, InngestExecutor(http, signing_key=key), other_db, key)
            stale = await _brief(peer, org, user)  # no token: the paused standby still holds the memory
            held = await _brief(peer, org, user, headers={"AC-Consistency-Token": token})
    finally:
        await _on_standby(standby_dir, "SELECT pg_wal_replay_resume()")
        await other_db.close()
    assert "Answer in Basque" in stale["text"], "the standby was paused before the erasure: it still has the memory"
    assert "Answer in Basque" not in mine["text"], "the process that erased never reads it back"
    assert standby.fallbacks["read_your_writes_timeout"] == timeouts + 1, f"waited, then primary: {standby.fallbacks}"
    assert "Answer in Basque" not in held["text"], "a reader holding the erasure's token never reads it back"


async def _fail_once_chosen(router: ReadRouter, folder: Path, how: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Fail the standby right after the next read chose it: the read starts on it and meets it gone.

    `stopped`: the server stops (fast, as `ac-context db replica stop`); `pool closed`: its pool is closed
    under the read (the acquisition raises asyncpg's `InterfaceError`, none of the connection errors).
    """
    choose, failed = router.choose, []

    async def chosen_then_failed(organization_id: Any) -> StandbyChoice:
        choice = await choose(organization_id)
        if choice.standby is not None and not failed:
            if how == "stopped":
                await asyncio.to_thread(stop_standby, folder)
            else:
                assert choice.standby.pool is not None
                choice.standby.pool.terminate()
            failed.append(how)
        return choice

    monkeypatch.setattr(router, "choose", chosen_then_failed)
    return failed


@pytest.mark.parametrize("how", ["stopped", "pool closed"])
@pytest.mark.parametrize("read", ["search", "list"])
async def test_a_standby_failing_during_a_search_or_a_list_answers_200_from_the_primary(
    service: Service, standby: ReadRouter, standby_dir: Path, factory: Factory, monkeypatch: pytest.MonkeyPatch,
    read: str, how: str,
) -> None:  # fmt: skip
    org = await factory.organization()
    uploaded = await service.http.post(
        "/v1/knowledge/sources", headers=service.auth,
        files={"file": ("pricing.md", b"# Pricing\n\nThe pilot costs 48,000 EUR.")}, data={"organization_id": str(org)},
    )  # fmt: skip
    assert uploaded.status_code == 202, uploaded.text
    host = standby.standbys[0].host()

    async def ask() -> Any:
        if read == "search":
            body = {"organization_id": str(org), "query": "pilot"}
            return await service.http.post("/v1/knowledge/search", headers=service.auth, json=body)
        params = {"organization_id": str(org)}
        return await service.http.get("/v1/knowledge/sources", headers=service.auth, params=params)

    warm = await ask()  # the standby's pool holds a connection, and has the upload
    assert warm.status_code == 200 and standby.served[host] >= 1, (warm.text, standby.served, standby.fallbacks)
    served, fallbacks = standby.served[host], sum(standby.fallbacks.values())
    failed = await _fail_once_chosen(standby, standby_dir, how, monkeypatch)
    try:
        answer = await ask()
    finally:
        await asyncio.to_thread(start_standby, "", standby_dir)  # for the next test (a no-op when it runs)
    assert failed == [how], "the standby failed after the read chose it"
    assert answer.status_code == 200, answer.text
    assert answer.json() == warm.json(), "the same answer, from the primary"
    assert standby.served[host] == served, "not served by the standby"
    assert sum(standby.fallbacks.values()) == fallbacks + 1, f"one counted fallback: {standby.fallbacks}"


async def test_a_standby_stopped_and_started_under_load_costs_no_5xx(
    service: Service, standby: ReadRouter, standby_dir: Path, factory: Factory
) -> None:
    org, user, agent, runs = await _person(factory)
    await _remember(service, org, user, agent, runs[0], "Answer in Frisian")
    o = str(org)
    statuses: Counter[int] = Counter()
    failures: list[str] = []
    done = asyncio.Event()

    async def caller(n: int) -> None:
        while not done.is_set():
            kind = n % 3
            if kind == 0:
                body = {"organization_id": o, "user_id": str(user), "query": "What language?"}
                answer = await service.http.post("/v1/context/briefs", json=body, headers=service.auth)
            elif kind == 1:
                body = {"organization_id": o, "query": "language"}
                answer = await service.http.post("/v1/knowledge/search", json=body, headers=service.auth)
            else:
                answer = await service.http.get(
                    "/v1/knowledge/sources", headers=service.auth, params={"organization_id": o}
                )
            statuses[answer.status_code] += 1
            if answer.status_code >= 500:
                failures.append(answer.text)

    callers = [asyncio.create_task(caller(n)) for n in range(9)]
    try:
        await asyncio.sleep(1.0)
        await asyncio.to_thread(stop_standby, standby_dir)
        stopped_at = time.monotonic()
        await asyncio.sleep(0.5)
        await asyncio.to_thread(start_standby, "", standby_dir)
        await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - stopped_at)) + 1.0)
    finally:
        done.set()
        await asyncio.gather(*callers)
    assert not failures, f"{statuses}: {failures[:3]}"
    assert set(statuses) == {200}, statuses
    assert sum(standby.served.values()) > 0 and sum(standby.fallbacks.values()) > 0, (standby.served, standby.fallbacks)


async def test_a_failure_on_the_primary_is_never_retried_and_a_reads_own_error_is_its_answer(
    service: Service, standby: ReadRouter, factory: Factory
) -> None:
    org = await factory.organization()
    host = standby.standbys[0].host()
    ran: list[str | None] = []

    async def broken_everywhere() -> None:
        ran.append(Database.serving_standby())
        await service.db.fetchval("SELECT no_such_column FROM public.organizations")

    with pytest.raises(asyncpg.UndefinedColumnError):
        await service.db.on_standby(org, broken_everywhere)
    assert ran == [host, None], "once on the standby, once on the primary, never again"

    async def refuses() -> None:
        ran.append(Database.serving_standby())
        raise LookupError("no such thing")  # the read's own answer: the primary would answer the same

    ran.clear()
    with pytest.raises(LookupError):
        await service.db.on_standby(org, refuses)
    assert ran == [host], "a read's own error is not run again"
