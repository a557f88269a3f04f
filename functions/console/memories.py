"""`/console/orgs/{organization}/memories`: an organization's or a person's live memories, read only.

The read is `memory.reads.read_live_memories`, the one the memory source of a brief uses: the
organization scope, and with a person their own chain too. Nothing here remembers or forgets: memory is
written by agents through the tools.
"""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Query, Request, Response

from functions.console._pages import ConsoleRoute, render
from functions.console._scope import SessionDep, organization_of
from memory.reads import count_live_memories, read_live_memories

__all__ = ["router"]

router = APIRouter(prefix="/console/orgs/{organization_id}/memories", route_class=ConsoleRoute, include_in_schema=False)

PAGE_SIZE = 50
"""Memories on one page."""


@router.get("")
async def memory_list(
    request: Request,
    session: SessionDep,
    organization_id: UUID,
    person: Annotated[UUID | None, Query()] = None,
) -> Response:
    """The live memories of the organization, or of one person with the organization's."""
    svc, org = await organization_of(request, session, organization_id)
    args = {"organization_id": org.id, "definition_id": None, "user_id": person, "trigger_id": None}
    memories = await read_live_memories(svc.db, limit=PAGE_SIZE, **args)  # type: ignore[arg-type]
    total = await count_live_memories(svc.db, **args)  # type: ignore[arg-type]
    return render(request, "memories.html", org=org, memories=memories, total=total, person=person)
