"""`POST /v1/memory/remember` refuses a subject of another organization: 422 `memory_subject_not_found`."""

from __future__ import annotations

from tests.factories import Factory
from tests.integration.functions.conftest import Service
from tests.integration.functions.test_canonical_ids import _error, _invocation, _remember
from tests.integration.memory.helpers import chain_rows


async def test_a_foreign_subject_is_a_422_with_its_code_and_writes_nothing(service: Service, factory: Factory) -> None:
    world, invocation = await _invocation(factory)
    foreign = str(await factory.company(await factory.organization()))
    response = await service.http.post(
        "/v1/memory/remember",
        json={"invocation": invocation, "arguments": _remember("crm.company", foreign)},
        headers=service.auth,
    )
    status, code, _details = _error(response)
    assert (status, code) == (422, "memory_subject_not_found")
    assert foreign not in response.text
    assert await chain_rows(service.db, world.org) == []
