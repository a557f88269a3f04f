"""One signature per request, over real HTTP: a uvicorn server on a loopback port serving the production app
with a real signing key, and raw HTTP/1.1 written to its socket so every header line goes out as written
(repeated, in odd casings, with tabs or a non-ASCII byte).

Every shape of `tests.signature_shapes` goes to every Inngest function the app serves (and its failure
handler), to the sync (PUT) and to the inspection (GET): each answers 401 `inngest_signature_refused` in the
envelope, and a POST says `Expect: 100-continue`, so the server asks for the body only if something reads
it: no refused request ever does. A fresh signature in one header still runs the segment brief to its end,
still syncs, and still inspects.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from inngest._internal import net, server_lib

from functions._services import ServiceSlot
from functions.app import create_app
from functions.inngest.catalog import build_functions
from functions.inngest.context_segment import FUNCTION_ID as SEGMENT
from functions.inngest.knowledge_sweep import CRON
from functions.inngest.knowledge_sweep import FUNCTION_ID as SWEEP
from knowledge.documents.objects import LocalObjectStore
from state.db import Database
from state.settings import load_settings
from tests.integration.functions.conftest import TOKEN, fake_embedders
from tests.integration.functions.executor import APP_ID, InngestExecutor
from tests.integration.functions.support import (
    CountingBuilder,
    RecordingInngest,
    ScriptedConversation,
    conversation_policy,
    new_signing_key,
    segment_event,
)
from tests.integration.functions.test_inngest_endpoint import FakeInngestApi
from tests.signature_shapes import SIG, Shape, fresh_signature, method_shapes, value_and_header_shapes
from tests.support import READ_S, eventually

STEP_KEY = "step-key-for-the-signature-tests-0123456789"
NAMED = {
    "knowledge-ingest",
    "knowledge-ingest-batch",
    "knowledge-sweep-pending",
    "knowledge-model-switch",
    "knowledge-reembed-source",
    "context-segment-brief",
    "memory-expiry-sweep",
}
UNSIGNED = Shape("no signature header", (), False)


@dataclass
class Answer:
    """One HTTP answer, and whether the server asked for the request body before giving it."""

    status: int
    headers: dict[str, str]
    body: bytes
    body_asked: bool

    def code(self) -> str | None:
        try:
            return str(json.loads(self.body)["error"]["code"])
        except (ValueError, KeyError, TypeError):
            return None


async def _head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=60)
    lines = raw.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
    return int(lines[0].split(" ")[1]), headers


async def send(port: int, method: str, target: str, lines: tuple[tuple[bytes, bytes], ...], body: bytes) -> Answer:
    """Write one request byte for byte; a body is sent only when the server asks for it (100 Continue)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        head = [f"{method} {target} HTTP/1.1".encode(), b"host: 127.0.0.1", b"connection: close"]
        head += [b"content-type: application/json", f"content-length: {len(body)}".encode()]
        if body:
            head.append(b"expect: 100-continue")
        head += [name + b": " + value for name, value in lines]
        writer.write(b"\r\n".join(head) + b"\r\n\r\n")
        await writer.drain()
        status, headers = await _head(reader)
        asked = status == 100
        if asked:
            writer.write(body)
            await writer.drain()
            status, headers = await _head(reader)
        length = int(headers.get("content-length", "0"))
        content = b"" if method == "HEAD" else await asyncio.wait_for(reader.readexactly(length), timeout=60)
        return Answer(status, headers, content, asked)
    finally:
        writer.close()


@dataclass
class Live:
    """The production app under a real uvicorn, and what a test checks behind it."""

    port: int
    key: str
    builder: CountingBuilder
    inngest: RecordingInngest
    api: FakeInngestApi
    targets: dict[str, str]
    """Every function id the app serves (failure handlers too) to its fully qualified id."""


@pytest.fixture
async def live(db: Database, tmp_path: Path) -> AsyncIterator[Live]:
    api = FakeInngestApi()
    api.server = await asyncio.start_server(api.handle, "127.0.0.1", 0)
    key = new_signing_key()
    builder = CountingBuilder(ScriptedConversation())
    client = RecordingInngest(app_id=APP_ID, is_production=True, signing_key=key, api_base_url=api.origin)
    settings = load_settings(
        api_token=TOKEN,
        data_dir=tmp_path,
        inngest_serve_origin="https://ctx.example.com",
        step_encryption_keys=STEP_KEY,
    )
    app = create_app(
        settings,
        db=db,
        inngest_client=client,
        builder=builder,
        object_store=LocalObjectStore(tmp_path / "objects"),
        embedders=fake_embedders(),
    )
    targets: dict[str, str] = {}
    for fn in build_functions(client, ServiceSlot()):
        targets[fn.local_id] = fn.id
        if fn.on_failure_fn_id is not None:
            targets[f"{fn.local_id}-failure"] = fn.on_failure_fn_id
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
    task = asyncio.create_task(server.serve())
    try:

        async def up() -> bool:
            return server.started or task.done()

        await eventually(up, "uvicorn starting")
        assert server.started, "uvicorn did not start"
        port = int(server.servers[0].sockets[0].getsockname()[1])
        yield Live(port, key, builder, client, api, targets)
    finally:
        server.should_exit = True
        await task
        api.server.close()
        await api.server.wait_closed()


