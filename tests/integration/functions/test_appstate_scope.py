"""The acts of `functions.actions.appstate` run the one scope check themselves (issue 46, item 3): whichever face
calls them, an organization key acts in its own organization only and an operator in one that exists."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import pytest

from functions.actions import appstate
from functions.actions.scope import OPERATOR_TOKEN, Caller
from functions.errors import ApiError
from state.db import Database
from state.errors import CodedError
from tests.factories import Factory


async def test_every_act_refuses_an_organization_key_another_organization(db: Database, factory: Factory) -> None:
    mine, theirs = await factory.organization(), await factory.organization()
    user, agent = await factory.user(theirs), await factory.definition(theirs)
    run = await factory.run(theirs, definition_id=agent, user_id=user, status="running")
    key = Caller(organization_id=mine, key_id="k")
    acts: list[Callable[[], Awaitable[object]]] = [
        lambda: appstate.add_user(db, key, theirs, email="eve@acme.test"),
        lambda: appstate.list_users(db, key, theirs),
        lambda: appstate.remove_user(db, key, theirs, user),
        lambda: appstate.add_agent(db, key, theirs, name="Mine", status="published"),
        lambda: appstate.list_agents(db, key, theirs),
        lambda: appstate.set_agent_status(db, key, theirs, agent, status="archived"),
        lambda: appstate.remove_agent(db, key, theirs, agent),
        lambda: appstate.start_run(db, key, theirs, definition_id=agent, user_id=user),
        lambda: appstate.list_runs(db, key, theirs),
        lambda: appstate.finish_run(db, key, theirs, run),
    ]
    for act in acts:
        with pytest.raises(ApiError) as refused:
            await act()
        assert (refused.value.status, refused.value.code) == (403, "organization_forbidden")
    async with db.connection() as conn:
        assert await conn.fetchval("SELECT count(*) FROM public.users WHERE organization_id = $1", theirs) == 1
        assert await conn.fetchval("SELECT status FROM agent.definitions WHERE id = $1", agent) != "archived"
        assert await conn.fetchval("SELECT status FROM agent.runs WHERE id = $1", run) == "running"

    with pytest.raises(CodedError) as unknown:
        await appstate.list_users(db, OPERATOR_TOKEN, uuid.uuid4())
    assert unknown.value.code == "organization_not_found"
