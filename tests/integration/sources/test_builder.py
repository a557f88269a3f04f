"""Spec fidelity through the real sources and builder (issue 14): one memory never appears twice and never
disappears, the newest outreach reply is never cut, and an entity id that cannot form a key never fails a
source."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from uuid import UUID

import pytest

from context.builder import DefaultContextBuilder
from context.models import ContextBrief, ContextPolicy, ContextRequest, ContextSourceSpec, ContextSubject
from context.packer import ContextPacker
from context.policies import OUTREACH_PLANNER
from context.registry import ContextSourceRegistry
from context.sources import default_registry
from context.sources.application import ApplicationContextSource
from state.db import Database
from state.resolvers import resolve_refs
from state.scoped import record_queries, scoped_db
from tests.integration.memory.helpers import World, make_world, world_memory
from tests.integration.sources.helpers import AppFactory, ref, request, spec


async def _build(db: Database, request: ContextRequest, policy: ContextPolicy) -> ContextBrief:
    return await DefaultContextBuilder(default_registry(db), ContextPacker()).build(request, policy)


def _memory_policy(*, personal: bool | None) -> ContextPolicy:
    """memory alone (None), or with personal_memory enabled (True) or present but disabled (False)."""
    sources = [ContextSourceSpec(name="memory", token_budget=500)]
    if personal is not None:
        sources.insert(0, ContextSourceSpec(name="personal_memory", enabled=personal, token_budget=400))
    return ContextPolicy(sources=sources, total_token_budget=2000)


async def _preference(db: Database, world: World) -> UUID:
    return await world_memory(db, world, user=world.user, attribute="preference.language", text="Answer in German")


@pytest.mark.parametrize("definition", [True, False], ids=["run", "front-door-turn"])
async def test_a_memory_only_policy_keeps_the_persons_preference(
    db: Database, app: AppFactory, definition: bool
) -> None:
    world = await make_world(app)
    pref = await _preference(db, world)
    turn = ContextRequest(subject=world.subject(definition=definition), query="q", entities=[])
    for policy in (_memory_policy(personal=None), _memory_policy(personal=False)):
        brief = await _build(db, turn, policy)
        assert brief.text == f"## Memory\n- [agent.memory {pref}] preference.language: Answer in German", (
            "memory leaves a preference out only when personal_memory is enabled in the same policy"
        )
        assert brief.dropped == {"memory": 0}


@pytest.mark.parametrize("definition", [True, False], ids=["run", "front-door-turn"])
async def test_with_personal_memory_enabled_the_preference_appears_once_under_personal_memory(
    db: Database, app: AppFactory, definition: bool
) -> None:
    world = await make_world(app)
    pref = await _preference(db, world)
    turn = ContextRequest(subject=world.subject(definition=definition), query="q", entities=[])
    brief = await _build(db, turn, _memory_policy(personal=True))
    assert brief.text == f"## Personal memory\n- [agent.memory {pref}] preference.language: Answer in German"
    assert brief.dropped == {"personal_memory": 0, "memory": 1}, "the memory copy loses upward and is counted"


async def test_a_failed_personal_memory_read_leaves_the_preference_under_memory(db: Database, app: AppFactory) -> None:
    world = await make_world(app)
    await _preference(db, world)

    class Failing:
        name = "personal_memory"
        options_schema = default_registry(db).get("personal_memory").options_schema

        async def retrieve(self, request: ContextRequest, spec: ContextSourceSpec) -> list:  # type: ignore[type-arg]
            raise ConnectionError("down")

    registry = [Failing(), *(s for s in default_registry(db) if s.name != "personal_memory")]
    builder = DefaultContextBuilder(ContextSourceRegistry(registry), ContextPacker())
    brief = await builder.build(
        ContextRequest(subject=world.subject(), query="q", entities=[]), _memory_policy(personal=True)
    )
    assert brief.failed_sources == ["personal_memory"]
    assert "## Memory\n- [agent.memory" in brief.text and "Answer in German" in brief.text, "never disappears"


async def test_a_1658_token_newest_reply_survives_the_1500_token_thread_budget(db: Database, app: AppFactory) -> None:
    org = await app.organization()
    person = await app.person(org)
    start = datetime(2025, 3, 1, tzinfo=UTC)
    reply = "r" * (1658 * 4)  # 1,658 tokens by the byte estimate
    await app.outreach_message(org, person, "Our short opener", sent_at=start)
    await app.outreach_message(org, person, reply, direction="inbound", sent_at=start + timedelta(days=1))
    thread_budget = next(s.token_budget for s in OUTREACH_PLANNER.sources if s.name == "outreach_thread")
    assert thread_budget == 1500
    policy = OUTREACH_PLANNER.model_copy(
        update={"sources": [s for s in OUTREACH_PLANNER.sources if s.name in ("conversation", "outreach_thread")]}
    )
    brief = await _build(db, request(org, ref("crm.person", person)), policy)
    assert reply in brief.text, "the thread spends first, so the newest reply is never cut"
    assert brief.per_source_tokens["outreach_thread"] > thread_budget, "it may overflow its budget"
    assert brief.dropped["outreach_thread"] == 1 and "Our short opener" not in brief.text, "the rest obey budgets"


async def test_an_entity_id_that_cannot_form_a_subject_key_is_skipped_by_the_resolver_never_raised(
    db: Database, app: AppFactory
) -> None:
    org = await app.organization()
    kept = await app.company(org, name="Kept Co")
    spelled = await app.company(org, name="Spelled Co")
    refs = [ref("crm.company", kept), ref("crm.company", f"urn:uuid:{spelled}"), ref("crm.company", f"a\x00{spelled}")]
    with record_queries() as log:
        async with scoped_db(db, org) as client:
            resolved = await resolve_refs(client, refs)
    assert list(resolved) == [("crm.company", str(kept))]
    assert len(log.entries) == 1, "the skipped ids cost no query"

    items = await ApplicationContextSource(db).retrieve(request(org, *refs), spec("application"))
    assert {i.ref.id for i in items if i.ref} == {str(kept)}, "the source answers for the valid ref"
    assert all(i.subject_key and i.subject_key.startswith(f"crm.company:{kept}:") for i in items)


async def test_every_source_answers_a_request_whose_entity_id_cannot_form_a_subject_key(
    db: Database, app: AppFactory
) -> None:
    world = await make_world(app)
    company = await app.company(world.org, name="Contoso")
    person = await app.person(world.org)
    entities = [ref("crm.company", f"urn:uuid:{company}"), ref("crm.person", f"urn:uuid:{person}")]
    subject = ContextSubject(organization_id=world.org, user_id=world.user, definition_id=world.definition)
    policy = ContextPolicy(
        sources=[
            ContextSourceSpec(name=name, token_budget=500)
            for name in ("outreach_thread", "outreach", "personal_memory", "application", "memory", "run_history")
        ],
        total_token_budget=4000,
    )
    brief = await _build(db, ContextRequest(subject=subject, query="q", entities=entities), policy)
    assert brief.failed_sources == [], "an id that cannot form a key never fails a source"
