"""MemoryService: the key it makes, the refusals it states, the chain it appends and the principal it checks."""

from __future__ import annotations

import asyncio

import pytest

from memory.errors import (
    DuplicateMemoryError,
    InvalidInvocationError,
    MemoryAlreadyForgottenError,
    MemoryNotCurrentError,
    MemoryNotFoundError,
    PrincipalMismatchError,
    UserScopeForTriggerError,
)
from memory.models import CanonicalSubjectRef, MemoryCandidate, ToolInvocation
from memory.service import MemoryService
from state.db import Database
from tests.factories import Factory
from tests.integration.memory.helpers import World, chain_rows, user_invocation


def candidate(text: str = "Write in British English", **values: object) -> MemoryCandidate:
    values.setdefault("attribute", "preference.language")
    values.setdefault("scope", "user")
    return MemoryCandidate.model_validate({"text": text, **values})


async def test_the_key_is_made_from_the_subject_ref(service: MemoryService, world: World, factory: Factory) -> None:
    company = str(await factory.company(world.org))
    ref = CanonicalSubjectRef(kind="crm.company", id=company, label="Acme: HQ")
    memory = await service.remember(
        world.inv,
        candidate(
            "Buys through procurement", attribute="observation.buying_process", scope="organization", subject_refs=[ref]
        ),
    )
    assert memory.subject_key == f"crm.company:{company}:observation.buying_process"
    assert memory.subject_refs == [{"kind": "crm.company", "id": company, "label": "Acme: HQ"}]
    assert memory.proposed_by_run_id == world.run and memory.supersedes_id is None


async def test_the_key_is_made_from_the_scope_owner_when_there_is_no_ref(service: MemoryService, world: World) -> None:
    mine = await service.remember(world.inv, candidate())
    ours = await service.remember(world.inv, candidate(scope="organization"))
    assert mine.subject_key == f"user:{world.user}:preference.language"
    assert (mine.scope, mine.user_id, mine.scope_owner_id) == ("user", world.user, world.user)
    assert ours.subject_key == f"organization:{world.org}:preference.language"
    assert (ours.scope, ours.user_id, ours.scope_owner_id) == ("organization", None, world.org)


async def test_identical_text_under_a_live_key_is_refused_and_writes_no_row(
    db: Database, service: MemoryService, world: World
) -> None:
    first = await service.remember(world.inv, candidate())
    with pytest.raises(DuplicateMemoryError) as caught:
        await service.remember(world.inv, candidate("  Write in British English\n"))
    assert caught.value.code == "memory_duplicate" and str(first.id) in str(caught.value)
    assert [r["id"] for r in await chain_rows(db, world.org)] == [first.id]


async def test_different_text_supersedes_the_exact_head(service: MemoryService, world: World) -> None:
    v1 = await service.remember(world.inv, candidate("Write in British English"))
    v2 = await service.remember(world.inv, candidate("Write in American English"))
    v3 = await service.remember(world.inv, candidate("Write in British English"))
    assert (v2.supersedes_id, v3.supersedes_id) == (v1.id, v2.id)


async def test_remember_after_a_tombstone_restarts_the_chain_after_it(service: MemoryService, world: World) -> None:
    v1 = await service.remember(world.inv, candidate())
    tomb = await service.forget(world.inv, v1.id)
    again = await service.remember(world.inv, candidate())  # the same text: the live key is gone
    assert tomb.is_tombstone and tomb.text is None and tomb.supersedes_id == v1.id
    assert again.supersedes_id == tomb.id and again.text == v1.text


async def test_a_trigger_cannot_write_user_scope(service: MemoryService, world: World) -> None:
    with pytest.raises(UserScopeForTriggerError):
        await service.remember(world.trigger_inv, candidate(scope="user"))
    memory = await service.remember(world.trigger_inv, candidate(scope="organization"))
    assert memory.scope == "organization"


