"""`ac-context switch-model` ends clean (issue 21): a cancel from another process (`ac-context switch-model
--cancel`, a real subprocess) while the switch re-embeds stops it at the next batch with `error:
knowledge_switch_cancelled` and exit 1, and leaves no chunk of the cancelled model; uploads made during the
switch are built under both models and the switch flips; an unreadable pending source fails on its own;
`--status` names what the flip waits for. The switch runs in this process through the real command group
(in a thread, with its own event loop), the gate embedder acting while one of its batches is in flight."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

import pytest
from typer.testing import CliRunner

import functions._services
from functions.cli import app
from knowledge.documents.objects import LocalObjectStore
from knowledge.embedding.live_model import begin_switch, live_model, running_switch
from knowledge.embedding.registry import EmbedderRegistry, FakeEmbedder, OpenAIEmbedder, WordLlamaEmbedder
from knowledge.ingestion.registration import register_upload
from state.db import Database
from state.settings import get_settings
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, GATE, GateEmbedder, Kit, chunk_counts, ensure_gate_registered
from tests.support import cli_error_line

AC_CONTEXT = str(Path(sys.executable).with_name("ac-context"))
PROGRESS = re.compile(r"^re-embedding under \S+ .*\d+/\d+ \d+:\d\d:\d\d$")
T = TypeVar("T")


class Env:
    """The CLI's environment and the test's handles on the same database and object store."""

    def __init__(self, kit: Kit, environ: dict[str, str], loop: asyncio.AbstractEventLoop) -> None:
        self.kit = kit
        self.environ = environ
        self.loop = loop

    async def cli(self, *args: str) -> Any:
        """`ac-context …` through the real group, in a thread: the command owns its event loop."""

        def call() -> Any:
            get_settings.cache_clear()
            return CliRunner().invoke(app, list(args))

        return await asyncio.to_thread(call)

    def on_test_loop(self, work: Awaitable[T]) -> Awaitable[T]:
        """Run `work` on the test's loop (the database pool lives there) from the CLI's thread."""
        return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self.loop))  # type: ignore[arg-type]


@pytest.fixture
async def env(db: Database, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Env]:
    data = tmp_path / "data"
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("AC_CONTEXT_DATA_DIR", str(data))
    monkeypatch.delenv("AC_CONTEXT_DEBUG", raising=False)
    kit = Kit(db, LocalObjectStore(data / "objects"))  # the CLI's own object store
    await kit.use_platform_model(FAKE)
    GateEmbedder.reset()
    registry = EmbedderRegistry()  # the CLI's embedders: the process-wide ones, and the gate, for this test only
    for model in (WordLlamaEmbedder, OpenAIEmbedder, FakeEmbedder):
        registry.register(model.model_id, model, dimensions=model.dimensions)
    ensure_gate_registered(registry)
    monkeypatch.setattr(functions._services, "default_embedders", registry)
    yield Env(kit, dict(os.environ), asyncio.get_running_loop())
    GateEmbedder.reset()
    get_settings.cache_clear()


project_error = partial(cli_error_line, progress=PROGRESS)


async def scope(kit: Kit, org: UUID, *, own: int, platform: int = 0) -> list[UUID]:
    sources = [await kit.ingest(org, f"Lifecycle stage {n}: the account moves on.") for n in range(own)]
    return sources + [await kit.ingest(None, f"Platform pricing page {n}.") for n in range(platform)]


async def test_a_cancel_from_another_process_stops_the_cli_switch_at_the_next_batch_and_leaves_no_chunk(
    env: Env, factory: Factory
) -> None:
    org = await factory.organization()
    sources = await scope(env.kit, org, own=8, platform=2)
    cancelled: list[subprocess.CompletedProcess[str]] = []

    async def cancel_elsewhere() -> None:  # while the third of ten re-embeds embeds its batch
        command = [AC_CONTEXT, "switch-model", "--cancel", "--org", str(org), "--json"]
        done = await asyncio.to_thread(
            subprocess.run, command, env=env.environ, capture_output=True, text=True, timeout=120
        )
        cancelled.append(done)

    GateEmbedder.actions[3] = cancel_elsewhere
    result = await env.cli("switch-model", GATE, "--org", str(org))

    line = project_error(result, "knowledge_switch_cancelled")
    assert f"{FAKE} stays live" in line, line
    assert cancelled and cancelled[0].returncode == 0, cancelled and cancelled[0].stderr
    answer = json.loads(cancelled[0].stdout)
    assert answer["cancelled"] is True and answer["dropped_chunks"] >= 1, answer
    assert GateEmbedder.batches() == 3, "the batch in flight at the cancel is the last one embedded"
    assert await chunk_counts(env.kit.db, GATE) == {"chunks": 0, "rows": 0, "unwanted": 0}
    assert (await live_model(env.kit.db, org)).model_id == FAKE
    async with env.kit.db.connection() as conn:
        models = await conn.fetch(
            "SELECT DISTINCT embedding_model FROM agent.knowledge_chunks WHERE source_id = ANY($1::uuid[])", sources
        )
    assert {r["embedding_model"] for r in models} == {FAKE}, "the old chunks keep serving"


async def test_uploads_during_a_cli_switch_are_embedded_for_the_new_model_and_the_switch_flips(
    env: Env, factory: Factory
) -> None:
    org = await factory.organization()
    sources = await scope(env.kit, org, own=5, platform=1)
    late: list[UUID] = []

    async def register_twenty() -> None:
        for n in range(20):
            late.append(await env.kit.register(org, f"Upload {n} made during the switch: renewal terms {n}."))

    async def uploads() -> None:  # twenty uploads through the database, while the second re-embed is in flight
        await env.on_test_loop(register_twenty())

    GateEmbedder.actions[2] = uploads
    result = await env.cli("switch-model", GATE, "--org", str(org), "--json")

    assert result.exit_code == 0, (result.output, result.exception)
    out = json.loads(result.stdout)
    assert out["flipped"] is True and out["from_model"] == FAKE and out["dropped_chunks"] == 25, out
    assert len(late) == 20 and await running_switch(env.kit.db, org) is None, "flipped and closed, not left open"
    assert (await live_model(env.kit.db, org)).model_id == GATE
    async with env.kit.db.connection() as conn:
        rows = await conn.fetch(
            "SELECT s.status, array_agg(DISTINCT c.embedding_model) AS models FROM agent.knowledge_sources s "
            "JOIN agent.knowledge_chunks c ON c.source_id = s.id WHERE s.id = ANY($1::uuid[]) GROUP BY s.id",
            sources[:5] + late,
        )
    assert len(rows) == 25 and all(r["status"] == "ready" and r["models"] == [GATE] for r in rows)


async def test_an_unreadable_pending_source_fails_on_its_own_and_the_cli_switch_flips(
    env: Env, factory: Factory
) -> None:
    org = await factory.organization()
    await scope(env.kit, org, own=2)
    broken = await register_upload(
        env.kit.db, env.kit.store, organization_id=org, data=b"%PDF-1.4 this is not a PDF", filename="broken.pdf",
        media_type="application/pdf",
    )  # fmt: skip

    result = await env.cli("switch-model", GATE, "--org", str(org))

    assert result.exit_code == 0, (result.output, result.exception)
    assert f"{GATE} is live (was {FAKE})" in result.stdout
    shown = json.loads((await env.cli("sources", "show", str(broken.source_id), "--json")).stdout)
    assert shown["status"] == "failed" and shown["failure_reason"].startswith("document_malformed"), shown


async def test_switch_model_status_names_what_the_flip_waits_for(env: Env, factory: Factory) -> None:
    org = await factory.organization()
    await scope(env.kit, org, own=1)
    await begin_switch(env.kit.db, org, GATE, dimensions=GateEmbedder.dimensions)
    upload = await env.kit.register(org, "An upload not yet ingested.", title="Late upload")

    status = json.loads((await env.cli("switch-model", "--status", "--org", str(org), "--json")).stdout)
    assert status["phase"] == "embedding" and (status["pending"], status["ready"]) == (2, 0), status
    waiting = {w["source_id"]: w for w in status["waiting_for"]}
    assert waiting[str(upload)]["source_status"] == "pending" and waiting[str(upload)]["title"] == "Late upload"
    text = " ".join((await env.cli("switch-model", "--status", "--org", str(org))).stdout.split())  # rich wraps
    assert "embedding; 0/2 ready, 2 pending" in text and "waiting for Late upload" in text, text
