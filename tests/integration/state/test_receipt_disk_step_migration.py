"""Migration 0105 records an erasure's disk step, and marks the step of the receipts written before it.

Receipts are written on a database migrated up to 0104, as the code before 0105 left them (a complete
organization erasure killed before its disk step, with `physical` empty; one that ran it; a person's erasure,
which never had one; a source delete; an erasure still running); then the remaining migrations run, as at a
deploy, and the erasures that never ran their step are the ones pending (their next rerun runs it).
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from state.embedded import server_dsn
from state.migrate import MIGRATIONS_DIR, apply_migrations


@pytest.fixture
async def before_0105(pg_server_url: str, tmp_path: Path) -> AsyncIterator[str]:
    """A fresh database migrated up to 0104 only."""
    name = f"ac_disk_step_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(pg_server_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    url = server_dsn(pg_server_url, name)
    folder = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, folder)
    for later in folder.glob("*.sql"):
        if later.name >= "0105":
            later.unlink()
    try:
        await apply_migrations(url, folder)
        yield url
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


RECEIPTS = {
    # name: (kind, status, physical, the disk step 0105 leaves)
    "organization killed before its disk step": ("organization", "complete", {}, "pending"),
    "organization that ran its disk step": ("organization", "complete", {"checkpoint": True}, "done"),
    "person (no disk step before 0105)": ("user", "complete", {}, "pending"),
    "source delete": ("source", "complete", {}, "none"),
    "organization still running": ("organization", "running", {}, "none"),
}


async def test_0105_marks_the_complete_erasures_that_never_ran_their_disk_step_pending(before_0105: str) -> None:
    conn = await asyncpg.connect(before_0105)
    try:
        ids = {}
        for name, (kind, status, physical, _) in RECEIPTS.items():
            ids[name] = await conn.fetchval(
                "INSERT INTO agent.removal_receipts (kind, organization_id, target_id, requested_by, status,"
                " finished_at, physical) VALUES ($1, $2, $3, 'test', $4,"
                " CASE WHEN $4 = 'complete' THEN now() END, $5::jsonb) RETURNING id",
                kind, uuid.uuid4(), uuid.uuid4(), status, json.dumps(physical),
            )  # fmt: skip
    finally:
        await conn.close()

    assert [m for m in await apply_migrations(before_0105) if m.startswith("0105")], "0105 ran"

    conn = await asyncpg.connect(before_0105)
    try:
        steps = {r["id"]: r["disk_step"] for r in await conn.fetch("SELECT id, disk_step FROM agent.removal_receipts")}
    finally:
        await conn.close()
    assert {name: steps[ids[name]] for name in RECEIPTS} == {name: r[3] for name, r in RECEIPTS.items()}
