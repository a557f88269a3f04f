"""Migration 0063: BM25 counts a hyphenated word once, as its parts, and an upgraded database is recounted."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path
from typing import Any

import asyncpg

from knowledge.documents.objects import LocalObjectStore
from state.db import Database
from state.embedded import server_dsn
from state.migrate import MIGRATIONS_DIR, apply_migrations
from state.settings import load_settings
from tests.factories import Factory
from tests.integration.knowledge.helpers import Kit, unit
from tests.integration.knowledge.lexical import assert_consistent

HYPHENATED = "Boundary-layer flow over a boundary-layer wing at Mach-number two."
SPACED = "Boundary layer flow over a boundary layer wing at Mach number two."


async def _postings(db: Database, source_id: uuid.UUID) -> list[tuple[str, int, int]]:
    """(lexeme, tf, chunk length) of every posting of the source's chunks, in lexeme order."""
    async with db.connection() as conn:
        rows = await conn.fetch(
            "SELECT p.lexeme, p.tf, p.chunk_length FROM agent.knowledge_postings p"
            " JOIN agent.knowledge_chunks c ON c.id = p.chunk_id WHERE c.source_id = $1 ORDER BY p.lexeme",
            source_id,
        )
    return [(r["lexeme"], r["tf"], r["chunk_length"]) for r in rows]


async def test_a_hyphenated_word_is_counted_once_as_its_parts(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    hyphenated = await kit.ingest(org, HYPHENATED, title="Notes")
    spaced = await kit.ingest(org, SPACED, title="Notes")
    postings = await _postings(kit.db, hyphenated)
    assert postings == await _postings(kit.db, spaced)
    lexemes = {lexeme: tf for lexeme, tf, _ in postings}
    assert lexemes["boundari"] == 2 and lexemes["layer"] == 2 and lexemes["mach"] == 1
    assert [lexeme for lexeme in lexemes if "-" in lexeme] == []
    assert {length for _, _, length in postings} == {sum(lexemes.values())}
    await assert_consistent(kit.db)


async def test_a_query_naming_the_compound_finds_the_chunk_through_its_parts(kit: Kit, factory: Factory) -> None:
    org = await factory.organization()
    await kit.ingest(org, "Unrelated pages about invoices and the renewal of a contract.")
    wanted = await kit.ingest(org, HYPHENATED)
    async with kit.db.tenant(org) as conn:
        rows = await conn.fetch(
            "SELECT source_id, lexical_rank FROM public.knowledge_search($1, $2, 'boundary-layer wing', false, true,"
            " 5, p_dense_weight => 0, p_lexical_weight => 1)",
            org,
            unit(64, 1),
        )
    assert [(r["source_id"], r["lexical_rank"]) for r in rows] == [(wanted, 1)]


async def _fresh_database(admin_url: str) -> tuple[str, str]:
    name = f"ac_test_{uuid.uuid4().hex[:16]}"
    admin = await asyncpg.connect(admin_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    return name, server_dsn(admin_url, name)


async def test_a_database_upgraded_to_0063_recounts_its_postings_without_compounds(
    pg_server_url: str, tmp_path: Path
) -> None:
    before = tmp_path / "migrations"
    before.mkdir()
    for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
        # Today's ingestion seeds the old database, so it gets the model write lock it takes (0073) and the
        # review columns it writes (0087), the erasure guard it calls (0095's marks, 0112's guard) and the
        # versions its swap keeps (0097; both alter the receipts of 0080), none of which touches what 0063
        # rewrites, ahead of their turn.
        if path.name < "0063" or path.name.startswith(("0073_", "0080_", "0087_", "0095_", "0097_", "0112_")):
            shutil.copy(path, before / path.name)
    name, url = await _fresh_database(pg_server_url)
    try:
        await apply_migrations(url, before)
        db = await Database.open(load_settings(pool_min_size=1, pool_max_size=4), url=url, migrate=False)
        try:
            factory = Factory(db)
            kit = Kit(db, LocalObjectStore(tmp_path / "objects"))
            await kit.use_platform_model()
            org = await factory.organization()
            hyphenated = await kit.ingest(org, HYPHENATED, title="Notes")
            spaced = await kit.ingest(org, SPACED, title="Notes")
            pending = await kit.register(org, "A pending page on shock-wave interaction")
            old: Any = await _postings(db, hyphenated)
            assert any("-" in lexeme for lexeme, _, _ in old), "before 0063 the compound has its own posting"

            shutil.copy(MIGRATIONS_DIR / "0063_knowledge_lexemes_without_compounds.sql", before)
            assert await apply_migrations(url, before) == ["0063_knowledge_lexemes_without_compounds.sql"]

            assert await _postings(db, hyphenated) == await _postings(db, spaced)
            assert await _postings(db, pending) == []
            stats = await assert_consistent(db, sources=False)  # the source-level statistics come with 0092
            assert all("-" not in lexeme for scope in stats.values() for lexeme in scope["df"])
        finally:
            await db.close()
    finally:
        admin = await asyncpg.connect(pg_server_url)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


async def test_a_chunks_vector_is_kept_in_its_row_and_its_text_and_tsvector_give_way_first(db: Database) -> None:
    async with db.connection() as conn:
        storage = dict(
            await conn.fetch(
                "SELECT attname, attstorage FROM pg_attribute WHERE attrelid = 'agent.knowledge_chunks'::regclass"
                " AND attname IN ('embedding', 'text', 'fts')"
            )
        )
    assert storage == {"embedding": b"m", "text": b"x", "fts": b"x"}
