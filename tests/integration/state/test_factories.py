from __future__ import annotations

from state.db import Database
from tests.factories import Factory


async def test_a_dict_handed_to_a_factory_is_stored_as_a_json_object(db: Database, factory: Factory) -> None:
    org = await factory.organization()
    run = await factory.run(org, result={"summary": "s", "refs": []})
    async with db.connection() as conn:
        kind = await conn.fetchval("SELECT jsonb_typeof(result) FROM agent.runs WHERE id = $1", run)
    assert kind == "object"
