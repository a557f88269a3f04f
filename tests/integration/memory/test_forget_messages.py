"""`memory forget` says what is true: already forgotten, or an older revision naming the current one."""

from __future__ import annotations

import pytest

from memory.errors import MemoryAlreadyForgottenError, MemoryNotCurrentError
from memory.models import MemoryCandidate
from memory.service import MemoryService
from tests.integration.memory.helpers import World


def candidate(text: str) -> MemoryCandidate:
    return MemoryCandidate.model_validate({"attribute": "preference.language", "scope": "user", "text": text})


async def test_forgetting_twice_says_already_forgotten_not_older_revision(service: MemoryService, world: World) -> None:
    memory = await service.remember(world.inv, candidate("Write in British English"))
    tombstone = await service.forget(world.inv, memory.id)
    with pytest.raises(MemoryAlreadyForgottenError, match=f"memory {memory.id} is already forgotten") as info:
        await service.forget(world.inv, memory.id)
    assert str(tombstone.id) in str(info.value)
    with pytest.raises(MemoryAlreadyForgottenError, match="is a tombstone"):
        await service.forget(world.inv, tombstone.id)


async def test_forgetting_an_older_revision_names_the_current_one(service: MemoryService, world: World) -> None:
    old = await service.remember(world.inv, candidate("Write in British English"))
    new = await service.remember(world.inv, candidate("Write in French"))
    with pytest.raises(
        MemoryNotCurrentError, match=f"memory {old.id} is an older revision; the current one is {new.id}"
    ):
        await service.forget(world.inv, old.id)
    await service.forget(world.inv, new.id)
    with pytest.raises(MemoryNotCurrentError, match="its subject is forgotten"):
        await service.forget(world.inv, old.id)
