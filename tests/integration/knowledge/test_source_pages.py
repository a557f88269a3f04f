"""Paged reads of sources, chunks and progress (knowledge/ingestion/source_pages.py).

The rules: a walk by cursor shows every source of the scope exactly once, newest first, while sources are
registered between pages; `total` counts what the filters match (status, overdue, title text), not the
page; a cursor made under other filters is refused; a source's chunks page in ordinal order, full text,
under the model it is shown under; a source outside the caller's scope is not found, as an unknown one;
progress names the stage and the chunks done.
"""

from __future__ import annotations

from datetime import date
from uuid import UUID, uuid4

import pytest

from knowledge.errors import SourceNotFoundError
from knowledge.ingestion.source_pages import page_chunks, page_sources, source_progress
from knowledge.ingestion.steps import prepare_chunks
from state.paging import InvalidCursorError, Page
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit

LONG = "\n\n".join(f"## Part {i}\n\n" + " ".join(f"word{i}x{j}" for j in range(120)) for i in range(12))


async def _walk(kit: Kit, org: UUID, *, limit: int, add_between: int = 0, **filters: object) -> list[UUID]:
    seen: list[UUID] = []
    cursor: str | None = None
    for _ in range(100):  # a cursor that never advances fails here, never hangs
        page = await page_sources(kit.db, org, cursor=cursor, limit=limit, **filters)  # type: ignore[arg-type]
        seen.extend(r.source.id for r in page.items)
        for _ in range(add_between):
            await kit.register(org, f"inserted meanwhile {uuid4()}")
        if page.next_cursor is None:
            return seen
        cursor = page.next_cursor
    raise AssertionError("the walk never reached a last page")


async def _same_instant(kit: Kit, ids: list[UUID]) -> None:
    async with kit.db.connection() as conn:
        await conn.execute(
            "UPDATE agent.knowledge_sources SET created_at = '2026-01-01T00:00:00Z' WHERE id = ANY($1)", ids
        )


