"""Row factories for tests: a tenant with users and CRM rows in a line or two.

`Factory.insert(table, **values)` writes any row and returns it; the named helpers fill sensible
defaults. Writes run on the service role (the table owner), so row-level security does not apply to them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

import asyncpg

from state.db import Database

_IDENT = re.compile(r"^[a-z_][a-z0-9_.]*$")


@dataclass
class Tenant:
    """An organization with some users and CRM companies."""

    id: UUID
    users: list[UUID] = field(default_factory=list)
    companies: list[UUID] = field(default_factory=list)
    people: list[UUID] = field(default_factory=list)

    @property
    def user(self) -> UUID:
        return self.users[0]


class Factory:
    """Creates rows in the test database."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._n = 0

    def _next(self) -> int:
        self._n += 1
        return self._n

    async def insert(self, table: str, **values: Any) -> asyncpg.Record:
        """Insert one row into `table` (schema-qualified for agent tables) and return it."""
        assert _IDENT.match(table), table
        cols = list(values)
        for col in cols:
            assert _IDENT.match(col), col
        # The pool's jsonb codec encodes dicts and lists itself; the cast tells PostgreSQL the type.
        args = list(values.values())
        casts = ["::jsonb" if isinstance(v, dict | list) else "" for v in values.values()]
        placeholders = ", ".join(f"${i + 1}{casts[i]}" for i in range(len(cols)))
        sql = f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({placeholders}) RETURNING *"
        async with self.db.connection() as conn:
            row: asyncpg.Record = await conn.fetchrow(sql, *args)
        return row

    async def insert_id(self, table: str, **values: Any) -> UUID:
        """Insert one row into `table` and return its `id`."""
        row = await self.insert(table, **values)
        return UUID(str(row["id"]))

    async def organization(self, name: str | None = None) -> UUID:
        return await self.insert_id("public.organizations", name=name or f"Org {self._next()}")

    async def user(self, org: UUID, **values: Any) -> UUID:
        n = self._next()
        values.setdefault("email", f"user{n}@example.test")
        values.setdefault("display_name", f"User {n}")
        return await self.insert_id("public.users", organization_id=org, **values)

    async def company(self, org: UUID, **values: Any) -> UUID:
        n = self._next()
        values.setdefault("name", f"Company {n}")
        values.setdefault("domain", f"company{n}.test")
        return await self.insert_id("public.crm_companies", organization_id=org, **values)

    async def person(self, org: UUID, **values: Any) -> UUID:
        values.setdefault("full_name", f"Person {self._next()}")
        return await self.insert_id("public.crm_people", organization_id=org, **values)

    async def deal(self, org: UUID, **values: Any) -> UUID:
        values.setdefault("name", f"Deal {self._next()}")
        return await self.insert_id("public.crm_deals", organization_id=org, **values)

    async def activity(self, org: UUID, **values: Any) -> UUID:
        values.setdefault("activity_type", "call")
        return await self.insert_id("public.crm_activities", organization_id=org, **values)

    async def crm_list(self, org: UUID, **values: Any) -> UUID:
        values.setdefault("name", f"List {self._next()}")
        return await self.insert_id("public.crm_lists", organization_id=org, **values)

    async def intel_company(self, **values: Any) -> UUID:
        n = self._next()
        values.setdefault("name", f"Intel Co {n}")
        values.setdefault("domain", f"intel{n}.test")
        return await self.insert_id("public.intel_companies", **values)

    async def intel_person(self, **values: Any) -> UUID:
        values.setdefault("full_name", f"Intel Person {self._next()}")
        return await self.insert_id("public.intel_people", **values)

    async def prospect(self, org: UUID, **values: Any) -> UUID:
        values.setdefault("prospect_kind", "company")
        return await self.insert_id("public.prospects", organization_id=org, **values)

    async def prospect_person(self, org: UUID, prospect_id: UUID, **values: Any) -> UUID:
        values.setdefault("full_name", f"Prospect Person {self._next()}")
        return await self.insert_id("public.prospect_people", organization_id=org, prospect_id=prospect_id, **values)

    async def conversation(self, org: UUID, **values: Any) -> UUID:
        return await self.insert_id("public.conversations", organization_id=org, **values)

    async def message(self, org: UUID, conversation_id: UUID, content: str, **values: Any) -> UUID:
        values.setdefault("role", "user")
        return await self.insert_id(
            "public.conversation_messages",
            organization_id=org,
            conversation_id=conversation_id,
            content=content,
            **values,
        )

    async def definition(self, org: UUID | None, **values: Any) -> UUID:
        values.setdefault("definition_kind", "agent")
        values.setdefault("name", f"Agent {self._next()}")
        values.setdefault("status", "published")
        return await self.insert_id("agent.definitions", organization_id=org, **values)

    async def run(self, org: UUID, *, created_at: datetime | None = None, **values: Any) -> UUID:
        values.setdefault("status", "succeeded")
        if created_at is not None:
            values["created_at"] = created_at
        return await self.insert_id("agent.runs", organization_id=org, **values)

    async def tenant(self, *, users: int = 1, companies: int = 0, people: int = 0, name: str | None = None) -> Tenant:
        """An organization with `users` users, `companies` companies and `people` people."""
        org = await self.organization(name)
        tenant = Tenant(id=org)
        for _ in range(users):
            tenant.users.append(await self.user(org))
        for _ in range(companies):
            tenant.companies.append(await self.company(org, lifecycle_stage="lead"))
        for _ in range(people):
            tenant.people.append(await self.person(org, current_title="Engineer"))
        return tenant
