"""Organization-scoped reads of public tables: `scoped_db(db, organization_id)`.

Every read through `OrgScopedClient.select` carries `organization_id = $1` for a table in
`ORG_SCOPED_TABLES`, and a table the client does not know is refused before any SQL is written. A
global table (the Intelligence plane) is never read directly: it is reached only as an embed of a
bridge row through the foreign key that `EMBEDDABLE` declares. The connection runs as the `ac_tenant`
role with the organization set, so row-level security checks the same tenancy again.

Identifiers come from this module's tables and the caller's code, never from request text: each one is
checked against a strict pattern before it is quoted into SQL. Values are always bind parameters.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import asyncpg

from state.db import Connection, Database
from state.errors import UnknownTableError, translate_db_error

__all__ = [
    "EMBEDDABLE",
    "ORG_SCOPED_TABLES",
    "Embed",
    "OrgScopedClient",
    "QueryLog",
    "TableSpec",
    "record_queries",
    "scoped_db",
]

_IDENT = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


@dataclass(frozen=True)
class TableSpec:
    """What the scoped client knows of one organization-scoped table."""

    soft_delete: bool = False
    """The table has `deleted_at`, and reads exclude deleted rows unless asked."""


ORG_SCOPED_TABLES: Mapping[str, TableSpec] = {
    "users": TableSpec(),
    "crm_companies": TableSpec(soft_delete=True),
    "crm_people": TableSpec(soft_delete=True),
    "crm_deals": TableSpec(soft_delete=True),
    "crm_activities": TableSpec(),
    "crm_lists": TableSpec(soft_delete=True),
    "crm_list_members": TableSpec(),
    "prospects": TableSpec(),
    "prospect_people": TableSpec(),
    "conversations": TableSpec(),
    "conversation_messages": TableSpec(),
    "org_company_profiles": TableSpec(),
    "org_services": TableSpec(),
    "org_ideal_customer_profiles": TableSpec(),
    "org_offers": TableSpec(),
    "org_documents": TableSpec(),
    "outreach_sequences": TableSpec(),
    "outreach_enrollments": TableSpec(),
    "outreach_messages": TableSpec(),
}
"""Every public table a tenant read may name, each filtered by its `organization_id`."""

EMBEDDABLE: Mapping[tuple[str, str], str] = {
    ("prospects", "intel_company_id"): "intel_companies",
    ("prospect_people", "intel_person_id"): "intel_people",
}
"""(bridge table, foreign key column) -> the global table that foreign key reaches."""


@dataclass(frozen=True)
class Embed:
    """A global row embedded in a bridge row through its foreign key, as a JSON object named `name`."""

    name: str
    via: str
    columns: Sequence[str]


@dataclass
class QueryLog:
    """The statements run through scoped clients inside `record_queries()`."""

    entries: list[tuple[str, str]] = field(default_factory=list)

    def tables(self) -> list[str]:
        """The table of each statement, in order."""
        return [table for table, _ in self.entries]


_LOG: ContextVar[QueryLog | None] = ContextVar("scoped_query_log", default=None)


@contextmanager
def record_queries() -> Iterator[QueryLog]:
    """Record every scoped statement run in this context (and tasks started from it)."""
    log = QueryLog()
    token = _LOG.set(log)
    try:
        yield log
    finally:
        _LOG.reset(token)


def _ident(name: str) -> str:
    if not _IDENT.match(name):
        raise ValueError(f"not a plain SQL identifier: {name!r}")
    return f'"{name}"'


class OrgScopedClient:
    """Reads of organization-scoped tables, each carrying the organization filter."""

    def __init__(self, conn: Connection, organization_id: UUID) -> None:
        self._conn = conn
        self.organization_id = organization_id

    def _spec(self, table: str) -> TableSpec:
        spec = ORG_SCOPED_TABLES.get(table)
        if spec is None:
            raise UnknownTableError(
                f"scoped_db does not know table {table!r}; it reads only {sorted(ORG_SCOPED_TABLES)}"
            )
        return spec

    async def select(
        self,
        table: str,
        columns: Sequence[str],
        *,
        where: Mapping[str, object] | None = None,
        where_in: Mapping[str, Sequence[object]] | None = None,
        include_deleted: bool = False,
        order_by: Sequence[str] = (),
        limit: int | None = None,
        embed: Embed | None = None,
    ) -> list[asyncpg.Record]:
        """Select `columns` of `table` for this organization.

        `where` adds equality filters (None means IS NULL), `where_in` adds `= ANY(...)` filters,
        `order_by` takes column names with an optional ` DESC`, and `embed` joins the global row a
        bridge foreign key names (inner join: a bridge with no global row yields nothing).
        """
        spec = self._spec(table)
        args: list[object] = [self.organization_id]
        select = [f"t.{_ident(c)}" for c in columns]
        joins = ""
        if embed is not None:
            target = EMBEDDABLE.get((table, embed.via))
            if target is None:
                raise UnknownTableError(f"{table}.{embed.via} is not a declared bridge to a global table")
            embedded = ["id", *embed.columns]
            pairs = ", ".join(f"'{c}', e.{_ident(c)}" for c in embedded)  # _ident vetted each name
            select.append(f"jsonb_build_object({pairs}) AS {_ident(embed.name)}")
            joins = f" JOIN public.{_ident(target)} AS e ON e.id = t.{_ident(embed.via)}"
        conditions = ["t.organization_id = $1"]
        if spec.soft_delete and not include_deleted:
            conditions.append("t.deleted_at IS NULL")
        for column, value in (where or {}).items():
            if value is None:
                conditions.append(f"t.{_ident(column)} IS NULL")
            else:
                args.append(value)
                conditions.append(f"t.{_ident(column)} = ${len(args)}")
        for column, values in (where_in or {}).items():
            args.append(list(values))
            conditions.append(f"t.{_ident(column)} = ANY(${len(args)})")
        sql = f"SELECT {', '.join(select)} FROM public.{_ident(table)} AS t{joins} WHERE {' AND '.join(conditions)}"
        if order_by:
            parts = []
            for item in order_by:
                name, _, direction = item.partition(" ")
                if direction.upper() not in ("", "ASC", "DESC"):
                    raise ValueError(f"bad order direction in {item!r}")
                parts.append(f"t.{_ident(name)} {direction.upper()}".rstrip())
            sql += " ORDER BY " + ", ".join(parts)
        if limit is not None:
            args.append(limit)
            sql += f" LIMIT ${len(args)}"
        log = _LOG.get()
        if log is not None:
            log.entries.append((table, sql))
        try:
            rows: list[asyncpg.Record] = await self._conn.fetch(sql, *args)
        except asyncpg.PostgresError as exc:
            raise translate_db_error(exc) from exc
        return rows

    async def fetch_named(self, sql: str, *args: Any, table: str) -> list[asyncpg.Record]:
        """Run a named query whose first parameter is this organization (`$1`), for `table`."""
        self._spec(table)
        log = _LOG.get()
        if log is not None:
            log.entries.append((table, sql))
        try:
            rows: list[asyncpg.Record] = await self._conn.fetch(sql, self.organization_id, *args)
        except asyncpg.PostgresError as exc:
            raise translate_db_error(exc) from exc
        return rows


@asynccontextmanager
async def scoped_db(db: Database, organization_id: UUID) -> AsyncIterator[OrgScopedClient]:
    """A client whose every read carries `organization_id`, on a tenant-scoped connection."""
    async with db.tenant(organization_id) as conn:
        yield OrgScopedClient(conn, organization_id)