async def test_a_walk_shows_every_source_once_newest_first_while_sources_arrive(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    ids = [await kit.register(org, f"document {i}") for i in range(7)]
    await _same_instant(kit, ids[:4])  # ties on created_at are ordered by id, never skipped or repeated
    before = await page_sources(kit.db, org, limit=3)
    assert before.total == 7
    seen = await _walk(kit, org, limit=3, add_between=2)
    assert sorted(seen) == sorted(ids), "every source there when the walk began, exactly once"
    assert len(seen) == len(set(seen)) == 7, "sources registered meanwhile land before the cursor, not in the walk"
    first = (await page_sources(kit.db, org, limit=100)).items
    order = [(r.created_at, r.source.id) for r in first]
    assert order == sorted(order, reverse=True), "newest first, ties by id"


async def test_filters_narrow_the_rows_and_the_total(kit: Kit, factory: Factory) -> None:
    org, other = await factory.organization(), await factory.organization()
    ready = await kit.ingest(org, "a ready document about Pricing tiers", title="Pricing Handbook")
    failed = await kit.register(org, "a failing document", title="pricing notes")
    await kit.set_failed(failed)
    pending = await kit.register(org, "a pending document", title="Onboarding")
    await kit.register(other, "another organization's pricing", title="Pricing elsewhere")
    async with kit.db.connection() as conn:
        await conn.execute("UPDATE agent.knowledge_sources SET review_by = $2 WHERE id = $1", pending, date(2020, 1, 1))
    cases: list[tuple[dict[str, object], set[UUID]]] = [
        ({}, {ready, failed, pending}),
        ({"status": "failed"}, {failed}),
        ({"status": "ready"}, {ready}),
        ({"overdue": True}, {pending}),
        ({"title": "  PRICING "}, {ready, failed}),
        ({"title": "pricing", "status": "ready"}, {ready}),
        ({"title": "%"}, set()),
    ]
    for filters, expected in cases:
        page: Page = await page_sources(kit.db, org, limit=1, **filters)  # type: ignore[arg-type]
        assert page.total == len(expected), f"total under {filters} counts the matching rows, not the page"
        assert set(await _walk(kit, org, limit=1, **filters)) == expected, f"rows under {filters}"
    row = next(r for r in (await page_sources(kit.db, org)).items if r.source.id == ready)
    assert (row.embedding_model, row.chunk_count, row.source.status) == (FAKE, row.embedded_count, "ready")
    assert row.chunk_count and row.chunk_count > 0
    overdue_row = next(r for r in (await page_sources(kit.db, org)).items if r.source.id == pending)
    assert overdue_row.source.overdue and overdue_row.embedding_model == FAKE and overdue_row.chunk_count is None


async def test_a_cursor_of_other_filters_or_another_scope_is_refused(kit: Kit, factory: Factory) -> None:
    org, other = await factory.organization(), await factory.organization()
    for i in range(3):
        await kit.register(org, f"doc {i}")
    cursor = (await page_sources(kit.db, org, limit=1)).next_cursor
    assert cursor is not None
    with pytest.raises(InvalidCursorError):
        await page_sources(kit.db, other, cursor=cursor, limit=1)
    with pytest.raises(InvalidCursorError):
        await page_sources(kit.db, org, cursor=cursor, limit=1, status="failed")
    with pytest.raises(InvalidCursorError):
        await page_sources(kit.db, org, cursor=cursor + "x", limit=1)


async def test_a_sources_chunks_page_in_ordinal_order_with_full_text(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    source = await kit.ingest(org, LONG, title="Long")
    chunks, cursor = [], None
    for _ in range(100):  # a cursor that never advances fails here, never hangs
        page = await page_chunks(kit.db, source, organization_id=org, cursor=cursor, limit=2)
        chunks.extend(page.items)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    else:
        raise AssertionError("the walk never reached a last page")
    assert page.total == len(chunks) > 2
    assert [c.ordinal for c in chunks] == list(range(len(chunks))), "every chunk once, in ordinal order"
    assert all(c.embedding_model == FAKE and c.embedded for c in chunks)
    async with kit.db.connection() as conn:
        stored = await conn.fetch(
            "SELECT text FROM agent.knowledge_chunks WHERE source_id = $1 ORDER BY ordinal", source
        )
    assert [c.text for c in chunks] == [r["text"] for r in stored], "the full text, never cut"
    assert (await page_chunks(kit.db, source, organization_id=org, model="no/such-model")).total == 0


async def test_a_source_outside_the_scope_is_not_found(kit: Kit, factory: Factory) -> None:
    org, other = await factory.organization(), await factory.organization()
    source = await kit.ingest(org, "mine")
    platform = await kit.ingest(None, "the platform's")
    for scope, sid in ((other, source), (org, platform), (org, uuid4())):
        with pytest.raises(SourceNotFoundError):
            await page_chunks(kit.db, sid, organization_id=scope)
        with pytest.raises(SourceNotFoundError):
            await source_progress(kit.db, sid, organization_id=scope)
    assert (await page_chunks(kit.db, source, organization_id=None, operator=True)).total > 0, "an operator, any"
    assert (await page_chunks(kit.db, platform, organization_id=None)).total > 0, "the platform scope, its own"


async def test_progress_names_the_stage_and_the_chunks_done(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    source = await kit.register(org, LONG)
    assert (await source_progress(kit.db, source, organization_id=org)).stage == "extracting"
    await prepare_chunks(kit.db, kit.store, source, FAKE)
    written = await source_progress(kit.db, source, organization_id=org)
    assert written.stage == "embedding" and written.chunks_total and written.chunks_done < written.chunks_total
    done = await kit.ingest(org, "a whole small document")
    ready = await source_progress(kit.db, done, organization_id=org)
    assert (ready.stage, ready.chunks_done) == ("ready", ready.chunks_total)
    pending = await kit.embedded_pending(org, "all embedded, not yet marked ready")
    assert (await source_progress(kit.db, pending, organization_id=org)).stage == "finishing"
