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

import json
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
    "Select",
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


@dataclass(frozen=True)
class Select:
    """One read of `OrgScopedClient.select_each`: the arguments of one `select`."""

    table: str
    """An organization-scoped table (`ORG_SCOPED_TABLES`)."""
    columns: tuple[str, ...]
    """The columns read, in order."""
    where: Mapping[str, object] | None = None
    """Equality filters (None means IS NULL)."""
    where_in: Mapping[str, Sequence[object]] | None = None
    """`= ANY(...)` filters."""
    include_deleted: bool = False
    """Read soft-deleted rows too."""
    order_by: tuple[str, ...] = ()
    """Column names with an optional ` DESC`."""
    limit: int | None = None
    """The most rows."""
    embed: Embed | None = None
    """The global row a bridge foreign key names, joined as a JSON object."""


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
        part = Select(table, tuple(columns), where=where, where_in=where_in, include_deleted=include_deleted,
                      order_by=tuple(order_by), limit=limit, embed=embed)  # fmt: skip
        args: list[object] = [self.organization_id]
        select, body = self._part_sql(part, args)
        if embed is not None:
            select[-1] += f" AS {_ident(embed.name)}"
        sql = f"SELECT {', '.join(select)}{body}"
        self._log(table, sql)
        try:
            rows: list[asyncpg.Record] = await self._conn.fetch(sql, *args)
        except asyncpg.PostgresError as exc:
            raise translate_db_error(exc) from exc
        return rows

    async def select_each(self, parts: Sequence[Select]) -> list[list[dict[str, Any]]]:
        """Several `select`s in one statement (one round trip): each part's rows, as dicts, in part order.

        Each part reads exactly what `select` would read with the same arguments, every one filtered by this
        organization; its rows travel as one array of anonymous records, so each value keeps its type (an
        embedded global row, JSON text in a record, is parsed as `select`'s jsonb codec would).
        """
        if not parts:
            return []
        args: list[object] = [self.organization_id]
        arrays = []
        for part in parts:
            select, body = self._part_sql(part, args)
            if part.embed is not None:
                select[-1] += "::text"  # jsonb in a binary record would reach the text codec undecoded
            arrays.append(f"ARRAY(SELECT ROW({', '.join(select)}){body})")
        sql = "SELECT " + ", ".join(f"{a} AS p{n}" for n, a in enumerate(arrays))
        for part in parts:
            self._log(part.table, sql)
        try:
            row = await self._conn.fetchrow(sql, *args)
        except asyncpg.PostgresError as exc:
            raise translate_db_error(exc) from exc
        assert row is not None  # a SELECT of arrays always answers one row
        out: list[list[dict[str, Any]]] = []
        for n, part in enumerate(parts):
            names = [*part.columns, *((part.embed.name,) if part.embed is not None else ())]
            rows = []
            for values in row[n]:
                record = dict(zip(names, values, strict=True))
                if part.embed is not None and isinstance(record[part.embed.name], str):
                    record[part.embed.name] = json.loads(record[part.embed.name])
                rows.append(record)
            out.append(rows)
        return out

    def _part_sql(self, part: Select, args: list[object]) -> tuple[list[str], str]:
        """The select list and the `FROM ... WHERE ...` of one part; its values appended to `args` ($1: the org)."""
        spec = self._spec(part.table)
        table = part.table
        select = [f"t.{_ident(c)}" for c in part.columns]
        joins = ""
        embed = part.embed
        if embed is not None:
            target = EMBEDDABLE.get((table, embed.via))
            if target is None:
                raise UnknownTableError(f"{table}.{embed.via} is not a declared bridge to a global table")
            embedded = ["id", *embed.columns]
            pairs = ", ".join(f"'{c}', e.{_ident(c)}" for c in embedded)  # _ident vetted each name
            select.append(f"jsonb_build_object({pairs})")  # `select` names it; a ROW field has no name
            joins = f" JOIN public.{_ident(target)} AS e ON e.id = t.{_ident(embed.via)}"
        conditions = ["t.organization_id = $1"]
        if spec.soft_delete and not part.include_deleted:
            conditions.append("t.deleted_at IS NULL")
        for column, value in (part.where or {}).items():
            if value is None:
                conditions.append(f"t.{_ident(column)} IS NULL")
            else:
                args.append(value)
                conditions.append(f"t.{_ident(column)} = ${len(args)}")
        for column, values in (part.where_in or {}).items():
            args.append(list(values))
            conditions.append(f"t.{_ident(column)} = ANY(${len(args)})")
        body = f" FROM public.{_ident(table)} AS t{joins} WHERE {' AND '.join(conditions)}"
        if part.order_by:
            order = []
            for item in part.order_by:
                name, _, direction = item.partition(" ")
                if direction.upper() not in ("", "ASC", "DESC"):
                    raise ValueError(f"bad order direction in {item!r}")
                order.append(f"t.{_ident(name)} {direction.upper()}".rstrip())
            body += " ORDER BY " + ", ".join(order)
        if part.limit is not None:
            args.append(part.limit)
            body += f" LIMIT ${len(args)}"
        return select, body

    def _log(self, table: str, sql: str) -> None:
        log = _LOG.get()
        if log is not None:
            log.entries.append((table, sql))

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
