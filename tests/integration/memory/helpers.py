"""Builders for memory tests: a tenant with an agent, a run and its invocations, and raw memory rows.

`raw_memory` writes `agent.memories` directly on the service role, bypassing the service, so schema tests
can aim one row at one constraint and read tests can seed hundreds of rows quickly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from context.models import ContextRequest, ContextSourceSpec, ContextSubject
from memory.models import ToolInvocation
from state.db import Database
from tests.factories import Factory


@dataclass
class World:
    """One organization with two users, an agent definition and runs for a user and a trigger."""

    org: UUID
    user: UUID
    other_user: UUID
    definition: UUID
    run: UUID
    trigger_run: UUID
    trigger: UUID

    @property
    def inv(self) -> ToolInvocation:
        """The invocation of the user's run."""
        return ToolInvocation(
            organization_id=self.org, definition_id=self.definition, run_id=self.run, user_id=self.user
        )

    @property
    def trigger_inv(self) -> ToolInvocation:
        """The invocation of the trigger's run."""
        return ToolInvocation(
            organization_id=self.org, definition_id=self.definition, run_id=self.trigger_run, trigger_id=self.trigger
        )

    def subject(self, *, definition: bool = True, user: bool = True, trigger: bool = False) -> ContextSubject:
        """A context subject of this world."""
        return ContextSubject(
            organization_id=self.org,
            user_id=self.user if user else None,
            trigger_id=self.trigger if trigger else None,
            definition_id=self.definition if definition else None,
        )


TRIGGER = UUID("00000000-0000-4000-8000-0000000071c0")


async def make_world(factory: Factory) -> World:
    """A fresh tenant with an agent definition, a user run and a trigger run."""
    org = await factory.organization()
    user = await factory.user(org)
    other = await factory.user(org)
    definition = await factory.definition(org)
    run = await factory.run(org, definition_id=definition, user_id=user, status="running")
    trigger_run = await factory.run(org, definition_id=definition, trigger_id=TRIGGER, status="running")
    return World(org, user, other, definition, run, trigger_run, TRIGGER)


async def user_invocation(
    factory: Factory, world: World, user: UUID, *, definition: UUID | None = None
) -> ToolInvocation:
    """An invocation of a new run of `user` (in `definition`, default the world's)."""
    definition = definition or world.definition
    run = await factory.run(world.org, definition_id=definition, user_id=user, status="running")
    return ToolInvocation(organization_id=world.org, definition_id=definition, run_id=run, user_id=user)


async def raw_memory(
    db: Database,
    *,
    org: UUID,
    definition: UUID,
    scope: str = "organization",
    user: UUID | None = None,
    attribute: str = "observation.note",
    text: str | None = "a fact",
    refs: Any = None,
    key: str | None = None,
    supersedes: UUID | None = None,
    forgotten: bool = False,
    created_at: datetime | None = None,
    owner: UUID | None = None,
    expires_at: datetime | None = None,
    run: UUID | None = None,
) -> UUID:
    """Insert one row into agent.memories as given (the key is derived unless `key` is passed)."""
    refs = [] if refs is None else refs
    owner = owner or (user if scope == "user" else org)
    if key is None:
        if isinstance(refs, list) and refs and isinstance(refs[0], dict):
            key = f"{refs[0].get('kind')}:{refs[0].get('id')}:{attribute}"
        else:
            key = f"{scope}:{owner}:{attribute}"
    async with db.connection() as conn:
        ident: UUID = await conn.fetchval(
            "INSERT INTO agent.memories (organization_id, definition_id, scope, user_id, scope_owner_id, subject_key,"
            " text, subject_refs, supersedes_id, forgotten_at, created_at, expires_at, proposed_by_run_id)"
            " VALUES ($1, $2, $3, $4, $5, $6, $7, $8::text::jsonb, $9,"
            " CASE WHEN $10 THEN now() END, coalesce($11, now()), $12, $13) RETURNING id",
            org,
            definition,
            scope,
            user,
            owner,
            key,
            text,
            json.dumps(refs),
            supersedes,
            forgotten,
            created_at,
            expires_at,
            run,
        )
    return ident


async def world_memory(db: Database, world: World, *, user: UUID | None = None, **values: Any) -> UUID:
    """`raw_memory` in the world's organization and agent; a `user` makes it that person's user-scope memory."""
    if user is not None:
        values.setdefault("scope", "user")
    return await raw_memory(db, org=world.org, definition=world.definition, user=user, **values)


async def chain_rows(db: Database, org: UUID) -> list[dict[str, Any]]:
    """Every memory row of the organization, as dicts."""
    async with db.connection() as conn:
        rows = await conn.fetch("SELECT * FROM agent.memories WHERE organization_id = $1", org)
    return [dict(r) for r in rows]


def request(subject: ContextSubject, *, entities: list[Any] | None = None) -> ContextRequest:
    """A context request for `subject`."""
    return ContextRequest(subject=subject, query="q", entities=list(entities or []))


def spec(name: str, *, limit: int | None = None, budget: int = 10_000) -> ContextSourceSpec:
    """An enabled source spec."""
    return ContextSourceSpec(name=name, token_budget=budget, limit=limit)
