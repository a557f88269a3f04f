"""The relevance read's dense half through the model's HNSW index (migration 0110).

From `walk_above` revisions of the owners (the tests set it low), `agent.memory_dense_walk` walks the
model's partial HNSW index on `agent.memory_embeddings` instead of scoring every vector; the read keeps the
exact read's answers, never returns a superseded, expired or another tenant's memory, and every model
registered later gets its index.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from context.sources.memory_vectors import live_memory_embedder, relevance_query
from knowledge.embedding.live_model import register_embedding_model
from knowledge.embedding.registry import FakeEmbedder
from memory.models import RelevanceQuery
from memory.repository import fetch_relevant_memories, fetch_relevant_memories_exact
from memory.vectors import embed_missing
from state.db import Database
from tests.factories import Factory
from tests.integration.memory.helpers import World, make_world, raw_memory
from tests.integration.memory.test_relevance_bounded import FAKE, fake, fake_live_model, person_memories

__all__ = ["fake_live_model"]  # the autouse fixture that makes the fake model live, reused

QUESTIONS = ("Which green car does Priya drive for Acme?", "Acme: who has a red kayak?", "Tom and the piano at Acme",
             "does Zoe keep a white boat", "Lars grey garden", "Mina's black bike", "Omar blue flat at Acme",
             "Ravi's green dog")  # fmt: skip


async def hnsw_index(db: Database) -> str:
    """The fake model's memory index, by the name migration 0110 derives."""
    async with db.connection() as conn:
        name: str = await conn.fetchval(
            "SELECT agent.memory_embedding_index_name(index_name) FROM agent.embedding_models WHERE model_id = $1",
            FAKE,
        )
        await conn.execute("ANALYZE agent.memory_embeddings")
    return name


def where(world: World, query: RelevanceQuery, *, limit: int = 10) -> dict[str, Any]:
    return {"organization_id": world.org, "definition_id": None, "user_id": world.user, "limit": limit,
            "candidates": limit * 4, "personal": False, "query": query}  # fmt: skip


async def walked(db: Database, world: World, query: RelevanceQuery, index: str) -> tuple[list[UUID], int]:
    """The read's ids and how many scans of the HNSW index it started (the backend's pending counter, read in
    one transaction: it is flushed only between transactions)."""
    count = "SELECT pg_stat_get_xact_numscans(('agent.' || $1)::regclass)"
    async with db.connection() as conn, conn.transaction():
        before: int = await conn.fetchval(count, index)
        rows = await fetch_relevant_memories(conn, **where(world, query))
        after: int = await conn.fetchval(count, index)
    return [r.memory.id for r in rows], after - before


async def test_the_walk_answers_the_exact_reads_top_k_on_two_thousand_memories(db: Database, world: World) -> None:
    await person_memories(db, world, 2000)
    index = await hnsw_index(db)
    recalls = []
    for question in QUESTIONS:
        query = replace(await relevance_query(db, world.org, question, fake), walk_above=1000)
        exact = [r.memory.id for r in await fetch_relevant_memories_exact(db, **where(world, query))]
        got, scans = await walked(db, world, query, index)
        assert scans == 1, "the dense half walks the model's HNSW index from walk_above revisions"
        assert len(got) == len(exact) == 10
        recalls.append(len(set(exact) & set(got)) / len(exact))
    assert sum(recalls) / len(recalls) >= 0.95, recalls


async def test_below_walk_above_the_dense_half_scores_every_vector(db: Database, world: World) -> None:
    await person_memories(db, world, 300)
    index = await hnsw_index(db)
    query = await relevance_query(db, world.org, QUESTIONS[0], fake)  # the default: from 2,000 revisions
    exact = [r.memory.id for r in await fetch_relevant_memories_exact(db, **where(world, query))]
    got, scans = await walked(db, world, query, index)
    assert scans == 0 and got == exact


