"""Users, agent definitions and runs: the acts behind their routes, console page and `ac-context user|agent|run`.

A new organization needs these rows before it can remember anything or erase a person: a memory write names an
agent definition, one of its runs and (for a person's memory) a member of the organization. Every act runs the
one scope check first (`functions.actions.scope.check_organization`: an organization key its own organization
only, an operator any that exists). The refusals, each with its code and nothing changed:

- 422 `user_email_invalid`, `user_display_name_invalid`, `agent_name_invalid`, `agent_status_invalid`,
  `run_status_invalid`: the input's shape;
- 404 `user_not_found`, `agent_not_found`, `run_not_found`: no such row in this organization;
- 409 `user_email_taken`, `agent_name_taken`: the organization has one (emails and names compare in any case);
- 409 `user_has_memories`: a user whose memories remain is removed only after the person's erasure (which
  leaves a receipt); removing the row first would let the memories' foreign key delete them with none;
- 409 `agent_in_use`: a definition that owns memories or runs is archived (`status: archived`), not removed;
- 409 `agent_archived`, `definition_not_agent`: a run is started for a live agent definition only;
- 409 `run_finished`: a run ends once.

This module must never delete a memory, and never loosen the memory tools' invocation check: a run started here
is an ordinary run that the check accepts because it belongs to the organization and the definition.
"""

from __future__ import annotations

from uuid import UUID

from functions.actions.scope import Caller, check_organization, requester
from functions.errors import ApiError
from state import agents, users
from state.agents import DEFINITION_STATUSES, FINAL_RUN_STATUSES, MAX_AGENT_NAME, Definition, Run
from state.db import Database
from state.users import MAX_DISPLAY_NAME, User

__all__ = [
    "MAX_LIST",
    "add_agent",
    "add_user",
    "finish_run",
    "list_agents",
    "list_runs",
    "list_users",
    "remove_agent",
    "remove_user",
    "set_agent_status",
    "start_run",
]

MAX_LIST = 1000
"""The most rows one list answers."""


def _limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIST:
        raise ApiError(422, "invalid_request", f"limit is 1 to {MAX_LIST}")
    return limit


def _clean(value: str | None) -> str | None:
    return None if value is None else value.strip()


async def add_user(
    db: Database, caller: Caller, organization_id: UUID, *, email: str, display_name: str | None = None
) -> User:
    """Add a member of the organization (its email unique there, any case)."""
    await check_organization(db, caller, organization_id)
    clean = _clean(email) or ""
    problem = users.email_problem(clean)
    if problem is not None:
        raise ApiError(422, "user_email_invalid", f"email {problem}")
    name = _clean(display_name) or None
    if name is not None and len(name) > MAX_DISPLAY_NAME:
        raise ApiError(422, "user_display_name_invalid", f"a display name has at most {MAX_DISPLAY_NAME} characters")
    added = await users.add_user(db, organization_id, clean, name)
    if added is None:
        raise ApiError(409, "user_email_taken", f"a user of this organization has the email {clean}")
    return added


async def list_users(
    db: Database, caller: Caller, organization_id: UUID, *, limit: int = 100
) -> tuple[list[User], int]:
    """The organization's users, oldest first, with their memory revisions and runs; and how many it has."""
    await check_organization(db, caller, organization_id)
    return await users.list_users(db, organization_id, limit=_limit(limit))


async def remove_user(db: Database, caller: Caller, organization_id: UUID, user_id: UUID) -> None:
    """Remove a user who holds no memory (409 `user_has_memories` otherwise: erase the person first)."""
    await check_organization(db, caller, organization_id)
    removal = await users.remove_user(db, organization_id, user_id)
    if removal.outcome == "not_found":
        raise ApiError(404, "user_not_found", f"no user {user_id} in this organization")
    if removal.outcome == "has_memories":
        raise ApiError(
            409,
            "user_has_memories",
            f"user {user_id} holds {removal.memories} memory revision(s): erase the person first (the erasure "
            "leaves a receipt), then remove the user",
        )


def _status(status: str) -> str:
    if status not in DEFINITION_STATUSES:
        raise ApiError(422, "agent_status_invalid", f"status is one of {', '.join(DEFINITION_STATUSES)}")
    return status