def _event(local_id: str) -> dict[str, Any]:
    if local_id == SEGMENT:
        return segment_event(0, waited=False, policy=conversation_policy())
    if local_id == SWEEP:
        return {"name": "inngest/scheduled.timer", "data": {"cron": CRON}}
    return {"name": "test/event", "data": {}}


def _post_body(local_id: str) -> bytes:
    event = {"id": "", "ts": 0, **_event(local_id)}
    return json.dumps(InngestExecutor.body(event, {}, [], run_id="run-1", attempt=0, max_attempts=4)).encode()


def _verified_by_the_sdk(answer: Answer, key: str) -> bool:
    """The SDK signs its answer only when it verified the request's signature with `key`."""
    checked = net.validate_response_sig(
        body=answer.body, headers=answer.headers, mode=server_lib.ServerKind.CLOUD, signing_key=key
    )
    return not isinstance(checked, Exception)


async def test_every_signature_shape_is_refused_by_every_function_by_sync_and_by_inspection(live: Live) -> None:
    assert set(live.targets) >= NAMED, "the app serves every function the issue names"
    now = round(time.time())
    refused: list[str] = []
    for local_id, full_id in live.targets.items():
        body = _post_body(local_id)
        target = f"/api/inngest?fnId={full_id}&stepId=step"
        for shape in [*value_and_header_shapes(body, live.key, now=now), UNSIGNED]:
            answer = await send(live.port, "POST", target, shape.headers, body)
            where = f"POST {local_id}: {shape.label}"
            assert (answer.status, answer.code()) == (401, "inngest_signature_refused"), where
            assert not answer.body_asked, f"{where}: the body was read before the refusal"
            refused.append(where)
    for method in ("PUT", "GET"):
        for shape in [*value_and_header_shapes(b"", live.key, now=now), UNSIGNED]:
            answer = await send(live.port, method, "/api/inngest", shape.headers, b"")
            assert (answer.status, answer.code()) == (401, "inngest_signature_refused"), f"{method}: {shape.label}"
            refused.append(f"{method}: {shape.label}")
    assert live.builder.calls == 0, "no refused request reached a function"
    assert live.inngest.sent == [], "no refused request sent an event"
    assert live.api.requests == [], "no refused sync registered anything"
    assert len(refused) == (len(live.targets) + 2) * (len(value_and_header_shapes(b"", live.key, now=now)) + 1)


async def test_a_signature_on_a_method_the_endpoint_does_not_serve_is_refused(live: Live) -> None:
    for method, shape in method_shapes(b"", live.key, now=round(time.time())):
        signed = await send(live.port, method, "/api/inngest", shape.headers, b"")
        assert signed.status == 401, method
        if method != "HEAD":
            assert signed.code() == "inngest_signature_refused", method
        unsigned = await send(live.port, method, "/api/inngest", (), b"")
        assert unsigned.status == 405, f"an unsigned {method} is the router's answer"


async def test_one_fresh_signature_still_runs_every_function_syncs_and_inspects(live: Live) -> None:
    for local_id, full_id in live.targets.items():
        body = _post_body(local_id)
        fresh = fresh_signature(body, live.key, now=round(time.time())).encode()
        answer = await send(live.port, "POST", f"/api/inngest?fnId={full_id}&stepId=step", ((SIG, fresh),), body)
        assert answer.status != 401 and answer.body_asked, local_id
        assert _verified_by_the_sdk(answer, live.key), f"{local_id}: the SDK verified the one signature"
    assert live.builder.calls == 1, "the segment's single signed request built its brief"

    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{live.port}", timeout=READ_S) as http:
        executor = InngestExecutor(http, signing_key=live.key)
        segment = await executor.run(SEGMENT, segment_event(0, waited=False, policy=conversation_policy()))
        sweep = await executor.run(SWEEP, {"name": "inngest/scheduled.timer", "data": {"cron": CRON}}, retries=2)
    assert segment.status == "completed" and live.builder.calls == 2
    assert sweep.status == "completed"

    sync = fresh_signature(b"", live.key, now=round(time.time())).encode()
    put = await send(live.port, "PUT", "/api/inngest", ((SIG, sync), (b"x-inngest-server-kind", b"cloud")), b"")
    assert put.status == 200, put.body
    assert len(live.api.requests) == 1 and live.api.requests[0][0].startswith("POST /fn/register")
    get = await send(live.port, "GET", "/api/inngest", ((SIG, sync),), b"")
    assert get.status == 200 and json.loads(get.body)["authentication_succeeded"] is True
