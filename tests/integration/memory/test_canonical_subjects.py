"""Canonical memory subjects (issue 21, item 6): `memory.remember` refuses every look-alike kind and id at its
path and stores nothing; the service refuses one a candidate smuggles past its type; a stored non-canonical
element (a row written before the rule) drops its own memory and never the page; the resolvers read only
canonical ids."""

from __future__ import annotations

import json
from typing import Any
from uuid import uuid4

import pytest

from memory.errors import InvalidSubjectKeyError, InvalidToolInputError
from memory.models import MemoryCandidate, MemorySubjectRef
from memory.reads import guard_subjects, read_live_memories
from memory.service import MemoryService
from memory.tools import FORGET_TOOL, REMEMBER_TOOL, MemoryTools
from state.db import Database
from state.refs import ResourceRef
from state.resolvers import resolve_refs
from state.scoped import record_queries, scoped_db
from tests.factories import Factory
from tests.integration.memory.helpers import World, chain_rows, raw_memory
from tests.unit.state.lookalikes import CANONICAL_KIND, LOOK_ALIKE_KINDS, look_alike_uuids

EXAMPLE_ID = str(uuid4())
LOOK_ALIKE_IDS = look_alike_uuids(EXAMPLE_ID)


def _remember(kind: str, ident: str) -> dict[str, Any]:
    return {
        "attribute": "observation.buying_process",
        "text": "Buys through a committee",
        "scope": "organization",
        "subject_refs": [{"kind": kind, "id": ident}],
    }


async def _refused(service: MemoryService, world: World, arguments: dict[str, Any]) -> InvalidToolInputError:
    with pytest.raises(InvalidToolInputError) as caught:
        await MemoryTools(service).call(REMEMBER_TOOL, world.inv, json.dumps(arguments))
    return caught.value


@pytest.mark.parametrize("case", list(LOOK_ALIKE_KINDS))
async def test_remember_refuses_a_look_alike_kind_at_its_path_and_stores_nothing(
    db: Database, service: MemoryService, world: World, case: str
) -> None:
    refused = await _refused(service, world, _remember(LOOK_ALIKE_KINDS[case], EXAMPLE_ID))
    assert refused.code == "invalid_input"
    assert [e["loc"] for e in refused.errors] == [("subject_refs", 0, "kind")]
    assert "subject_refs.0.kind" in str(refused) and "\n" not in str(refused)
    assert LOOK_ALIKE_KINDS[case] not in str(refused), "the refusal never echoes the value"
    assert await chain_rows(db, world.org) == []


@pytest.mark.parametrize("case", list(LOOK_ALIKE_IDS))
async def test_remember_refuses_a_padded_or_respelled_uuid_at_its_path_and_stores_nothing(
    db: Database, service: MemoryService, world: World, case: str
) -> None:
    refused = await _refused(service, world, _remember(CANONICAL_KIND, LOOK_ALIKE_IDS[case]))
    assert [e["loc"] for e in refused.errors] == [("subject_refs", 0, "id")]
    assert "subject_refs.0.id" in str(refused) and "\n" not in str(refused)
    assert await chain_rows(db, world.org) == []


async def test_remember_stores_the_canonical_subject_and_forget_refuses_a_respelled_memory_id(
    db: Database, service: MemoryService, world: World, factory: Factory
) -> None:
    company = str(await factory.company(world.org))
    tools = MemoryTools(service)
    written = await tools.call(REMEMBER_TOOL, world.inv, _remember(CANONICAL_KIND, company))
    assert written["subject_key"] == f"crm.company:{company}:observation.buying_process"
    for case, spelled in look_alike_uuids(written["memory_id"]).items():
        with pytest.raises(InvalidToolInputError) as caught:
            await tools.call(FORGET_TOOL, world.inv, {"memory_id": spelled})
        assert [e["loc"] for e in caught.value.errors] == [("memory_id",)], case
    assert len(await chain_rows(db, world.org)) == 1, "nothing was forgotten"
    assert (await tools.call(FORGET_TOOL, world.inv, {"memory_id": written["memory_id"]}))["forgotten"] is True


@pytest.mark.parametrize(
    ("kind", "ident", "field"),
    [
        (LOOK_ALIKE_KINDS["one dot leader U+2024"], EXAMPLE_ID, "kind"),
        (CANONICAL_KIND, LOOK_ALIKE_IDS["padded with no-break spaces"], "id"),
        (CANONICAL_KIND, LOOK_ALIKE_IDS["upper case"], "id"),
    ],
)
async def test_the_service_refuses_a_look_alike_that_skipped_the_candidate_type(
    db: Database, service: MemoryService, world: World, kind: str, ident: str, field: str
) -> None:
    smuggled = MemoryCandidate.model_construct(
        attribute="observation.buying_process",
        text="Buys through a committee",
        scope="organization",
        subject_refs=[MemorySubjectRef(kind=kind, id=ident)],
    )
    with pytest.raises(InvalidSubjectKeyError) as caught:
        await service.remember(world.inv, smuggled)
    assert caught.value.code == "memory_invalid_subject_key"
    assert str(caught.value).startswith(f"subject_refs.0.{field} ")
    assert await chain_rows(db, world.org) == []


async def test_a_stored_non_canonical_element_drops_its_own_memory_never_the_page(
    db: Database, world: World, factory: Factory
) -> None:
    company = str(await factory.company(world.org))
    org, definition = world.org, world.definition
    good = await raw_memory(db, org=org, definition=definition, attribute="observation.good", refs=[_ref(company)])
    plain = await raw_memory(db, org=org, definition=definition, attribute="observation.plain")
    spellings = look_alike_uuids(company)
    for n, case in enumerate(("upper case", "braces", "no hyphens", "padded with no-break spaces")):
        # Rows a writer stored before the rule: each is well formed, and three of them parse as the company.
        await raw_memory(
            db, org=org, definition=definition, attribute=f"observation.old{n}", refs=[_ref(spellings[case])]
        )
    look_alike_kind = [{"kind": LOOK_ALIKE_KINDS["Cyrillic a U+0430"], "id": company}]
    await raw_memory(db, org=org, definition=definition, attribute="observation.kind", refs=look_alike_kind)

    memories = await read_live_memories(
        db, organization_id=org, definition_id=definition, user_id=world.user, trigger_id=None, limit=20
    )
    assert len(memories) == 7
    with record_queries() as log:
        report = await guard_subjects(db, org, memories)
    assert {g.memory.id for g in report.kept} == {good, plain}, "the page keeps every other memory"
    assert (report.non_canonical, report.unowned_kind, report.unresolved) == (4, 1, 0)
    assert log.tables() == ["crm_companies"], "one read for the canonical ref; the look-alikes cost none"


async def test_the_resolvers_read_only_canonical_ids(db: Database, world: World, factory: Factory) -> None:
    company = str(await factory.company(world.org))
    spelled = [ResourceRef(kind=CANONICAL_KIND, id=v) for v in look_alike_uuids(company).values()]
    async with scoped_db(db, world.org) as client:
        with record_queries() as log:
            assert await resolve_refs(client, spelled) == {}, "a respelled id would key the row a second way"
        assert log.entries == []
        assert list(await resolve_refs(client, [*spelled, ResourceRef(kind=CANONICAL_KIND, id=company)])) == [
            (CANONICAL_KIND, company)
        ]


def _ref(ident: str) -> dict[str, str]:
    return {"kind": CANONICAL_KIND, "id": ident}
