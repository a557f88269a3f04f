"""The ingestion steps against a real database: idempotent, resumable, and never half ready."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import pytest

from knowledge.documents.objects import LocalObjectStore
from knowledge.errors import EmbedderMismatchError
from knowledge.ingestion.core import ingest_source
from knowledge.ingestion.registration import register_upload, register_uri
from knowledge.ingestion.steps import embed_batch, mark_failed, mark_ready, prepare_chunks
from state.db import Database
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, FAKE2, FlakyEmbedder, Kit, SecondFakeEmbedder

LONG = "\n\n".join(f"Paragraph {i} talks about lifecycle stage number {i} of a CRM deal." * 6 for i in range(12))


async def _chunk_rows(db: Database, source_id: UUID, model: str = FAKE) -> list[tuple[int, int, bool]]:
    async with db.connection() as conn:
        rows = await conn.fetch(
            "SELECT id, ordinal, embedding IS NOT NULL AS embedded FROM agent.knowledge_chunks "
            "WHERE source_id = $1 AND embedding_model = $2 ORDER BY ordinal",
            source_id,
            model,
        )
    return [(r["id"], r["ordinal"], r["embedded"]) for r in rows]


async def _status(db: Database, source_id: UUID) -> tuple[str, str | None]:
    async with db.connection() as conn:
        row = await conn.fetchrow("SELECT status, failure_reason FROM agent.knowledge_sources WHERE id = $1", source_id)
    return row["status"], row["failure_reason"]


async def test_registering_the_same_upload_twice_in_one_scope_returns_the_first_source(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    args = {"data": b"# Lifecycle\n\nstages", "filename": "a.md", "media_type": "text/markdown"}
    first = await register_upload(kit.db, kit.store, organization_id=org, **args)
    again = await register_upload(kit.db, kit.store, organization_id=org, **{**args, "filename": "renamed.md"})
    assert first.created and not again.created
    assert again.source_id == first.source_id
    assert first.models == (FAKE,)
    assert await kit.store.list_prefix(f"org/{org}/") == [f"org/{org}/{first.source_id}/document"], (
        "one object, named by its source: the same content again writes none"
    )


async def test_registering_a_uri_twice_with_the_same_bytes_is_a_no_op_that_says_so(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    first = await register_uri(kit.db, kit.store, organization_id=org, uri="https://docs.example/crm", data=b"v1 text")
    again = await register_uri(kit.db, kit.store, organization_id=org, uri="https://docs.example/crm", data=b"v1 text")
    assert (again.source_id, again.created, again.outcome) == (first.source_id, False, "unchanged")


async def test_ingesting_a_source_writes_ordered_embedded_chunks_and_marks_it_ready(kit: Kit) -> None:
    source = await kit.register(None, LONG)
    assert await _status(kit.db, source) == ("pending", None)
    outcome = await ingest_source(kit.ingestion(), source)
    assert outcome.ready_models == (FAKE,)
    rows = await _chunk_rows(kit.db, source)
    assert [ordinal for _, ordinal, _ in rows] == list(range(len(rows)))
    assert len(rows) > 4 and all(embedded for *_, embedded in rows)
    assert await _status(kit.db, source) == ("ready", None)


async def test_preparing_chunks_twice_writes_no_second_row(kit: Kit) -> None:
    source = await kit.register(None, LONG)
    first = await prepare_chunks(kit.db, kit.store, source, FAKE)
    before = await _chunk_rows(kit.db, source)
    second = await prepare_chunks(kit.db, kit.store, source, FAKE)
    assert first.origin == "extracted" and second.origin == "existing"
    assert await _chunk_rows(kit.db, source) == before
    assert second.chunk_count == first.chunk_count == len(before)


async def test_a_crash_between_embedding_batches_leaves_the_source_pending_and_a_rerun_completes_it(
    kit: Kit,
) -> None:
    source = await kit.register(None, LONG)
    flaky = FlakyEmbedder(batch_size=4, fail_on=2)
    with pytest.raises(RuntimeError, match="died between two embedding batches"):
        await ingest_source(kit.ingestion(lambda model: flaky), source)
    rows = await _chunk_rows(kit.db, source)
    assert sum(embedded for *_, embedded in rows) == 4  # the first batch committed, the second never did
    assert await _status(kit.db, source) == ("pending", None)
    half = await mark_ready(kit.db, source, FAKE)
    assert not half.ready and (half.chunk_count, half.embedded_count) == (len(rows), 4)

    outcome = await ingest_source(kit.ingestion(lambda model: flaky), source)  # fail_on is past
    after = await _chunk_rows(kit.db, source)
    assert outcome.ready_models == (FAKE,)
    assert [(i, o) for i, o, _ in after] == [(i, o) for i, o, _ in rows]  # same rows: no duplicate, none new
    assert all(embedded for *_, embedded in after)
    assert await _status(kit.db, source) == ("ready", None)


async def test_a_half_embedded_source_is_never_marked_ready(kit: Kit) -> None:
    source = await kit.register(None, LONG)
    await prepare_chunks(kit.db, kit.store, source, FAKE)
    batch = await embed_batch(kit.db, source, kit.lookup(FAKE), batch_size=2)
    assert batch.embedded == 2 and batch.remaining > 0
    check = await mark_ready(kit.db, source, FAKE)
    assert not check.ready and not check.source_ready
    assert await _status(kit.db, source) == ("pending", None)
    # A chunk row deleted behind the readiness row's back also keeps it from being ready.
    while (await embed_batch(kit.db, source, kit.lookup(FAKE))).embedded:
        pass
    async with kit.db.connection() as conn:
        await conn.execute("DELETE FROM agent.knowledge_chunks WHERE source_id = $1 AND ordinal = 0", source)
    assert not (await mark_ready(kit.db, source, FAKE)).ready


async def test_embedding_with_an_embedder_of_another_model_dimension_is_refused(kit: Kit) -> None:
    source = await kit.register(None, LONG)
    await prepare_chunks(kit.db, kit.store, source, FAKE)

    class Impostor(SecondFakeEmbedder):
        model_id = FAKE  # claims the 64-dimension model, gives 32 dimensions

    with pytest.raises(EmbedderMismatchError):
        await embed_batch(kit.db, source, Impostor())


async def test_the_encrypted_image_only_and_malformed_corpus_pdfs_fail_with_three_different_reasons(
    kit: Kit, corpus: Path
) -> None:
    samples = corpus / "pdf" / "py-pdf-sample-files"
    files = [
        samples / "005-libreoffice-writer-password" / "libreoffice-writer-password.pdf",
        samples / "007-imagemagick-images" / "imagemagick-CCITTFaxDecode.pdf",
        samples / "017-unreadable-meta-data" / "unreadablemetadata.pdf",
    ]
    reasons = []
    for path in files:
        registered = await register_upload(
            kit.db, kit.store, organization_id=None, data=path.read_bytes(), filename=path.name
        )
        outcome = await ingest_source(kit.ingestion(), registered.source_id)
        status, reason = await _status(kit.db, registered.source_id)
        assert status == "failed" and reason == outcome.failed_reason
        reasons.append(reason)
    assert [r.split(":")[0] for r in reasons] == ["pdf_encrypted", "pdf_no_text", "document_malformed"]
    assert "password" in reasons[0] and "OCR" in reasons[1]


async def test_failing_a_ready_source_under_a_new_model_keeps_it_serving(kit: Kit, db: Database) -> None:
    source = await kit.ingest(None, LONG)
    await kit.use_platform_model(FAKE)  # already live; registers nothing new
    from knowledge.embedding.live_model import begin_switch

    await begin_switch(db, None, FAKE2, dimensions=32)  # a source is written only under a model it is wanted under
    await prepare_chunks(db, kit.store, source, FAKE2)
    marked = await mark_failed(db, source, "provider down", model=FAKE2)
    assert marked.models == (FAKE2,) and not marked.source_failed
    assert await _status(db, source) == ("ready", None)


async def test_the_local_object_store_holds_the_uploaded_bytes(store: LocalObjectStore, kit: Kit) -> None:
    registered = await register_upload(kit.db, store, organization_id=None, data=b"hello world", filename="h.txt")
    async with kit.db.connection() as conn:
        key = await conn.fetchval("SELECT object_key FROM agent.knowledge_sources WHERE id = $1", registered.source_id)
    assert await store.get(key) == b"hello world"


async def test_a_registration_and_its_announced_event_commit_together_or_not_at_all(kit: Kit, factory: Factory) -> None:
    from state import outbox
    from state.db import Connection
    from state.outbox import OutboxEvent

    org = await factory.organization()
    written: list[UUID] = []

    async def announce(conn: Connection, registered: object) -> None:
        written.extend(await outbox.enqueue(conn, [OutboxEvent("test/event", {"n": 1}, org)]))
        raise RuntimeError("the process dies before the registration commits")

    with pytest.raises(RuntimeError):
        await register_upload(kit.db, kit.store, organization_id=org, data=b"# Atomic\n\ntext", filename="a.md",
                              announce=announce)  # fmt: skip
    async with kit.db.connection() as conn:
        sources = await conn.fetchval("SELECT count(*) FROM agent.knowledge_sources WHERE organization_id = $1", org)
    assert sources == 0, "no source without its event"
    assert written and await outbox.rows(kit.db, written) == [], "no event without its source"

    async def keep(conn: Connection, registered: object) -> None:
        written.extend(await outbox.enqueue(conn, [OutboxEvent("test/event", {"n": 2}, org)]))

    kept = await register_upload(kit.db, kit.store, organization_id=org, data=b"# Atomic\n\ntext", filename="a.md",
                                 announce=keep)  # fmt: skip
    (row,) = await outbox.rows(kit.db, written[-1:])
    assert kept.status == "pending" and row.data == {"n": 2} and row.sent_at is None
