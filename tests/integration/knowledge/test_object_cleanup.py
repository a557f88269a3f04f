"""Objects leave the store with the rows that named them: a re-sync's replaced version, a superseded pending
version, a delete's every version; a crash between the commit and the store is caught by the queue of
migrations/0098, drained by the sweep or counted by an erasure. Object keys name sources, not content."""

from __future__ import annotations

import hashlib
from pathlib import Path
from uuid import UUID

from functions.organization_erasure import erase_organization
from knowledge.documents.objects import object_key_for, object_prefix_for
from knowledge.ingestion.bulk import ingest_sources
from knowledge.ingestion.core import build_source_model, ingest_source
from knowledge.ingestion.delete import delete_source
from knowledge.ingestion.object_deletes import drain_object_deletes
from knowledge.ingestion.registration import Document, register_many, register_upload, register_uri
from knowledge.ingestion.steps import embed_batch, mark_ready, prepare_chunks
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit

URI = "https://help.example/pricing"
V1, V2, V3 = (f"# Pricing\n\nThe plan costs {n} euros per seat.".encode() for n in (100, 250, 400))


async def _sync(kit: Kit, org: UUID, data: bytes) -> UUID:
    registered = await register_uri(kit.db, kit.store, organization_id=org, uri=URI, data=data,
                                    media_type="text/markdown")  # fmt: skip
    return registered.source_id


async def _queued(kit: Kit) -> list[str]:
    async with kit.db.connection() as conn:
        return [r[0] for r in await conn.fetch("SELECT object_key FROM agent.knowledge_object_deletes ORDER BY 1")]


def _files(root: Path) -> list[str]:
    """Every file and folder under the local store's root, as relative paths."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


async def test_a_resync_deletes_the_replaced_versions_object_when_the_new_one_is_ready(
    kit: Kit, factory: Factory
) -> None:
    """Rule: the swap's replaced version leaves the store (and its folder) right after the commit."""
    org = await factory.organization()
    old = await _sync(kit, org, V1)
    await ingest_source(kit.ingestion(), old)
    new = await _sync(kit, org, V2)
    prefix = object_prefix_for(org)
    assert await kit.store.list_prefix(prefix) == sorted([object_key_for(org, old), object_key_for(org, new)])

    await ingest_source(kit.ingestion(), new)

    assert await kit.store.list_prefix(prefix) == [object_key_for(org, new)], "the replaced version's object went"
    assert _files(kit.store.root) == ["org", f"org/{org}", f"org/{org}/{new}", object_key_for(org, new)]
    assert await _queued(kit) == []


async def test_a_bulk_resync_deletes_the_replaced_versions_object(kit: Kit, factory: Factory) -> None:
    """Rule: the bulk core's swap deletes the replaced objects as the single path does."""
    org = await factory.organization()
    old = await _sync(kit, org, V1)
    await ingest_sources(kit.db, kit.store, [old], embedders=kit.lookup)
    new = await _sync(kit, org, V2)
    await ingest_sources(kit.db, kit.store, [new], embedders=kit.lookup)
    assert await kit.store.list_prefix(object_prefix_for(org)) == [object_key_for(org, new)]
    assert await _queued(kit) == []


async def test_the_resumable_steps_delete_the_replaced_versions_object(kit: Kit, factory: Factory) -> None:
    """Rule: `mark_ready` (the Inngest function's last step) deletes the replaced object after its commit."""
    org = await factory.organization()
    old = await _sync(kit, org, V1)
    await build_source_model(kit.db, kit.store, old, kit.embedders[FAKE])
    new = await _sync(kit, org, V2)
    assert (await build_source_model(kit.db, kit.store, new, kit.embedders[FAKE])).ready
    assert await kit.store.list_prefix(object_prefix_for(org)) == [object_key_for(org, new)]
    assert await _queued(kit) == []


async def test_a_superseded_pending_version_leaves_the_store_at_once(kit: Kit, factory: Factory) -> None:
    """Rule: a newer sync dropping a pending version deletes that version's object too."""
    org = await factory.organization()
    live = await _sync(kit, org, V1)
    await ingest_source(kit.ingestion(), live)
    pending = await _sync(kit, org, V2)
    newer = await _sync(kit, org, V3)
    assert pending != newer
    assert await kit.store.list_prefix(object_prefix_for(org)) == sorted(
        [object_key_for(org, live), object_key_for(org, newer)]
    )
    await _sync(kit, org, V1)  # the live text again: the pending newer one is stale and goes with its object
    assert await kit.store.list_prefix(object_prefix_for(org)) == [object_key_for(org, live)]
    assert await _queued(kit) == []


async def test_the_same_content_again_writes_no_object_and_keys_hold_no_hash(kit: Kit, factory: Factory) -> None:
    """Rule: idempotency lives in the row's hash, not in the key; a repeat writes (and leaves) nothing."""
    org = await factory.organization()
    data = b"# Handbook\n\nrefunds within thirty days"
    first = await register_upload(kit.db, kit.store, organization_id=org, data=data, filename="handbook.md")
    again = await register_upload(kit.db, kit.store, organization_id=org, data=data, filename="other.md")
    live = await _sync(kit, org, V1)
    await _sync(kit, org, V1)
    bulk = await register_many(kit.db, kit.store, organization_id=org, documents=[
        Document(data, "third.md"), Document(V1, "", uri=URI), Document(b"# New\n\nfresh", "new.md"),
        Document(b"# New\n\nfresh", "twice.md"),
    ])  # fmt: skip
    assert again.source_id == first.source_id and [r.source_id for r in bulk[:2]] == [first.source_id, live]
    assert bulk[2].source_id == bulk[3].source_id
    keys = await kit.store.list_prefix(object_prefix_for(org))
    assert keys == sorted(object_key_for(org, s) for s in (first.source_id, live, bulk[2].source_id))
    digests = {hashlib.sha256(d).hexdigest() for d in (data, V1, b"# New\n\nfresh")}
    assert not [p for p in _files(kit.store.root) if any(d in p for d in digests)], "no name holds a content hash"
    assert not [p for p in _files(kit.store.root) if "handbook" in p or ".md" in p], "no name holds a file name"


