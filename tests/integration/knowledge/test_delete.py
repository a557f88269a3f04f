"""Deleting a knowledge source and erasing an organization's knowledge: gone from search, statistics as if
never held, objects gone, receipts exact, other tenants untouched, resumable after a crash."""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest

from knowledge.errors import PlatformSourceForbiddenError, SourceDeletedError, UnknownSourceError
from knowledge.ingestion.delete import delete_source, erase_organization_knowledge
from knowledge.search import search
from state.db import Database
from state.receipts import begin_receipt, finish_receipt, get_receipt
from tests.factories import Factory
from tests.integration.knowledge.helpers import Kit
from tests.integration.knowledge.lexical import assert_consistent, kept

KEEP = "# Lighthouse\n\n" + "\n\n".join(f"The lighthouse keeper logs tide {i} and harbour lights." for i in range(40))
GONE = "# Zeppelin\n\n" + "\n\n".join(f"The zeppelin quartermaster stores ballast crate {i}." for i in range(60))


class Crash(Exception):
    """A process dying between two batches."""


async def _hits(kit: Kit, org: UUID, query: str) -> list[str]:
    hits = await search(kit.db, org, query, include_organization=True, include_platform=True, embedders=kit.lookup)
    return [h.text for h in hits]


async def _rows_of(kit: Kit, source_id: UUID) -> dict[str, int]:
    async with kit.db.connection() as conn:
        return {
            "chunks": await conn.fetchval(
                "SELECT count(*) FROM agent.knowledge_chunks WHERE source_id = $1", source_id
            ),
            "models": await conn.fetchval(
                "SELECT count(*) FROM agent.knowledge_source_models WHERE source_id = $1", source_id
            ),
            "searchable": await conn.fetchval(
                "SELECT count(*) FROM agent.knowledge_searchable WHERE source_id = $1", source_id
            ),
            "sources": await conn.fetchval("SELECT count(*) FROM agent.knowledge_sources WHERE id = $1", source_id),
        }


def _by_model(stats: dict[tuple[UUID | None, str], dict[str, object]], org: UUID) -> dict[str, dict[str, object]]:
    return {model: v for (o, model), v in stats.items() if o == org}


async def test_a_deleted_source_is_never_searched_its_statistics_are_as_if_never_held_and_its_object_is_gone(
    kit: Kit, factory: Factory
) -> None:
    org, twin = await factory.organization(), await factory.organization()
    await kit.ingest(org, KEEP)
    gone = await kit.ingest(org, GONE)
    await kit.ingest(twin, KEEP)  # the scope that never held GONE
    assert any("zeppelin" in t for t in await _hits(kit, org, "zeppelin ballast crate"))
    objects = {p for p in kit.store.root.rglob("*") if p.is_file()} if hasattr(kit.store, "root") else None

    receipt = await delete_source(kit.db, kit.store, gone, organization_id=org, operator=False, requested_by="t",
                                  batch_size=3)  # fmt: skip

    assert not any("zeppelin" in t for t in await _hits(kit, org, "zeppelin ballast crate"))
    assert await _rows_of(kit, gone) == {"chunks": 0, "models": 0, "searchable": 0, "sources": 0}
    stats = await assert_consistent(kit.db)
    assert _by_model(stats, org) == _by_model(stats, twin)
    remaining = [p for p in kit.store.root.rglob("*") if p.is_file()]  # type: ignore[attr-defined]
    assert len(remaining) == 2 and objects is not None and len(objects) == 3  # the deleted one's file is gone
    assert receipt.status == "complete" and receipt.kind == "source" and receipt.target_id == gone
    assert receipt.counts["agent.knowledge_sources"] == 1 and receipt.counts["objects"] == 1
    assert receipt.counts["agent.knowledge_chunks"] > 3  # more than one batch
    assert receipt.counts["agent.knowledge_postings"] > 0 and receipt.counts["agent.knowledge_searchable"] == 1
    assert receipt.object_keys and all(k.endswith("/") for k in receipt.object_keys)


