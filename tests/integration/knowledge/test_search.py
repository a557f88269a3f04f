"""Hybrid search: scopes, readiness, fusion, the tenant guard behind the filter, and small tenants."""

from __future__ import annotations

from uuid import UUID

import asyncpg
import pytest
from pgvector import Vector

from knowledge.errors import KnowledgeInputError, NoLiveModelError
from knowledge.search import Fusion, search
from state.db import Database
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit, unit

CALL = "SELECT * FROM public.knowledge_search($1, $2, $3, $4, $5, $6)"


async def test_search_finds_a_chunk_by_its_words_and_ranks_it_first(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    wanted = await kit.ingest(org, "Lifecycle stages move a company from lead to customer.", title="Lifecycle")
    await kit.ingest(org, "Invoices are sent at the end of every month.", title="Billing")
    hits = await search(  # no relevance floor: the unrelated chunk stays, as the dense list's second
        kit.db, org, "what is a lifecycle stage", include_organization=True, limit=5, embedders=kit.lookup,
        min_relevance=0.0,
    )  # fmt: skip
    assert hits[0].source_id == wanted and hits[0].source_title == "Lifecycle"
    assert hits[0].lexical_rank == 1 and hits[0].dense_rank is not None  # both lists voted for it
    assert [h.lexical_rank for h in hits[1:]] == [None]  # the billing chunk shares no query term
    assert {h.embedding_model for h in hits} == {FAKE}
    assert hits == sorted(hits, key=lambda h: -h.score)


async def test_the_scope_flags_choose_platform_and_organization_knowledge(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    platform = await kit.ingest(None, "Lifecycle means the stage of a company in the CRM.")
    own = await kit.ingest(org, "Our lifecycle stages are lead, opportunity and customer.")

    async def scope(include_platform: bool, include_organization: bool) -> set[object]:
        hits = await search(
            kit.db,
            org,
            "lifecycle",
            include_platform=include_platform,
            include_organization=include_organization,
            embedders=kit.lookup,
        )
        return {h.source_id for h in hits}

    assert await scope(True, True) == {platform, own}
    assert await scope(True, False) == {platform}
    assert await scope(False, True) == {own}
    assert await scope(False, False) == set()


async def test_a_pending_or_failed_source_is_never_searched(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    pending = await kit.register(org, "lifecycle pending document")
    failed = await kit.register(org, "lifecycle failed document")
    from knowledge.ingestion.steps import mark_failed

    await mark_failed(kit.db, failed, "broken")
    hits = await search(kit.db, org, "lifecycle", include_organization=True, embedders=kit.lookup)
    assert {h.source_id for h in hits}.isdisjoint({pending, failed})
    assert hits == []


async def test_the_fusion_weights_choose_dense_only_lexical_only_or_both(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    for i in range(6):
        await kit.ingest(org, f"document {i} about pipelines and lifecycle number {i}")
    kwargs = {"include_organization": True, "embedders": kit.lookup, "limit": 6}
    dense = await search(kit.db, org, "lifecycle pipelines", fusion=Fusion(dense=1.0, lexical=0.0), **kwargs)
    lexical = await search(kit.db, org, "lifecycle pipelines", fusion=Fusion(dense=0.0, lexical=1.0), **kwargs)
    assert dense and all(h.lexical_rank is None and h.dense_rank is not None for h in dense)
    assert lexical and all(h.dense_rank is None and h.lexical_rank is not None for h in lexical)
    with pytest.raises(ValueError):
        Fusion(dense=0.0, lexical=0.0)


async def test_a_blank_query_a_zero_limit_or_no_scope_reads_nothing(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    await kit.ingest(org, "lifecycle")

    def refuse(model: str) -> object:
        raise AssertionError("no embedding may happen")

    for kwargs in ({"limit": 0}, {"include_organization": False}):
        args = {"include_organization": True, "limit": 5, **kwargs}
        assert await search(kit.db, org, "lifecycle", embedders=refuse, **args) == []  # type: ignore[arg-type]
    assert await search(kit.db, org, "   ", include_organization=True, embedders=refuse) == []  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        await search(kit.db, org, "x", include_organization=True, limit=-1)


async def test_a_search_with_no_settings_row_fails_with_a_clear_error(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    async with kit.db.connection() as conn:
        await conn.execute("DELETE FROM public.knowledge_settings")
    with pytest.raises(NoLiveModelError, match="knowledge_settings"):
        await search(kit.db, org, "lifecycle", include_platform=True, embedders=kit.lookup)
    async with kit.db.connection() as conn:
        with pytest.raises(asyncpg.PostgresError, match="no knowledge_settings row") as caught:
            await conn.fetch(CALL, org, Vector(unit(64, 1)), "x", True, True, 5)
    assert caught.value.sqlstate == "KS001"


async def test_a_query_vector_of_the_wrong_dimension_is_refused(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    await kit.ingest(org, "lifecycle")
    async with kit.db.connection() as conn:
        with pytest.raises(asyncpg.PostgresError, match="64"):
            await conn.fetch(CALL, org, Vector(unit(32, 1)), "lifecycle", True, True, 5)
    from knowledge._sql import translated

    with pytest.raises(KnowledgeInputError), translated():
        async with kit.db.connection() as conn:
            await conn.fetch(CALL, org, Vector(unit(32, 1)), "lifecycle", True, True, 5)


async def test_row_level_security_hides_another_tenants_chunks_even_when_the_filter_names_them(
    kit: Kit, factory: Factory
) -> None:
    a = await factory.organization()
    b = await factory.organization()
    await kit.ingest(b, "lifecycle secret of b")
    platform = await kit.ingest(None, "lifecycle for everyone")
    query = Vector((await kit.lookup(FAKE).embed(["lifecycle"]))[0])
    async with kit.db.tenant(a) as conn:  # tenant A asks the function for B's organization
        rows = await conn.fetch(CALL, b, query, "lifecycle", True, True, 10)
        visible = await conn.fetch("SELECT DISTINCT source_id FROM agent.knowledge_chunks")
    assert {r["source_id"] for r in rows} == {platform}
    assert {r["source_id"] for r in visible} == {platform}


async def test_a_user_key_caller_reads_platform_and_own_chunks_only(kit: Kit, factory: Factory, db: Database) -> None:
    a = await factory.organization()
    b = await factory.organization()
    own = await kit.ingest(a, "a's own lifecycle notes")
    await kit.ingest(b, "b's lifecycle notes")
    platform = await kit.ingest(None, "platform lifecycle page")
    async with db.connection() as conn, conn.transaction():
        await conn.execute("SET LOCAL ROLE authenticated")
        await conn.execute("SELECT set_config('app.organization_id', $1, true)", str(a))
        sources = await conn.fetch("SELECT id FROM agent.knowledge_sources")
        chunks = await conn.fetch("SELECT DISTINCT source_id FROM agent.knowledge_chunks")
        settings = await conn.fetch("SELECT organization_id FROM public.knowledge_settings")
    assert {r["id"] for r in sources} == {own, platform}
    assert {r["source_id"] for r in chunks} == {own, platform}
    assert [r["organization_id"] for r in settings] == [None]


async def test_a_small_tenant_is_not_starved_by_the_tenant_filter_on_the_vector_index(
    kit: Kit, factory: Factory, db: Database
) -> None:
    big = await factory.organization()
    small = await factory.organization()
    # 1,500 chunks of one big tenant, written straight to the table, and three of a small one.
    async with db.connection() as conn:
        source = await conn.fetchval(
            "INSERT INTO agent.knowledge_sources (organization_id, kind, title, object_key, content_sha256, "
            "byte_size, status, pending_since) VALUES ($1, 'upload', 'bulk', 'k', repeat('a', 64), 1, 'ready', NULL) "
            "RETURNING id",
            big,
        )
        await conn.execute(
            "INSERT INTO agent.knowledge_source_models (source_id, embedding_model, status, chunk_count, "
            "embedded_count, pending_since) VALUES ($1, $2, 'ready', 1500, 1500, NULL)",
            source,
            FAKE,
        )
        await conn.executemany(
            "INSERT INTO agent.knowledge_chunks (source_id, embedding_model, ordinal, text, tokens, embedding) "
            "VALUES ($1, $2, $3, 'filler', 2, $4)",
            [(source, FAKE, i, Vector(unit(64, i))) for i in range(1500)],
        )
        await conn.execute("ANALYZE agent.knowledge_chunks")
    small_sources = [await kit.ingest(small, word) for word in ("one", "two", "three")]
    query = Vector(unit(64, 99_999))
    dense = (
        "SELECT c.id FROM agent.knowledge_chunks c WHERE c.embedding_model = 'test/hash-64' "
        "AND c.source_id = ANY($2) ORDER BY (c.embedding::vector(64)) <=> $1::vector(64) LIMIT 40"
    )
    async with db.connection() as conn, conn.transaction():
        await conn.execute("SET LOCAL enable_seqscan = off")
        await conn.execute("SET LOCAL enable_bitmapscan = off")
        await conn.execute("SET LOCAL enable_sort = off")  # else the planner sorts the few rows exactly
        await conn.execute("SET LOCAL hnsw.ef_search = 40")
        plan = "\n".join(r[0] for r in await conn.fetch("EXPLAIN " + dense, query, small_sources))
        await conn.execute("SET LOCAL hnsw.iterative_scan = off")
        starved = await conn.fetch(dense, query, small_sources)
        # Inside the function, with the exact path for small scopes turned off: the index walk, iterated.
        rows = await conn.fetch(
            "SELECT * FROM public.knowledge_search($1, $2, $3, $4, $5, $6, p_exact_below => 0)",
            small, query, "", False, True, 10,
        )  # fmt: skip
    assert "knowledge_chunks_hnsw_test_hash_64" in plan  # the partial index of the model answers the scan
    assert len(starved) < 3  # without iterative scans the filter starves the small tenant
    assert sorted(r["source_id"] for r in rows) == sorted(small_sources)


async def test_the_exact_path_of_a_small_scope_and_the_index_path_agree(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    for i in range(12):
        await kit.ingest(org, f"note {i} on lifecycle and pipelines, variant {i * 7}")
    query = Vector((await kit.lookup(FAKE).embed(["lifecycle pipelines"]))[0])
    sql = "SELECT chunk_id FROM public.knowledge_search($1, $2, '', false, true, 5, p_exact_below => $3)"
    async with kit.db.connection() as conn:
        exact = [r["chunk_id"] for r in await conn.fetch(sql, org, query, 10_000)]
        walked = [r["chunk_id"] for r in await conn.fetch(sql, org, query, 0)]
    assert len(exact) == 5 and exact == walked


async def test_the_index_path_checks_each_candidates_pair_and_plans_no_array_of_source_ids(
    kit: Kit, factory: Factory, db: Database
) -> None:
    org, other = await factory.organization(), await factory.organization()
    ready = {await kit.ingest(org, f"lifecycle note {i} of a ready document") for i in range(3)}
    platform = await kit.ingest(None, "lifecycle page of the platform")
    foreign = await kit.ingest(other, "lifecycle note of another organization")
    await kit.embedded_pending(org, "lifecycle note of a pending document whose chunks all hold vectors")
    failed = await kit.ingest(org, "lifecycle note of a document that failed later")
    await kit.set_failed(failed)
    query = Vector((await kit.lookup(FAKE).embed(["lifecycle note"]))[0])
    sql = (
        "SELECT source_id FROM public.knowledge_search($1, $2, 'lifecycle note', true, true, 20, "
        "p_dense_weight => 1, p_lexical_weight => 0, p_exact_below => $3)"
    )
    for exact_below in (0, 10_000):  # the index walk, then the exact scan of a small scope
        for role in (None, "ac_tenant"):
            plans: list[str] = []
            async with db.connection() as conn, conn.transaction():
                await conn.execute("LOAD 'auto_explain'")
                await conn.execute("SET LOCAL auto_explain.log_min_duration = 0")
                await conn.execute("SET LOCAL auto_explain.log_nested_statements = on")
                await conn.execute("SET LOCAL auto_explain.log_level = 'notice'")
                if role:
                    await conn.execute(f"SET LOCAL ROLE {role}")
                    await conn.execute("SELECT set_config('app.organization_id', $1, true)", str(org))

                def listener(_conn: object, message: object, plans: list[str] = plans) -> None:
                    plans.append(str(getattr(message, "message", message)))

                conn.add_log_listener(listener)
                try:
                    rows = await conn.fetch(sql, org, query, exact_below)
                finally:
                    conn.remove_log_listener(listener)
            assert {r["source_id"] for r in rows} == ready | {platform}, (exact_below, role)
            assert foreign not in {r["source_id"] for r in rows}
            dense = next(p for p in plans if "WITH dense" in p)
            assert "source_id = ANY" not in dense, dense  # no array of source ids, whatever their number
            assert "knowledge_searchable" in dense
            if exact_below == 0:
                assert "knowledge_chunks_hnsw_test_hash_64" in dense and "knowledge_searchable_pkey" in dense


async def _two_lexical_equals(kit: Kit, org: UUID) -> tuple[UUID, UUID]:
    """Two chunks BM25 cannot tell apart for the query `DENSE_QUERY`, and three that only the dense half sees.

    Stop words count for the bag-of-words fake embedder but not for BM25, so `near` and `far` hold "zebra"
    once in two lexemes each (equal BM25 scores), while `near` also repeats the query's stop words (the
    closest vector) and `far` does not (the farthest, behind three fillers that hold no query lexeme). `far`
    is ingested first, so wherever the dense half is left out it wins the tie on its lower chunk id.
    """
    far = await kit.ingest(org, "zebra apple")
    near = await kit.ingest(org, "the zebra of it and plum")
    for word in ("kiwi", "melon", "grape"):
        await kit.ingest(org, f"the of it and {word}")
    return far, near


DENSE_QUERY = "the zebra of it and"


async def test_the_default_convex_fusion_lets_the_dense_half_break_a_lexical_tie(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    far, near = await _two_lexical_equals(kit, org)
    hits = await search(kit.db, org, DENSE_QUERY, include_organization=True, embedders=kit.lookup)
    by_source = {h.source_id: h for h in hits}
    assert by_source[far].lexical_score == by_source[near].lexical_score  # BM25 alone cannot order them
    assert by_source[near].dense_rank == 1 and by_source[far].dense_rank == 5
    assert [h.source_id for h in hits[:2]] == [near, far], "the dense term of the convex fusion decides"
    # Each score is 0.3 x the min-max normalised similarity + 0.7 x the min-max normalised BM25.
    dense = [1 - h.dense_distance for h in hits if h.dense_rank is not None]  # type: ignore[operator]
    lexical = [h.lexical_score for h in hits if h.lexical_rank is not None]
    for h in hits:
        d = (1 - h.dense_distance - min(dense)) / (max(dense) - min(dense)) if h.dense_rank else 0.0  # type: ignore[operator]
        lx = 1.0 if h.lexical_rank and max(lexical) == min(lexical) else 0.0  # type: ignore[type-var]
        assert h.score == pytest.approx(0.3 * d + 0.7 * lx, abs=1e-6), h.text


async def test_rrf_fusion_sums_both_lists_reciprocal_ranks_and_the_dense_half_breaks_a_lexical_tie(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    far, near = await _two_lexical_equals(kit, org)
    rrf = Fusion(method="rrf")  # the default weights, dense 0.3 and BM25 0.7, k 60
    hits = await search(kit.db, org, DENSE_QUERY, include_organization=True, embedders=kit.lookup, fusion=rrf)
    by_source = {h.source_id: h for h in hits}
    assert (by_source[far].lexical_rank, by_source[near].lexical_rank) == (1, 2)  # the tie, by chunk id
    assert (by_source[near].dense_rank, by_source[far].dense_rank) == (1, 5)
    # near: 0.7/62 + 0.3/61 = 0.016208 beats far: 0.7/61 + 0.3/65 = 0.016091 only through the dense term.
    assert [h.source_id for h in hits[:2]] == [near, far], "the dense term of RRF decides"
    for h in hits:
        expected = sum(w / (rrf.k + r) for w, r in ((0.3, h.dense_rank), (0.7, h.lexical_rank)) if r is not None)
        assert h.score == pytest.approx(expected, abs=1e-9), h.text
    assert hits == sorted(hits, key=lambda h: -h.score) and len(hits) == 5
