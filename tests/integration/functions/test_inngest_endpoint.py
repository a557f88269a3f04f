"""The Inngest endpoint in production: replayed or undated signatures refused, syncs that cannot be
redirected, and step state that reaches the Inngest server encrypted and decrypts on replay."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import nacl.encoding
import nacl.hash
import nacl.secret
import pytest
from inngest._internal import net, transforms

from functions.app import create_app
from functions.inngest.context_segment import BUILD_STEP, FUNCTION_ID
from state.db import Database
from state.settings import load_settings
from tests.integration.functions.conftest import TOKEN
from tests.integration.functions.executor import InngestExecutor
from tests.integration.functions.support import (
    CountingBuilder,
    RecordingInngest,
    ScriptedConversation,
    asgi_client,
    conversation_policy,
    new_signing_key,
    segment_event,
)

SECRET_FACT = "Contoso's renewal hinges on the 48,000 EUR discount Maria promised."
KEY_OLD = "old-step-key-" + "a" * 40
KEY_NEW = "new-step-key-" + "b" * 40
FULL_ID = f"ac-context-{FUNCTION_ID}"


def _segment_body() -> bytes:
    event = json.loads(
        json.dumps({"data": {}, "id": "", "ts": 0, **segment_event(0, waited=False, policy=conversation_policy())})
    )
    body = InngestExecutor.body(event, {}, [], run_id="run-1", attempt=0, max_attempts=4)
    return json.dumps(body).encode()


def _undated_signature(raw: bytes, key: str) -> str:
    canonical = transforms.canonicalize(raw)
    assert isinstance(canonical, bytes)
    mac = hmac.new(transforms.remove_signing_key_prefix(key).encode(), canonical, hashlib.sha256)
    return f"s={mac.hexdigest()}"


def _decrypt(value: Any, key: str) -> Any:
    digest = nacl.hash.generichash(key.encode(), digest_size=nacl.secret.SecretBox.KEY_SIZE)
    box = nacl.secret.SecretBox(digest, encoder=nacl.encoding.HexEncoder)
    assert isinstance(value, dict) and value.get("__ENCRYPTED__") is True, value
    return json.loads(box.decrypt(base64.b64decode(value["data"])))


def _app(db: Database, tmp_path: Path, key: str, builder: Any = None, **settings: Any) -> Any:
    client = RecordingInngest(app_id="ac-context", is_production=True, signing_key=key, **settings.pop("client", {}))
    return create_app(
        load_settings(api_token=TOKEN, data_dir=tmp_path, **settings), db=db, inngest_client=client, builder=builder
    )


# --- signature freshness --------------------------------------------------------------------------------


async def test_a_signature_too_old_from_the_future_or_without_timestamp_is_refused_and_a_fresh_one_runs(
    db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    key = new_signing_key()
    builder = CountingBuilder(ScriptedConversation(facts=[SECRET_FACT]))
    app = _app(db, tmp_path, key, builder)
    raw = _segment_body()
    now = round(time.time())
    month = 30 * 24 * 3600
    signatures = {
        "a month old": net.sign_request(raw, key, unix_ms=now - month),
        "six minutes old": net.sign_request(raw, key, unix_ms=now - 360),
        "a year ahead": net.sign_request(raw, key, unix_ms=now + 365 * 24 * 3600),
        "no timestamp": _undated_signature(raw, key),
    }
    params = {"fnId": FULL_ID, "stepId": "step"}
    headers = {"content-type": "application/json", "x-inngest-server-kind": "cloud"}
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        for label, signature in signatures.items():
            assert isinstance(signature, str)
            response = await http.post(
                "/api/inngest", params=params, content=raw, headers={**headers, "x-inngest-signature": signature}
            )
            assert response.status_code == 401, label
            assert response.json()["error"]["code"] == "inngest_signature_refused", label
        assert builder.calls == 0, "no refused request reached the function"
        assert not any(SECRET_FACT in r.getMessage() or "stage" in r.getMessage() for r in caplog.records)
        assert sum("refused an Inngest POST" in r.getMessage() for r in caplog.records) == len(signatures)

        fresh = net.sign_request(raw, key)
        assert isinstance(fresh, str)
        ok = await http.post(
            "/api/inngest", params=params, content=raw, headers={**headers, "x-inngest-signature": fresh}
        )
        assert ok.status_code in (200, 206) and builder.calls == 1
        forged = await http.post(
            "/api/inngest",
            params=params,
            content=raw,
            headers={**headers, "x-inngest-signature": fresh.replace("s=", "s=0")},
        )
        assert forged.status_code == 401, "the SDK's own HMAC check stays"


# --- sync -----------------------------------------------------------------------------------------------


class FakeInngestApi:
    """A local Inngest API that records every request it receives and answers `/fn/register` with 200."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.server: asyncio.Server | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        self.requests.append((lines[0], headers, body))
        answer = b'{"ok":true,"modified":true}'
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(answer))
        writer.write(answer)
        await writer.drain()
        writer.close()

    @property
    def origin(self) -> str:
        assert self.server is not None
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"