async def test_refusals_change_nothing_and_a_repeat_names_the_receipt(kit: Kit, factory: Factory) -> None:
    org, other = await factory.organization(), await factory.organization()
    mine = await kit.ingest(org, GONE)
    platform = await kit.ingest(None, KEEP)
    before = await kept(kit.db)
    with pytest.raises(UnknownSourceError):
        await delete_source(kit.db, kit.store, uuid4(), organization_id=org, operator=False, requested_by="t")
    with pytest.raises(UnknownSourceError):  # another organization's source answers as an unknown one
        await delete_source(kit.db, kit.store, mine, organization_id=other, operator=False, requested_by="t")
    with pytest.raises(PlatformSourceForbiddenError):
        await delete_source(kit.db, kit.store, platform, organization_id=None, operator=False, requested_by="t")
    with pytest.raises(UnknownSourceError):  # an organization caller never reaches a platform source
        await delete_source(kit.db, kit.store, platform, organization_id=org, operator=True, requested_by="t")
    assert await kept(kit.db) == before
    assert (await _rows_of(kit, mine))["sources"] == 1 and (await _rows_of(kit, platform))["sources"] == 1

    first = await delete_source(kit.db, kit.store, mine, organization_id=org, operator=False, requested_by="t")
    with pytest.raises(SourceDeletedError) as repeat:
        await delete_source(kit.db, kit.store, mine, organization_id=org, operator=False, requested_by="t")
    assert repeat.value.receipt_id == str(first.id) and str(first.id) in repeat.value.message
    with pytest.raises(UnknownSourceError):  # the other organization learns nothing, not even the receipt
        await delete_source(kit.db, kit.store, mine, organization_id=other, operator=False, requested_by="t")
    done = await delete_source(kit.db, kit.store, platform, organization_id=None, operator=True, requested_by="op")
    assert done.organization_id is None and done.counts["agent.knowledge_sources"] == 1


