"""Migration 0121 gives every source that existed before 0120 its latest attempt, as its row tells it.

Sources are written on a database migrated up to 0119 (ready, failed by its ingestion, failed by the sweep
after a retry, pending, being deleted); then the remaining migrations run, as at a deploy. Each but the one
being deleted gets one attempt; no earlier attempt is invented.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from state.embedded import server_dsn
from state.migrate import MIGRATIONS_DIR, apply_migrations

STALLED = "ingestion_stalled: ingestion did not finish within 1 hour. Retry the source to ingest it again."
ROWS = {  # title: (status, failure_reason, attempts, pending)
    "ready": ("ready", None, 1, False),
    "failed": ("failed", "pdf_encrypted: the PDF is encrypted", 1, False),
    "swept": ("failed", STALLED, 2, False),
    "pending": ("pending", None, 1, True),
    "deleting": ("deleting", None, 1, False),
}


@pytest.fixture
async def before_0120(pg_server_url: str, tmp_path: Path) -> AsyncIterator[str]:
    """A fresh database migrated up to 0119 only."""
    name = f"ac_attempts_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(pg_server_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    url = server_dsn(pg_server_url, name)
    folder = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, folder)
    for later in folder.glob("*.sql"):
        if later.name >= "0120":
            later.unlink()
    try:
        await apply_migrations(url, folder)
        yield url
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


async def test_0121_backfills_each_existing_sources_latest_attempt(before_0120: str) -> None:
    conn = await asyncpg.connect(before_0120)
    try:
        for n, (title, (status, reason, attempts, pending)) in enumerate(ROWS.items()):
            await conn.execute(
                "INSERT INTO agent.knowledge_sources (kind, title, object_key, content_sha256, byte_size, status,"
                " failure_reason, attempts, pending_since)"
                " VALUES ('upload', $1, $1, $2, 1, $3, $4, $5, CASE WHEN $6 THEN now() END)",
                title, f"{n:064x}", status, reason, attempts, pending,
            )  # fmt: skip
    finally:
        await conn.close()

    assert [m for m in await apply_migrations(before_0120) if m.startswith("0121")], "0121 ran"

    conn = await asyncpg.connect(before_0120)
    try:
        rows = await conn.fetch(
            "SELECT s.title, a.cause, a.outcome, a.ended_by, a.reason, a.finished_at IS NULL AS running"
            "  FROM agent.knowledge_source_attempts a JOIN agent.knowledge_sources s ON s.id = a.source_id"
        )
    finally:
        await conn.close()
    seen = {r["title"]: (r["cause"], r["outcome"], r["ended_by"], r["running"]) for r in rows}
    assert len(rows) == len(seen), "one attempt per source"
    assert seen == {
        "ready": ("upload", "ready", "ingestion", False),
        "failed": ("upload", "failed", "ingestion", False),
        "swept": ("retry", "failed", "sweep", False),
        "pending": ("upload", None, None, True),
    }, seen
    assert {r["title"]: r["reason"] for r in rows}["swept"] == STALLED
