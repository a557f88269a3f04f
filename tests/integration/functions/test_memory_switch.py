"""A switchover re-embeds the scope's live memories under the new model (issue 43, item 5).

Before the flip every live memory of the switched organizations gets a vector of the new model, so the
relevance read never falls back to BM25 at the flip; a memory remembered under the old model between the
fill and the flip is embedded right after it. The fill reads only memories with no vector under the model,
so a rerun embeds nothing twice, and the switch's progress (`GET /v1/knowledge/switch`,
`switch-model --status`) counts them. Each path that drives the switch is tested: the Inngest function, the
inline run (what `ac-context switch-model` and the dev in-process runner call) and the CLI.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar
from uuid import UUID

import pytest

import functions._services
from functions._memory_switch import memory_fill
from functions._switch_view import switch_view
from functions.inngest.knowledge_switch import SWITCH_FUNCTION_ID, SWITCH_RETRIES
from knowledge.embedding.live_model import begin_switch, live_model, register_embedding_model
from knowledge.switchover import run_switch
from memory.vectors import EmbeddedTexts, store_vectors
from tests.factories import Factory
from tests.integration.functions.conftest import FAKE_MODEL, Service, fake_embedders
from tests.integration.functions.test_knowledge_switch import (
    DOCS,
    NEW_MODEL,
    Fake32,
    ingest,
    run_reembeds,
    switch_event,
)
from tests.integration.memory.helpers import raw_memory


class Counting32(Fake32):
    """The new model, counting every text it embeds (chunks and memories alike)."""

    texts: ClassVar[list[str]] = []

    async def _embed_batch(self, texts: list[str]) -> Any:
        Counting32.texts.extend(texts)
        return await super()._embed_batch(texts)


@pytest.fixture(autouse=True)
def _counting() -> None:
    Counting32.texts = []


async def memories(db: Any, factory: Factory, org: UUID, tag: str = "") -> dict[str, list[UUID]]:
    """Five live memories of the organization (organization and user scope) and three that are not live."""
    definition, user = await factory.definition(org), await factory.user(org)
    live = [await raw_memory(db, org=org, definition=definition, attribute=f"observation.o{n}",
                             text=f"{tag}Acme pays invoice {n} in euros") for n in range(3)]  # fmt: skip
    live += [await raw_memory(db, org=org, definition=definition, scope="user", user=user,
                              attribute=f"observation.u{n}", text=f"{tag}Lunch with Dana number {n}")
             for n in range(2)]  # fmt: skip
    old = await raw_memory(db, org=org, definition=definition, attribute="observation.moved", text=f"{tag}Old office")
    live.append(await raw_memory(db, org=org, definition=definition, attribute="observation.moved",
                                 text=f"{tag}New office in Lyon", supersedes=old))  # fmt: skip
    gone = await raw_memory(db, org=org, definition=definition, attribute="observation.gone", text=f"{tag}Forgotten")
    await raw_memory(db, org=org, definition=definition, attribute="observation.gone", text=None, supersedes=gone,
                     forgotten=True)  # fmt: skip
    now = datetime.now(UTC)
    expired = await raw_memory(db, org=org, definition=definition, attribute="observation.expired",
                               text=f"{tag}Expired fact", created_at=now - timedelta(days=2),
                               expires_at=now - timedelta(days=1))  # fmt: skip
    return {"live": live, "not_live": [old, gone, expired]}


async def vector_models(db: Any, ids: list[UUID]) -> dict[UUID, set[str]]:
    async with db.connection() as conn:
        rows = await conn.fetch(
            "SELECT memory_id, embedding_model FROM agent.memory_embeddings WHERE memory_id = ANY($1::uuid[])", ids
        )
    out: dict[UUID, set[str]] = {i: set() for i in ids}
    for r in rows:
        out[r["memory_id"]].add(r["embedding_model"])
    return out


async def test_a_switchover_embeds_every_live_memory_under_the_new_model_before_the_flip(
    service: Service, factory: Factory
) -> None:
    service.services.embedders.register(NEW_MODEL, Counting32, dimensions=32)
    org, stranger = await factory.organization(), await factory.organization()
    await ingest(service, org, *DOCS[0])
    mine = await memories(service.db, factory, org)
    theirs = await memories(service.db, factory, stranger, tag="Theirs: ")
    progress: list[dict[str, Any]] = []

    async def meanwhile(_: str) -> None:
        progress.append((await switch_view(service.db, org))["memories"])
        answer = await service.http.get("/v1/knowledge/switch", params={"organization_id": str(org)},
                                        headers=service.auth)  # fmt: skip
        progress.append(answer.json()["memories"])
        await run_reembeds(service)

    service.executor.on_sleep = meanwhile
    run = await service.executor.run(SWITCH_FUNCTION_ID, switch_event(org), retries=SWITCH_RETRIES)

    assert run.status == "completed", run.output
    assert progress[:2] == [{"live": 6, "embedded": 0, "pending": 6}] * 2, "the switch's progress counts them"
    fills = [i for i, n in enumerate(run.step_names) if n.startswith("embed-memories ")]
    assert fills and max(fills) < run.step_names.index("flip"), "the memories are embedded before the flip"
    assert run.output["memories_embedded"] == 6
    models = await vector_models(service.db, mine["live"])
    assert all(NEW_MODEL in m for m in models.values()), "every live memory holds a vector of the new model"
    not_live = await vector_models(service.db, mine["not_live"] + theirs["live"])
    assert all(NEW_MODEL not in m for m in not_live.values()), "no dead revision, no other tenant's memory"
    assert (await live_model(service.db, org)).model_id == NEW_MODEL
    # A rerun of the fill embeds nothing: every live memory has its vector.
    embedded = len(Counting32.texts)
    assert await memory_fill(service.db, org, service.services.embedders.get)(NEW_MODEL) == 0
    assert len(Counting32.texts) == embedded


async def test_a_resumed_fill_embeds_only_the_memories_without_a_vector(service: Service, factory: Factory) -> None:
    service.services.embedders.register(NEW_MODEL, Counting32, dimensions=32)
    org = await factory.organization()
    await ingest(service, org, *DOCS[0])
    mine = await memories(service.db, factory, org)
    done = mine["live"][:4]  # a first run embedded four before it stopped
    await register_embedding_model(service.db, NEW_MODEL, dimensions=32)
    async with service.db.connection() as conn:
        await store_vectors(conn, done, EmbeddedTexts(model=NEW_MODEL, vectors=[[0.5] * 32] * 4))

    async def meanwhile(_: str) -> None:
        await run_reembeds(service)

    service.executor.on_sleep = meanwhile
    run = await service.executor.run(SWITCH_FUNCTION_ID, switch_event(org), retries=SWITCH_RETRIES)

    assert run.status == "completed", run.output
    assert run.output["memories_embedded"] == 2
    memory_texts = [t for t in Counting32.texts if "Acme pays" in t or "Lunch" in t or "office" in t]
    assert sorted(memory_texts) == ["Lunch with Dana number 1", "New office in Lyon"], "nothing embedded twice"
    async with service.db.connection() as conn:
        kept = await conn.fetchval(
            "SELECT count(*) FROM agent.memory_embeddings WHERE embedding_model = $1 AND embedding::text = $2",
            NEW_MODEL, "[" + ",".join(["0.5"] * 32) + "]",
        )  # fmt: skip
    assert kept == 4, "the first run's vectors stay as they were"


async def test_the_inline_switch_embeds_the_memories_before_the_flip_and_those_written_meanwhile_after_it(
    service: Service, factory: Factory
) -> None:
    service.services.embedders.register(NEW_MODEL, Counting32, dimensions=32)
    org = await factory.organization()
    await ingest(service, org, *DOCS[0])
    mine = await memories(service.db, factory, org)
    definition = await factory.definition(org)
    late: list[UUID] = []
    live_at_fill: list[str] = []
    fill = memory_fill(service.db, org, service.services.embedders.get)

    async def fill_then_remember(model: str) -> int:
        got = await fill(model)
        if not got and not late:  # the fill is done; a remember lands before the flip, under the old model
            live_at_fill.append((await live_model(service.db, org)).model_id)
            late.append(await raw_memory(service.db, org=org, definition=definition, text="Remembered meanwhile"))
        return got

    plan = await begin_switch(service.db, org, NEW_MODEL, embedder=Counting32())
    flipped = await run_switch(service.db, service.services.object_store, plan,
                               embedders=service.services.embedders.get, fill=fill_then_remember)  # fmt: skip

    assert live_at_fill == [FAKE_MODEL], "the fill ran before the flip"
    assert flipped.to_model == NEW_MODEL and flipped.memories_embedded == 7
    models = await vector_models(service.db, mine["live"] + late)
    assert all(NEW_MODEL in m for m in models.values()), "the memory written meanwhile is embedded after the flip"


async def test_a_platform_switch_embeds_the_memories_of_the_organizations_that_follow_it(
    service: Service, factory: Factory
) -> None:
    service.services.embedders.register(NEW_MODEL, Counting32, dimensions=32)
    follower, own = await factory.organization(), await factory.organization()
    async with service.db.connection() as conn:  # `own` chose its own live model: the platform switch skips it
        await conn.execute(
            "INSERT INTO public.knowledge_settings (organization_id, active_embedding_model) VALUES ($1, $2)",
            own, FAKE_MODEL,
        )  # fmt: skip
    followed = await memories(service.db, factory, follower)
    kept = await memories(service.db, factory, own)
    plan = await begin_switch(service.db, None, NEW_MODEL, embedder=Counting32())
    fill = memory_fill(service.db, None, service.services.embedders.get)
    flipped = await run_switch(service.db, service.services.object_store, plan,
                               embedders=service.services.embedders.get, fill=fill)  # fmt: skip

    assert flipped.memories_embedded == 6
    assert all(NEW_MODEL in m for m in (await vector_models(service.db, followed["live"])).values())
    assert all(NEW_MODEL not in m for m in (await vector_models(service.db, kept["live"])).values())


async def test_the_cli_switch_counts_the_memories_it_embedded(
    service: Service, factory: Factory, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = fake_embedders()
    registry.register(NEW_MODEL, Counting32, dimensions=32)
    monkeypatch.setattr(functions._services, "default_embedders", registry)
    org = await factory.organization()
    await ingest(service, org, *DOCS[0])
    mine = await memories(service.db, factory, org)

    result = await cli("switch-model", NEW_MODEL, "--org", str(org), "--json")

    assert result.exit_code == 0, (result.output, result.exception)
    out = json.loads(result.stdout)
    assert out["flipped"] is True and out["memories_embedded"] == 6, out
    assert all(NEW_MODEL in m for m in (await vector_models(service.db, mine["live"])).values())
