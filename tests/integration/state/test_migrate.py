from __future__ import annotations

import asyncio
import hashlib
import shutil
import subprocess
import uuid
from pathlib import Path

import asyncpg
import pytest

from scripts.schema_dump import dump_schema, migrated_schema
from state.embedded import server_dsn
from state.errors import MigrationChecksumError, MigrationError
from state.migrate import (
    EDITS_FILE,
    MIGRATIONS_DIR,
    apply_migrations,
    load_edits,
    load_migrations,
    pending_migrations,
)


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


def test_a_malformed_edits_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / EDITS_FILE).write_text('[[edit]]\nfile = "0001_x.sql"\n')
    with pytest.raises(MigrationError, match="malformed"):
        load_edits(tmp_path)
    assert load_edits(tmp_path / "none") == []


async def test_a_database_that_recorded_an_edited_files_previous_checksum_is_upgradable(empty_url: str) -> None:
    edits = load_edits()
    assert edits, "migrations/edited.toml lists the files issue 23 edited"
    await apply_migrations(empty_url)
    conn = await asyncpg.connect(empty_url)
    try:
        for edit in edits:  # as a database migrated before the edits recorded them
            await conn.execute("UPDATE schema_migrations SET checksum = $1 WHERE name = $2", edit.previous, edit.file)
        assert await apply_migrations(empty_url) == []
        assert await pending_migrations(empty_url) == []
        # Only the listed checksum passes: any other text of an edited file is still refused.
        await conn.execute("UPDATE schema_migrations SET checksum = $1 WHERE name = $2", "0" * 64, edits[0].file)
    finally:
        await conn.close()
    with pytest.raises(MigrationChecksumError, match=edits[0].file):
        await apply_migrations(empty_url)


def _git_show(commit: str, path: str) -> bytes | None:
    if shutil.which("git") is None:
        return None
    root = MIGRATIONS_DIR.parent
    done = subprocess.run(["git", "-C", str(root), "show", f"{commit}:{path}"], capture_output=True, check=False)
    return done.stdout if done.returncode == 0 else None


async def test_every_listed_edit_leaves_the_schema_its_previous_text_built(
    pg_server_url: str, empty_url: str, tmp_path: Path
) -> None:
    before = tmp_path / "before"
    shutil.copytree(MIGRATIONS_DIR, before)
    (before / EDITS_FILE).unlink()
    names = {m.name for m in load_migrations()}
    for edit in load_edits():
        assert edit.file in names, f"edited.toml lists {edit.file}, which is not a migration"
        text = _git_show(edit.commit, f"migrations/{edit.file}")
        if text is None:
            pytest.skip(f"git cannot show {edit.commit[:12]}:migrations/{edit.file} (no git, or a shallow clone)")
        assert hashlib.sha256(text).hexdigest() == edit.previous, f"{edit.file}: the commit holds another text"
        (before / edit.file).write_bytes(text)
    # A database migrated by the previous texts, as a release before the edits left it, upgrades to today's
    # files with nothing to apply and has exactly the schema today's files build on an empty database.
    await apply_migrations(empty_url, before)
    assert await apply_migrations(empty_url) == []
    assert await dump_schema(empty_url) == await migrated_schema(pg_server_url)
