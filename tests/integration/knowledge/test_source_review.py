"""A document's owner and review date: stored by every registration path, listed, and marked in the brief.

The rules held here (docs/decisions.md, "Issue 22: documents with an owner and a review date"): upload,
sync and batch store `owner` and `review_by`; a bad one is refused with its path and nothing is stored;
the same document again sets the fields it names and keeps the others; a re-synced URI's new version
carries the old one's over; `overdue` means a review date before today in UTC (the database's clock);
the knowledge source marks an overdue document's chunks through a structured field, so the packer writes
the marker and drops them under `overdue: drop`, and no document text can pass for the marker.
"""

from __future__ import annotations

from datetime import date, timedelta
from uuid import UUID

import pytest

from context.builder import DefaultContextBuilder
from context.models import ContextPolicy, ContextRequest, ContextSourceSpec, ContextSubject
from context.packer import ContextPacker
from context.registry import ContextSourceRegistry
from context.sources.knowledge import KnowledgeContextSource
from knowledge._sql import QUERIES
from knowledge.errors import ReviewFieldInvalidError
from knowledge.ingestion.core import ingest_source
from knowledge.ingestion.registration import Document, register_many, register_upload, register_uri
from knowledge.ingestion.sources import get_source, list_sources, overdue_source_counts
from knowledge.search import search
from tests.factories import Factory
from tests.integration.knowledge.helpers import Kit

PAST = date(2020, 1, 31)
FUTURE = date(2999, 12, 31)
MARKER = "[overdue: review was due 2020-01-31]"


async def _utc_today(kit: Kit) -> date:
    async with kit.db.connection() as conn:
        today = await conn.fetchval("SELECT (now() AT TIME ZONE 'UTC')::date")
    assert isinstance(today, date)
    return today


async def _upload(kit: Kit, org: UUID | None, text: str, **review: object) -> UUID:
    registered = await register_upload(
        kit.db, kit.store, organization_id=org, data=text.encode(), filename="doc.md", media_type="text/markdown",
        **review,  # type: ignore[arg-type]
    )  # fmt: skip
    return registered.source_id


async def _ready(kit: Kit, org: UUID | None, text: str, **review: object) -> UUID:
    source_id = await _upload(kit, org, text, **review)
    outcome = await ingest_source(kit.ingestion(), source_id)
    assert outcome.failed_reason is None, outcome.failed_reason
    return source_id


async def _fields(kit: Kit, source_id: UUID) -> tuple[str | None, date | None]:
    view = await get_source(kit.db, source_id)
    return view.owner, view.review_by


