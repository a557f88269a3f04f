"""The operator's overview of organizations: a page of them, each with the counts the console shows.

`page_organizations(db, name=..., cursor=..., limit=...)` answers a `Page[OrganizationOverview]`, oldest
first, filtered by a text the name contains (any case). Each row carries its sources by status, overdue
sources, the chunks search can serve (summed from the readiness rows' counts under the organization's live
model, never by scanning chunks), its live memories and when a source last became ready.
`organization_counts(db, organization_id)` reads one organization's counts strip in one statement. The counts are read
for the page's rows only, so a page costs the same however many organizations there are. This module must
never write.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from state.db import Database
from state.errors import translated_db_errors
from state.paging import Order, Page, SortKey, keyset_sql, order_of, page_both, page_size, read_cursor
from state.queries import load_queries

__all__ = [
    "ORGANIZATION_SORTS",
    "OrganizationCounts",
    "OrganizationOverview",
    "organization_counts",
    "page_organizations",
]

QUERIES = load_queries(__file__)
_LIST = "organizations"


@dataclass(frozen=True, slots=True)
class OrganizationOverview:
    """One organization with what it holds."""

    id: UUID
    """Its id."""
    name: str
    """Its display name."""
    created_at: datetime
    """When it was created."""
    sources_by_status: dict[str, int] = field(default_factory=dict)
    """Its knowledge sources per status (`pending`, `ready`, `failed`, `deleting`); a status it has none of
    is absent."""
    overdue_sources: int = 0
    """Sources whose review date is before today in UTC."""
    chunks: int = 0
    """Chunks search can serve: its ready sources' chunks under its live model."""
    memories: int = 0
    """Its live memories (every scope)."""
    last_ingested_at: datetime | None = None
    """When one of its sources last became ready (under any model), or None."""

    def as_json(self) -> dict[str, Any]:
        """The row as JSON (timestamps ISO 8601)."""
        return {
            "id": str(self.id),
            "name": self.name,
            "created_at": self.created_at.isoformat(),
            "sources_by_status": dict(self.sources_by_status),
            "overdue_sources": self.overdue_sources,
            "chunks": self.chunks,
            "memories": self.memories,
            "last_ingested_at": None if self.last_ingested_at is None else self.last_ingested_at.isoformat(),
        }


def _row(r: asyncpg.Record) -> OrganizationOverview:
    by_status = r["sources_by_status"]
    return OrganizationOverview(
        id=r["id"],
        name=r["name"],
        created_at=r["created_at"],
        sources_by_status={str(k): int(v) for k, v in (by_status or {}).items()},
        overdue_sources=int(r["overdue_sources"]),
        chunks=int(r["chunks"]),
        memories=int(r["memories"]),
        last_ingested_at=r["last_ingested_at"],
    )


ORGANIZATION_SORTS: dict[str, SortKey] = {
    "created": SortKey("created_at", datetime),  # organizations' created_at index
    "name": SortKey("name", str),  # organizations_name_idx (migration 0118)
}
"""The columns the organizations list sorts by, each through an index; `created` oldest first is the default."""

_KEYSET_LINE = "(o.created_at, o.id) > ($3::timestamptz, $4::uuid)"
_PAGE_ORDER = "ORDER BY o.created_at, o.id"
_FINAL_ORDER = "ORDER BY p.created_at, p.id"


def _statement(order: Order, *, backward: bool, first: bool) -> str:
    """`page_organizations` under `order`, reading after (or, `backward`, before) a position, or from the start."""
    base = QUERIES["page_organizations"]
    if any(line not in base for line in (_KEYSET_LINE, _PAGE_ORDER, _FINAL_ORDER)):
        raise RuntimeError("page_organizations changed: update its sorted variants")
    at = {alias: replace(order, key=replace(order.key, column=f"{alias}.{order.key.column}")) for alias in "op"}
    keyset, page_order = keyset_sql(at["o"], backward=backward, value=3, tie="o.id")
    _, final_order = keyset_sql(at["p"], backward=backward, value=3, tie="p.id")
    return (
        base.replace(_KEYSET_LINE, "true" if first else keyset)
        .replace(_PAGE_ORDER, f"ORDER BY {page_order}")
        .replace(_FINAL_ORDER, f"ORDER BY {final_order}")
    )


async def page_organizations(
    db: Database,
    *,
    name: str | None = None,
    sort: str | None = None,
    direction: str | None = None,
    cursor: str | None = None,
    limit: int = 100,
) -> Page[OrganizationOverview]:
    """A page of organizations, oldest first unless sorted, with their counts; `name`: those whose name has it.

    `sort` is a key of `ORGANIZATION_SORTS`; the page's `prev_cursor` reads the page before.
    """
    order = order_of(ORGANIZATION_SORTS, sort, direction, "created")
    text = name.strip() if name and name.strip() else None
    scope = order.scope(text)
    position, backward = read_cursor(cursor, _LIST, scope, (order.key.kind, UUID))
    statement = _statement(order, backward=backward, first=position is None)
    with translated_db_errors():
        async with db.connection() as conn:
            total = int(await conn.fetchval(QUERIES["count_organizations_named"], text))
            rows = await conn.fetch(statement, text, page_size(limit) + 1, *(position or ()))
    by_name = order.name == "name"
    return page_both(
        [_row(r) for r in rows], limit=limit, total=total, listing=_LIST, scope=scope,
        position=lambda o: (o.name if by_name else o.created_at, o.id),
        cursor_given=position is not None, backward=backward,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class OrganizationCounts:
    """One organization's counts strip."""

    sources_by_status: dict[str, int]
    """Its knowledge sources per status; a status it has none of is absent."""
    chunks: int
    """Chunks search can serve: its ready sources' chunks under its live model."""
    memories: int
    """Its live memories (every scope)."""
    receipts: int
    """Its removal receipts (deletes, erasures, imports)."""
    outbox_pending: int
    """Its outbox rows not sent yet."""

    @property
    def sources(self) -> int:
        """Its sources of every status."""
        return sum(self.sources_by_status.values())


async def organization_counts(db: Database, organization_id: UUID) -> OrganizationCounts:
    """The counts strip of `organization_id` (zeros for one that holds nothing), in one statement."""
    with translated_db_errors():
        async with db.connection() as conn:
            r = await conn.fetchrow(QUERIES["organization_counts"], organization_id)
    assert r is not None  # a statement of scalar subqueries always answers one row
    return OrganizationCounts(
        sources_by_status={str(k): int(v) for k, v in (r["sources_by_status"] or {}).items()},
        chunks=int(r["chunks"]),
        memories=int(r["memories"]),
        receipts=int(r["receipts"]),
        outbox_pending=int(r["outbox_pending"]),
    )
