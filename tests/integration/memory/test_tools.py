"""The memory tools over the database: results, the per-run count limit, and input that never writes."""

from __future__ import annotations

import asyncio
import json

import pytest

from memory.errors import DuplicateMemoryError, InvalidToolInputError, RunMemoryLimitError
from memory.service import MemoryService
from memory.tools import FORGET_TOOL, REMEMBER_TOOL, MemoryTools
from state.db import Database
from tests.factories import Factory
from tests.integration.memory.helpers import World, chain_rows, user_invocation


def remember_args(n: int | str, **extra: object) -> dict[str, object]:
    return {"attribute": f"observation.fact_{n}", "text": f"fact {n}", "scope": "organization", **extra}


async def test_remember_and_forget_answer_the_revision_they_wrote(
    service: MemoryService, world: World, factory: Factory
) -> None:
    tools = MemoryTools(service)
    company = str(await factory.company(world.org))
    args = {
        "attribute": "observation.buying_process",
        "text": "Buys through a committee",
        "scope": "organization",
        "subject_refs": [{"kind": "crm.company", "id": company, "label": "Acme: HQ"}],
    }
    written = await tools.call(REMEMBER_TOOL, world.inv, json.dumps(args))
    assert written["subject_key"] == f"crm.company:{company}:observation.buying_process"
    assert written["subject_refs"] == [{"kind": "crm.company", "id": company, "label": "Acme: HQ"}]
    assert written["forgotten"] is False and written["supersedes_id"] is None
    forgotten = await tools.call(FORGET_TOOL, world.inv, {"memory_id": written["memory_id"]})
    assert forgotten["forgotten"] is True and forgotten["text"] is None
    assert forgotten["supersedes_id"] == written["memory_id"]


async def test_invalid_input_writes_nothing(db: Database, service: MemoryService, world: World) -> None:
    tools = MemoryTools(service)
    bad_inputs: list[dict[str, object]] = [
        remember_args(1, subject_key="crm.company:1:observation.x"),
        {**remember_args(2), "scope": 1},
        {**remember_args(3), "attribute": "lifecycle_stage"},
        remember_args(4, subject_refs=[{"kind": "crm.company", "id": "a"}, {"kind": "crm.company", "id": "b"}]),
    ]
    for args in bad_inputs:
        with pytest.raises(InvalidToolInputError) as caught:
            await tools.call(REMEMBER_TOOL, world.inv, args)
        assert caught.value.code == "invalid_input"
    assert await chain_rows(db, world.org) == []


async def test_remember_stops_at_the_per_run_limit(db: Database, service: MemoryService, world: World) -> None:
    tools = MemoryTools(service, remember_limit_per_run=3)
    for n in range(3):
        await tools.call(REMEMBER_TOOL, world.inv, remember_args(n))
    with pytest.raises(RunMemoryLimitError) as caught:
        await tools.call(REMEMBER_TOOL, world.inv, remember_args(99))
    assert caught.value.code == "memory_run_limit"
    assert len(await chain_rows(db, world.org)) == 3


async def test_the_limit_counts_the_run_in_the_database_even_when_calls_race(
    db: Database, service: MemoryService, world: World, factory: Factory
) -> None:
    tools = MemoryTools(service, remember_limit_per_run=3)
    results = await asyncio.gather(
        *(tools.call(REMEMBER_TOOL, world.inv, remember_args(n)) for n in range(8)), return_exceptions=True
    )
    assert sum(not isinstance(r, BaseException) for r in results) == 3
    assert all(isinstance(r, RunMemoryLimitError) for r in results if isinstance(r, BaseException))
    # Another run of the same agent has its own count.
    other_run = await user_invocation(factory, world, world.user)
    await tools.call(REMEMBER_TOOL, other_run, remember_args("other"))
    assert len(await chain_rows(db, world.org)) == 4


async def test_forget_and_refused_duplicates_do_not_spend_the_limit(service: MemoryService, world: World) -> None:
    tools = MemoryTools(service, remember_limit_per_run=2)
    first = await tools.call(REMEMBER_TOOL, world.inv, remember_args(1))
    with pytest.raises(DuplicateMemoryError):
        await tools.call(REMEMBER_TOOL, world.inv, remember_args(1))
    await tools.call(FORGET_TOOL, world.inv, {"memory_id": first["memory_id"]})
    await tools.call(REMEMBER_TOOL, world.inv, remember_args(2))  # the second write of this run
    with pytest.raises(RunMemoryLimitError):
        await tools.call(REMEMBER_TOOL, world.inv, remember_args(3))
