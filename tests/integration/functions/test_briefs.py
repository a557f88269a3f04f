"""Overload is explicit: past the per-process cap a brief answers 503 `overloaded` with Retry-After at once,
every brief that is built is complete, and /metrics counts the refusals, the degraded briefs and latency.

The refusal is decided at the edge from the headers: a brief whose body is still streaming in gets its 503
while the cap is full without a byte of it read, and 64 concurrent briefs over real connections to one
uvicorn serving the app with the shipped settings get only complete briefs and 503 envelopes."""

from __future__ import annotations

import asyncio
import socket
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI

from context.builder import DefaultContextBuilder
from context.models import ContextBrief, ContextPolicy, ContextRequest
from context.packer import ContextPacker
from context.sources import default_registry
from functions.app import create_app
from functions.cli._serve import BACKLOG, KEEP_ALIVE_S
from state.db import Database
from state.settings import load_settings
from tests.factories import Factory
from tests.integration.functions.conftest import TOKEN, fake_embedders
from tests.integration.functions.support import RecordingInngest, asgi_client, new_signing_key
from tests.support import HANG_S, READ_S, eventually

CAP = 8
CALLERS = 50


async def _now(value: int | bool) -> int | bool:
    """`value` as an awaitable, for `eventually` to poll an attribute."""
    return value


class HoldingBuilder:
    """The real builder, holding each build until every caller past the cap has had its answer."""

    def __init__(self, inner: DefaultContextBuilder, *, hold_s: float = HANG_S) -> None:
        self.inner = inner
        self.release = asyncio.Event()
        self.started = 0
        self.hold_s = hold_s

    async def build(self, request: ContextRequest, policy: ContextPolicy) -> ContextBrief:
        self.started += 1
        async with asyncio.timeout(self.hold_s):
            await self.release.wait()
        return await self.inner.build(request, policy)


def _holding_app(db: Database, tmp_path: Path, *, cap: int) -> tuple[FastAPI, HoldingBuilder]:
    """The service with the real sources behind a builder that holds every build until released."""
    embedders = fake_embedders()
    registry = default_registry(db, embedders=embedders.get)
    holding = HoldingBuilder(DefaultContextBuilder(registry, ContextPacker(), source_timeout_s=HANG_S))
    settings = load_settings(api_token=TOKEN, data_dir=tmp_path, max_concurrent_briefs=cap)
    client = RecordingInngest(app_id="ac-context", is_production=True, signing_key=new_signing_key())
    app = create_app(settings, db=db, inngest_client=client, registry=registry, builder=holding, embedders=embedders)
    return app, holding


async def test_fifty_concurrent_briefs_over_a_cap_of_eight_give_complete_briefs_and_fast_503s(
    db: Database, tmp_path: Path, factory: Factory, fake_live_model: str
) -> None:
    org = await factory.organization()
    embedders = fake_embedders()
    registry = default_registry(db, embedders=embedders.get)
    holding = HoldingBuilder(DefaultContextBuilder(registry, ContextPacker(), source_timeout_s=HANG_S))
    settings = load_settings(api_token=TOKEN, data_dir=tmp_path, max_concurrent_briefs=CAP)
    client = RecordingInngest(app_id="ac-context", is_production=True, signing_key=new_signing_key())
    app = create_app(settings, db=db, inngest_client=client, registry=registry, builder=holding, embedders=embedders)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    body = {"organization_id": str(org), "query": "What did we agree on pricing?"}
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        refused: list[Any] = []

        async def call() -> Any:
            response = await http.post("/v1/context/briefs", json=body, headers=auth)
            if response.status_code == 503:
                refused.append(response)
                if len(refused) == CALLERS - CAP:
                    holding.release.set()
            return response

        answers = await asyncio.gather(*(call() for _ in range(CALLERS)))
        metrics = (await http.get("/metrics")).text

    built = [a for a in answers if a.status_code == 200]
    assert len(built) == CAP and holding.started == CAP, "only the cap's worth of builds ever started"
    assert all(a.json()["brief"]["failed_sources"] == [] for a in built), "a built brief has every source"
    assert len(refused) == CALLERS - CAP
    for answer in refused:
        assert answer.json()["error"]["code"] == "overloaded"
        assert answer.headers["retry-after"] == str(settings.overload_retry_after_s)
    assert f"ac_context_briefs_overloaded_total {float(CALLERS - CAP)}" in metrics
    assert (
        'ac_context_http_request_seconds_count{method="POST",route="/v1/context/briefs",status="5xx"} 42.0' in metrics
    )
    assert 'ac_context_http_request_seconds_count{method="POST",route="/v1/context/briefs",status="2xx"} 8.0' in metrics