async def test_an_invocation_outside_its_organization_or_of_a_workflow_is_refused(
    service: MemoryService, world: World, factory: Factory
) -> None:
    stranger_org = await factory.organization()
    stranger_run = await factory.run(stranger_org)
    workflow = await factory.definition(world.org, definition_kind="workflow")
    workflow_run = await factory.run(world.org, definition_id=workflow, user_id=world.user)
    outsider = await factory.user(stranger_org)
    bad = [
        ToolInvocation(
            organization_id=world.org, definition_id=world.definition, run_id=stranger_run, user_id=world.user
        ),
        ToolInvocation(organization_id=world.org, definition_id=workflow, run_id=workflow_run, user_id=world.user),
        ToolInvocation(organization_id=world.org, definition_id=world.definition, run_id=world.run, user_id=outsider),
    ]
    for inv in bad:
        with pytest.raises(InvalidInvocationError):
            await service.remember(inv, candidate(scope="organization"))


async def test_forget_refuses_an_old_revision_and_a_tombstone(service: MemoryService, world: World) -> None:
    v1 = await service.remember(world.inv, candidate("one"))
    v2 = await service.remember(world.inv, candidate("two"))
    with pytest.raises(MemoryNotCurrentError):
        await service.forget(world.inv, v1.id)
    tomb = await service.forget(world.inv, v2.id)
    with pytest.raises(MemoryAlreadyForgottenError):
        await service.forget(world.inv, tomb.id)
    with pytest.raises(MemoryAlreadyForgottenError):  # forgetting twice says so (issue 13), not "older revision"
        await service.forget(world.inv, v2.id)


async def test_forget_checks_the_invoking_principal(service: MemoryService, world: World, factory: Factory) -> None:
    mine = await service.remember(world.inv, candidate())
    other = await user_invocation(factory, world, world.other_user)
    with pytest.raises(PrincipalMismatchError):
        await service.forget(other, mine.id)  # another person's user memory
    with pytest.raises(PrincipalMismatchError):
        await service.forget(world.trigger_inv, mine.id)  # a trigger has no user
    other_agent = await factory.definition(world.org)
    elsewhere = await user_invocation(factory, world, world.user, definition=other_agent)
    with pytest.raises(PrincipalMismatchError):
        await service.forget(elsewhere, mine.id)  # another definition
    stranger = await make_stranger(factory)
    with pytest.raises(MemoryNotFoundError):
        await service.forget(stranger, mine.id)  # another organization sees no such memory
    ours = await service.remember(world.inv, candidate(scope="organization"))
    assert (await service.forget(world.trigger_inv, ours.id)).is_tombstone  # organization scope: any principal


async def make_stranger(factory: Factory) -> ToolInvocation:
    org = await factory.organization()
    user = await factory.user(org)
    definition = await factory.definition(org)
    run = await factory.run(org, definition_id=definition, user_id=user)
    return ToolInvocation(organization_id=org, definition_id=definition, run_id=run, user_id=user)


async def test_two_concurrent_forgets_append_one_tombstone(db: Database, service: MemoryService, world: World) -> None:
    memory = await service.remember(world.inv, candidate())
    results = await asyncio.gather(*(service.forget(world.inv, memory.id) for _ in range(5)), return_exceptions=True)
    tombstones = [r for r in results if not isinstance(r, BaseException)]
    refusals = [r for r in results if isinstance(r, BaseException)]
    assert len(tombstones) == 1
    assert all(isinstance(r, MemoryNotCurrentError | MemoryAlreadyForgottenError) for r in refusals), refusals
    assert len(await chain_rows(db, world.org)) == 2


async def test_concurrent_writers_of_one_text_write_one_row(db: Database, service: MemoryService, world: World) -> None:
    results = await asyncio.gather(
        *(service.remember(world.inv, candidate()) for _ in range(8)), return_exceptions=True
    )
    written = [r for r in results if not isinstance(r, BaseException)]
    assert len(written) == 1
    assert all(isinstance(r, DuplicateMemoryError) for r in results if isinstance(r, BaseException))
    assert len(await chain_rows(db, world.org)) == 1
