"""The lexical half knows the document (migrations/0093): a chunk's BM25 mixed with its source's.

A chunk's lexical score is (1 - w) x its own Okapi BM25 + w x its source's, the source scored as one
document over the scope's source-level statistics (migrations/0092). The tests check the formula against
the kept statistics, that another organization's documents never move it, and that a long document gains
nothing for being long: a short source that matches the query better stays first at every weight.
"""

from __future__ import annotations

import math
from typing import Any
from uuid import UUID

from pgvector import Vector

from knowledge.search import DEFAULT_FUSION, Fusion, KnowledgeHit, search
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit

# The SQL function called directly on the owner's connection (no row-level security): its own filters only.
CALL = (
    "SELECT chunk_id, source_id, lexical_score, score FROM public.knowledge_search($1, $2, $3, $4, true, 20, "
    "p_dense_weight => $5, p_lexical_weight => 1.0, p_source_weight => $6) ORDER BY score DESC, chunk_id"
)

FILLER = (
    "Boundary layer separation on a swept wing depends on the pressure gradient and the Reynolds number, "
    "and the laminar region shrinks as the Mach number rises over the upper surface of the airfoil. "
)


def _long_document(mentions: int, parts: int = 12) -> str:
    """A long Markdown document: `parts` sections of filler, `mentions` of them naming nozzle thrust once."""
    sections = []
    for n in range(parts):
        text = FILLER * 4
        if n < mentions:
            text += "The nozzle thrust was recorded. "
        sections.append(f"## Section {n}\n\n{text}")
    return "# Wind tunnel campaign\n\n" + "\n\n".join(sections)


async def _lexical(kit: Kit, org: UUID, query: str, *, source: float, platform: bool = False) -> list[KnowledgeHit]:
    fusion = Fusion(dense=0.0, lexical=1.0, source=source)
    return await search(kit.db, org, query, include_platform=platform, include_organization=True, limit=20,
                        fusion=fusion, min_relevance=0.0, per_source=None, embedders=kit.lookup)  # fmt: skip


async def _called(kit: Kit, org: UUID, query: str, *, source: float, platform: bool = False) -> list[Any]:
    vector = (await kit.lookup(FAKE).embed([query]))[0]
    async with kit.db.connection() as conn:
        rows = await conn.fetch(CALL, org, Vector(vector), query, platform, 0.0, source)
    return [tuple(r.values()) for r in rows]


async def _stats(kit: Kit, org: UUID) -> dict[str, Any]:
    async with kit.db.connection() as conn:
        scope = await conn.fetchrow(
            "SELECT id, chunks, total_length, sources, source_length FROM agent.knowledge_lexical_scopes "
            "WHERE organization_id = $1 AND embedding_model = $2",
            org,
            FAKE,
        )
        assert scope is not None
        lexemes = {
            r["lexeme"]: (r["df"], r["source_df"])
            for r in await conn.fetch(
                "SELECT lexeme, df, source_df FROM agent.knowledge_lexemes WHERE scope_id = $1", scope["id"]
            )
        }
        postings = {
            (r["chunk_id"], r["lexeme"]): (r["tf"], r["chunk_length"])
            for r in await conn.fetch(
                "SELECT chunk_id, lexeme, tf, chunk_length FROM agent.knowledge_postings WHERE scope_id = $1",
                scope["id"],
            )
        }
        terms = {
            (r["source_id"], r["lexeme"]): r["tf"]
            for r in await conn.fetch(
                "SELECT source_id, lexeme, tf FROM agent.knowledge_source_terms WHERE scope_id = $1", scope["id"]
            )
        }
        lengths = dict(
            await conn.fetch(
                "SELECT source_id, length FROM agent.knowledge_lexical_sources WHERE scope_id = $1", scope["id"]
            )
        )
    return dict(scope) | {"lexemes": lexemes, "postings": postings, "terms": terms, "lengths": lengths}


def _bm25(idf: float, tf: int, length: float, avg: float) -> float:
    return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / avg))