async def test_a_degraded_brief_is_counted_by_the_source_that_failed(
    db: Database, tmp_path: Path, factory: Factory, fake_live_model: str
) -> None:
    from tests.integration.functions.support import ScriptedConversation

    org = await factory.organization()
    broken = ScriptedConversation(fail_next=1)
    embedders = fake_embedders()
    sources = [s for s in default_registry(db, embedders=embedders.get) if s.name != "conversation"]
    from context.registry import ContextSourceRegistry

    registry = ContextSourceRegistry([*sources, broken])
    settings = load_settings(api_token=TOKEN, data_dir=tmp_path)
    client = RecordingInngest(app_id="ac-context", is_production=True, signing_key=new_signing_key())
    app = create_app(settings, db=db, inngest_client=client, registry=registry, embedders=embedders)
    # The front door requires its conversation (issue 14); a caller policy where it is optional degrades instead.
    from context.policies import FRONT_DOOR

    optional = FRONT_DOOR.model_copy(
        update={"sources": [s.model_copy(update={"required": False}) for s in FRONT_DOOR.sources]}
    )
    body = {"organization_id": str(org), "policy": optional.model_dump(mode="json")}
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        first = await http.post("/v1/context/briefs", json=body, headers=auth)
        second = await http.post("/v1/context/briefs", json=body, headers=auth)
        metrics = (await http.get("/metrics")).text
    assert first.json()["brief"]["failed_sources"] == ["conversation"]
    assert second.json()["brief"]["failed_sources"] == []
    assert 'ac_context_briefs_degraded_total{source="conversation"} 1.0' in metrics


async def test_a_segment_build_past_the_cap_asks_inngest_to_retry_after_the_cap_delay() -> None:
    import json

    from functions._briefs import LimitedBuilder
    from functions.inngest.context_segment import FUNCTION_ID, make_context_segment_brief
    from tests.integration.functions.executor import InngestExecutor
    from tests.integration.functions.support import (
        CountingBuilder,
        ScriptedConversation,
        conversation_policy,
        production_client,
        segment_event,
        serve_functions,
    )

    inner = CountingBuilder(ScriptedConversation())
    limited = LimitedBuilder(inner, max_concurrent=1, retry_after_s=7)
    limited.slots.active = 1  # one build of this process is running
    key = new_signing_key()
    client = production_client(key)
    app = serve_functions(client, [make_context_segment_brief(client, builder=lambda: limited)])
    event = json.loads(
        json.dumps({"data": {}, "id": "", "ts": 0, **segment_event(0, waited=False, policy=conversation_policy())})
    )
    async with asgi_client(app) as http:
        executor = InngestExecutor(http, signing_key=key)
        before = datetime.now(UTC)
        response = await executor.post(FUNCTION_ID, executor.body(event, {}, [], run_id="r", attempt=0, max_attempts=4))
        after = datetime.now(UTC)
    assert inner.calls == 0
    assert response.status_code == 500 and response.json()["code"] == "retry_after_error"
    assert "building 1 briefs already" in response.json()["message"]
    assert response.headers.get("x-inngest-no-retry") != "true"
    retry_at = datetime.fromisoformat(response.headers["retry-after"].replace("Z", "+00:00"))
    # 7 s after the answer was made, however long that took (the header keeps milliseconds, cut).
    assert before + timedelta(seconds=6.999) <= retry_at <= after + timedelta(seconds=7), (before, retry_at, after)


