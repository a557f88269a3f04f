"""Removal receipts: the record every deletion of a source and every erasure leaves behind.

A receipt says what was asked (kind, organization, target, optional subject ref), by whom, when it started
and ended, and what was removed: counts per table or store and the object keys deleted. It never holds
text. A removal opens its receipt with `begin_receipt` (a rerun after a crash gets the running one back,
with `resumed` counted), adds each batch with `add_to_receipt` *inside the transaction that deletes the
batch's rows*, so the counts stay exact across a crash, and closes it with `finish_receipt`. This module
must never delete anything itself and never store a file name (`receipt_object_key` drops it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal
from uuid import UUID

from state.db import Connection, Database

if TYPE_CHECKING:
    import asyncpg
from state.errors import ReceiptNotFoundError, translated_db_errors
from state.paging import Page, SortKey, keyset_sql, order_of, page_both, page_size, read_cursor
from state.queries import load_queries

__all__ = [
    "RECEIPT_SORTS",
    "Receipt",
    "ReceiptKind",
    "add_to_receipt",
    "begin_receipt",
    "discard_empty_receipt",
    "finish_receipt",
    "get_receipt",
    "latest_receipt",
    "organization_erased",
    "page_receipts",
    "receipt_object_key",
    "record_physical",
]

QUERIES = load_queries(__file__)

ReceiptKind = Literal["source", "user", "organization", "memory_import"]
"""What a receipt records: a removal of one source, one person's data or one organization's, or a memory import."""


@dataclass(frozen=True, slots=True)
class Receipt:
    """One removal: what was asked, by whom, and what left the layer."""

    id: UUID
    """The receipt's id."""
    kind: ReceiptKind
    """What was removed."""
    organization_id: UUID | None
    """The organization the removal belongs to (None for a platform source)."""
    target_id: UUID
    """The source, user or organization removed."""
    subject: str
    """A subject ref whose organization memories were erased with a person (`crm.person:<id>`), or ''."""
    requested_by: str
    """Who asked (an API key id, or the CLI's operator)."""
    status: Literal["running", "complete"]
    """`running` until every batch is done."""
    counts: Mapping[str, int]
    """Rows or objects removed, per table or store."""
    object_keys: tuple[str, ...]
    """Object store keys deleted, each without its file name."""
    versions: tuple[UUID, ...]
    """For a source receipt, every version of the source the delete removed (a re-sync's included)."""
    resumed: int
    """How many reruns picked this removal up after it was interrupted."""
    started_at: datetime
    """When the removal started."""
    finished_at: datetime | None
    """When it completed, or None while running."""
    physical: Mapping[str, Any] = field(default_factory=dict)
    """What the erasure did to the disk after it completed (VACUUM, ANALYZE, CHECKPOINT), or empty."""

    @classmethod
    def from_row(cls, row: asyncpg.Record) -> Receipt:
        """Build a receipt from a `removal_receipts` row."""
        counts = row["counts"]
        if isinstance(counts, str):
            counts = json.loads(counts)
        physical = row["physical"] if "physical" in row else {}
        if isinstance(physical, str):
            physical = json.loads(physical)
        return cls(
            id=row["id"],
            kind=row["kind"],
            organization_id=row["organization_id"],
            target_id=row["target_id"],
            subject=row["subject"],
            requested_by=row["requested_by"],
            status=row["status"],
            counts={str(k): int(v) for k, v in sorted(counts.items())},
            object_keys=tuple(row["object_keys"]),
            versions=tuple(row["versions"]),
            resumed=row["resumed"],
            started_at=row["started_at"],
            finished_at=row["finished_at"],
            physical=physical,
        )

    def as_json(self) -> dict[str, Any]:
        """The receipt as a JSON-ready dict (ids and times as strings)."""
        return {
            "id": str(self.id),
            "kind": self.kind,
            "organization_id": None if self.organization_id is None else str(self.organization_id),
            "target_id": str(self.target_id),
            "subject": self.subject or None,
            "requested_by": self.requested_by,
            "status": self.status,
            "counts": dict(self.counts),
            "object_keys": list(self.object_keys),
            "versions": [str(v) for v in self.versions],
            "resumed": self.resumed,
            "started_at": self.started_at.isoformat(),
            "finished_at": None if self.finished_at is None else self.finished_at.isoformat(),
            "physical": dict(self.physical),
        }


def receipt_object_key(key: str) -> str:
    """An object key as a receipt keeps it: everything up to the last `/`, the file name dropped."""
    head, sep, _name = key.rpartition("/")
    return f"{head}/" if sep else ""


async def begin_receipt(
    conn: Connection,
    kind: ReceiptKind,
    *,
    organization_id: UUID | None,
    target_id: UUID,
    requested_by: str,
    subject: str = "",
) -> Receipt:
    """Open the running receipt of this request, or return the one a crashed run left (resumed + 1)."""
    with translated_db_errors():
        row = await conn.fetchrow(
            QUERIES["begin_removal_receipt"], kind, organization_id, target_id, subject, requested_by
        )
    assert row is not None
    return Receipt.from_row(row)