async def add_agent(db: Database, caller: Caller, organization_id: UUID, *, name: str, status: str) -> Definition:
    """Add an agent definition of the organization (its name unique there, any case)."""
    await check_organization(db, caller, organization_id)
    clean = _clean(name) or ""
    if not clean or len(clean) > MAX_AGENT_NAME:
        raise ApiError(422, "agent_name_invalid", f"an agent name has 1 to {MAX_AGENT_NAME} characters")
    added = await agents.add_definition(db, organization_id, clean, status=_status(status))
    if added is None:
        raise ApiError(409, "agent_name_taken", f"this organization has an agent named {clean}")
    return added


async def list_agents(
    db: Database, caller: Caller, organization_id: UUID, *, limit: int = 100
) -> tuple[list[Definition], int]:
    """The organization's own definitions, oldest first, with their memory revisions and runs; and how many."""
    await check_organization(db, caller, organization_id)
    return await agents.list_definitions(db, organization_id, limit=_limit(limit))


async def set_agent_status(
    db: Database, caller: Caller, organization_id: UUID, definition_id: UUID, *, status: str
) -> Definition:
    """Set a definition's status (`archived` retires one that owns memories or runs)."""
    await check_organization(db, caller, organization_id)
    changed = await agents.set_definition_status(db, organization_id, definition_id, _status(status))
    if changed is None:
        raise ApiError(404, "agent_not_found", f"no agent {definition_id} of this organization")
    return changed


async def remove_agent(db: Database, caller: Caller, organization_id: UUID, definition_id: UUID) -> None:
    """Remove a definition that owns no memory and no run (409 `agent_in_use` otherwise: archive it)."""
    await check_organization(db, caller, organization_id)
    removal = await agents.remove_definition(db, organization_id, definition_id)
    if removal.outcome == "not_found":
        raise ApiError(404, "agent_not_found", f"no agent {definition_id} of this organization")
    if removal.outcome == "in_use":
        raise ApiError(
            409,
            "agent_in_use",
            f"agent {definition_id} owns {removal.memories} memory revision(s) and {removal.runs} run(s): archive "
            "it instead (status archived); its memories leave only through an erasure",
        )


async def start_run(db: Database, caller: Caller, organization_id: UUID, *, definition_id: UUID, user_id: UUID) -> Run:
    """Start a run of a live agent definition for a member of the organization, for memory writes."""
    await check_organization(db, caller, organization_id)
    await _runnable(db, organization_id, definition_id, user_id)
    run = await agents.start_run(db, organization_id, definition_id, user_id, started_by=requester(caller))
    if run is None:  # an archive or a removal committed between the checks and the insert: say which
        await _runnable(db, organization_id, definition_id, user_id)
        raise ApiError(409, "agent_archived", f"agent {definition_id} was archived as the run started")
    return run


async def _runnable(db: Database, organization_id: UUID, definition_id: UUID, user_id: UUID) -> None:
    """Refuse a run of anything but a live agent of the organization, or for anyone but a member."""
    definition = await agents.get_definition(db, organization_id, definition_id)
    if definition is None:
        raise ApiError(404, "agent_not_found", f"no agent {definition_id} in this organization")
    if definition.kind != "agent":
        raise ApiError(409, "definition_not_agent", f"a {definition.kind} definition owns no memory; only an agent")
    if definition.status == "archived":
        raise ApiError(409, "agent_archived", f"agent {definition_id} is archived; publish it to run it again")
    if not await agents.user_in_organization(db, organization_id, user_id):
        raise ApiError(404, "user_not_found", f"no user {user_id} in this organization")


async def list_runs(
    db: Database,
    caller: Caller,
    organization_id: UUID,
    *,
    definition_id: UUID | None = None,
    user_id: UUID | None = None,
    limit: int = 100,
) -> list[Run]:
    """The organization's runs, newest first, of one agent and one user where named."""
    await check_organization(db, caller, organization_id)
    return await agents.list_runs(
        db, organization_id, definition_id=definition_id, user_id=user_id, limit=_limit(limit)
    )


async def finish_run(
    db: Database, caller: Caller, organization_id: UUID, run_id: UUID, *, status: str = "succeeded"
) -> Run:
    """End a running run (`succeeded`, `failed` or `cancelled`); 409 `run_finished` if it has ended."""
    await check_organization(db, caller, organization_id)
    if status not in FINAL_RUN_STATUSES:
        raise ApiError(422, "run_status_invalid", f"a run ends {', '.join(FINAL_RUN_STATUSES)}")
    finished = await agents.finish_run(db, organization_id, run_id, status)
    if finished is not None:
        return finished
    if await agents.get_run(db, organization_id, run_id) is None:
        raise ApiError(404, "run_not_found", f"no run {run_id} in this organization")
    raise ApiError(409, "run_finished", f"run {run_id} has ended already")
