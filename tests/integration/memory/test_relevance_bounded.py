"""The relevance read, bounded (migration 0104): the exact read's top k, without looping over every memory.

The lexical half reads a common lexeme only to its depth in impact order and completes its best candidates;
the dense half reads the owners' vectors alone; the read is planned for its arguments on every call, so the
fifth call on a connection does not freeze a generic plan. The exact read of 0101 is the reference.
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from context.sources.memory_vectors import live_memory_embedder, relevance_query
from knowledge.embedding.live_model import register_embedding_model
from knowledge.embedding.registry import Embedder, FakeEmbedder
from memory.repository import fetch_relevant_memories, fetch_relevant_memories_exact
from memory.vectors import embed_missing
from state.db import Database
from tests.integration.memory.helpers import World, raw_memory

T0 = datetime(2025, 1, 1, tzinfo=UTC)
FAKE = FakeEmbedder.model_id
NAMES = ["Priya", "Tom", "Aiko", "Lars", "Mina", "Omar", "Zoe", "Ravi"]
THINGS = ["car", "dog", "bike", "boat", "flat", "garden", "piano", "kayak"]
COLOURS = ["green", "red", "blue", "grey", "white", "black"]


def fake(_model: str) -> Embedder:
    return FakeEmbedder()


@pytest.fixture(autouse=True)
async def fake_live_model(db: Database) -> None:
    await register_embedding_model(db, FAKE, dimensions=FakeEmbedder.dimensions)
    async with db.connection() as conn:
        await conn.execute(
            "UPDATE public.knowledge_settings SET active_embedding_model = $1 WHERE organization_id IS NULL", FAKE
        )


async def person_memories(db: Database, world: World, n: int) -> None:
    """`n` memories of the person, every one naming Acme (a lexeme in every memory), most naming a person."""
    rng = random.Random(43)
    texts = [f"Acme note {i}: {rng.choice(NAMES)} has a {rng.choice(COLOURS)} {rng.choice(THINGS)}" for i in range(n)]
    async with db.connection() as conn:
        await conn.execute(
            "INSERT INTO agent.memories (organization_id, definition_id, scope, user_id, scope_owner_id, subject_key,"
            " text, created_at) SELECT $1::uuid, $2::uuid, 'user', $3::uuid, $3::uuid,"
            " 'user:' || $3::text || ':observation.f' || t.n, t.text, $5::timestamptz + t.n * interval '1 minute'"
            " FROM unnest($4::text[]) WITH ORDINALITY AS t (text, n)",
            world.org, world.definition, world.user, texts, T0,
        )  # fmt: skip
        await conn.execute("ANALYZE agent.memories; ANALYZE agent.memory_postings")
    await embed_missing(db, world.org, live_memory_embedder(db, fake))


async def both(
    db: Database, world: World, question: str, *, depth: int, limit: int = 10
) -> tuple[list[Any], list[Any]]:
    query = replace(await relevance_query(db, world.org, question, fake), lexical_depth=depth)
    where: dict[str, Any] = {"organization_id": world.org, "definition_id": None, "user_id": world.user,
                             "limit": limit, "candidates": limit * 4, "personal": False, "query": query}  # fmt: skip
    exact = await fetch_relevant_memories_exact(db, **where)
    bounded = await fetch_relevant_memories(db, **where)
    return [r.memory.id for r in exact], [r.memory.id for r in bounded]


async def test_the_bounded_read_answers_the_exact_reads_top_k_when_a_common_word_is_cut(
    db: Database, world: World
) -> None:
    await person_memories(db, world, 600)
    recalls = []
    for question in ("Which green car does Priya drive for Acme?", "Acme: who has a red kayak?",
                     "Tom and the piano at Acme", "does Zoe keep a white boat"):  # fmt: skip
        exact, bounded = await both(db, world, question, depth=20)  # Acme's 600 postings are read to 20
        assert len(bounded) == len(exact) == 10
        recalls.append(len(set(exact) & set(bounded)) / len(exact))
    assert sum(recalls) / len(recalls) >= 0.95, recalls


async def test_the_generic_plan_cached_after_five_calls_on_a_connection_answers_as_the_exact_read(
    db: Database, world: World
) -> None:
    await person_memories(db, world, 200)
    questions = ["Which green car does Priya drive?", "Acme: who has a red kayak?", "Tom and the piano",
                 "does Zoe keep a white boat", "Lars grey garden", "Mina black bike", "Omar blue flat",
                 "Ravi's green dog at Acme"]  # fmt: skip
    where: dict[str, Any] = {"organization_id": world.org, "definition_id": None, "user_id": world.user,
                             "limit": 5, "candidates": 20, "personal": False}  # fmt: skip
    async with db.connection() as conn:  # one connection: the sixth call on runs PostgreSQL's cached plan
        for question in questions:
            query = await relevance_query(db, world.org, question, fake)
            bounded = [r.memory.id for r in await fetch_relevant_memories(conn, **where, query=query)]
            exact = [r.memory.id for r in await fetch_relevant_memories_exact(db, **where, query=query)]
            assert len(set(bounded) & set(exact)) >= 4, question
        plans = await conn.fetchrow(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
            " WHERE statement LIKE '%dense_all AS%' AND statement NOT LIKE '%pg_prepared_statements%'"
        )
    assert plans is not None and plans["custom_plans"] + plans["generic_plans"] == len(questions), plans


async def test_a_dead_revision_that_tops_the_postings_never_takes_a_place(db: Database, world: World) -> None:
    """The candidates are checked live after the bounded read: superseded, forgotten, expired rows drop."""
    now = datetime.now(UTC)
    await person_memories(db, world, 300)
    old = await raw_memory(db, org=world.org, definition=world.definition, attribute="observation.kayak",
                           text="Acme kayak kayak kayak", created_at=now - timedelta(days=3))  # fmt: skip
    new = await raw_memory(db, org=world.org, definition=world.definition, attribute="observation.kayak",
                           text="Acme moved the kayak to the lake", supersedes=old)  # fmt: skip
    await raw_memory(db, org=world.org, definition=world.definition, attribute="observation.gone",
                     text="Acme kayak kayak", expires_at=now - timedelta(minutes=1),
                     created_at=now - timedelta(days=2))  # fmt: skip
    exact, bounded = await both(db, world, "Where is the Acme kayak?", depth=5)
    assert old not in bounded and new in bounded
    assert bounded[:3] == exact[:3]


async def test_the_postings_and_vectors_carry_their_owner_and_impact(db: Database, world: World) -> None:
    memory = await raw_memory(db, org=world.org, definition=world.definition, scope="user", user=world.user,
                              text="Acme buys a green car")  # fmt: skip
    await embed_missing(db, world.org, live_memory_embedder(db, fake))
    async with db.connection() as conn:
        postings = await conn.fetch(
            "SELECT scope_owner_id, lexical_length, impact FROM agent.memory_postings WHERE memory_id = $1", memory
        )
        vector = await conn.fetchrow(
            "SELECT organization_id, scope_owner_id FROM agent.memory_embeddings WHERE memory_id = $1", memory
        )
    assert postings and all(p["scope_owner_id"] == world.user and p["lexical_length"] == 4 for p in postings)
    assert all(p["impact"] == pytest.approx(2.2 / (1 + 1.2 * (0.25 + 0.75 * 4 / 12))) for p in postings)
    assert vector is not None and (vector["organization_id"], vector["scope_owner_id"]) == (world.org, world.user)
