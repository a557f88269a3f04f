"""Every named statement the knowledge code uses exists, and every statement in the file prepares."""

from __future__ import annotations

import re
from pathlib import Path

from knowledge._sql import QUERIES
from state.db import Database

ROOT = Path(__file__).resolve().parents[3]
USES = re.compile(r'QUERIES\["([a-z_]+)"\]')


def test_every_query_name_the_code_uses_is_defined_and_every_defined_query_is_used() -> None:
    sources = [*ROOT.glob("knowledge/**/*.py"), ROOT / "context" / "sources" / "knowledge.py"]
    used = {name for path in sources for name in USES.findall(path.read_text())}
    assert used, "the pattern must find the uses"
    assert used - set(QUERIES) == set()
    assert set(QUERIES) - used == set()


async def test_every_knowledge_statement_prepares_against_the_migrated_schema(db: Database) -> None:
    async with db.connection() as conn, conn.transaction():
        await conn.execute(QUERIES["create_chunk_staging"])  # the bulk statements read this staging table
        for name, statement in QUERIES.items():
            try:
                await conn.prepare(statement)
            except Exception as exc:  # pragma: no cover - the message names the query
                raise AssertionError(f"query {name} does not prepare: {exc}") from exc
