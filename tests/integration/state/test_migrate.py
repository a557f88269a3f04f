from __future__ import annotations

import asyncio
import shutil
import uuid
from pathlib import Path

import asyncpg
import pytest

from state.embedded import server_dsn
from state.errors import MigrationChecksumError, MigrationError
from state.migrate import MIGRATIONS_DIR, apply_migrations, load_migrations, pending_migrations


@pytest.fixture
async def empty_url(pg_server_url: str):
    name = f"ac_empty_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(pg_server_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield server_dsn(pg_server_url, name)
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


async def test_migrations_apply_to_an_empty_database_and_a_second_run_is_a_no_op(empty_url: str) -> None:
    applied = await apply_migrations(empty_url)
    assert applied == [m.name for m in load_migrations()]
    assert await apply_migrations(empty_url) == []
    assert await pending_migrations(empty_url) == []


async def test_an_edited_applied_migration_is_refused(empty_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, folder)
    await apply_migrations(empty_url, folder)
    first = sorted(folder.glob("*.sql"))[0]
    first.write_text(first.read_text() + "\n-- an edit\n")
    with pytest.raises(MigrationChecksumError, match=first.name):
        await apply_migrations(empty_url, folder)


async def test_two_concurrent_migrate_calls_both_succeed_and_apply_each_file_once(empty_url: str) -> None:
    first, second = await asyncio.gather(apply_migrations(empty_url), apply_migrations(empty_url))
    names = [m.name for m in load_migrations()]
    assert sorted(first + second) == sorted(names)
    conn = await asyncpg.connect(empty_url)
    try:
        rows = await conn.fetch("SELECT name FROM schema_migrations ORDER BY name")
    finally:
        await conn.close()
    assert [r["name"] for r in rows] == names


async def test_a_failing_migration_rolls_back_and_names_the_file(empty_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, folder)
    (folder / "9999_broken.sql").write_text("CREATE TABLE ok_table (id int); SELECT no_such_function();")
    with pytest.raises(MigrationError, match=r"9999_broken\.sql"):
        await apply_migrations(empty_url, folder)
    conn = await asyncpg.connect(empty_url)
    try:
        assert await conn.fetchval("SELECT to_regclass('public.ok_table')") is None
    finally:
        await conn.close()


def test_a_badly_named_migration_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "1_Bad Name.sql").write_text("SELECT 1")
    with pytest.raises(MigrationError, match="NNNN"):
        load_migrations(tmp_path)
