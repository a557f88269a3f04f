"""Bulk ingestion against a real database: per-source failures, the chunk cap, idempotent reruns."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

import numpy as np
import pytest

from knowledge.documents.chunk import chunk_text
from knowledge.documents.objects import object_prefix_for
from knowledge.embedding.registry import FakeEmbedder
from knowledge.ingestion import bulk
from knowledge.ingestion.bulk import ingest_sources
from knowledge.ingestion.pool import IngestPool
from knowledge.ingestion.registration import Document, register_many, register_upload, register_uri
from state.db import Database
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit

ENCRYPTED = Path("pdf/py-pdf-sample-files/005-libreoffice-writer-password/libreoffice-writer-password.pdf")


def small_doc(n: int) -> str:
    return f"# Note {n}\n\n" + " ".join(f"Customer {n} renewed plan {n % 7} on day {i}." for i in range(30))


async def _register(kit: Kit, org: UUID, data: bytes, name: str, media: str | None) -> UUID:
    reg = await register_upload(kit.db, kit.store, organization_id=org, data=data, filename=name, media_type=media)
    return reg.source_id


async def _counts(db: Database) -> dict[str, int]:
    async with db.connection() as conn:
        rows = await conn.fetch("SELECT status, count(*) AS n FROM agent.knowledge_sources GROUP BY status")
    return {r["status"]: r["n"] for r in rows}


async def test_two_hundred_small_documents_with_three_bad_ones_leave_197_ready_and_3_failed_with_their_reasons(
    kit: Kit, factory: Factory, corpus: Path
) -> None:
    org = await factory.organization()
    good = [await _register(kit, org, small_doc(n).encode(), f"n{n}.md", "text/markdown") for n in range(197)]
    encrypted = await _register(kit, org, (corpus / ENCRYPTED).read_bytes(), "locked.pdf", "application/pdf")
    empty = await _register(kit, org, b"", "empty.md", "text/markdown")
    binary = await _register(kit, org, bytes(range(256)) * 64, "blob.txt", None)
    pool = IngestPool(2)
    try:
        result = await ingest_sources(
            kit.db, kit.store, [*good[:100], encrypted, empty, *good[100:], binary],
            embedders=kit.lookup, pool=pool, wave_documents=64,
        )  # fmt: skip
    finally:
        pool.close()
    assert await _counts(kit.db) == {"ready": 197, "failed": 3}
    reasons = {o.source_id: o.reason for o in result.outcomes if o.status == "failed"}
    assert reasons[encrypted] is not None and reasons[encrypted].startswith("pdf_encrypted:")
    assert reasons[empty] is not None and reasons[empty].startswith("document_empty:")
    assert reasons[binary] is not None and reasons[binary].startswith("document_type_unsupported:")
    async with kit.db.connection() as conn:
        stored = await conn.fetch("SELECT id, failure_reason FROM agent.knowledge_sources WHERE status = 'failed'")
        bad_chunks = await conn.fetchval(
            "SELECT count(*) FROM agent.knowledge_chunks c JOIN agent.knowledge_source_models r "
            "ON r.source_id = c.source_id AND r.embedding_model = c.embedding_model "
            "WHERE r.status = 'ready' AND c.embedding IS NULL"
        )
    assert {r["id"]: r["failure_reason"] for r in stored} == reasons
    assert bad_chunks == 0
    assert result.count("ready") == 197


async def test_a_rerun_of_a_bulk_ingestion_changes_nothing_and_says_the_sources_are_unchanged(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    ids = [await _register(kit, org, small_doc(n).encode(), f"n{n}.md", "text/markdown") for n in range(12)]
    first = await ingest_sources(kit.db, kit.store, ids, embedders=kit.lookup, wave_documents=5)
    async with kit.db.connection() as conn:
        before = await conn.fetch("SELECT id, source_id, ordinal FROM agent.knowledge_chunks ORDER BY id")
    again = await ingest_sources(kit.db, kit.store, ids, embedders=kit.lookup)
    async with kit.db.connection() as conn:
        after = await conn.fetch("SELECT id, source_id, ordinal FROM agent.knowledge_chunks ORDER BY id")
    assert first.count("ready") == 12
    assert again.count("unchanged") == 12
    assert before == after


async def test_a_bulk_write_interrupted_after_some_rows_resumes_without_duplicates(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    ids = [await _register(kit, org, small_doc(n).encode(), f"n{n}.md", "text/markdown") for n in range(4)]
    # An earlier per-source run wrote half the chunk rows of one source, without vectors, then died.
    async with kit.db.connection() as conn:
        await conn.execute(
            "INSERT INTO agent.knowledge_chunks (source_id, embedding_model, ordinal, text, tokens) "
            "VALUES ($1, $2, 0, 'stale text', 3), ($1, $2, 40, 'beyond the end', 3)",
            ids[0],
            FAKE,
        )
    result = await ingest_sources(kit.db, kit.store, ids, embedders=kit.lookup)
    assert result.count("ready") == 4
    async with kit.db.connection() as conn:
        rows = await conn.fetch(
            "SELECT ordinal, text, embedding IS NOT NULL AS embedded FROM agent.knowledge_chunks "
            "WHERE source_id = $1 ORDER BY ordinal",
            ids[0],
        )
    assert [r["ordinal"] for r in rows] == list(range(len(rows)))
    assert all(r["embedded"] for r in rows) and "stale text" not in {r["text"] for r in rows}


async def test_a_document_that_would_exceed_the_chunk_cap_fails_with_too_many_chunks(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    big = await _register(kit, org, small_doc(1).encode() * 40, "big.md", "text/markdown")
    fine = await _register(kit, org, small_doc(2).encode(), "fine.md", "text/markdown")
    result = await ingest_sources(kit.db, kit.store, [big, fine], embedders=kit.lookup, max_chunks=5)
    outcome = {o.source_id: o for o in result.outcomes}
    assert outcome[fine].status == "ready"
    assert outcome[big].status == "failed"
    assert outcome[big].reason is not None and outcome[big].reason.startswith("too_many_chunks:")
    async with kit.db.connection() as conn:
        chunks = await conn.fetchval("SELECT count(*) FROM agent.knowledge_chunks WHERE source_id = $1", big)
    assert chunks == 0


@pytest.mark.parametrize("workers", [None, 2])
async def test_bulk_ingestion_with_and_without_the_pool_writes_the_same_chunks(
    kit: Kit, factory: Factory, workers: int | None
) -> None:
    org = await factory.organization()
    ids = [await _register(kit, org, small_doc(n).encode() * 3, f"n{n}.md", "text/markdown") for n in range(6)]
    pool = IngestPool(workers) if workers else None
    try:
        await ingest_sources(kit.db, kit.store, ids, embedders=kit.lookup, pool=pool)
    finally:
        if pool is not None:
            pool.close()
    async with kit.db.connection() as conn:
        rows = await conn.fetch(
            "SELECT c.ordinal, c.text, c.embedding FROM agent.knowledge_chunks c "
            "JOIN agent.knowledge_sources s ON s.id = c.source_id ORDER BY s.filename, c.ordinal"
        )
    expected = [c.text for n in range(6) for c in chunk_text(small_doc(n) * 3)]
    assert [r["text"] for r in rows] == expected
    vectors = await FakeEmbedder().embed(expected)
    assert np.allclose(np.vstack([np.asarray(r["embedding"].to_numpy()) for r in rows]), vectors, atol=1e-6)


class RecordingPool(IngestPool):
    """The real pool, noting the name of every function it runs in a worker."""

    def __init__(self, workers: int) -> None:
        super().__init__(workers)
        self.ran: list[str] = []

    async def run(self, call: Any, *args: Any) -> Any:
        self.ran.append(call.__name__)
        return await super().run(call, *args)


async def test_a_large_text_is_prepared_in_this_process_not_copied_to_a_worker(
    kit: Kit, factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(bulk, "IN_PROCESS_BYTES", 2000)  # so a small text counts as large
    org = await factory.organization()
    large = small_doc(1).encode() * 3
    assert len(large) > 2000 > len(small_doc(2).encode())
    large_id = await _register(kit, org, large, "large.md", "text/markdown")
    small_id = await _register(kit, org, small_doc(2).encode(), "small.md", "text/markdown")
    too_big = await _register(kit, org, large + b"\n\nmore " * 100, "too-big.md", "text/markdown")
    pool = RecordingPool(2)
    try:
        result = await ingest_sources(kit.db, kit.store, [large_id, small_id], embedders=kit.lookup, pool=pool)
        capped = await ingest_sources(kit.db, kit.store, [too_big], embedders=kit.lookup, pool=pool, max_chunks=1)
    finally:
        pool.close()
    assert [o.status for o in result.outcomes] == ["ready", "ready"]
    assert pool.ran.count("prepare_documents") == 1, "only the small text went to a worker"
    async with kit.db.connection() as conn:
        texts = [r["text"] for r in await conn.fetch(
            "SELECT text FROM agent.knowledge_chunks WHERE source_id = $1 ORDER BY ordinal", large_id
        )]  # fmt: skip
    assert texts == [c.text for c in chunk_text(small_doc(1) * 3)], "the same chunks as a worker would cut"
    assert capped.outcomes[0].status == "failed" and (capped.outcomes[0].reason or "").startswith("too_many_chunks:")


async def test_registering_many_documents_gives_each_the_answer_registering_it_alone_gives(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    await register_uri(kit.db, kit.store, organization_id=org, uri="https://x.example/a", data=b"# A\n\nold a")
    docs = [
        Document(b"# One\n\nfirst", "one.md", media_type="text/markdown"),
        Document(b"# One\n\nfirst", "again.md", media_type="text/markdown"),  # same content: one source
        Document(b"# A\n\nnew a", "", uri="https://x.example/a"),  # a changed URI: a new version
        Document(b"# B\n\nb", "", uri="https://x.example/b"),
    ]
    regs = await register_many(kit.db, kit.store, organization_id=org, documents=docs)
    assert [r.outcome for r in regs] == ["created", "unchanged", "resync", "created"]
    assert regs[0].source_id == regs[1].source_id
    assert all(r.models == (FAKE,) for r in regs)
    again = await register_many(kit.db, kit.store, organization_id=org, documents=docs[:1] + docs[3:])
    assert [r.outcome for r in again] == ["unchanged", "unchanged"]
    assert [r.source_id for r in again] == [regs[0].source_id, regs[3].source_id]


async def test_each_pending_source_of_a_batch_is_announced_once_inside_the_transaction_that_leaves_it_pending(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    await register_uri(kit.db, kit.store, organization_id=org, uri="https://x.example/a", data=b"# A\n\nold a")
    known = await register_upload(kit.db, kit.store, organization_id=org, data=b"# K\n\nknown", filename="k.md")
    calls: list[tuple[bool, list[UUID]]] = []

    async def announce(conn: Any, pending: Any) -> None:
        calls.append((conn.is_in_transaction(), list(pending)))

    docs = [
        Document(b"# One\n\nfirst", "one.md"),
        Document(b"# One\n\nfirst", "again.md"),  # the same source: announced once
        Document(b"# K\n\nknown", "k.md"),  # registered before, still pending: announced again
        Document(b"# A\n\nnew a", "", uri="https://x.example/a"),  # a URI's new version
    ]
    regs = await register_many(kit.db, kit.store, organization_id=org, documents=docs, announce=announce)
    assert all(inside for inside, _ in calls), "every event is written inside a registering transaction"
    announced = [source for _, ids in calls for source in ids]
    assert sorted(announced) == sorted({r.source_id for r in regs if r.status == "pending"})
    assert len(announced) == len(set(announced)) == 3 and known.source_id in announced


async def test_an_announcement_that_fails_leaves_no_new_source_and_no_object_behind(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()

    async def refuse(conn: Any, pending: Any) -> None:
        raise RuntimeError("the outbox is unwritable")

    with pytest.raises(RuntimeError, match="unwritable"):
        await register_many(
            kit.db, kit.store, organization_id=org, documents=[Document(b"# X\n\nx", "x.md")], announce=refuse
        )
    async with kit.db.connection() as conn:
        assert await conn.fetchval("SELECT count(*) FROM agent.knowledge_sources WHERE organization_id = $1", org) == 0
    assert await kit.store.list_prefix(object_prefix_for(org)) == []
