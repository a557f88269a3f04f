"""After an erasure: reclaim the space its deleted rows held, so their bytes leave the data files.

A deleted row stays in its table's file as a dead tuple until VACUUM, and plain VACUUM frees its space without
overwriting it: the bytes stay until a new row lands on that page (measured: an erased marker was still in 6
files after VACUUM, ANALYZE and a checkpoint). `reclaim_erased_space` therefore rewrites each small table
(`VACUUM (FULL, ANALYZE)`, under a lock timeout, up to `REWRITE_MAX_BYTES`), runs plain `VACUUM (ANALYZE)`
on larger ones and on a table whose lock did not come in time, rewrites `pg_statistic` under the same lock
timeout (ANALYZE left the old sample values there as dead tuples) and runs a CHECKPOINT (so the rewritten
tables' old files are removed) where the role may. Each step that cannot run is skipped and said in the
answer; nothing here raises for a step that failed (docs/decisions.md, "What does an organization erasure do
to the disk after its receipt?").

The disk step is the receipt's own recorded state (migration 0105): an erasure marks it pending with
`mark_disk_step_pending` in the transaction that completes its receipt, and `finish_disk_step` runs it and
records `physical` (which ends it). A process killed between the two leaves the step pending, and the
erasure's rerun calls `finish_disk_step` on the receipt it finds, so the step runs once the receipt is
complete whatever the kill. This module must never run outside an erasure's end, and never name a table that
did not come from the erasure's own receipt.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from state.db import Connection, Database
from state.errors import translated_db_errors
from state.queries import load_queries
from state.receipts import Receipt, record_physical

__all__ = [
    "CASCADED",
    "LOCK_TIMEOUT",
    "REWRITE_MAX_BYTES",
    "erased_tables",
    "finish_disk_step",
    "mark_disk_step_pending",
    "reclaim_erased_space",
]

QUERIES = load_queries(__file__)

REWRITE_MAX_BYTES = 64 * 1024 * 1024
"""The largest table (heap, indexes, TOAST) rewritten: VACUUM FULL holds an exclusive lock while it copies."""
LOCK_TIMEOUT = "2s"
"""How long a rewrite waits for its exclusive lock before it falls back to plain VACUUM."""
CASCADED = {
    "agent.knowledge_sources": ("agent.knowledge_source_terms",),
    "agent.memories": ("agent.memory_postings", "agent.memory_embeddings"),
}
"""Tables whose rows go with a counted table's rows (foreign-key cascades), so they are reclaimed with it."""


def erased_tables(receipt: Receipt) -> list[str]:
    """The tables an erasure removed rows from: those its receipt counts, and those they cascade to."""
    counted = [name for name in receipt.counts if "." in name]
    return sorted({*counted, *(t for name in counted for t in CASCADED.get(name, ()))})


async def mark_disk_step_pending(conn: Connection, receipt_id: UUID) -> None:
    """Record that the erasure's disk step is still to run; call it in the transaction that completes the receipt."""
    with translated_db_errors():
        await conn.execute(QUERIES["mark_disk_step_pending"], receipt_id)


async def finish_disk_step(db: Database, receipt: Receipt) -> Receipt:
    """Run a complete erasure's pending disk step and record what it did; the receipt as it then stands.

    A receipt whose step is done (or that has none) is answered as it is: a repeat never rewrites a table again.
    """
    if receipt.status != "complete":
        return receipt
    async with db.connection() as conn:
        with translated_db_errors():
            step = await conn.fetchval(QUERIES["receipt_disk_step"], receipt.id)
    if step != "pending":
        return receipt
    physical = await reclaim_erased_space(db, erased_tables(receipt))
    async with db.connection() as conn:
        return await record_physical(conn, receipt.id, physical)


async def reclaim_erased_space(
    db: Database, tables: Iterable[str], *, rewrite_max_bytes: int = REWRITE_MAX_BYTES
) -> dict[str, Any]:
    """VACUUM and ANALYZE the erased `tables` ('schema.table'), rewrite pg_statistic, CHECKPOINT; what ran.

    The answer: `rewritten` and `vacuumed` (tables, each ANALYZEd too), `statistics` (`rewritten` or why not),
    `checkpoint` (true, or why not), `skipped` (table -> why), `at` (when it ended). Never raises for a step.
    """
    import asyncpg  # only here: importing this module must not load the driver

    done: dict[str, Any] = {"rewritten": [], "vacuumed": [], "skipped": {}}
    async with db.connection() as conn:
        rights = await conn.fetchrow(QUERIES["may_maintain_catalog"])
        superuser = bool(rights and rights["superuser"])
        may_checkpoint = bool(rights and rights["checkpoint"])
        for name in sorted(set(tables)):
            table = await conn.fetchrow(QUERIES["erased_table_size"], name)
            if table is None:
                done["skipped"][name] = "no such table"
                continue
            if not (table["owned"] or superuser):
                done["skipped"][name] = "the role does not own it"
                continue
            quoted = table["quoted"]  # format('%I.%I') of a name from the caller's list, found in pg_class
            try:
                if table["bytes"] <= rewrite_max_bytes and await _rewrite(conn, quoted):
                    done["rewritten"].append(name)
                    continue
                await conn.execute(f"VACUUM (ANALYZE) {quoted}")
                done["vacuumed"].append(name)
            except (asyncpg.PostgresError, OSError) as exc:
                done["skipped"][name] = _first_line(exc)
        done["statistics"] = "the role is not a superuser"
        if superuser:
            try:  # no ANALYZE: it would write the sample values it just dropped back
                rewritten = await _rewrite(conn, "pg_catalog.pg_statistic", analyze=False)
                done["statistics"] = "rewritten" if rewritten else f"its lock did not come in {LOCK_TIMEOUT}"
            except (asyncpg.PostgresError, OSError) as exc:
                done["statistics"] = _first_line(exc)
        done["checkpoint"] = "the role may not CHECKPOINT"
        if may_checkpoint:
            try:
                await conn.execute("CHECKPOINT")
                done["checkpoint"] = True
            except (asyncpg.PostgresError, OSError) as exc:
                done["checkpoint"] = _first_line(exc)
    done["at"] = datetime.now(UTC).isoformat()
    return done


async def _rewrite(conn: Connection, quoted: str, *, analyze: bool = True) -> bool:
    """VACUUM (FULL, ANALYZE) under the lock timeout; False when the lock did not come in time."""
    import asyncpg

    await conn.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
    try:
        await conn.execute(f"VACUUM (FULL{', ANALYZE' if analyze else ''}) {quoted}")
    except asyncpg.LockNotAvailableError:
        return False
    finally:
        await conn.execute("RESET lock_timeout")
    return True


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:200]
