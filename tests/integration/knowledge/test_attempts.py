"""A source's attempts are recorded on every ingestion path, by the triggers of migrations/0120.

An upload, a batch, a re-sync, a retry and a model switch each start an attempt with their cause; the
ingestion ends it ready or failed (with the reason); the hourly sweep ends a stuck one as failed by the sweep;
a source keeps its latest 100; deleting the source removes them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

import pytest

from knowledge.embedding.live_model import begin_switch
from knowledge.errors import SourceNotFoundError
from knowledge.ingestion.attempts import ATTEMPTS_KEPT, Attempt, source_attempts
from knowledge.ingestion.core import build_source_model, ingest_source
from knowledge.ingestion.delete import delete_source
from knowledge.ingestion.registration import Document, register_many, register_upload, register_uri
from knowledge.ingestion.sweep import retry_source, sweep_pending
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE2, Kit

ENCRYPTED = (
    Path(__file__).resolve().parents[3].parent
    / "shared/corpus/pdf/py-pdf-sample-files/005-libreoffice-writer-password/libreoffice-writer-password.pdf"
)


def _seen(attempts: list[Attempt]) -> list[tuple[str, str | None, str | None, str | None]]:
    """Oldest first: (cause, model, outcome, ended_by)."""
    return [(a.cause, a.embedding_model, a.outcome, a.ended_by) for a in reversed(attempts)]


async def test_an_upload_that_fails_then_a_retry_that_the_sweep_ends_are_each_recorded(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    registered = await register_upload(
        kit.db, kit.store, organization_id=org, data=ENCRYPTED.read_bytes(), filename="locked.pdf",
        media_type="application/pdf",
    )  # fmt: skip
    source = registered.source_id
    (running,) = await source_attempts(kit.db, source, organization_id=org)
    assert (running.cause, running.outcome, running.finished_at) == ("upload", None, None), "started, not finished"
    await ingest_source(kit.ingestion(), source)
    await retry_source(kit.db, source, organization_id=org)
    await sweep_pending(kit.db, now=datetime.now(UTC) + timedelta(hours=2))
    attempts = await source_attempts(kit.db, source, organization_id=org)
    assert _seen(attempts) == [("upload", None, "failed", "ingestion"), ("retry", None, "failed", "sweep")]
    first, second = reversed(attempts)
    assert first.reason is not None and first.reason.startswith("pdf_encrypted:")
    assert second.reason is not None and second.reason.startswith("ingestion_stalled:")
    assert first.finished_at is not None and first.started_at <= first.finished_at <= second.started_at


async def test_a_batch_a_resync_and_a_model_switch_are_named_as_such(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    (batched,) = await register_many(
        kit.db, kit.store, organization_id=org, documents=[Document(data=b"# Batch\n\nbatched text", filename="b.md")]
    )
    await ingest_source(kit.ingestion(), batched.source_id)
    assert _seen(await source_attempts(kit.db, batched.source_id, organization_id=org)) == [
        ("batch", None, "ready", "ingestion")
    ]
    uri = "https://help.example/attempts"
    first = await register_uri(kit.db, kit.store, organization_id=org, uri=uri, data=b"# Help\n\none",
                               media_type="text/markdown")  # fmt: skip
    await ingest_source(kit.ingestion(), first.source_id)
    second = await register_uri(kit.db, kit.store, organization_id=org, uri=uri, data=b"# Help\n\ntwo",
                                media_type="text/markdown")  # fmt: skip
    assert _seen(await source_attempts(kit.db, second.source_id, organization_id=org)) == [("resync", None, None, None)]
    await ingest_source(kit.ingestion(), second.source_id)
    plan = await begin_switch(kit.db, org, FAKE2, dimensions=kit.embedders[FAKE2].dimensions)
    assert plan.source_ids
    await build_source_model(kit.db, kit.store, batched.source_id, kit.embedders[FAKE2])
    assert _seen(await source_attempts(kit.db, batched.source_id, organization_id=org)) == [
        ("batch", None, "ready", "ingestion"), ("model_switch", FAKE2, "ready", "ingestion"),
    ]  # fmt: skip


async def test_another_scope_reads_no_attempt_and_a_delete_removes_them(kit: Kit, factory: Factory) -> None:
    org, other = await factory.organization(), await factory.organization()
    source = await kit.ingest(org, "# Kept\n\nattempts of a deleted source")
    for scope in (other, None):
        with pytest.raises(SourceNotFoundError):
            await source_attempts(kit.db, source, organization_id=scope)
    receipt = await delete_source(kit.db, kit.store, source, organization_id=org, operator=False, requested_by="t")
    assert receipt.counts["agent.knowledge_source_attempts"] == 1
    async with kit.db.connection() as conn:
        left = await conn.fetchval("SELECT count(*) FROM agent.knowledge_source_attempts WHERE source_id = $1", source)
    assert left == 0


async def test_a_source_keeps_its_latest_attempts_only(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    source: UUID = await kit.register(org, "# Retried\n\nmany times")
    async with kit.db.connection() as conn:
        for _ in range(ATTEMPTS_KEPT + 5):  # fail it and retry it, as the sweep and a retry would
            await conn.execute(
                "UPDATE agent.knowledge_sources SET status = 'failed', failure_reason = 'x', pending_since = NULL"
                " WHERE id = $1", source,
            )  # fmt: skip
            await retry_source(kit.db, source, organization_id=org)
        count = await conn.fetchval("SELECT count(*) FROM agent.knowledge_source_attempts WHERE source_id = $1", source)
    assert count == ATTEMPTS_KEPT, "a source retried forever keeps its latest attempts only"
    latest = await source_attempts(kit.db, source, organization_id=org)
    assert latest[0].cause == "retry" and latest[0].outcome is None