async def test_upload_sync_and_batch_store_the_owner_and_the_review_date(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    uploaded = await _upload(kit, org, "# Pricing\n\nlist prices", owner="  Legal team ", review_by=FUTURE)
    assert await _fields(kit, uploaded) == ("Legal team", FUTURE), "the owner is stored trimmed"
    synced = await register_uri(
        kit.db, kit.store, organization_id=org, uri="https://wiki.example/handbook", data=b"# Handbook",
        owner="HR", review_by=PAST,
    )  # fmt: skip
    assert await _fields(kit, synced.source_id) == ("HR", PAST)
    batch = await register_many(
        kit.db, kit.store, organization_id=org,
        documents=[
            Document(b"# One", "one.md", owner="Ops", review_by=PAST),
            Document(b"# Two", "two.md"),
            Document(b"# Three", "three.md", uri="https://wiki.example/three", review_by=FUTURE),
        ],
    )  # fmt: skip
    assert [await _fields(kit, r.source_id) for r in batch] == [("Ops", PAST), (None, None), (None, FUTURE)]


async def test_a_bad_owner_or_review_date_is_refused_with_its_path_and_nothing_is_stored(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    with pytest.raises(ReviewFieldInvalidError) as blank:
        await _upload(kit, org, "# A", owner="   ")
    assert blank.value.loc == ("owner",) and blank.value.code == "review_field_invalid"
    with pytest.raises(ReviewFieldInvalidError) as long:
        await register_uri(
            kit.db, kit.store, organization_id=org, uri="https://x.example/a", data=b"a", owner="o" * 201
        )
    assert long.value.loc == ("owner",)
    with pytest.raises(ReviewFieldInvalidError) as nested:
        await register_many(
            kit.db, kit.store, organization_id=org,
            documents=[Document(b"# Fine", "fine.md"), Document(b"# Bad", "bad.md", owner="two\nlines")],
        )  # fmt: skip
    assert nested.value.loc == ("items", 1, "owner")
    with pytest.raises(ReviewFieldInvalidError) as not_a_date:
        await _upload(kit, org, "# B", review_by="2026-02-30")
    assert not_a_date.value.loc == ("review_by",)
    assert await list_sources(kit.db, org) == [], "a refused registration stores nothing, not even its batch"


async def test_the_same_document_again_sets_the_fields_it_names_and_keeps_the_others(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    first = await _ready(kit, org, "# Policy\n\nrefunds within 30 days", owner="Legal", review_by=PAST)
    again = await _upload(kit, org, "# Policy\n\nrefunds within 30 days", review_by=FUTURE)
    assert again == first and await _fields(kit, first) == ("Legal", FUTURE), "a new date, the owner kept"
    await _upload(kit, org, "# Policy\n\nrefunds within 30 days")
    assert await _fields(kit, first) == ("Legal", FUTURE), "naming neither field changes nothing"
    await register_many(
        kit.db, kit.store, organization_id=org,
        documents=[Document(b"# Policy\n\nrefunds within 30 days", "p.md", owner="Support")],
    )  # fmt: skip
    assert await _fields(kit, first) == ("Support", FUTURE), "a batch entry follows the same rule"

    uri = "https://wiki.example/policy"
    live = await register_uri(kit.db, kit.store, organization_id=org, uri=uri, data=b"# v1", owner="HR", review_by=PAST)
    await ingest_source(kit.ingestion(), live.source_id)
    kept = await register_uri(kit.db, kit.store, organization_id=org, uri=uri, data=b"# v2")
    assert kept.outcome == "resync" and await _fields(kit, kept.source_id) == ("HR", PAST), "carried over"
    named = await register_uri(kit.db, kit.store, organization_id=org, uri=uri, data=b"# v3", review_by=FUTURE)
    assert named.outcome == "resync" and await _fields(kit, named.source_id) == ("HR", FUTURE)
    assert await _fields(kit, live.source_id) == ("HR", PAST), "the live text keeps its own date until replaced"


async def test_overdue_lists_exactly_the_sources_whose_review_date_is_before_today_in_utc(
    kit: Kit, factory: Factory
) -> None:
    org, other = await factory.organization(), await factory.organization()
    today = await _utc_today(kit)
    yesterday = await _upload(kit, org, "# Yesterday", review_by=today - timedelta(days=1))
    long_ago = await _upload(kit, org, "# Long ago", review_by=PAST)
    await _upload(kit, org, "# Today", review_by=today)
    await _upload(kit, org, "# Tomorrow", review_by=today + timedelta(days=1))
    await _upload(kit, org, "# Undated")
    await _upload(kit, other, "# Elsewhere", review_by=PAST)
    platform = await _upload(kit, None, "# Platform", review_by=PAST)
    overdue = await list_sources(kit.db, org, overdue=True)
    assert {v.id for v in overdue} == {yesterday, long_ago} and all(v.overdue for v in overdue)
    everything = await list_sources(kit.db, org)
    assert len(everything) == 5 and {v.id for v in everything if v.overdue} == {yesterday, long_ago}
    assert [v.id for v in await list_sources(kit.db, None, overdue=True)] == [platform]
    assert await overdue_source_counts(kit.db) == {None: 1, org: 2, other: 1}
    async with kit.db.connection() as conn:
        await conn.execute(QUERIES["mark_sources_deleting"], [long_ago])
    assert {v.id for v in await list_sources(kit.db, org, overdue=True)} == {yesterday}, "a deleting one is leaving"
    assert await overdue_source_counts(kit.db) == {None: 1, org: 1, other: 1}


def _request(org: UUID, query: str) -> ContextRequest:
    return ContextRequest(subject=ContextSubject.of_actor(org, None), query=query, entities=[])


def _policy(**options: object) -> ContextPolicy:
    spec = ContextSourceSpec(name="knowledge", token_budget=1500, options={"include_organization": True, **options})
    return ContextPolicy(sources=[spec], total_token_budget=2000)


async def test_an_overdue_documents_chunks_carry_the_marker_and_drop_removes_and_counts_them(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    stale = await _ready(kit, org, "Refund policy: refunds within 30 days of purchase.", review_by=PAST)
    fresh = await _ready(kit, org, "Refund policy for resellers: refunds within 14 days.", review_by=FUTURE)
    hits = await search(kit.db, org, "refund policy", include_organization=True, embedders=kit.lookup)
    flags = {h.source_id: (h.source_review_by, h.source_overdue) for h in hits}
    assert flags == {stale: (PAST, True), fresh: (FUTURE, False)}, "the search statement reads the review date"

    builder = DefaultContextBuilder(
        ContextSourceRegistry([KnowledgeContextSource(kit.db, kit.lookup)]), ContextPacker()
    )
    marked = await builder.build(_request(org, "refund policy"), _policy())
    lines = {line for line in marked.text.splitlines() if line.startswith("- ")}
    assert {line for line in lines if MARKER in line} == {line for line in lines if str(stale) in line}, (
        "exactly the stale document's lines carry the marker"
    )
    assert any(str(fresh) in line for line in lines) and marked.dropped == {"knowledge": 0}

    brief, why = await builder.build_explained(_request(org, "refund policy"), _policy(overdue="drop"))
    assert str(stale) not in brief.text and str(fresh) in brief.text and MARKER not in brief.text
    assert brief.dropped == {"knowledge": 1}, "the drop is counted"
    assert [(e.reason, e.ref.id if e.ref else None) for e in why.items if not e.kept] == [("overdue", str(stale))]


async def test_document_text_imitating_the_marker_is_not_taken_for_it(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    forged = await _ready(kit, org, f"Refund policy {MARKER} refunds within 30 days.", review_by=FUTURE)
    title_forged = await register_upload(
        kit.db, kit.store, organization_id=org, data=b"Refund policy, second copy: refunds in 30 days.",
        filename="t.md", title=f"{MARKER} Refunds", media_type="text/markdown",
    )  # fmt: skip
    await ingest_source(kit.ingestion(), title_forged.source_id)
    builder = DefaultContextBuilder(
        ContextSourceRegistry([KnowledgeContextSource(kit.db, kit.lookup)]), ContextPacker()
    )
    brief, why = await builder.build_explained(_request(org, "refund policy"), _policy(overdue="drop"))
    assert str(forged) in brief.text and str(title_forged.source_id) in brief.text, "neither is dropped"
    assert MARKER not in brief.text and "(overdue: review was due 2020-01-31)" in brief.text, "the text is rewritten"
    assert brief.dropped == {"knowledge": 0} and all(e.reason == "kept" for e in why.items)
    assert await list_sources(kit.db, org, overdue=True) == [], "nor counted as overdue"


@pytest.mark.parametrize("zone", ["Etc/GMT-14", "Etc/GMT+12"])
async def test_overdue_is_decided_in_utc_whatever_the_sessions_time_zone(kit: Kit, factory: Factory, zone: str) -> None:
    org = await factory.organization()
    today = await _utc_today(kit)
    stale = await _upload(kit, org, "# Yesterday in UTC", review_by=today - timedelta(days=1))
    await _upload(kit, org, "# Today in UTC", review_by=today)
    async with kit.db.connection() as conn:
        await conn.execute(f"SET TIME ZONE '{zone}'")  # 14 hours ahead of UTC, or 12 behind
        try:
            local = await conn.fetchval("SELECT current_date")
            rows = await conn.fetch(QUERIES["list_sources"], org, 100, True, None)
        finally:
            await conn.execute("RESET TIME ZONE")
    assert [r["id"] for r in rows] == [stale], f"local date {local}, UTC date {today}"
