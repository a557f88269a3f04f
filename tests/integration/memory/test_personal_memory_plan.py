"""The `personal_memory` read reaches the person's preferences through their index, not the tenant's rows.

Several thousand memory rows across tenants, most of them one big organization's (its observations, its
other people's memories, the asker's own observations): the read must walk the asker's live preference
rows newest first (`memories_personal_preferences_idx`, migrations/0090) and stop at its limit, in the
custom plan and in the generic one a prepared statement settles on, and still answer exactly what
`fetch_personal_memories` promises.
"""

from __future__ import annotations

from uuid import UUID

import asyncpg

from memory.reads import read_personal_memories
from memory.repository import QUERIES
from state.db import Database
from tests.factories import Factory

INDEX = "memories_personal_preferences_idx"

# Rows of one organization: observations of the organization, then memories of each person in two
# definitions, one in three a preference; each person's first five preference chains have a second revision
# (the first one superseded, so not live) and one more is forgotten (a tombstone after it).
_SEED = """
WITH org_rows AS (
    INSERT INTO agent.memories (organization_id, definition_id, scope, scope_owner_id, subject_key, text, created_at)
    SELECT $1::uuid, ($2::uuid[])[1 + n % 2], 'organization', $1::uuid,
           'organization:' || $1::uuid || ':observation.n' || n, 'fact ' || n, now() - n * interval '1 minute'
      FROM generate_series(1, $4::int) AS n
    RETURNING 1
)
INSERT INTO agent.memories (organization_id, definition_id, scope, user_id, scope_owner_id, subject_key, text,
                            created_at)
SELECT $1::uuid, ($2::uuid[])[1 + n % 2], 'user', u, u,
       'user:' || u || ':' || CASE WHEN n % 3 = 0 THEN 'preference' ELSE 'observation' END || '.n' || n,
       'note ' || n, now() - n * interval '1 minute' - interval '1 second'
  FROM unnest($3::uuid[]) AS u CROSS JOIN generate_series(1, $5::int) AS n
"""
_REVISE = """
INSERT INTO agent.memories (organization_id, definition_id, scope, user_id, scope_owner_id, subject_key, text,
                            supersedes_id, forgotten_at, created_at)
SELECT m.organization_id, m.definition_id, m.scope, m.user_id, m.scope_owner_id, m.subject_key,
       CASE WHEN m.rn = 6 THEN NULL ELSE m.text || ' (revised)' END, m.id,
       CASE WHEN m.rn = 6 THEN now() END, now()
  FROM (SELECT m.*, row_number() OVER (PARTITION BY m.user_id ORDER BY m.created_at DESC, m.id) AS rn
          FROM agent.memories m
         WHERE m.organization_id = $1::uuid AND m.scope = 'user' AND m.subject_key LIKE '%:preference.%') AS m
 WHERE m.rn <= 6
"""


async def _tenant(
    db: Database, factory: Factory, *, people: int, org_rows: int, per_person: int
) -> tuple[UUID, list[UUID], list[UUID]]:
    org = await factory.organization()
    definitions = [await factory.definition(org), await factory.definition(org)]
    users = [await factory.user(org) for _ in range(people)]
    async with db.connection() as conn:
        await conn.execute(_SEED, org, definitions, users, org_rows, per_person)
        await conn.execute(_REVISE, org)
    return org, definitions, users


def _plan(rows: list[asyncpg.Record]) -> str:
    return "\n".join(r[0] for r in rows)


async def test_the_personal_memory_read_uses_its_index_and_never_scans_the_tenants_rows(
    db: Database, factory: Factory
) -> None:
    org, definitions, users = await _tenant(db, factory, people=20, org_rows=2_000, per_person=120)
    for _ in range(3):  # other tenants, smaller
        await _tenant(db, factory, people=4, org_rows=200, per_person=40)
    async with db.connection() as conn:
        await conn.execute("ANALYZE agent.memories")
        total = await conn.fetchval("SELECT count(*) FROM agent.memories")
        own = await conn.fetchval("SELECT count(*) FROM agent.memories WHERE organization_id = $1", org)
    assert total > 5_000 and own > 4_000
    asker = users[7]
    sql = QUERIES["fetch_personal_memories"]
    async with db.connection() as conn:
        plans: dict[tuple[str, UUID | None], str] = {}
        for definition in (definitions[0], None):  # a run in one definition; a Front Door turn across all
            plans["custom", definition] = _plan(await conn.fetch("EXPLAIN " + sql, org, definition, asker, 20))
        # The generic plan, the one a statement prepared by the pool settles on after five executions.
        async with conn.transaction():
            await conn.execute("SET LOCAL plan_cache_mode = force_generic_plan")
            await conn.execute("PREPARE personal (uuid, uuid, uuid, integer) AS " + sql)
            for definition in (definitions[0], None):
                # EXPLAIN EXECUTE takes no bind parameters: the ids (UUIDs the test made) as literals.
                args = ", ".join("NULL" if v is None else f"'{v}'" for v in (org, definition, asker))
                plans["generic", definition] = _plan(await conn.fetch(f"EXPLAIN EXECUTE personal ({args}, 20)"))
            await conn.execute("DEALLOCATE personal")
    for key, plan in plans.items():
        assert f"Index Scan using {INDEX} on memories m" in plan, (key, plan)
        assert "Seq Scan on memories m" not in plan and "Sort" not in plan, (key, plan)

    # The same rows as before the index: the asker's live preferences (of the definition, or of every
    # definition), newest first, the superseded and the forgotten revisions left out.
    live = (
        "SELECT id FROM agent.live_memories WHERE organization_id = $1 AND ($2::uuid IS NULL OR definition_id = $2) "
        "AND scope = 'user' AND user_id = $3 AND subject_key LIKE '%:preference.%' "
        "ORDER BY created_at DESC, id DESC LIMIT 20"
    )
    kwargs = {"organization_id": org, "user_id": asker, "trigger_id": None, "limit": 20}
    for definition in (definitions[0], None):
        async with db.connection() as conn:
            expected = [r["id"] for r in await conn.fetch(live, org, definition, asker)]
        read = await read_personal_memories(db, definition_id=definition, **kwargs)  # type: ignore[arg-type]
        assert [m.id for m in read] == expected and len(read) >= 19  # 20 a definition, one forgotten
        assert all(m.user_id == asker and ":preference." in m.subject_key for m in read)
        assert any(m.text.endswith("(revised)") for m in read)  # the second revision, not the first
        if definition is None:
            assert {m.definition_id for m in read} == set(definitions)
