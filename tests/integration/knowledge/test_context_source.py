"""The `knowledge` context source: chunks as items, scopes from the options, the subject's organization."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import pytest
from pydantic import ValidationError

from context.models import ContextPolicy, ContextRequest, ContextSourceSpec, ContextSubject
from context.packer import ContextPacker
from context.sources.knowledge import MAX_TITLE_BYTES, KnowledgeContextSource, _title
from knowledge.documents.objects import LocalObjectStore
from knowledge.embedding.registry import get_embedder
from knowledge.ingestion.registration import register_upload
from knowledge.search import DEFAULT_MIN_RELEVANCE
from state.db import Database
from tests.factories import Factory
from tests.integration.knowledge.helpers import Kit


def _request(org: UUID, query: str) -> ContextRequest:
    return ContextRequest(subject=ContextSubject.of_actor(org, None), query=query, entities=[])


def _spec(limit: int | None = None, **options: bool | float) -> ContextSourceSpec:
    return ContextSourceSpec(name="knowledge", token_budget=1500, limit=limit, options=options)


async def test_items_are_chunks_titled_by_their_source_with_the_source_as_ref(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    source = await kit.ingest(org, "Lifecycle stage: lead, opportunity, customer.", title="CRM glossary")
    items = await KnowledgeContextSource(kit.db, kit.lookup).retrieve(
        _request(org, "lifecycle"), _spec(include_organization=True)
    )
    assert len(items) == 1
    item = items[0]
    assert (item.source, item.kind, item.title) == ("knowledge", "knowledge", "CRM glossary (part 1)")
    assert item.body == "Lifecycle stage: lead, opportunity, customer."
    assert item.ref is not None and (item.ref.kind, item.ref.id) == ("knowledge_source", str(source))
    assert item.subject_key is None and item.tokens > 0


async def test_the_options_default_to_no_scope_and_the_limit_to_eight(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    for i in range(10):
        await kit.ingest(org, f"lifecycle note {i}")
    source = KnowledgeContextSource(kit.db, kit.lookup)
    assert await source.retrieve(_request(org, "lifecycle"), _spec()) == []
    assert len(await source.retrieve(_request(org, "lifecycle"), _spec(include_organization=True))) == 8
    assert len(await source.retrieve(_request(org, "lifecycle"), _spec(3, include_organization=True))) == 3
    assert await source.retrieve(_request(org, "lifecycle"), _spec(0, include_organization=True)) == []


async def test_an_option_of_the_wrong_type_or_an_unknown_option_fails(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    source = KnowledgeContextSource(kit.db, kit.lookup)
    for options in ({"include_platform": "true"}, {"organization_id": str(org)}):
        spec = ContextSourceSpec(name="knowledge", token_budget=10, options=options)
        with pytest.raises(ValidationError):
            await source.retrieve(_request(org, "x"), spec)


async def test_the_relevance_floor_reaches_the_search_by_default_and_from_the_policys_option(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    await kit.ingest(org, "Lorem ipsum dolor sit amet, consectetur adipiscing elit.")
    await kit.ingest(org, "/// --- /// --- ///")
    wanted = await kit.ingest(org, "The deal pipeline holds every open opportunity.")
    source = KnowledgeContextSource(kit.db, kit.lookup)
    unrelated = _request(org, "quarterly revenue forecast for the CRM account")
    # No option: the measured default floor (DEFAULT_MIN_RELEVANCE) drops every unrelated chunk.
    assert await source.retrieve(unrelated, _spec(include_organization=True)) == []
    # The policy's own floor is the one the search applies: 0 keeps the unrelated chunks, ...
    kept = await source.retrieve(unrelated, _spec(include_organization=True, min_relevance=0.0))
    assert len(kept) == 3
    # ... and the default, named, drops them again while the related chunk stays.
    floor = _spec(include_organization=True, min_relevance=DEFAULT_MIN_RELEVANCE)
    assert await source.retrieve(unrelated, floor) == []
    related = await source.retrieve(_request(org, "which deal is in the pipeline"), floor)
    assert related[0].ref is not None and related[0].ref.id == str(wanted)
    assert len(related) < len(await source.retrieve(_request(org, "which deal is in the pipeline"), _spec(
        include_organization=True, min_relevance=0.0)))  # fmt: skip


def test_a_long_source_title_is_shortened_to_the_bytes_the_chunk_frame_allows() -> None:
    title = _title("Ü" * 100, 11)
    assert title.endswith("... (part 12)") and len(title.encode()) <= MAX_TITLE_BYTES
    assert _title("Short", 0) == "Short (part 1)"


@pytest.mark.slow
async def test_wordllama_finds_the_fastapi_page_a_question_is_about(
    db: Database, factory: Factory, corpus: Path, tmp_path: Path
) -> None:
    org = await factory.organization()
    store = LocalObjectStore(tmp_path)
    pages = corpus / "markdown" / "fastapi-docs"
    names = ["query-params.md", "path-params.md", "body.md", "cookie-params.md"]
    paths = {p.name: p for p in pages.rglob("*.md") if p.name in names and "tutorial" in str(p)}
    from knowledge.ingestion.core import Ingestion, ingest_source

    ids = {}
    for name, path in sorted(paths.items()):
        registered = await register_upload(db, store, organization_id=org, data=path.read_bytes(), filename=name)
        await ingest_source(Ingestion(db, store, get_embedder), registered.source_id)
        ids[registered.source_id] = name
    request = _request(org, "How do I declare optional query parameters with a default value?")
    items = await KnowledgeContextSource(db, get_embedder).retrieve(request, _spec(5, include_organization=True))
    assert items and ids[UUID(items[0].ref.id)] == "query-params.md"  # type: ignore[union-attr]
    policy = ContextPolicy(sources=[_spec(5, include_organization=True)], total_token_budget=1500)
    brief = ContextPacker().pack(items, policy)
    assert brief.text.count("knowledge_source") >= 1 and brief.dropped == {"knowledge": 0}


async def test_explain_names_the_chunks_the_floor_the_cap_and_the_limit_cut(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    junk = await kit.ingest(org, "/// --- /// --- ///")
    wanted = await kit.ingest(org, "The deal pipeline holds every open opportunity.")
    more = [await kit.ingest(org, f"Deal pipeline review number {n}.") for n in range(2)]
    source = KnowledgeContextSource(kit.db, kit.lookup)
    request, spec = _request(org, "which deal is in the pipeline"), _spec(2, include_organization=True)
    items, cut = await source.retrieve_explained(request, spec)
    assert items == await source.retrieve(request, spec), "explain changes nothing in what the source returns"
    rules = {c.ref.id: c.rule for c in cut if c.ref is not None}
    assert rules[str(junk)] == "relevance_floor"
    assert {rules.get(str(s)) for s in [wanted, *more] if str(s) not in {i.ref.id for i in items if i.ref}} == {
        "beyond_limit"
    }
    floor = next(c for c in cut if c.rule == "relevance_floor")
    assert floor.source == "knowledge" and floor.rank > len(items)
    assert f"relevance floor {DEFAULT_MIN_RELEVANCE:.2f}" in floor.message
    capped = _spec(2, include_organization=True, per_source=1)
    # One document of two chunks: the cap of one, with no room left in the limit, cuts its second chunk.
    two = await kit.ingest(org, "Pipeline stages.\n\n" + "The deal pipeline moves on. " * 60)
    _, cut = await source.retrieve_explained(_request(org, "deal pipeline stages"), capped)
    assert "per_source_cap" in {c.rule for c in cut if c.ref is not None and c.ref.id == str(two)}


async def test_capped_chunks_fill_the_budget_the_other_documents_left_and_explain_says_so(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    manual = await kit.ingest(
        org, "\n\n".join(f"## Step {n}\n\n" + f"Bleed the pump, step {n}. " * 30 for n in range(8)), title="Pump"
    )
    note = await kit.ingest(org, "A note: bleed the pump before winter.", title="Note")
    source = KnowledgeContextSource(kit.db, kit.lookup)
    request, spec = _request(org, "how to bleed the pump"), _spec(include_organization=True, per_source=3)
    items = await source.retrieve(request, spec)
    from_manual = [i for i in items if i.ref is not None and i.ref.id == str(manual)]
    assert len(from_manual) > 3, "the cap of 3 no longer leaves the budget empty when one document answers"
    assert any(i.ref is not None and i.ref.id == str(note) for i in items)
    assert [i.placed_by for i in items] == sorted((i.placed_by for i in items), key=lambda p: p == "cap_fill")
    policy = ContextPolicy(sources=[spec], total_token_budget=6000)
    brief, explanation = ContextPacker().pack_explained(items, policy)
    assert brief.tokens <= 1500
    messages = [e.message for e in explanation.items if e.kept]
    assert any("past its document's cap" in m for m in messages) and any("by its score" in m for m in messages)
