"""Remember, forget, and read what is remembered: the memory acts of the API, the console and the CLI.

Each call runs `memory.tools.MemoryTools` over the one memory service the services built
(`Services.memory`: the settings' expiry, the live model's embedder), so a memory written from the API and
one written from the command line expire and are compared alike. The invocation names the organization;
an organization key calls inside its own only. The reads page the live memories (`memory.pages`) and show a
chain's every revision. This module must never write a memory itself.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from functions._services import Services
from functions.actions.scope import Caller, require_own
from memory.models import ToolInvocation
from memory.pages import MemoryChain, MemoryRow, memory_chain, page_memories
from memory.tools import FORGET_TOOL, REMEMBER_TOOL, MemoryTools
from state.db import Database
from state.paging import Page

__all__ = ["call_tool", "chain", "forget", "memories_page", "remember"]


async def call_tool(
    services: Services, caller: Caller, tool: str, invocation: ToolInvocation, arguments: dict[str, Any]
) -> dict[str, Any]:
    """Run one memory tool for `invocation` and answer the revision it wrote (or raise its refusal)."""
    require_own(caller, invocation.organization_id)
    return await MemoryTools(services.memory).call(tool, invocation, arguments)


async def remember(
    services: Services, caller: Caller, invocation: ToolInvocation, arguments: dict[str, Any]
) -> dict[str, Any]:
    """`memory.remember`: append a revision, or refuse with a memory code."""
    return await call_tool(services, caller, REMEMBER_TOOL, invocation, arguments)


async def forget(
    services: Services, caller: Caller, invocation: ToolInvocation, arguments: dict[str, Any]
) -> dict[str, Any]:
    """`memory.forget`: append a tombstone to a current live memory."""
    return await call_tool(services, caller, FORGET_TOOL, invocation, arguments)


async def memories_page(
    db: Database,
    caller: Caller,
    organization_id: UUID,
    *,
    user_id: UUID | None = None,
    definition_id: UUID | None = None,
    person: str | None = None,
    subject: str | None = None,
    sort: str | None = None,
    direction: str | None = None,
    cursor: str | None = None,
    limit: int = 100,
) -> Page[MemoryRow]:
    """A page of live memories, newest first unless sorted: the organization's, or one person's.

    `person` narrows to the people whose email or name contains it, `subject` to memories about `kind:id`.
    """
    require_own(caller, organization_id)
    return await page_memories(
        db, organization_id=organization_id, user_id=user_id, definition_id=definition_id, person=person,
        subject=subject, sort=sort, direction=direction, cursor=cursor, limit=limit,
    )  # fmt: skip


async def chain(db: Database, caller: Caller, organization_id: UUID, memory_id: UUID) -> MemoryChain:
    """Every revision of a memory's chain, oldest first (404 `memory_not_found` for another organization's)."""
    require_own(caller, organization_id)
    return await memory_chain(db, organization_id=organization_id, memory_id=memory_id)
