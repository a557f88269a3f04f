"""Erasing an organization (issue 22): everything the layer holds for it goes in bounded batches, nothing of
another organization does, a SIGKILL at a random point and a rerun end complete with one exact receipt,
and a repeat answers the same receipt."""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from uuid import UUID

from functions.organization_erasure import erase_organization
from knowledge.search import search
from state.db import Database
from state.organizations import create_organization, organization_exists
from tests.factories import Factory
from tests.integration.knowledge.helpers import Kit
from tests.integration.knowledge.lexical import assert_consistent

CLI = [str(Path(sys.executable).parent / "ac-context")]


def _env(db_url: str, data_dir: Path) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": db_url, "AC_CONTEXT_DATA_DIR": str(data_dir), "COLUMNS": "200"}


def _doc(n: int) -> str:
    return f"# Ledger {n}\n\n" + "\n\n".join(f"The ledger {n} records shipment {i} of copper wire." for i in range(300))


async def _holdings(db: Database, org: UUID) -> dict[str, int]:
    async with db.connection() as conn:
        row = await conn.fetchrow(
            "SELECT (SELECT count(*) FROM agent.knowledge_sources WHERE organization_id = $1) AS sources,"
            " (SELECT count(*) FROM agent.knowledge_chunks c JOIN agent.knowledge_sources s ON s.id = c.source_id"
            "   WHERE s.organization_id = $1) AS chunks,"
            " (SELECT count(*) FROM agent.knowledge_lexical_scopes WHERE organization_id = $1) AS scopes,"
            " (SELECT count(*) FROM agent.api_keys WHERE organization_id = $1) AS keys",
            org,
        )
    return dict(row)


async def _statuses(db: Database, org: UUID) -> set[str]:
    async with db.connection() as conn:
        rows = await conn.fetch("SELECT DISTINCT status FROM agent.knowledge_sources WHERE organization_id = $1", org)
    return {r["status"] for r in rows}


async def _running_receipt(db: Database, org: UUID) -> bool:
    async with db.connection() as conn:
        return bool(
            await conn.fetchval(
                "SELECT count(*) FROM agent.removal_receipts WHERE kind = 'organization' AND target_id = $1"
                " AND status = 'running' AND counts <> '{}'::jsonb",
                org,
            )
        )


async def test_an_erasure_killed_at_a_random_point_and_rerun_ends_complete_with_one_exact_receipt(
    kit: Kit, factory: Factory, db_url: str, tmp_path: Path
) -> None:
    org = (await create_organization(kit.db, "doomed")).id
    other = await factory.organization()
    for n in range(20):
        await kit.ingest(org, _doc(n))
    await kit.ingest(other, _doc(99))
    seeded = await _holdings(kit.db, org)
    assert seeded["chunks"] > 300
    args = [*CLI, "erase", "organization", str(org), "--yes", "--batch-size", "3", "--json"]
    env = _env(db_url, tmp_path)
    delay = random.uniform(0.0, 0.15)
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(60_000):
            if proc.poll() is not None or await _running_receipt(kit.db, org):
                break
            await asyncio.sleep(0.002)
        await asyncio.sleep(delay)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, f"the erasure finished before the kill ({delay:.3f} s in)"

    # Meanwhile: no source of the organization is left half-deleted and searchable, the other tenant answers.
    assert await _statuses(kit.db, org) <= {"deleting"}, "every source was made unsearchable first"
    assert await search(kit.db, org, "ledger copper wire", include_organization=True, embedders=kit.lookup) == []
    assert await search(kit.db, other, "ledger copper wire", include_organization=True, embedders=kit.lookup)

    rerun = await asyncio.to_thread(subprocess.run, args, env=env, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    receipt = json.loads(rerun.stdout)
    assert receipt["status"] == "complete" and receipt["resumed"] == 1
    assert receipt["counts"]["agent.knowledge_chunks"] == seeded["chunks"], "counted exactly once across the crash"
    async with kit.db.connection() as conn:
        receipts = await conn.fetchval(
            "SELECT count(*) FROM agent.removal_receipts WHERE kind = 'organization' AND target_id = $1", org
        )
    assert receipts == 1
    assert await _holdings(kit.db, org) == {"sources": 0, "chunks": 0, "scopes": 0, "keys": 0}
    assert not await organization_exists(kit.db, org), "a row this deployment created goes last"
    assert (await _holdings(kit.db, other))["chunks"] > 0
    await assert_consistent(kit.db)


async def test_a_repeated_erasure_answers_the_same_receipt_and_an_unknown_one_is_refused(
    kit: Kit, factory: Factory
) -> None:
    org = await factory.organization()
    await kit.ingest(org, _doc(1))
    first = await erase_organization(kit.db, kit.store, org, requested_by="t")
    again = await erase_organization(kit.db, kit.store, org, requested_by="t")
    assert again == first, "a repeat that finds nothing new answers the earlier receipt"
    assert await organization_exists(kit.db, org), "a row the platform made stays"
    await kit.ingest(org, _doc(2))
    third = await erase_organization(kit.db, kit.store, org, requested_by="t")
    assert third.id != first.id and third.counts["agent.knowledge_sources"] == 1, "new data is a new erasure"