async def add_to_receipt(
    conn: Connection, receipt_id: UUID, counts: Mapping[str, int], object_keys: Sequence[str] = ()
) -> None:
    """Add one batch's counts and (file-name-free) object keys; run it in the batch's own transaction."""
    positive = {name: int(n) for name, n in counts.items() if n}
    if not positive and not object_keys:
        return
    with translated_db_errors():
        await conn.execute(
            QUERIES["add_to_removal_receipt"],
            receipt_id,
            positive,
            [receipt_object_key(k) for k in object_keys],
        )


async def finish_receipt(conn: Connection, receipt_id: UUID) -> Receipt:
    """Mark the receipt complete and return it."""
    with translated_db_errors():
        await conn.execute(QUERIES["finish_removal_receipt"], receipt_id)
        row = await conn.fetchrow(QUERIES["get_removal_receipt"], receipt_id)
    if row is None:
        raise ReceiptNotFoundError(f"no removal receipt has id {receipt_id}")
    return Receipt.from_row(row)


async def record_physical(conn: Connection, receipt_id: UUID, physical: Mapping[str, Any]) -> Receipt:
    """Record on a complete receipt what the erasure did to the disk afterwards, and return the receipt."""
    with translated_db_errors():
        await conn.execute(QUERIES["record_receipt_physical"], receipt_id, dict(physical))
        row = await conn.fetchrow(QUERIES["get_removal_receipt"], receipt_id)
    if row is None:
        raise ReceiptNotFoundError(f"no removal receipt has id {receipt_id}")
    return Receipt.from_row(row)


async def discard_empty_receipt(conn: Connection, receipt_id: UUID) -> bool:
    """Delete a running receipt that removed nothing; True when it was (a repeat answers the earlier one)."""
    with translated_db_errors():
        return bool(await conn.fetchval(QUERIES["discard_empty_receipt"], receipt_id))


async def get_receipt(db: Database, receipt_id: UUID) -> Receipt:
    """One receipt by id, or `ReceiptNotFoundError`."""
    with translated_db_errors():
        async with db.connection() as conn:
            row = await conn.fetchrow(QUERIES["get_removal_receipt"], receipt_id)
    if row is None:
        raise ReceiptNotFoundError(f"no removal receipt has id {receipt_id}")
    return Receipt.from_row(row)


async def latest_receipt(
    conn: Connection, kind: ReceiptKind, *, organization_id: UUID | None, target_id: UUID, subject: str = ""
) -> Receipt | None:
    """The newest receipt of this request, running or complete, or None."""
    with translated_db_errors():
        row = await conn.fetchrow(QUERIES["latest_removal_receipt"], kind, organization_id, target_id, subject)
    return None if row is None else Receipt.from_row(row)


async def organization_erased(db: Database, organization_id: UUID) -> bool:
    """Whether a completed organization erasure's receipt exists for this id (its row may be gone)."""
    async with db.connection() as conn:
        receipt = await latest_receipt(conn, "organization", organization_id=organization_id, target_id=organization_id)
    return receipt is not None and receipt.status == "complete"


RECEIPT_SORTS: dict[str, SortKey] = {
    "started": SortKey("started_at", datetime, descending=True),  # removal_receipts_organization (0080)
}
"""The columns the receipts list sorts by; `started` newest first is the default."""

_KEYSET_LINE = "(started_at, id) < ($3::timestamptz, $4::uuid)"
_ORDER_LINE = "ORDER BY started_at DESC, id DESC"


async def page_receipts(
    db: Database,
    *,
    organization_id: UUID | None = None,
    sort: str | None = None,
    direction: str | None = None,
    cursor: str | None = None,
    limit: int = 100,
) -> Page[Receipt]:
    """A page of receipts (of one organization, or all), newest first unless `direction` is `asc`.

    Pages both ways (`state.paging`): the page's `prev_cursor` reads the page before.
    """
    order = order_of(RECEIPT_SORTS, sort, direction, "started")
    scope = order.scope(organization_id)
    position, backward = read_cursor(cursor, "receipts", scope, (datetime, UUID))
    base = QUERIES["page_removal_receipts"]
    if _KEYSET_LINE not in base or _ORDER_LINE not in base:
        raise RuntimeError("page_removal_receipts changed: update its sorted variants")
    keyset, ordering = keyset_sql(order, backward=backward, value=3)
    statement = base.replace(_KEYSET_LINE, "true" if position is None else keyset).replace(
        _ORDER_LINE, f"ORDER BY {ordering}"
    )
    with translated_db_errors():
        async with db.connection() as conn:
            total = int(await conn.fetchval(QUERIES["count_removal_receipts"], organization_id))
            rows = await conn.fetch(statement, organization_id, page_size(limit) + 1, *(position or ()))
    return page_both(
        [Receipt.from_row(r) for r in rows], limit=limit, total=total, listing="receipts", scope=scope,
        position=lambda r: (r.started_at, r.id), cursor_given=position is not None, backward=backward,
    )  # fmt: skip