@pytest.fixture
async def inngest_api() -> AsyncIterator[FakeInngestApi]:
    api = FakeInngestApi()
    api.server = await asyncio.start_server(api.handle, "127.0.0.1", 0)
    try:
        yield api
    finally:
        api.server.close()
        await api.server.wait_closed()


async def test_an_unsigned_sync_with_a_foreign_host_registers_nothing_and_a_signed_one_only_the_serve_origin(
    db: Database, tmp_path: Path, inngest_api: FakeInngestApi
) -> None:
    key = new_signing_key()
    app = _app(
        db,
        tmp_path,
        key,
        inngest_serve_origin="https://ctx.example.com",
        client={"api_base_url": inngest_api.origin},
    )
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        unsigned = await http.put("/api/inngest", headers={"host": "attacker.example"})
        assert unsigned.status_code == 401
        assert inngest_api.requests == [], "an unsigned sync must not reach the Inngest API"

        signature = net.sign_request(b"", key)
        assert isinstance(signature, str)
        signed = await http.put(
            "/api/inngest",
            headers={"host": "attacker.example", "x-inngest-signature": signature, "x-inngest-server-kind": "cloud"},
        )
        assert signed.status_code == 200, signed.text
    assert len(inngest_api.requests) == 1
    line, _, body = inngest_api.requests[0]
    assert line.startswith("POST /fn/register")
    assert b"attacker.example" not in body
    registered = json.loads(body)
    assert registered["url"] == "https://ctx.example.com/api/inngest"
    assert {
        step["runtime"]["url"].split("?")[0] for fn in registered["functions"] for step in fn["steps"].values()
    } == {"https://ctx.example.com/api/inngest"}


# --- encrypted step state -------------------------------------------------------------------------------


async def test_the_segment_brief_reaches_the_inngest_server_encrypted_and_a_replay_decrypts_it(
    db: Database, tmp_path: Path
) -> None:
    key = new_signing_key()
    builder = CountingBuilder(ScriptedConversation(facts=[SECRET_FACT]))
    event = segment_event(0, waited=False, policy=conversation_policy())
    app = _app(db, tmp_path, key, builder, step_encryption_keys=KEY_OLD)
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        first = await InngestExecutor(http, signing_key=key).run(FUNCTION_ID, event)
    assert first.status == "completed" and builder.calls == 1
    seen_by_server = json.dumps([first.steps, first.output])
    assert "Contoso" not in seen_by_server and "48,000" not in seen_by_server
    assert SECRET_FACT in _decrypt(first.step_outputs[BUILD_STEP], KEY_OLD)["text"]
    assert SECRET_FACT in _decrypt(first.output, KEY_OLD)["brief"]["text"]

    # a new key in front, the old one kept: a replay of the old run state reuses the memoized brief
    rotated = _app(db, tmp_path, key, builder, step_encryption_keys=f"{KEY_NEW},{KEY_OLD}")
    async with rotated.router.lifespan_context(rotated), asgi_client(rotated) as http:
        replay = await InngestExecutor(http, signing_key=key).run(FUNCTION_ID, event, steps=first.steps)
    assert replay.status == "completed" and builder.calls == 1, "the replay reused the encrypted memo"
    assert SECRET_FACT in _decrypt(replay.output, KEY_NEW)["brief"]["text"]
    assert "Contoso" not in json.dumps(replay.output)
