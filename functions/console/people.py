"""`/console/orgs/{organization}/people…`: the members, agent definitions and recent runs of an organization.

The page lists them with what each holds (memory revisions, runs) and offers the acts of
`functions.actions.appstate` behind CSRF-checked forms: add a member, remove one (a member whose memories
remain is refused, 409 `user_has_memories`: the page links the person's erasure on *Data that leaves*), add an
agent, archive or publish it, remove one (an agent that owns memories or runs is refused, 409 `agent_in_use`).
The session's caller is the scope (an organization key sees its own organization only; another is 404). Runs
are listed, not started here: a run is started by the agent runtime, `ac-context run start` or the API. Nothing
here remembers, forgets or erases.
"""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Form, Query, Request, Response
from fastapi.responses import RedirectResponse

from functions.actions import appstate
from functions.console._pages import ConsoleRoute, render
from functions.console._scope import SessionDep, organization_of
from functions.console._session import check_csrf
from state.agents import MAX_AGENT_NAME
from state.users import MAX_DISPLAY_NAME, MAX_EMAIL

__all__ = ["router"]

router = APIRouter(prefix="/console/orgs/{organization_id}/people", route_class=ConsoleRoute, include_in_schema=False)

SHOWN = 200
"""Members and agents on the page."""
RUNS_SHOWN = 20
"""Recent runs on the page."""
Csrf = Annotated[str, Form(max_length=100)]
DONE = {
    "user-added": "member added",
    "user-removed": "member removed",
    "agent-added": "agent added",
    "agent-archived": "agent archived",
    "agent-published": "agent published",
    "agent-draft": "agent set to draft",
    "agent-removed": "agent removed",
}
"""What the page says after a form's act (the query names one of these, never free text)."""


def _back(organization_id: UUID, done: str) -> RedirectResponse:
    return RedirectResponse(f"/console/orgs/{organization_id}/people?done={done}", status_code=303)


@router.get("")
async def people_page(
    request: Request, session: SessionDep, organization_id: UUID, done: Annotated[str, Query(max_length=40)] = ""
) -> Response:
    """Members, agents and recent runs, with the forms that add and remove them."""
    svc, org = await organization_of(request, session, organization_id)
    users, users_total = await appstate.list_users(svc.db, session.caller, org.id, limit=SHOWN)
    agents, agents_total = await appstate.list_agents(svc.db, session.caller, org.id, limit=SHOWN)
    runs = await appstate.list_runs(svc.db, session.caller, org.id, limit=RUNS_SHOWN)
    return render(
        request, "people.html", org=org, users=users, users_total=users_total, agents=agents,
        agents_total=agents_total, runs=runs, done=DONE.get(done),
    )  # fmt: skip


@router.post("/users")
async def add_user(
    request: Request,
    session: SessionDep,
    organization_id: UUID,
    email: Annotated[str, Form(max_length=MAX_EMAIL + 10)],
    display_name: Annotated[str, Form(max_length=MAX_DISPLAY_NAME + 10)] = "",
    csrf: Csrf = "",
) -> Response:
    """Add a member."""
    check_csrf(session, csrf)
    svc, org = await organization_of(request, session, organization_id)
    await appstate.add_user(svc.db, session.caller, org.id, email=email, display_name=display_name or None)
    return _back(org.id, "user-added")


@router.post("/users/{user_id}/remove")
async def remove_user(
    request: Request, session: SessionDep, organization_id: UUID, user_id: UUID, csrf: Csrf = ""
) -> Response:
    """Remove a member who holds no memory."""
    check_csrf(session, csrf)
    svc, org = await organization_of(request, session, organization_id)
    await appstate.remove_user(svc.db, session.caller, org.id, user_id)
    return _back(org.id, "user-removed")


@router.post("/agents")
async def add_agent(
    request: Request,
    session: SessionDep,
    organization_id: UUID,
    name: Annotated[str, Form(max_length=MAX_AGENT_NAME + 10)],
    csrf: Csrf = "",
) -> Response:
    """Add a published agent definition."""
    check_csrf(session, csrf)
    svc, org = await organization_of(request, session, organization_id)
    await appstate.add_agent(svc.db, session.caller, org.id, name=name, status="published")
    return _back(org.id, "agent-added")


@router.post("/agents/{agent_id}/status")
async def agent_status(
    request: Request,
    session: SessionDep,
    organization_id: UUID,
    agent_id: UUID,
    status: Annotated[str, Form(max_length=20)],
    csrf: Csrf = "",
) -> Response:
    """Archive or publish an agent."""
    check_csrf(session, csrf)
    svc, org = await organization_of(request, session, organization_id)
    await appstate.set_agent_status(svc.db, session.caller, org.id, agent_id, status=status)
    return _back(org.id, f"agent-{status}")


@router.post("/agents/{agent_id}/remove")
async def remove_agent(
    request: Request, session: SessionDep, organization_id: UUID, agent_id: UUID, csrf: Csrf = ""
) -> Response:
    """Remove an agent that owns no memory and no run."""
    check_csrf(session, csrf)
    svc, org = await organization_of(request, session, organization_id)
    await appstate.remove_agent(svc.db, session.caller, org.id, agent_id)
    return _back(org.id, "agent-removed")