async def test_a_delete_removes_every_version_object_of_a_resyncing_source(kit: Kit, factory: Factory) -> None:
    """Rule: deleting a source with a pending new version deletes both objects and lists both on the receipt."""
    org = await factory.organization()
    live = await _sync(kit, org, V1)
    await ingest_source(kit.ingestion(), live)
    pending = await _sync(kit, org, V2)
    receipt = await delete_source(kit.db, kit.store, live, organization_id=org, operator=False, requested_by="t")
    assert await kit.store.list_prefix(object_prefix_for(org)) == []
    assert _files(kit.store.root) == [], "no empty folder is left"
    assert receipt.counts["objects"] == 2
    assert receipt.object_keys == tuple(sorted(f"org/{org}/{s}/" for s in (live, pending)))


async def _swap_without_the_store(kit: Kit, org: UUID) -> tuple[UUID, UUID]:
    """A re-sync whose process died between the swap's commit and the object delete (the store never called)."""
    old = await _sync(kit, org, V1)
    await ingest_source(kit.ingestion(), old)
    new = await _sync(kit, org, V2)
    await prepare_chunks(kit.db, kit.store, new, FAKE)
    await embed_batch(kit.db, new, kit.embedders[FAKE], batch_size=100)
    assert (await mark_ready(kit.db, new, FAKE)).source_ready  # no store: the object delete stays queued
    assert await kit.store.exists(object_key_for(org, old))
    assert await _queued(kit) == [object_key_for(org, old)]
    return old, new


async def test_a_crash_after_the_swap_leaves_the_delete_queued_and_the_sweep_drains_it(
    kit: Kit, factory: Factory
) -> None:
    """Rule: the replaced key is queued in the swap's transaction, so a crash never strands its object."""
    org, other = await factory.organization(), await factory.organization()
    old, new = await _swap_without_the_store(kit, org)
    assert await drain_object_deletes(kit.db, kit.store, scope=other) == [], "another organization's drain"
    assert await drain_object_deletes(kit.db, kit.store) == [object_key_for(org, old)]
    assert await kit.store.list_prefix(object_prefix_for(org)) == [object_key_for(org, new)]
    assert await _queued(kit) == []


async def test_an_erasure_deletes_a_stranded_replaced_object_and_counts_it(kit: Kit, factory: Factory) -> None:
    """Rule: an erasure drains its organization's queue and lists what it removed on its receipt."""
    from state.organizations import create_organization

    org = (await create_organization(kit.db, "Stranded")).id
    old, new = await _swap_without_the_store(kit, org)
    receipt = await erase_organization(kit.db, kit.store, org, requested_by="t")
    assert receipt.counts["agent.knowledge_object_deletes"] == 1 and receipt.counts["objects"] == 2
    assert set(receipt.object_keys) == {f"org/{org}/{old}/", f"org/{org}/{new}/"}
    assert await kit.store.list_prefix(object_prefix_for(org)) == []
    assert await _queued(kit) == []
    assert _files(kit.store.root) == []


async def test_a_refused_registration_leaves_no_object(kit: Kit, factory: Factory) -> None:
    """Rule: an object written for a registration that is then refused is deleted before the refusal."""
    import pytest

    from knowledge._sql import QUERIES
    from knowledge.errors import SourceDeletingError

    org = await factory.organization()
    live = await _sync(kit, org, V1)
    await ingest_source(kit.ingestion(), live)
    async with kit.db.connection() as conn:  # a delete's first step (knowledge/ingestion/delete.py)
        await conn.execute(QUERIES["mark_sources_deleting"], [live])
    with pytest.raises(SourceDeletingError):
        await _sync(kit, org, V2)
    assert await kit.store.list_prefix(object_prefix_for(org)) == [object_key_for(org, live)]


async def test_a_source_stored_under_a_content_addressed_key_leaves_no_folder(kit: Kit, factory: Factory) -> None:
    """Rule: a row written before migration 0098 keeps its old key; its delete leaves no folder named by the hash."""
    org = await factory.organization()
    source = await _sync(kit, org, V1)
    await ingest_source(kit.ingestion(), source)
    digest = hashlib.sha256(V1).hexdigest()
    old_key = f"org/{org}/{digest}/pricing.md"  # the key format before 0098
    await kit.store.put(old_key, V1, content_type="text/markdown")
    await kit.store.delete(object_key_for(org, source))
    async with kit.db.connection() as conn:
        await conn.execute("UPDATE agent.knowledge_sources SET object_key = $1 WHERE id = $2", old_key, source)
    receipt = await delete_source(kit.db, kit.store, source, organization_id=org, operator=False, requested_by="t")
    assert receipt.counts["objects"] == 1 and _files(kit.store.root) == []
