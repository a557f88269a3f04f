"""An erasure finishes its disk step (issue 44, item 4): killed at any step, its rerun reclaims the erased rows'
space, and the raw-file scan of the canary (`test_erasure_canary`) then finds the marker in no file.

The disk step is the receipt's own recorded state (migration 0105): pending from the transaction that completes
the receipt until `physical` is recorded. A kill is a real SIGKILL of the CLI once (held in the window between
the receipt reading `complete` and the disk step by a lock the test holds on an erased table), and in-process
an exception raised at each step boundary (the step before it ran, the ones after did not).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

import functions.organization_erasure as organization_erasure
import state.reclaim
from context.sources.memory_vectors import live_memory_embedder
from functions.organization_erasure import erase_organization
from knowledge.documents.objects import LocalObjectStore
from knowledge.embedding.registry import FakeEmbedder
from memory.erasure import erase_user
from memory.service import MemoryService
from memory.tools import MemoryTools
from state.db import Database
from state.receipts import latest_receipt
from tests.factories import Factory
from tests.integration.knowledge.helpers import Kit
from tests.integration.test_erasure_canary import (
    MEMORY_TABLES,
    analyze,
    database_files_holding,
    marker,
    seed_organization,
    seed_person,
    tables_holding,
    use_fake_live_model,
)

CLI = [str(Path(sys.executable).parent / "ac-context")]


class Killed(BaseException):
    """The process dying at a step boundary: nothing after the boundary runs, no handler catches it."""


def killed_after(step: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """`step` run whole, then the process dies before the next statement."""

    async def run(*args: Any, **kwargs: Any) -> Any:
        await step(*args, **kwargs)
        raise Killed(step.__name__)

    return run


def killed_before(step: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """The process dies as `step` would begin: none of it runs."""

    async def run(*_args: Any, **_kwargs: Any) -> Any:
        raise Killed(f"before {step.__name__}")

    return run


async def disk_step(db: Database, receipt_id: UUID) -> tuple[str, str, dict[str, Any]]:
    """The receipt's status, its disk step and its `physical`, as stored."""
    async with db.connection() as conn:
        row = await conn.fetchrow(
            "SELECT status, disk_step, physical FROM agent.removal_receipts WHERE id = $1", receipt_id
        )
    assert row is not None
    physical = row["physical"]
    return row["status"], row["disk_step"], json.loads(physical) if isinstance(physical, str) else physical


async def organization_receipt_id(db: Database, org: UUID) -> UUID:
    async with db.connection() as conn:
        receipt = await latest_receipt(conn, "organization", organization_id=org, target_id=org)
    assert receipt is not None
    return receipt.id


async def assert_reclaimed(db: Database, receipt_id: UUID, gone: str, kept: str) -> None:
    """The receipt complete with its disk step done, and the marker in no row and no raw file."""
    assert await tables_holding(db, gone) == {}
    files = await database_files_holding(db, gone)
    if files is not None:  # the embedded test server's folder (not a DATABASE_URL elsewhere)
        assert files == [], f"the erased marker's bytes are still in the files of {files}"
        assert await database_files_holding(db, kept), "the scan reads the files"
    status, step, physical = await disk_step(db, receipt_id)
    assert (status, step) == ("complete", "done"), physical
    assert physical["statistics"] == "rewritten" and physical["checkpoint"] is True, physical


STEPS = {
    "mark": ("mark_organization_erasing", killed_after),
    "knowledge": ("erase_organization_knowledge", killed_after),
    "memories": ("erase_organization_memories", killed_after),
    "state": ("erase_organization_state", killed_after),
    "complete": ("finish_disk_step", killed_before),  # the receipt reads complete, the disk step has not begun
}
"""Each step of an organization erasure, and where the kill lands: after the step, or (the receipt's
completion) between it and the disk step. The sweep and the disk step itself are parametrized below too."""


