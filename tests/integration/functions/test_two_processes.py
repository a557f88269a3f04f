"""Two real `ac-context serve` processes on one database behind one Inngest (issue 35, item 5).

The Inngest server is a stand-in speaking its HTTP protocol (`POST /e/{key}` with the events, answering
their ids; `POST /fn/register` with each process's functions), because none can run here. Both processes'
outbox drainers race for the same rows: each event reaches the event API once. Both register the same
functions with the same per-organization concurrency keys, so Inngest holds one ingestion and one switchover
per organization whichever process serves the step.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from state import outbox
from state.db import Database
from state.outbox import OutboxEvent
from tests.factories import Factory
from tests.integration.functions.conftest import TOKEN
from tests.support import HANG_S, free_port, wait_until_answering

ENTRY = [sys.executable, "-c", "from functions.cli import main; main()", "serve"]
EVENTS = 300


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
        "INNGEST_DEV": inngest_url,
        "INNGEST_BASE_URL": inngest_url,
        "DATABASE_URL": db_url,
    }


def _concurrency(registration: dict[str, Any]) -> dict[str, Any]:
    """Each function's slug and its concurrency settings, as one process registered them."""
    return {f["id"]: f.get("concurrency") for f in registration["functions"]}


async def test_two_service_processes_send_each_outbox_event_once_and_register_the_same_concurrency_keys(
    db: Database, db_url: str, factory: Factory, tmp_path: Path, fake_inngest: tuple[FakeInngest, str]
) -> None:
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
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=60)
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
