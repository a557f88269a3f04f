"""Memory read by relevance (option `order`): ranked against the question, with every rule of the read kept.

The platform's live model is the fake hashing embedder here, so the dense half runs without a download.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from context.builder import DefaultContextBuilder
from context.models import ContextItem, ContextPolicy, ContextRequest, ContextSourceSpec
from context.packer import ContextPacker
from context.sources import default_registry
from context.sources.memory import MemoryContextSource
from context.sources.memory_vectors import live_memory_embedder, relevance_query
from context.sources.personal_memory import PersonalMemoryContextSource
from knowledge.embedding.live_model import register_embedding_model
from knowledge.embedding.registry import Embedder, FakeEmbedder
from memory.errors import DuplicateMemoryError
from memory.models import MemoryCandidate
from memory.reads import read_relevant_memories
from memory.service import MemoryService
from memory.vectors import EmbeddedTexts, embed_missing
from state.db import Database
from tests.factories import Factory
from tests.integration.knowledge.helpers import SecondFakeEmbedder
from tests.integration.memory.helpers import World, raw_memory, world_memory

T0 = datetime(2025, 1, 1, tzinfo=UTC)
FAKE = FakeEmbedder.model_id
ANSWER = "The currency of Acme invoices is the euro, never the dollar"
QUESTION = "which currency do Acme invoices use"


def fake(_model: str) -> Embedder:
    return FakeEmbedder()


@pytest.fixture(autouse=True)
async def fake_live_model(db: Database) -> None:
    """The fake model registered and named the platform default."""
    await register_embedding_model(db, FAKE, dimensions=FakeEmbedder.dimensions)
    async with db.connection() as conn:
        await conn.execute(
            "UPDATE public.knowledge_settings SET active_embedding_model = $1 WHERE organization_id IS NULL", FAKE
        )


def ask(world: World, query: str = QUESTION, **subject: bool) -> ContextRequest:
    return ContextRequest(subject=world.subject(**subject), query=query, entities=[])


def spec(name: str = "memory", *, order: str | None = None, limit: int | None = None) -> ContextSourceSpec:
    options: dict[str, Any] = {} if order is None else {"order": order}
    return ContextSourceSpec(name=name, token_budget=10_000, limit=limit, options=options)


async def read(db: Database, world: World, *, order: str | None = "relevance", **kw: Any) -> list[ContextItem]:
    subject = kw.pop("subject", {})
    return await MemoryContextSource(db, fake).retrieve(ask(world, **subject), spec(order=order, **kw))


async def noise(db: Database, world: World, n: int, **values: Any) -> None:
    """`n` newer memories that share no word with the question."""
    for i in range(n):
        await world_memory(db, world, attribute=f"observation.noise{i}", text=f"Lunch meeting number {i} ran late",
                           created_at=T0 + timedelta(days=1, minutes=i), **values)  # fmt: skip


async def test_relevance_puts_the_answering_memory_first_and_recency_stays_the_default(
    db: Database, world: World
) -> None:
    answer = await world_memory(db, world, attribute="observation.currency", text=ANSWER, created_at=T0)
    await noise(db, world, 5)
    ranked = await read(db, world, limit=3)
    assert UUID(ranked[0].ref.id) == answer, "relevance ranks the memory that answers first"
    default = await read(db, world, order=None, limit=3)
    assert answer not in {UUID(i.ref.id) for i in default}, "no option: newest first, the old answer is past the cap"
    assert [i.title for i in default] == ["observation.noise4", "observation.noise3", "observation.noise2"]
    assert default == await read(db, world, order="recency", limit=3)


async def test_relevance_keeps_the_count_limit_and_fills_it_newest_first(db: Database, world: World) -> None:
    await world_memory(db, world, attribute="observation.currency", text=ANSWER, created_at=T0)
    await noise(db, world, 30)
    assert len(await read(db, world, limit=4)) == 4
    everything = await read(db, world)  # None reads 20
    assert len(everything) == 20
    assert [i.title for i in everything[1:4]] == ["observation.noise29", "observation.noise28", "observation.noise27"]


async def test_relevance_reads_no_other_tenant_and_no_other_persons_memory(
    db: Database, world: World, factory: Factory
) -> None:
    stranger = await factory.organization()
    await raw_memory(db, org=stranger, definition=await factory.definition(stranger), text=ANSWER)
    await world_memory(db, world, user=world.other_user, attribute="observation.currency", text=ANSWER)
    mine = await world_memory(db, world, user=world.user, attribute="observation.lunch", text="Lunch at noon")
    for subject in ({}, {"definition": False}):
        assert [UUID(i.ref.id) for i in await read(db, world, subject=subject)] == [mine]
    # A trigger run reads organization scope alone, and the personal source reads nothing for it.
    assert await read(db, world, subject={"trigger": True}) == []
    personal = PersonalMemoryContextSource(db, fake)
    assert await personal.retrieve(ask(world, trigger=True), spec("personal_memory", order="relevance")) == []


async def test_relevance_never_reads_an_expired_superseded_or_forgotten_memory(db: Database, world: World) -> None:
    now = datetime.now(UTC)
    await world_memory(db, world, attribute="observation.a", text=ANSWER, created_at=now - timedelta(days=2),
                       expires_at=now - timedelta(days=1))  # fmt: skip
    old = await world_memory(db, world, attribute="observation.b", text=ANSWER)
    new = await world_memory(db, world, attribute="observation.b", text="Acme moved its office", supersedes=old)
    gone = await world_memory(db, world, attribute="observation.c", text=ANSWER)
    await world_memory(db, world, attribute="observation.c", text=None, supersedes=gone, forgotten=True)
    assert [UUID(i.ref.id) for i in await read(db, world)] == [new]


async def test_relevance_keeps_the_subject_guard(db: Database, world: World, factory: Factory) -> None:
    deleted = await factory.company(world.org, deleted_at=T0)
    other_org = await factory.organization()
    foreign = await factory.company(other_org)
    for n, company in enumerate([deleted, foreign, UUID(int=7)]):
        await world_memory(db, world, attribute=f"observation.n{n}", text=ANSWER,
                           refs=[{"kind": "crm.company", "id": str(company)}])  # fmt: skip
    live = await factory.company(world.org)
    kept = await world_memory(db, world, attribute="observation.kept", text="Acme pays late",
                              refs=[{"kind": "crm.company", "id": str(live)}])  # fmt: skip
    assert [UUID(i.ref.id) for i in await read(db, world)] == [kept]


async def test_personal_memory_by_relevance_reads_only_the_persons_preferences(db: Database, world: World) -> None:
    pref = await world_memory(db, world, user=world.user, attribute="preference.currency", text=ANSWER, created_at=T0)
    await world_memory(db, world, user=world.user, attribute="observation.currency", text=ANSWER)
    await world_memory(db, world, attribute="preference.currency", text=ANSWER)
    for n in range(3):
        await world_memory(db, world, user=world.user, attribute=f"preference.p{n}", text=f"Lunch option {n}")
    personal = PersonalMemoryContextSource(db, fake)
    items = await personal.retrieve(ask(world), spec("personal_memory", order="relevance", limit=1))
    assert [UUID(i.ref.id) for i in items] == [pref]


async def test_the_service_stores_the_live_models_vector_and_the_dense_half_ranks_by_it(
    db: Database, world: World
) -> None:
    service = MemoryService(db, embed=live_memory_embedder(db, fake))
    written = await service.remember(world.inv, MemoryCandidate(attribute="observation.currency", scope="organization",
                                                                text=ANSWER))  # fmt: skip
    async with db.connection() as conn:
        stored = await conn.fetch(
            "SELECT embedding_model FROM agent.memory_embeddings WHERE memory_id = $1", written.id
        )
    assert [r["embedding_model"] for r in stored] == [FAKE]
    with pytest.raises(DuplicateMemoryError):  # the duplicate check holds with an embedder, and stores nothing
        await service.remember(world.inv, MemoryCandidate(attribute="observation.currency", scope="organization",
                                                          text=ANSWER))  # fmt: skip
    async with db.connection() as conn:
        assert await conn.fetchval("SELECT count(*) FROM agent.memory_embeddings") == 1

    async def broken(_org: UUID, _texts: object) -> EmbeddedTexts:
        raise RuntimeError("provider down")

    down = MemoryService(db, embed=broken)
    later = await down.remember(world.inv, MemoryCandidate(attribute="observation.other", scope="organization",
                                                           text="Acme likes euros"))  # fmt: skip
    assert later.text == "Acme likes euros", "a failed embedding never refuses the memory"
    assert await embed_missing(db, world.org, live_memory_embedder(db, fake)) == 1
    assert await embed_missing(db, world.org, live_memory_embedder(db, fake)) == 0


async def test_explain_names_the_memories_the_limit_cut(db: Database, world: World) -> None:
    answer = await world_memory(db, world, attribute="observation.currency", text=ANSWER, created_at=T0)
    second = await world_memory(db, world, attribute="observation.pay", text="Acme invoices are paid late",
                                created_at=T0 + timedelta(minutes=1))  # fmt: skip
    await noise(db, world, 3)
    policy = ContextPolicy(
        sources=[ContextSourceSpec(name="memory", token_budget=500, limit=1, options={"order": "relevance"})],
        total_token_budget=2000,
    )
    builder = DefaultContextBuilder(default_registry(db, embedders=fake), ContextPacker())
    brief, why = await builder.build_explained(ask(world), policy)
    assert [r.id for r in brief.items] == [str(answer)]
    assert brief == await builder.build(ask(world), policy), "explain mode builds the same brief"
    first = why.cut[0]
    assert (first.source, first.rule, first.rank, first.ref and first.ref.id) == ("memory", "beyond_limit", 2,
                                                                                   str(second))  # fmt: skip
    assert first.score is not None and "past the limit of 1" in first.message
    assert len(why.cut) == 4, "every other memory of the read, each once"
    # Recency names its cuts too, newest first past the limit.
    recency = policy.model_copy(update={"sources": [policy.sources[0].model_copy(update={"options": {}})]})
    _, why = await builder.build_explained(ask(world), recency)
    assert [c.title for c in why.cut[:2]] == ["observation.noise1", "observation.noise0"]
    assert all(c.rule == "beyond_limit" and c.score is None for c in why.cut)


async def test_the_relevance_read_answers_at_most_its_limit_and_beyond_only_when_asked(
    db: Database, world: World
) -> None:
    await world_memory(db, world, attribute="observation.currency", text=ANSWER, created_at=T0)
    await noise(db, world, 10)
    query = await relevance_query(db, world.org, QUESTION, fake)
    where: dict[str, Any] = {"organization_id": world.org, "definition_id": world.definition, "user_id": world.user,
                             "trigger_id": None, "query": query, "personal": False}  # fmt: skip
    rows = await read_relevant_memories(db, limit=3, **where)
    assert [r.rank for r in rows] == [1, 2, 3]
    assert rows[0].score is not None and rows[1].score is None, "the ranked memory, then the rest newest first"
    assert [r.rank for r in await read_relevant_memories(db, limit=3, beyond=2, **where)] == [1, 2, 3, 4, 5]
    assert await read_relevant_memories(db, limit=0, **where) == []


async def test_after_a_model_switch_a_memory_without_a_live_vector_ranks_by_bm25_and_no_models_mix(
    db: Database, world: World
) -> None:
    lookup = {FAKE: FakeEmbedder(), SecondFakeEmbedder.model_id: SecondFakeEmbedder()}
    service = MemoryService(db, embed=live_memory_embedder(db, lookup.__getitem__))
    answer = await service.remember(world.inv, MemoryCandidate(attribute="observation.currency", scope="organization",
                                                               text=ANSWER))  # fmt: skip
    await noise(db, world, 3)
    await register_embedding_model(db, SecondFakeEmbedder.model_id, dimensions=SecondFakeEmbedder.dimensions)
    async with db.connection() as conn:  # the flip: the 64-dimension vectors stay, the live model has 32
        await conn.execute("UPDATE public.knowledge_settings SET active_embedding_model = $1"
                           " WHERE organization_id IS NULL", SecondFakeEmbedder.model_id)  # fmt: skip
    source = MemoryContextSource(db, lookup.__getitem__)
    ranked = await source.retrieve(ask(world), spec(order="relevance", limit=2))
    assert UUID(ranked[0].ref.id) == answer.id, "ranked by BM25; the old model's vector is never compared"
    assert await embed_missing(db, world.org, live_memory_embedder(db, lookup.__getitem__)) == 4
    async with db.connection() as conn:
        models = await conn.fetch("SELECT embedding_model FROM agent.memory_embeddings WHERE memory_id = $1"
                                  " ORDER BY 1", answer.id)  # fmt: skip
    assert sorted(r["embedding_model"] for r in models) == sorted([FAKE, SecondFakeEmbedder.model_id])
    assert UUID((await source.retrieve(ask(world), spec(order="relevance", limit=2)))[0].ref.id) == answer.id


async def test_the_front_door_brief_ranks_a_relevant_old_memory_above_newer_irrelevant_ones(
    db: Database, world: World
) -> None:
    from context.policies import FRONT_DOOR

    answer = await world_memory(db, world, user=world.user, attribute="observation.currency", text=ANSWER,
                                created_at=T0)  # fmt: skip
    await noise(db, world, 25, user=world.user)  # newer than the answer and more than the limit of 20
    builder = DefaultContextBuilder(default_registry(db, embedders=fake), ContextPacker())
    brief = await builder.build(ask(world, definition=False), FRONT_DOOR)  # a Front Door turn: no definition
    assert str(answer) in {r.id for r in brief.items}, "the old answer reaches the Front Door brief"
    assert brief.text.index(ANSWER) < brief.text.index("Lunch meeting number"), "and ranks above the newer ones"
    recency = FRONT_DOOR.model_copy(update={"sources": [
        s.model_copy(update={"options": {"order": "recency"}}) if s.name == "memory" else s
        for s in FRONT_DOOR.sources]})  # fmt: skip
    assert str(answer) not in {r.id for r in (await builder.build(ask(world, definition=False), recency)).items}