async def test_a_delete_killed_between_batches_is_finished_by_a_rerun_with_exact_counts(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    gone = await kit.ingest(org, GONE)
    async with kit.db.connection() as conn:
        total = await conn.fetchval("SELECT count(*) FROM agent.knowledge_chunks WHERE source_id = $1", gone)
    batches = 0

    async def die() -> None:
        nonlocal batches
        batches += 1
        if batches == 2:
            raise Crash

    with pytest.raises(Crash):
        await delete_source(kit.db, kit.store, gone, organization_id=org, operator=False, requested_by="t",
                            batch_size=2, on_batch=die)  # fmt: skip
    assert not any("zeppelin" in t for t in await _hits(kit, org, "zeppelin ballast crate"))  # unsearchable meanwhile
    receipt = await delete_source(kit.db, kit.store, gone, organization_id=org, operator=False, requested_by="t")
    assert receipt.status == "complete" and receipt.resumed == 1
    assert receipt.counts["agent.knowledge_chunks"] == total and receipt.counts["agent.knowledge_sources"] == 1
    assert await _rows_of(kit, gone) == {"chunks": 0, "models": 0, "searchable": 0, "sources": 0}
    await assert_consistent(kit.db)


async def test_searches_of_this_and_another_organization_answer_between_batches_without_the_deleted_text(
    kit: Kit, factory: Factory
) -> None:
    org, other = await factory.organization(), await factory.organization()
    await kit.ingest(org, KEEP)
    gone = await kit.ingest(org, GONE)
    await kit.ingest(other, GONE)
    seen: list[tuple[int, int]] = []

    async def between() -> None:
        mine = await _hits(kit, org, "zeppelin ballast lighthouse")
        theirs = await _hits(kit, other, "zeppelin ballast crate")
        assert mine and not any("zeppelin" in t for t in mine)
        seen.append((len(mine), len(theirs)))

    await delete_source(kit.db, kit.store, gone, organization_id=org, operator=False, requested_by="t",
                        batch_size=2, on_batch=between)  # fmt: skip
    assert len(seen) >= 3 and all(theirs > 0 for _, theirs in seen)


async def test_shared_object_key_stays_while_another_source_names_it(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    gone = await kit.ingest(org, GONE)
    async with kit.db.connection() as conn:
        row = await conn.fetchrow("SELECT * FROM agent.knowledge_sources WHERE id = $1", gone)
        await conn.execute(
            "INSERT INTO agent.knowledge_sources (organization_id, kind, title, uri, object_key, content_sha256, "
            "byte_size) VALUES ($1, 'uri', 'same bytes', 'https://x.example/a', $2, $3, $4)",
            org, row["object_key"], row["content_sha256"], row["byte_size"],
        )  # fmt: skip
    receipt = await delete_source(kit.db, kit.store, gone, organization_id=org, operator=False, requested_by="t")
    assert "objects" not in receipt.counts and not receipt.object_keys
    assert await kit.store.exists(row["object_key"])


async def test_erasing_an_organization_removes_all_its_knowledge_and_nothing_of_another_and_resumes(
    kit: Kit, factory: Factory
) -> None:
    org, other = await factory.organization(), await factory.organization()
    for text in (KEEP, GONE):
        await kit.ingest(org, text)
        await kit.ingest(other, text)
    platform = await kit.ingest(None, KEEP)
    async with kit.db.connection() as conn:
        await conn.execute(
            "INSERT INTO public.knowledge_settings (organization_id, active_embedding_model)"
            " VALUES ($1, 'test/hash-64')",
            org,
        )
        receipt = await begin_receipt(conn, "organization", organization_id=org, target_id=org, requested_by="t")
    theirs_before = _by_model(await kept(kit.db), other)
    platform_before = _by_model(await kept(kit.db), None)  # type: ignore[arg-type]
    files_before = len([p for p in kit.store.root.rglob("*") if p.is_file()])  # type: ignore[attr-defined]
    batches = 0

    async def die() -> None:
        nonlocal batches
        batches += 1
        if batches == 3:
            raise Crash

    with pytest.raises(Crash):
        await erase_organization_knowledge(kit.db, kit.store, org, receipt_id=receipt.id, batch_size=4, on_batch=die)
    assert not any("zeppelin" in t for t in await _hits(kit, org, "zeppelin ballast crate"))
    await erase_organization_knowledge(kit.db, kit.store, org, receipt_id=receipt.id, batch_size=4)
    await erase_organization_knowledge(kit.db, kit.store, org, receipt_id=receipt.id, batch_size=4)  # a no-op

    async with kit.db.connection() as conn:
        left = await conn.fetchrow(
            "SELECT (SELECT count(*) FROM agent.knowledge_sources WHERE organization_id = $1) AS sources,"
            " (SELECT count(*) FROM agent.knowledge_lexical_scopes WHERE organization_id = $1) AS scopes,"
            " (SELECT count(*) FROM public.knowledge_settings WHERE organization_id = $1) AS settings,"
            " (SELECT count(*) FROM agent.knowledge_chunks c WHERE NOT EXISTS"
            "   (SELECT 1 FROM agent.knowledge_sources s WHERE s.id = c.source_id)) AS orphans,"
            " (SELECT count(*) FROM agent.knowledge_lexemes l WHERE NOT EXISTS"
            "   (SELECT 1 FROM agent.knowledge_lexical_scopes s WHERE s.id = l.scope_id)) AS lexemes,"
            " (SELECT count(*) FROM agent.knowledge_postings p WHERE NOT EXISTS"
            "   (SELECT 1 FROM agent.knowledge_lexical_scopes s WHERE s.id = p.scope_id)) AS postings",
            org,
        )
        finished = await finish_receipt(conn, receipt.id)
    assert dict(left) == {"sources": 0, "scopes": 0, "settings": 0, "orphans": 0, "lexemes": 0, "postings": 0}
    stats = await assert_consistent(kit.db)
    assert _by_model(stats, other) == theirs_before and _by_model(stats, None) == platform_before  # type: ignore[arg-type]
    assert (await _rows_of(kit, platform))["sources"] == 1
    files_after = len([p for p in kit.store.root.rglob("*") if p.is_file()])  # type: ignore[attr-defined]
    assert files_after == files_before - 2
    counts = (await get_receipt(kit.db, finished.id)).counts
    assert counts["agent.knowledge_sources"] == 2 and counts["objects"] == 2
    assert counts["public.knowledge_settings"] == 1 and counts["agent.knowledge_lexical_scopes"] == 1
    async with kit.db.connection() as conn:
        expected = await conn.fetchval(
            "SELECT count(*) FROM agent.knowledge_chunks c JOIN agent.knowledge_sources s ON s.id = c.source_id"
            " WHERE s.organization_id = $1",
            other,
        )
    assert counts["agent.knowledge_chunks"] == expected  # the same documents: counted once, across the crash


async def test_a_deleted_sources_object_is_gone_from_an_s3_bucket_too(db: Database, factory: Factory) -> None:
    import boto3
    from moto.server import ThreadedMotoServer

    from knowledge.documents.objects import S3ObjectStore

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        creds = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
        boto3.session.Session().client("s3", endpoint_url=endpoint, region_name="us-east-1", **creds).create_bucket(
            Bucket="uploads"
        )
        store = S3ObjectStore("uploads", endpoint_url=endpoint, region="us-east-1", access_key="testing",
                              secret_key="testing", addressing_style="path")  # fmt: skip
        s3_kit = Kit(db, store)  # type: ignore[arg-type]
        await s3_kit.use_platform_model()
        org = await factory.organization()
        source_id = await s3_kit.ingest(org, GONE)
        async with db.connection() as conn:
            key = await conn.fetchval("SELECT object_key FROM agent.knowledge_sources WHERE id = $1", source_id)
        assert await store.exists(key)
        receipt = await delete_source(db, store, source_id, organization_id=org, operator=False, requested_by="t")
        assert not await store.exists(key), "the object leaves the bucket with its source"
        assert receipt.counts["objects"] == 1
    finally:
        server.stop()