async def test_a_chunks_lexical_score_is_its_bm25_mixed_with_its_sources(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    long = await kit.ingest(org, _long_document(mentions=3))
    short = await kit.ingest(org, "# Nozzle\n\nNozzle thrust at the exit plane.")
    await kit.ingest(org, "# Jet\n\nA jet of air at the exit.")
    stats = await _stats(kit, org)
    query_lexemes = ("nozzl", "thrust")
    n, avg = stats["chunks"], stats["total_length"] / stats["chunks"]
    sources, source_avg = stats["sources"], stats["source_length"] / stats["sources"]

    def chunk_bm25(chunk_id: int) -> float:
        total = 0.0
        for lexeme in query_lexemes:
            if (chunk_id, lexeme) in stats["postings"]:
                df = stats["lexemes"][lexeme][0]
                tf, length = stats["postings"][(chunk_id, lexeme)]
                total += _bm25(math.log(1 + (n - df + 0.5) / (df + 0.5)), tf, length, avg)
        return total

    def source_bm25(source_id: UUID) -> float:
        total = 0.0
        for lexeme in query_lexemes:
            if (source_id, lexeme) in stats["terms"]:
                sdf = stats["lexemes"][lexeme][1]
                idf = math.log(1 + (sources - sdf + 0.5) / (sdf + 0.5))
                total += _bm25(idf, stats["terms"][(source_id, lexeme)], stats["lengths"][source_id], source_avg)
        return total

    for weight in (0.0, 0.3, DEFAULT_FUSION.source, 1.0):
        hits = await _lexical(kit, org, "nozzle thrust", source=weight)
        assert {h.source_id for h in hits} == {long, short}
        for hit in hits:
            expected = (1 - weight) * chunk_bm25(hit.chunk_id) + weight * source_bm25(hit.source_id)
            assert math.isclose(hit.lexical_score, expected, rel_tol=1e-5), (weight, hit)  # type: ignore[arg-type]


async def test_a_long_document_does_not_outrank_a_short_one_that_matches_the_query_better(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    # Twelve sections of a long report name "nozzle thrust" in three of them; a short note is about it.
    long = await kit.ingest(org, _long_document(mentions=3))
    short = await kit.ingest(org, "# Nozzle thrust\n\nNozzle thrust at the exit plane of the jet.")
    for text in ("# Wing\n\nThe wing at low speed.", "# Panel\n\nA panel oscillation.", "# Cone\n\nA Mach cone."):
        await kit.ingest(org, text)
    for weight in (0.0, 0.25, DEFAULT_FUSION.source, 0.75, 1.0):
        hits = await _lexical(kit, org, "nozzle thrust", source=weight)
        assert hits[0].source_id == short, f"source weight {weight}: the long document came first"
        assert {h.source_id for h in hits} == {long, short}
    fused = await search(kit.db, org, "nozzle thrust", include_organization=True, min_relevance=0.0,
                         embedders=kit.lookup)  # fmt: skip
    assert fused[0].source_id == short


async def test_another_organizations_documents_never_change_a_tenants_source_level_scores(
    kit: Kit, factory: Factory
) -> None:
    a = await factory.organization()
    b = await factory.organization()
    await kit.ingest(a, _long_document(mentions=3))
    await kit.ingest(a, "# Nozzle\n\nNozzle thrust at the exit plane.")
    await kit.ingest(a, "# Jet\n\nA jet nozzle at the exit.")
    await kit.ingest(None, "# Platform\n\nA platform page on thrust.")

    async def seen(platform: bool) -> list[Any]:
        out: list[Any] = []
        for weight in (DEFAULT_FUSION.source, 1.0):
            out += [(h.chunk_id, h.lexical_score) for h in await _lexical(kit, a, "nozzle thrust", source=weight)]
            out += await _called(kit, a, "nozzle thrust", source=weight, platform=platform)
        hits = await search(kit.db, a, "nozzle thrust", include_platform=platform, include_organization=True,
                            min_relevance=0.0, embedders=kit.lookup)  # fmt: skip
        return out + [(h.chunk_id, h.lexical_score, h.score) for h in hits]

    before, before_with_platform = await seen(False), await seen(True)
    assert before != before_with_platform  # the platform's page counts when the search includes it
    # B writes long and short documents that make "nozzle" common and "thrust" rare, everywhere but in A.
    for i in range(6):
        await kit.ingest(b, _long_document(mentions=i % 4) if i % 2 else f"# B {i}\n\nNozzle nozzle {i}.")
    assert await seen(False) == before
    assert await seen(True) == before_with_platform
