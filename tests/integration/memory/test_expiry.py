"""Memories that expire (issue 22): an expired memory is not live the moment its time passes, and the sweep
closes its chain. Expired rows are written directly with an expiry in the past (no sleeping); the sweep and
the service take an explicit `now` where a test needs a time that has not come yet."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import asyncpg
import pytest

from context.builder import DefaultContextBuilder
from context.models import ContextPolicy, ContextRequest, ContextSourceSpec
from context.packer import ContextPacker
from context.sources import default_registry
from context.sources.memory import MemoryContextSource
from context.sources.personal_memory import PersonalMemoryContextSource
from memory import repository
from memory.errors import DuplicateMemoryError, InvalidExpiryError, InvalidToolInputError, RunMemoryLimitError
from memory.expiry import ExpiryPolicy, sweep_expired
from memory.models import MemoryCandidate
from memory.service import MemoryService
from memory.tools import REMEMBER_TOOL, MemoryTools
from state.db import Database
from tests.integration.memory.helpers import World, chain_rows, request, spec, world_memory

HOUR = timedelta(hours=1)


def _past(hours: float = 1) -> dict[str, datetime]:
    """created_at and expires_at of a revision that expired `hours` ago (it lived one day)."""
    expired = datetime.now(UTC) - timedelta(hours=hours)
    return {"created_at": expired - timedelta(days=1), "expires_at": expired}


def _args(text: str = "Buys through a committee", **extra: object) -> dict[str, object]:
    return {"attribute": "observation.buying_process", "text": text, "scope": "organization", **extra}


async def _heads(db: Database, org: UUID) -> list[dict[str, Any]]:
    async with db.connection() as conn:
        rows = await conn.fetch("SELECT * FROM agent.memory_heads WHERE organization_id = $1", org)
    return [dict(r) for r in rows]


def assert_linear_chains(rows: list[dict[str, Any]]) -> None:
    """Every chain is one root and a line of children ending at its one head: the chain rules, read back."""
    chains: dict[tuple[object, ...], list[dict[str, Any]]] = {}
    for row in rows:
        identity = (row["organization_id"], row["definition_id"], row["scope"], row["scope_owner_id"])
        chains.setdefault((*identity, row["subject_key"]), []).append(row)
    for chain in chains.values():
        [root] = [r for r in chain if r["supersedes_id"] is None]
        child = {r["supersedes_id"]: r for r in chain if r["supersedes_id"] is not None}
        assert len(child) == len(chain) - 1, "one revision has at most one child"
        walked, at = 1, root
        while at["id"] in child:
            at, walked = child[at["id"]], walked + 1
        assert walked == len(chain), "every revision of the chain is on the line from its root"


# --- reads: the brief -----------------------------------------------------------------------------------


async def test_an_expired_memory_never_enters_either_memory_source(db: Database, world: World) -> None:
    expired_org = await world_memory(db, world, attribute="observation.old", text="An old fact", **_past())
    live_org = await world_memory(db, world, attribute="observation.new", text="A fresh fact")
    later = await world_memory(
        db, world, attribute="observation.later", text="Still true", expires_at=datetime.now(UTC) + HOUR
    )
    expired_pref = await world_memory(
        db, world, user=world.user, attribute="preference.tone", text="Be terse", **_past(hours=0.01)
    )
    live_pref = await world_memory(db, world, user=world.user, attribute="preference.language", text="German")

    memory = await MemoryContextSource(db).retrieve(request(world.subject()), spec("memory"))
    assert {UUID(i.ref.id) for i in memory} == {live_org, later, live_pref}, "an expired memory is not read"
    personal = await PersonalMemoryContextSource(db).retrieve(request(world.subject()), spec("personal_memory"))
    assert [UUID(i.ref.id) for i in personal] == [live_pref], "an expired preference is not read either"
    assert {expired_org, expired_pref}.isdisjoint({UUID(i.ref.id) for i in memory + personal})


async def test_the_brief_never_shows_an_expired_memory_before_any_sweep(db: Database, world: World) -> None:
    await world_memory(db, world, attribute="observation.old", text="EXPIRED-MARKER old fact", **_past())
    await world_memory(db, world, user=world.user, attribute="preference.tone", text="EXPIRED-MARKER", **_past())
    await world_memory(db, world, user=world.user, attribute="preference.language", text="Answer in German")
    policy = ContextPolicy(
        sources=[
            ContextSourceSpec(name="personal_memory", token_budget=400),
            ContextSourceSpec(name="memory", token_budget=500),
        ],
        total_token_budget=2000,
    )
    turn = ContextRequest(subject=world.subject(), query="q", entities=[])
    brief, explanation = await DefaultContextBuilder(default_registry(db), ContextPacker()).build_explained(
        turn, policy
    )
    assert "Answer in German" in brief.text
    assert "EXPIRED-MARKER" not in brief.text
    assert all(e.title != "preference.tone" for e in explanation.items), "not even as a dropped item"


# --- writes: the count limit and the duplicate check ----------------------------------------------------


async def test_an_expired_memory_does_not_count_toward_the_run_limit(db: Database, world: World) -> None:
    tools = MemoryTools(MemoryService(db), remember_limit_per_run=2)
    for n in range(2):
        await world_memory(db, world, attribute=f"observation.old_{n}", run=world.run, **_past())
    await tools.call(REMEMBER_TOOL, world.inv, _args("one"))
    await tools.call(REMEMBER_TOOL, world.inv, _args("two", attribute="observation.other"))
    with pytest.raises(RunMemoryLimitError):
        await tools.call(REMEMBER_TOOL, world.inv, _args("three", attribute="observation.third"))


async def test_an_expired_memory_does_not_block_remembering_the_same_text(db: Database, world: World) -> None:
    service = MemoryService(db)
    candidate = MemoryCandidate.model_validate(_args())
    expired = await world_memory(db, world, attribute="observation.buying_process", text=candidate.text, **_past())
    again = await service.remember(world.inv, candidate)
    assert again.supersedes_id == expired and again.text == candidate.text, "appended after the expired head"
    assert again.expires_at is not None and again.expires_at > datetime.now(UTC)
    with pytest.raises(DuplicateMemoryError):
        await service.remember(world.inv, candidate)  # the live revision still refuses the same text
    [item] = await MemoryContextSource(db).retrieve(request(world.subject()), spec("memory"))
    assert UUID(item.ref.id) == again.id


# --- the sweep ------------------------------------------------------------------------------------------


async def test_the_sweep_tombstones_an_expired_chain_and_a_later_remember_revives_it(
    db: Database, world: World
) -> None:
    service = MemoryService(db)
    soon = await service.remember(world.inv, MemoryCandidate.model_validate(_args(ttl="PT1H")))
    kept = await service.remember(world.inv, MemoryCandidate.model_validate(_args("kept", attribute="preference.x")))
    expired = await world_memory(db, world, attribute="observation.old", **_past())
    assert kept.expires_at is None

    assert await sweep_expired(db) == 1, "only the memory whose time has passed"
    assert await sweep_expired(db, now=datetime.now(UTC) + 2 * HOUR) == 1, "then the one an hour away"
    assert await sweep_expired(db, now=datetime.now(UTC) + 2 * HOUR) == 0, "a closed chain is not closed twice"

    heads = {h["supersedes_id"]: h for h in await _heads(db, world.org) if h["forgotten_at"] is not None}
    assert set(heads) == {soon.id, expired}
    for tombstone in heads.values():
        assert tombstone["text"] is None and tombstone["expires_at"] is None, "a tombstone carries no expiry"
        assert tombstone["proposed_by_run_id"] is None, "the sweep is no run"
    assert_linear_chains(await chain_rows(db, world.org))

    revived = await service.remember(world.inv, MemoryCandidate.model_validate(_args()))
    assert revived.supersedes_id == heads[soon.id]["id"], "a later remember appends after the tombstone"
    items = await MemoryContextSource(db).retrieve(request(world.subject()), spec("memory"))
    assert {UUID(i.ref.id) for i in items} == {revived.id, kept.id}
    assert_linear_chains(await chain_rows(db, world.org))


async def test_a_remember_landing_between_the_sweeps_read_and_its_tombstone_keeps_the_chain(
    db: Database, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = MemoryService(db)
    expired = await world_memory(db, world, attribute="observation.buying_process", text="same", **_past())
    candidate = MemoryCandidate.model_validate(_args("same"))
    landed: list[UUID] = []
    read = repository.fetch_expired_heads

    async def read_then_remember(conn: Any, *, now: datetime | None, limit: int) -> list[Any]:
        heads = await read(conn, now=now, limit=limit)
        landed.append((await service.remember(world.inv, candidate)).id)  # the chain moves after the read
        return heads

    monkeypatch.setattr(repository, "fetch_expired_heads", read_then_remember)
    assert await sweep_expired(db) == 0, "the sweep leaves a chain whose head moved since it read it"
    [head] = await _heads(db, world.org)
    assert head["id"] == landed[0] and head["supersedes_id"] == expired and head["forgotten_at"] is None
    assert_linear_chains(await chain_rows(db, world.org))


async def test_a_sweep_landing_between_a_remembers_read_and_its_insert_keeps_the_chain(
    db: Database, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = MemoryService(db)
    await world_memory(db, world, attribute="observation.buying_process", text="same", **_past())
    swept: list[int] = []
    read = repository.fetch_head

    async def read_then_sweep(conn: Any, **chain: Any) -> Any:
        head = await read(conn, **chain)
        if not swept:  # once, for the remember's first read (the sweep's own read comes through here too)
            swept.append(-1)
            swept[0] = await sweep_expired(db)
        return head

    monkeypatch.setattr(repository, "fetch_head", read_then_sweep)
    written = await service.remember(world.inv, MemoryCandidate.model_validate(_args("same")))
    assert swept == [1] and service.races_lost == 1, "the remember lost the chain to the sweep's tombstone"
    rows = {r["id"]: r for r in await chain_rows(db, world.org)}
    assert rows[written.supersedes_id]["forgotten_at"] is not None, "it reloaded the head: after the tombstone"
    assert_linear_chains(list(rows.values()))


# --- the expiry a remember gets -------------------------------------------------------------------------


async def test_a_remember_with_no_expiry_gets_its_namespace_default(db: Database, world: World) -> None:
    now = datetime.now(UTC)
    week = MemoryService(db, expiry=ExpiryPolicy(observation_ttl=timedelta(days=7), preference_ttl=timedelta(days=2)))
    observation = await week.remember(world.inv, MemoryCandidate.model_validate(_args()), now=now)
    assert observation.expires_at == now + timedelta(days=7)
    preference = await week.remember(
        world.inv, MemoryCandidate.model_validate(_args(attribute="preference.x")), now=now
    )
    assert preference.expires_at == now + timedelta(days=2)

    default = MemoryService(db)  # the settings' defaults: observations 90 days, preferences never
    observed = await default.remember(
        world.inv, MemoryCandidate.model_validate(_args(attribute="observation.y")), now=now
    )
    assert observed.expires_at == now + timedelta(days=90)
    preferred = await default.remember(
        world.inv, MemoryCandidate.model_validate(_args(attribute="preference.y")), now=now
    )
    assert preferred.expires_at is None
    explicit = await default.remember(
        world.inv, MemoryCandidate.model_validate(_args(attribute="preference.z", ttl="P1DT6H")), now=now
    )
    assert explicit.expires_at == now + timedelta(days=1, hours=6), "an explicit ttl beats the default"
    at = (now + timedelta(days=3)).replace(microsecond=0)
    dated = await default.remember(
        world.inv, MemoryCandidate.model_validate(_args(attribute="observation.z", expires_at=at)), now=now
    )
    assert dated.expires_at == at


FORBID_PREFERENCES = ExpiryPolicy(preference_may_expire=False)
IN_A_YEAR = (datetime.now(UTC) + timedelta(days=365)).isoformat()


@pytest.mark.parametrize(
    ("arguments", "policy", "code", "loc"),
    [
        (_args(expires_at="2001-01-01T00:00:00Z"), None, "memory_invalid_expiry", ("expires_at",)),
        (_args(ttl="PT0S"), None, "memory_invalid_expiry", ("ttl",)),
        (_args(ttl="P1826D"), None, "memory_invalid_expiry", ("ttl",)),
        (_args(expires_at="2999-01-01T00:00:00+02:00"), None, "memory_invalid_expiry", ("expires_at",)),
        (_args(attribute="preference.tone", ttl="P1D"), FORBID_PREFERENCES, "memory_invalid_expiry", ("ttl",)),
        (
            _args(attribute="preference.tone", expires_at=IN_A_YEAR),
            FORBID_PREFERENCES,
            "memory_invalid_expiry",
            ("expires_at",),
        ),
        (_args(expires_at=IN_A_YEAR, ttl="P1D"), None, "invalid_input", ("ttl",)),
        (_args(expires_at="next tuesday"), None, "invalid_input", ("expires_at",)),
        (_args(expires_at="2030-01-01T00:00:00"), None, "invalid_input", ("expires_at",)),
        (_args(ttl="P1M"), None, "invalid_input", ("ttl",)),
        (_args(ttl=3600), None, "invalid_input", ("ttl",)),
    ],
    ids=[
        "past",
        "zero-ttl",
        "ttl-too-long",
        "date-too-far",
        "forbidden-ttl",
        "forbidden-date",
        "both",
        "not-a-date",
        "no-offset",
        "months",
        "seconds-number",
    ],
)
async def test_each_refused_expiry_names_its_field_and_writes_nothing(
    db: Database, world: World, arguments: dict[str, object], policy: ExpiryPolicy | None, code: str, loc: tuple[str]
) -> None:
    tools = MemoryTools(MemoryService(db) if policy is None else MemoryService(db, expiry=policy))
    with pytest.raises(InvalidToolInputError) as caught:
        await tools.call(REMEMBER_TOOL, world.inv, arguments)
    assert caught.value.code == code
    assert [e["loc"] for e in caught.value.errors] == [loc], caught.value.errors
    assert await chain_rows(db, world.org) == []


async def test_a_preference_may_carry_an_expiry_by_default(db: Database, world: World) -> None:
    tools = MemoryTools(MemoryService(db))
    written = await tools.call(REMEMBER_TOOL, world.inv, _args(attribute="preference.tone", ttl="P14D"))
    assert written["expires_at"] is not None


async def test_a_constructed_candidate_with_both_forms_is_refused_by_the_service(db: Database, world: World) -> None:
    both = MemoryCandidate.model_construct(
        attribute="observation.x", text="t", scope="organization", subject_refs=[],
        expires_at=datetime.now(UTC) + HOUR, ttl="P1D",
    )  # fmt: skip
    with pytest.raises(InvalidExpiryError) as caught:
        await MemoryService(db).remember(world.inv, both)
    assert caught.value.errors[0]["loc"] == ("ttl",)


# --- the table ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("new_expiry", ["now() + interval '1 day'", "NULL"], ids=["move", "clear"])
async def test_the_append_only_trigger_refuses_rewriting_expires_at(
    db: Database, world: World, new_expiry: str
) -> None:
    expiring = await world_memory(db, world, expires_at=datetime.now(UTC) + HOUR)
    kept = await world_memory(db, world, attribute="observation.kept")
    async with db.connection() as conn:
        for memory in (expiring, kept):
            if new_expiry == "NULL" and memory == kept:
                continue  # NULL to NULL is no rewrite
            with pytest.raises(asyncpg.CheckViolationError) as caught:
                await conn.execute(f"UPDATE agent.memories SET expires_at = {new_expiry} WHERE id = $1", memory)
            assert caught.value.constraint_name == "memories_append_only"


async def test_the_database_refuses_a_tombstone_with_an_expiry(db: Database, world: World) -> None:
    head = await world_memory(db, world)
    with pytest.raises(asyncpg.CheckViolationError) as caught:
        await world_memory(db, world, text=None, forgotten=True, supersedes=head, expires_at=datetime.now(UTC) + HOUR)
    assert caught.value.constraint_name == "memories_tombstone_has_no_expiry"
