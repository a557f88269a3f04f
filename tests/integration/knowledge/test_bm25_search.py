"""BM25 ranking, statistics that stay inside their tenant, the relevance floor and the per-source cap."""

from __future__ import annotations

import math
from uuid import UUID

from knowledge.embedding.live_model import begin_switch
from knowledge.search import DEFAULT_MIN_RELEVANCE, DEFAULT_PER_SOURCE, Fusion, KnowledgeHit, search
from knowledge.switchover import reembed_source
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, FAKE2, Kit
from tests.integration.knowledge.lexical import kept

LEXICAL = Fusion(dense=0.0, lexical=1.0)


async def _lexical(kit: Kit, org: UUID, query: str, *, platform: bool = False, limit: int = 10) -> list[KnowledgeHit]:
    return await search(kit.db, org, query, include_platform=platform, include_organization=True, limit=limit,
                        fusion=LEXICAL, min_relevance=0.0, embedders=kit.lookup)  # fmt: skip


async def test_a_rarer_term_outranks_a_commoner_one_at_equal_term_frequency(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    rare = await kit.ingest(org, "zebra mango")
    common = await kit.ingest(org, "apple mango")
    for other in ("kiwi", "pear", "plum", "fig"):
        await kit.ingest(org, f"apple {other}")
    hits = await _lexical(kit, org, "zebra apple")
    assert hits[0].source_id == rare
    assert {h.source_id for h in hits[1:]} >= {common}
    by_source = {h.source_id: h for h in hits}
    assert by_source[rare].lexical_score > by_source[common].lexical_score  # type: ignore[operator]

    # The score is Okapi BM25 (k1 1.2, b 0.75) over the scope's own statistics.
    stats = (await kept(kit.db))[(org, FAKE)]
    n, avg = stats["chunks"], stats["total_length"] / stats["chunks"]

    def bm25(df: int, tf: int, length: int) -> float:
        idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
        return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / avg))

    assert math.isclose(by_source[rare].lexical_score, bm25(stats["df"]["zebra"], 1, 2), rel_tol=1e-5)  # type: ignore[arg-type]
    assert math.isclose(by_source[common].lexical_score, bm25(stats["df"]["appl"], 1, 2), rel_tol=1e-5)  # type: ignore[arg-type]