async def test_a_superseded_or_expired_memory_never_comes_back_through_the_walk(db: Database, world: World) -> None:
    now = datetime.now(UTC)
    await person_memories(db, world, 200)
    text = "Priya parks the green kayak at the Acme lake"
    kw: dict[str, Any] = {"org": world.org, "definition": world.definition, "scope": "user", "user": world.user}
    old = await raw_memory(db, **kw, attribute="observation.kayak", text=text, created_at=now - timedelta(days=3))
    new = await raw_memory(db, **kw, attribute="observation.kayak", text=text + " again", supersedes=old)
    gone = await raw_memory(db, **kw, attribute="observation.gone", text=text, expires_at=now - timedelta(minutes=1),
                            created_at=now - timedelta(days=2))  # fmt: skip
    await embed_missing(db, world.org, live_memory_embedder(db, fake))
    async with db.connection() as conn:  # dead rows keep a vector (embedded while live): the nearest of all
        await conn.execute(
            "INSERT INTO agent.memory_embeddings (memory_id, embedding_model, embedding, organization_id,"
            " scope_owner_id) SELECT d.id, e.embedding_model, e.embedding, e.organization_id, e.scope_owner_id"
            " FROM agent.memory_embeddings AS e CROSS JOIN unnest($2::uuid[]) AS d (id) WHERE e.memory_id = $1",
            new, [old, gone],
        )  # fmt: skip
    index = await hnsw_index(db)
    query = replace(await relevance_query(db, world.org, text, fake), walk_above=0)
    async with db.connection() as conn:
        dense = await conn.fetch(
            "SELECT memory_id FROM agent.memory_dense_walk($1, $2, $3, $4::vector, 5, 203)",
            world.org, [world.org, world.user], FAKE, query.vector,
        )  # fmt: skip
    assert {old, gone} <= {r["memory_id"] for r in dense}, "the dead rows are the walk's nearest"
    got, scans = await walked(db, world, query, index)
    assert scans == 1
    assert new in got and old not in got and gone not in got


async def test_another_tenants_memory_never_comes_back_through_the_walk(
    db: Database, world: World, factory: Factory
) -> None:
    other = await make_world(factory)
    text = "Priya parks the green kayak at the Acme lake"
    for w in (world, other):
        for n in range(100):
            await raw_memory(db, org=w.org, definition=w.definition, scope="user", user=w.user,
                             attribute=f"observation.kayak{n}", text=f"{text} {n}")  # fmt: skip
        await embed_missing(db, w.org, live_memory_embedder(db, fake))
    index = await hnsw_index(db)
    query = replace(await relevance_query(db, world.org, text, fake), walk_above=0)
    got, scans = await walked(db, world, query, index)
    assert scans == 1 and len(got) == 10
    async with db.connection() as conn:
        rows = await conn.fetch("SELECT id FROM agent.memories WHERE organization_id = $1", world.org)
        mine = {r["id"] for r in rows}
        dense = await conn.fetch(
            "SELECT memory_id FROM agent.memory_dense_walk($1, $2, $3, $4::vector, 40, 100)",
            world.org, [world.org, world.user], FAKE, query.vector,
        )  # fmt: skip
    assert set(got) <= mine
    assert len(dense) == 40 and {r["memory_id"] for r in dense} <= mine, "the walk reads the organization's owners"


async def test_a_model_registered_later_gets_its_memory_index(db: Database) -> None:
    await register_embedding_model(db, "test/later-32", dimensions=32)
    async with db.connection() as conn:
        definition = await conn.fetchval(
            "SELECT pg_get_indexdef(c.oid) FROM pg_class AS c WHERE c.relname = ("
            " SELECT agent.memory_embedding_index_name(index_name) FROM agent.embedding_models"
            " WHERE model_id = 'test/later-32')"
        )
    assert definition is not None and "hnsw" in definition and "vector(32)" in definition
    assert FakeEmbedder.model_id == FAKE
