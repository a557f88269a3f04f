"""Migration 0094 rewrites the failure reasons stored before the vocabulary (`knowledge.reasons`).

Rows are written on a database migrated up to 0093, as the code before the vocabulary wrote them (a
parser's message quoting the document, the engine's message after the retries, a prefix that is no code
of ours) beside rows already in the vocabulary; then the remaining migrations run, as at a deploy.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from knowledge.ingestion.failures import stored_reason
from state.embedded import server_dsn
from state.migrate import MIGRATIONS_DIR, apply_migrations
from tests.unit.knowledge.test_reasons import all_filled

MARKER = "ZQXMARKER7731"
BEFORE = {
    f"document_malformed: page 1 cannot be read: Invalid Elementary Object starting with b')' @23: "
    f"b'/F1 12 Tf 72 700 Td ) salary of {MARKER} is 90000 Tj ET'": (
        "document_malformed: the document is damaged and cannot be read"
    ),
    f"pdf_encrypted: the PDF is encrypted and cannot be decrypted: {MARKER}": (
        "pdf_encrypted: the PDF is encrypted and cannot be decrypted; upload an unencrypted copy"
    ),
    f"ingestion failed after its retries: ParserRejectedMarkup: unknown status keyword '{MARKER}'": (
        "failed_after_retries: ingestion failed after its retries. Retry the source to ingest it again."
    ),
    f"re-embedding failed after its retries: {MARKER}": (
        "failed_after_retries: ingestion failed after its retries. Retry the source to ingest it again."
    ),
    f"knowledge_input_invalid: {MARKER}": "ingestion_failed: ingestion failed. Retry the source to ingest it again.",
    f"salary of {MARKER} is 90000": "ingestion_failed: ingestion failed. Retry the source to ingest it again.",
}
"""Reasons as stored before 0094, and what 0094 leaves of each."""


@pytest.fixture
async def before_0094(pg_server_url: str, tmp_path: Path) -> AsyncIterator[str]:
    """A fresh database migrated up to 0093 only."""
    name = f"ac_reasons_{uuid.uuid4().hex[:12]}"
    admin = await asyncpg.connect(pg_server_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    url = server_dsn(pg_server_url, name)
    folder = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS_DIR, folder)
    for later in folder.glob("*.sql"):
        if later.name >= "0094":
            later.unlink()
    try:
        await apply_migrations(url, folder)
        yield url
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


async def test_0094_rewrites_the_reasons_that_quote_and_keeps_those_of_the_vocabulary(before_0094: str) -> None:
    kept = all_filled()
    reasons = [*BEFORE, *kept]
    conn = await asyncpg.connect(before_0094)
    try:
        model = await conn.fetchval("SELECT model_id FROM agent.embedding_models ORDER BY model_id LIMIT 1")
        ids = []
        for n, reason in enumerate(reasons):
            source = await conn.fetchval(
                "INSERT INTO agent.knowledge_sources (kind, title, object_key, content_sha256, byte_size, status, "
                "failure_reason, pending_since) VALUES ('upload', $1, $1, $2, 1, 'failed', $3, NULL) RETURNING id",
                f"doc-{n}", f"{n:064x}", reason,
            )  # fmt: skip
            await conn.execute(
                "INSERT INTO agent.knowledge_source_models (source_id, embedding_model, status, failure_reason, "
                "pending_since) VALUES ($1, $2, 'failed', $3, NULL)",
                source, model, reason,
            )  # fmt: skip
            ids.append(source)
    finally:
        await conn.close()

    assert [m for m in await apply_migrations(before_0094) if m.startswith("0094")], "0094 ran"

    conn = await asyncpg.connect(before_0094)
    try:
        sources = await conn.fetch("SELECT id, failure_reason FROM agent.knowledge_sources")
        models = await conn.fetch("SELECT source_id AS id, failure_reason FROM agent.knowledge_source_models")
    finally:
        await conn.close()
    for rows in (sources, models):
        after = {r["id"]: r["failure_reason"] for r in rows}
        for source, reason in zip(ids, reasons, strict=True):
            expected = BEFORE.get(reason, reason)
            assert after[source] == expected, (reason, after[source])
            assert after[source] == stored_reason(reason), "the code's gate and 0094 agree"
            assert MARKER not in after[source]