async def test_a_longer_chunk_with_the_same_term_frequency_ranks_lower(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    long = await kit.ingest(org, "zebra mango kiwi pear plum fig grape melon")
    short = await kit.ingest(org, "zebra mango")
    hits = await _lexical(kit, org, "zebra")
    assert [h.source_id for h in hits] == [short, long]
    assert hits[0].lexical_score > hits[1].lexical_score  # type: ignore[operator]


async def test_another_organizations_documents_never_change_a_tenants_scores_or_results(
    kit: Kit, factory: Factory
) -> None:
    a = await factory.organization()
    b = await factory.organization()
    for text in ("zebra mango", "apple mango", "apple kiwi zebra", "pear plum"):
        await kit.ingest(a, text)

    async def seen(platform: bool) -> list[tuple[int, float | None, float]]:
        hits = await search(kit.db, a, "zebra apple mango", include_platform=platform, include_organization=True,
                            embedders=kit.lookup)  # fmt: skip
        lexical = await _lexical(kit, a, "zebra apple mango", platform=platform)
        return [(h.chunk_id, h.lexical_score, h.score) for h in hits] + [
            (h.chunk_id, h.lexical_score, h.score) for h in lexical
        ]

    before = await seen(platform=False)
    before_with_platform = await seen(platform=True)
    for i in range(12):  # B makes "apple" common and "zebra" rare, everywhere but in A
        await kit.ingest(b, f"apple orchard {i}" if i % 2 else f"apple mango zebra {i}")
    assert await seen(platform=False) == before
    assert await seen(platform=True) == before_with_platform

    # The platform's documents do count, when the search includes the platform.
    await kit.ingest(None, "apple apple orchard")
    await kit.ingest(None, "apple cider")
    assert await seen(platform=False) == before
    assert await seen(platform=True) != before_with_platform


async def test_the_relevance_floor_drops_an_unrelated_querys_hits(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    await kit.ingest(org, "Lorem ipsum dolor sit amet, consectetur adipiscing elit.")
    await kit.ingest(org, "/// --- /// --- ///")
    wanted = await kit.ingest(org, "The deal pipeline holds every open opportunity.")
    args = {"include_organization": True, "embedders": kit.lookup}
    unrelated = "quarterly revenue forecast for the CRM account"
    assert await search(kit.db, org, unrelated, **args, min_relevance=0.0)  # type: ignore[arg-type]
    assert await search(kit.db, org, unrelated, **args) == []  # type: ignore[arg-type]
    assert DEFAULT_MIN_RELEVANCE > 0
    related = await search(kit.db, org, "which deal is in the pipeline", **args)  # type: ignore[arg-type]
    assert related[0].source_id == wanted
    assert all(h.relevance is not None and h.relevance >= DEFAULT_MIN_RELEVANCE for h in related)


async def test_the_per_source_cap_limits_the_hits_of_one_source(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    long = "\n\n".join(f"Section {i}: the lifecycle stage {i} of a lead. " + "More words here. " * 60 for i in range(6))
    crowded = await kit.ingest(org, long, title="Long")
    other = await kit.ingest(org, "A short note on the lifecycle stage.", title="Short")
    async with kit.db.connection() as conn:
        chunks = await conn.fetchval("SELECT count(*) FROM agent.knowledge_chunks WHERE source_id = $1", crowded)
    assert chunks >= 4
    args = {"include_organization": True, "limit": 8, "embedders": kit.lookup, "min_relevance": 0.0}
    uncapped = await search(kit.db, org, "lifecycle stage", **args, per_source=None)  # type: ignore[arg-type]
    assert sum(h.source_id == crowded for h in uncapped) >= 4
    # With no room past the cap (limit 3), the cap of 2 leaves room for the other document.
    tight = {**args, "limit": 3}
    capped = await search(kit.db, org, "lifecycle stage", **tight, per_source=2)  # type: ignore[arg-type]
    assert sum(h.source_id == crowded for h in capped) == 2
    assert other in {h.source_id for h in capped}
    assert capped == sorted(capped, key=lambda h: -h.score)
    defaulted = await search(kit.db, org, "lifecycle stage", **{**args, "limit": DEFAULT_PER_SOURCE + 1})  # type: ignore[arg-type]
    assert sum(h.source_id == crowded for h in defaulted) == DEFAULT_PER_SOURCE
    # With room (limit 8), the capped chunks fill it after the other document's, best first.
    filled = await search(kit.db, org, "lifecycle stage", **args, per_source=2)  # type: ignore[arg-type]
    assert [h.placed for h in filled[:3]] == ["rank"] * 3 and other in {h.source_id for h in filled[:3]}
    assert {h.source_id for h in filled[3:]} == {crowded} and {h.placed for h in filled[3:]} == {"cap_fill"}


async def test_a_switch_in_progress_never_counts_the_new_models_statistics_or_postings(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    texts = ["zebra mango", "zebra zebra kiwi", "apple mango pear", "apple zebra plum fig", "apple orchard"]
    sources = [await kit.ingest(org, text) for text in texts]
    platform = [await kit.ingest(None, "apple cider zebra"), await kit.ingest(None, "zebra crossing")]
    query = "zebra apple mango"

    async def seen() -> list[tuple[object, ...]]:
        rows: list[tuple[object, ...]] = []
        for platform_too in (False, True):
            for fusion in (LEXICAL, Fusion(), Fusion(method="rrf")):
                hits = await search(kit.db, org, query, include_platform=platform_too, include_organization=True,
                                    fusion=fusion, min_relevance=0.0, embedders=kit.lookup)  # fmt: skip
                rows += [(h.chunk_id, h.embedding_model, h.lexical_rank, h.lexical_score, h.score) for h in hits]
        return rows

    live_only = await seen()  # only the live model's rows exist
    await begin_switch(kit.db, org, FAKE2, dimensions=32)
    # Part of the scope re-embedded (uneven on purpose: its statistics differ from the live model's in
    # shape, not only in size).
    for source in [*sources[:2], sources[3], platform[0]]:
        await reembed_source(kit.db, kit.store, source, kit.lookup(FAKE2))
    stats = await kept(kit.db)
    assert stats[(org, FAKE2)]["chunks"] == 3 and stats[(None, FAKE2)]["chunks"] == 1  # the switch is open
    assert stats[(org, FAKE2)]["df"]["zebra"] == 3
    assert await seen() == live_only, "the non-live model's statistics or postings changed the BM25 scores"
