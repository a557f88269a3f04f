"""Two real `ac-context serve` processes on one database behind one Inngest (issue 35, item 5).

The Inngest server is a stand-in speaking its HTTP protocol (`POST /e/{key}` with the events, answering
their ids; `POST /fn/register` with each process's functions), because none can run here. Both processes'
outbox drainers race for the same rows: each event reaches the event API once. Both register the same
functions with the same per-organization concurrency keys; holding those keys is Inngest's work, which the
stand-in cannot do, so what is tested is that the two registrations declare identical keys. A segment brief
built on one process and replayed, with its memo, on the other is the memoized one: the other process
decrypts the memo with the same step encryption keys and builds nothing.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import nacl.encoding
import nacl.hash
import nacl.secret
import pytest

from context.models import ContextPolicy, ContextSourceSpec
from functions.inngest.context_segment import BUILD_STEP, RETRIES
from functions.inngest.context_segment import FUNCTION_ID as SEGMENT
from state import outbox
from state.db import Database
from state.outbox import OutboxEvent
from tests.factories import Factory
from tests.integration.functions.conftest import TOKEN
from tests.integration.functions.executor import InngestExecutor
from tests.support import HANG_S, free_port, wait_until_answering

ENTRY = [sys.executable, "-c", "from functions.cli import main; main()", "serve"]
EVENTS = 300
STEP_KEYS = "two-processes-step-key-" + "0123456789abcdef" * 3
"""The same step encryption keys in both processes: a memo one encrypts, the other decrypts."""
SEGMENT_BUILDS = 'ac_context_brief_tokens_count{route="segment"} '


class FakeInngest:
    """What the processes sent: each event id as often as it arrived, and each registration's functions."""

    def __init__(self) -> None:
        self.events: Counter[str] = Counter()
        self.registrations: list[dict[str, Any]] = []
        self.lock = threading.Lock()


def _handler(fake: FakeInngest) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:
            return

        def _answer(self, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._answer({})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
            with fake.lock:
                if self.path.startswith("/e/"):
                    events = body if isinstance(body, list) else [body]
                    fake.events.update(str(e["id"]) for e in events)
                    self._answer({"ids": [str(e["id"]) for e in events], "status": 200})
                    return
                if self.path.startswith("/fn/register"):
                    fake.registrations.append(body)
            self._answer({"ok": True, "modified": True})

        do_PUT = do_POST

    return Handler


@pytest.fixture
def fake_inngest() -> Iterator[tuple[FakeInngest, str]]:
    fake = FakeInngest()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _env(tmp_path: Path, db_url: str, inngest_url: str, name: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("AC_CONTEXT_", "INNGEST_"))}
    return {
        **keep,
        "HOME": str(tmp_path),
        "AC_CONTEXT_DATA_DIR": str(tmp_path / name),
        "AC_CONTEXT_ALLOW_TEST_MODELS": "1",
        "AC_CONTEXT_API_TOKEN": TOKEN,
        "AC_CONTEXT_RUN_FUNCTIONS": "inngest",
        "AC_CONTEXT_OUTBOX_POLL_INTERVAL_S": "0.05",
        "AC_CONTEXT_STEP_ENCRYPTION_KEYS": STEP_KEYS,
        "INNGEST_DEV": inngest_url,
        "INNGEST_BASE_URL": inngest_url,
        "DATABASE_URL": db_url,
    }


def _concurrency(registration: dict[str, Any]) -> dict[str, Any]:
    """Each function's slug and its concurrency settings, as one process registered them."""
    return {f["id"]: f.get("concurrency") for f in registration["functions"]}


@dataclass
class Processes:
    """Two running `ac-context serve` processes and the stand-in Inngest they talk to."""

    fake: FakeInngest
    ports: list[int]
    processes: list[subprocess.Popen[bytes]]
    logs: list[Path]

    def url(self, index: int) -> str:
        return f"http://127.0.0.1:{self.ports[index]}"


@pytest.fixture
async def two(db_url: str, tmp_path: Path, fake_inngest: tuple[FakeInngest, str]) -> AsyncIterator[Processes]:
    """Two service processes on one database, with the same step encryption keys, answering."""
    fake, inngest_url = fake_inngest
    ports = [free_port(), free_port()]
    logs = [tmp_path / "a.out", tmp_path / "b.out"]
    processes = []
    for name, port, log in zip("ab", ports, logs, strict=True):
        with log.open("wb") as out:
            processes.append(
                subprocess.Popen(
                    [*ENTRY, "--port", str(port)],
                    env=_env(tmp_path, db_url, inngest_url, name),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            )
    try:
        for process, port, log in zip(processes, ports, logs, strict=True):
            await asyncio.to_thread(
                wait_until_answering, process, f"http://127.0.0.1:{port}/readyz", exited=log.read_text
            )
        yield Processes(fake, ports, processes, logs)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=60)