async def test_a_brief_whose_body_is_still_streaming_gets_its_503_at_once_while_the_cap_is_full(
    db: Database, tmp_path: Path, factory: Factory, fake_live_model: str
) -> None:
    org = await factory.organization()
    app, holding = _holding_app(db, tmp_path, cap=1)
    auth = {"Authorization": f"Bearer {TOKEN}", "content-type": "application/json"}
    body = {"organization_id": str(org), "query": "What did we agree on pricing?"}
    chunks_read = 0
    never = asyncio.Event()

    async def held_open() -> Any:
        nonlocal chunks_read
        await never.wait()  # the body never comes while the test runs
        chunks_read += 1
        yield b"{}"

    async with app.router.lifespan_context(app), asgi_client(app) as http:
        slots = app.state.slot.get().builder.slots
        first = asyncio.create_task(http.post("/v1/context/briefs", json=body, headers=auth))
        await eventually(lambda: _now(holding.started), "the first build holding its slot", every=0.01)
        async with asyncio.timeout(HANG_S):  # without admission at the edge it would wait for the body forever
            refused = await http.post("/v1/context/briefs", content=held_open(), headers=auth)
        holding.release.set()
        built = await first
        bad = await http.post("/v1/context/briefs", json={"organization_id": "nope"}, headers=auth)
        again = await http.post("/v1/context/briefs", json=body, headers=auth)
        metrics = (await http.get("/metrics")).text
        idle = slots.active
    assert refused.status_code == 503 and refused.json()["error"]["code"] == "overloaded", refused.text
    assert refused.headers["retry-after"] == "1"
    assert chunks_read == 0, "the refused body was never read"
    assert built.status_code == 200 and built.json()["brief"]["failed_sources"] == [], "the admitted build ran"
    assert bad.status_code == 422 and again.status_code == 200, "a refused body gives its slot back"
    assert holding.started == 2 and idle == 0
    assert "ac_context_briefs_overloaded_total 1.0" in metrics


async def test_64_concurrent_briefs_over_real_connections_get_only_complete_briefs_and_503_envelopes(
    db: Database, tmp_path: Path, factory: Factory, fake_live_model: str
) -> None:
    org = await factory.organization()
    callers, cap = 64, 8
    app, holding = _holding_app(db, tmp_path, cap=cap)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, lifespan="off", log_level="warning",
        timeout_keep_alive=KEEP_ALIVE_S, backlog=BACKLOG,
    )  # fmt: skip
    server = uvicorn.Server(config)
    body = {"organization_id": str(org), "query": "What did we agree on pricing?"}
    auth = {"Authorization": f"Bearer {TOKEN}"}
    refused: list[httpx.Response] = []
    limits = httpx.Limits(max_connections=callers, max_keepalive_connections=callers)
    async with app.router.lifespan_context(app):
        serving = asyncio.create_task(server.serve())
        await eventually(lambda: _now(server.started), "uvicorn starting", every=0.01)
        try:  # a held build is released once every refusal is in; the client waits longer than a hold
            timeout = httpx.Timeout(READ_S, read=2 * HANG_S)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", limits=limits, timeout=timeout) as http:

                async def call() -> httpx.Response | Exception:
                    try:
                        response = await http.post("/v1/context/briefs", json=body, headers=auth)
                    except httpx.HTTPError as exc:  # a connection closed without an answer
                        return exc
                    if response.status_code == 503:
                        refused.append(response)
                        if len(refused) == callers - cap:
                            holding.release.set()
                    return response

                answers = await asyncio.gather(*(call() for _ in range(callers)))
        finally:
            server.should_exit = True
            await serving
    dropped = [a for a in answers if isinstance(a, Exception)]
    assert not dropped, dropped
    replies = [a for a in answers if isinstance(a, httpx.Response)]
    built = [a for a in replies if a.status_code == 200]
    assert len(built) == cap and holding.started == cap, [a.status_code for a in replies]
    assert all(a.json()["brief"]["failed_sources"] == [] for a in built), "every brief built is complete"
    assert len(refused) == callers - cap
    for answer in refused:
        assert answer.json()["error"]["code"] == "overloaded" and answer.headers["retry-after"] == "1"


async def test_a_full_process_sheds_a_brief_before_its_api_key_is_looked_up(
    db: Database, tmp_path: Path, factory: Factory, fake_live_model: str
) -> None:
    org = await factory.organization()
    app, holding = _holding_app(db, tmp_path, cap=1)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    unknown_key = {"Authorization": f"Bearer ack_{'0' * 16}_{'x' * 43}"}  # well formed, in no table
    body = {"organization_id": str(org), "query": "What did we agree on pricing?"}
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        first = asyncio.create_task(http.post("/v1/context/briefs", json=body, headers=auth))
        await eventually(lambda: _now(holding.started), "the first build holding its slot", every=0.01)
        shed = await http.post("/v1/context/briefs", json=body, headers=unknown_key)
        holding.release.set()
        assert (await first).status_code == 200
        looked_up = await http.post("/v1/context/briefs", json=body, headers=unknown_key)
    # Shedding first means a full worker asks its database nothing, whoever calls.
    assert shed.status_code == 503 and shed.json()["error"]["code"] == "overloaded", shed.text
    assert looked_up.status_code == 401 and looked_up.json()["error"]["code"] == "auth_invalid", looked_up.text