@pytest.mark.parametrize("step", [*STEPS, "sweep", "disk"])
async def test_an_organization_erasure_killed_at_each_step_finishes_its_disk_step_on_rerun(
    db: Database, factory: Factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    kit = Kit(db, LocalObjectStore(tmp_path / "objects"))
    await kit.use_platform_model()
    gone, kept = marker(), marker()
    org, seeded, _ = await seed_organization(db, factory, kit, mark=gone)
    await seed_organization(db, factory, kit, mark=kept)
    await analyze(db, set(seeded))  # pg_statistic holds the marker too

    if step in STEPS:
        name, kill = STEPS[step]
        monkeypatch.setattr(organization_erasure, name, kill(getattr(organization_erasure, name)))
    elif step == "sweep":
        monkeypatch.setattr(kit.store, "delete_prefix", killed_after(kit.store.delete_prefix))
    else:  # the tables rewritten, the process dies before `physical` is recorded
        monkeypatch.setattr(state.reclaim, "reclaim_erased_space", killed_after(state.reclaim.reclaim_erased_space))
    with pytest.raises(Killed):
        await erase_organization(db, kit.store, org, requested_by="canary")
    monkeypatch.undo()
    receipt_id = await organization_receipt_id(db, org)
    status, pending, physical = await disk_step(db, receipt_id)
    if step in ("complete", "disk"):
        assert (status, pending, physical) == ("complete", "pending", {}), "the kill left the disk step to do"
    else:
        assert status == "running"

    receipt = await erase_organization(db, kit.store, org, requested_by="canary")

    assert receipt.id == receipt_id and receipt.status == "complete"
    assert receipt.physical == (await disk_step(db, receipt_id))[2], "the rerun answers the recorded disk step"
    assert gone not in json.dumps(receipt.as_json()), "the receipt holds no content"
    await assert_reclaimed(db, receipt_id, gone, kept)
    again = await erase_organization(db, kit.store, org, requested_by="canary")
    assert again == receipt, "a repeat answers the same receipt and runs no disk step again"


async def test_an_organization_erasure_sigkilled_before_its_disk_step_runs_it_on_rerun(
    db: Database, factory: Factory, tmp_path: Path, db_url: str
) -> None:
    kit = Kit(db, LocalObjectStore(tmp_path / "objects"))
    await kit.use_platform_model()
    gone, kept = marker(), marker()
    org, seeded, _ = await seed_organization(db, factory, kit, mark=gone)
    await seed_organization(db, factory, kit, mark=kept)
    await analyze(db, set(seeded))
    args = [*CLI, "erase", "organization", str(org), "--yes", "--json"]
    env = {**os.environ, "DATABASE_URL": db_url, "AC_CONTEXT_DATA_DIR": str(tmp_path), "COLUMNS": "200"}

    # The test reads agent.api_keys in an open transaction: the erasure's delete passes (row locks), but the
    # disk step's rewrite of that table waits for its exclusive lock (2 s), a window after `complete`.
    async with db.connection() as holder:
        transaction = holder.transaction()
        await transaction.start()
        await holder.fetchval("SELECT count(*) FROM agent.api_keys")
        log = tmp_path / "erase.log"
        with log.open("wb") as err:
            proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=err)
        try:
            state = ("", "", {})
            for _ in range(60_000):
                if proc.poll() is not None:
                    break
                async with db.connection() as conn:
                    row = await conn.fetchrow(
                        "SELECT id FROM agent.removal_receipts WHERE kind = 'organization' AND target_id = $1", org
                    )
                if row is not None:
                    state = await disk_step(db, row["id"])
                    if state[0] == "complete":
                        break
                await asyncio.sleep(0.002)
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
        finally:
            await asyncio.to_thread(proc.wait, 60)
            await transaction.rollback()
    assert proc.returncode == -signal.SIGKILL, f"the erasure ended before the kill: {log.read_text()}"
    assert state[:2] == ("complete", "pending"), state
    receipt_id = await organization_receipt_id(db, org)
    assert (await disk_step(db, receipt_id))[1:] == ("pending", {}), "the kill left the disk step to do"
    files = await database_files_holding(db, gone)
    if files is not None:
        assert files, "the marker is still on disk before the rerun"

    rerun = await asyncio.to_thread(subprocess.run, args, env=env, capture_output=True, text=True, timeout=600)

    assert rerun.returncode == 0, rerun.stderr
    answered = json.loads(rerun.stdout)
    assert answered["id"] == str(receipt_id) and answered["physical"]["rewritten"], answered
    assert gone not in rerun.stdout, "the receipt holds no content"
    await assert_reclaimed(db, receipt_id, gone, kept)


async def test_a_person_erasure_killed_before_its_disk_step_runs_it_on_rerun(
    db: Database, factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    org = await factory.organization()
    definitions = [await factory.definition(org)]
    await use_fake_live_model(db)
    tools = MemoryTools(MemoryService(db, embed=live_memory_embedder(db, lambda _m: FakeEmbedder())))
    gone, kept = marker(), marker()
    user, person = await seed_person(db, factory, tools, org=org, definitions=definitions, mark=gone)
    await seed_person(db, factory, tools, org=org, definitions=definitions, mark=kept)
    await analyze(db, set(MEMORY_TABLES))
    subject = f"crm.person:{person}"

    import memory.erasure

    monkeypatch.setattr(memory.erasure, "finish_disk_step", killed_before(memory.erasure.finish_disk_step))
    with pytest.raises(Killed):
        await erase_user(db, org, user, subject=subject, requested_by="canary")
    monkeypatch.undo()
    async with db.connection() as conn:
        crashed = await latest_receipt(conn, "user", organization_id=org, target_id=user, subject=subject)
    assert crashed is not None
    assert await disk_step(db, crashed.id) == ("complete", "pending", {}), "the kill left the disk step to do"
    files = await database_files_holding(db, gone)
    if files is not None:
        assert "agent.memories" in files, "the marker is still in the memory table's file before the rerun"

    receipt = await erase_user(db, org, user, subject=subject, requested_by="canary")

    assert receipt.id == crashed.id and set(receipt.physical["rewritten"]) == set(MEMORY_TABLES), receipt.physical
    assert gone not in json.dumps(receipt.as_json()), "the receipt holds no content"
    await assert_reclaimed(db, crashed.id, gone, kept)
    assert await erase_user(db, org, user, subject=subject, requested_by="canary") == receipt