async def test_two_service_processes_send_each_outbox_event_once_and_register_the_same_concurrency_keys(
    db: Database, factory: Factory, two: Processes
) -> None:
    fake, ports, processes, logs = two.fake, two.ports, two.processes, two.logs
    orgs = [await factory.organization() for _ in range(5)]
    ids: list[Any] = []
    for i in range(0, EVENTS, 30):  # in waves, while both drainers poll
        async with db.connection() as conn, conn.transaction():
            wave = [
                OutboxEvent("test/two.processes", {"n": n}, organization_id=orgs[n % len(orgs)])
                for n in range(i, i + 30)
            ]
            ids += await outbox.enqueue(conn, wave)
        await asyncio.sleep(0.02)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + HANG_S
    while len(fake.events) < EVENTS and loop.time() < deadline:
        for process, log in zip(processes, logs, strict=True):
            assert process.poll() is None, log.read_text()
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)  # a second send, were there one, has time to arrive
    async with httpx.AsyncClient(timeout=30) as http:
        for port in ports:
            synced = await http.put(f"http://127.0.0.1:{port}/api/inngest")
            assert synced.status_code == 200, synced.text
    assert set(fake.events) == {str(i) for i in ids}, "every event reached Inngest"
    twice = {event: n for event, n in fake.events.items() if n > 1}
    assert not twice, f"{len(twice)} events were sent more than once across the two processes"
    assert (await outbox.backlog(db)).waiting == 0, "each row is marked sent"
    assert len(fake.registrations) == 2, "each process registered its functions"
    first, second = (_concurrency(r) for r in fake.registrations)
    assert first == second, "both processes declare the same functions with the same concurrency keys"
    keyed = {slug: c for slug, c in first.items() if c}
    assert any("ingest" in slug for slug in keyed) and any("switch" in slug for slug in keyed), keyed
    for slug, settings in keyed.items():
        if "sweep" in slug or "expiry" in slug:
            continue  # platform-wide: one at a time, no key
        assert any("organization" in str(c.get("key", "")) for c in settings), f"{slug}: {settings}"


def _segment_event(org: UUID, user: UUID, agent: UUID, run: UUID, conversation: UUID) -> dict[str, Any]:
    """A `context/segment.brief.requested` event whose brief reads the run's conversation."""
    policy = ContextPolicy(
        sources=[ContextSourceSpec(name="conversation", required=True, token_budget=400)], total_token_budget=800
    )
    subject = {"organization_id": str(org), "user_id": str(user), "definition_id": str(agent)}
    request = {"subject": subject, "query": "What did we agree?", "entities": [], "run_id": str(run),
               "conversation_id": str(conversation)}  # fmt: skip
    return {
        "name": "context/segment.brief.requested",
        "data": {"run_id": str(run), "segment": 0, "waited": False, "request": request,
                 "policy": policy.model_dump(mode="json")},
    }  # fmt: skip


def _clear(value: Any) -> Any:
    """A step or function output the processes encrypted with `STEP_KEYS`, in clear (libsodium's SecretBox)."""
    assert isinstance(value, dict) and value.get("__ENCRYPTED__") is True, "encrypted by the process"
    key = nacl.hash.generichash(STEP_KEYS.encode(), digest_size=nacl.secret.SecretBox.KEY_SIZE)  # hex, as upstream
    box = nacl.secret.SecretBox(key, encoder=nacl.encoding.HexEncoder)
    return json.loads(box.decrypt(value["data"].encode(), encoder=nacl.encoding.Base64Encoder))


async def _segment_builds(http: httpx.AsyncClient) -> float:
    """Segment briefs the process behind `http` has built, from its /metrics."""
    metrics = await http.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert metrics.status_code == 200, metrics.text
    found = [
        float(line[len(SEGMENT_BUILDS) :]) for line in metrics.text.splitlines() if line.startswith(SEGMENT_BUILDS)
    ]
    return found[0] if found else 0.0


async def test_a_segment_brief_built_on_one_process_is_replayed_from_its_memo_on_the_other(
    factory: Factory, two: Processes
) -> None:
    tenant = await factory.tenant(users=1)
    agent = await factory.definition(tenant.id)
    run = await factory.run(tenant.id, definition_id=agent)
    conversation = await factory.conversation(tenant.id)
    await factory.message(tenant.id, conversation, "We agreed on a pilot with twelve seats.")
    event = _segment_event(tenant.id, tenant.user, agent, run, conversation)
    on_a = InngestExecutor(httpx.AsyncClient(base_url=two.url(0), timeout=60))
    on_b = InngestExecutor(httpx.AsyncClient(base_url=two.url(1), timeout=60))
    async with on_a.http, on_b.http:
        first = await on_a.run(SEGMENT, event, retries=RETRIES)
        assert first.status == "completed", first.output
        assert first.step_names == [BUILD_STEP], "A built the brief in its step"
        assert "twelve seats" not in json.dumps([first.steps, first.output]), "A's memo and answer are encrypted"
        memo = _clear(first.step_outputs[BUILD_STEP])
        assert "twelve seats" in memo["text"] and _clear(first.output)["brief"] == memo
        # The world moves on: a fresh build now would read this message.
        await factory.message(tenant.id, conversation, "Later: the pilot grows to forty seats.")
        builds_on_b = await _segment_builds(on_b.http)

        replay = await on_b.run(SEGMENT, event, retries=RETRIES, steps=first.steps)
        assert replay.status == "completed", replay.output
        assert replay.requests == 1 and replay.step_names == [], "B answered from the memo, with no new step"
        replayed = _clear(replay.output)
        assert json.dumps(replayed["brief"]) == json.dumps(memo), "B's brief is A's memo, decrypted on B"
        assert "forty seats" not in replayed["brief"]["text"], "B did not build the brief again"
        assert await _segment_builds(on_b.http) == builds_on_b, "B's build counter did not move"

        fresh = await on_b.run(SEGMENT, event, retries=RETRIES)  # without the memo, B builds: the new message
        assert "forty seats" in _clear(fresh.output)["brief"]["text"]
        assert await _segment_builds(on_b.http) == builds_on_b + 1
