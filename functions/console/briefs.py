"""`/console/orgs/{organization}/brief`: the brief exactly as the agent receives it, and why.

The page calls the act the front door route calls (`functions.actions.briefs.front_door_brief`) with
`explain: true` and the session's caller, so an organization key builds under `front_door` only (another
policy answers 403 `policy_forbidden`, as on the API) and an operator may pick any registered policy
(`context.policies.NAMED_POLICIES`), which passes the same publish check. Beside the brief: each source's
spend against its budget as an inline SVG bar, every item the packer was given with its cause and cost,
and the candidates a source cut before the packer (`BriefExplanation.cut`) with their rule, score and rank.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Query, Request, Response

from context.models import BriefExplanation
from context.policies import FRONT_DOOR_NAME, NAMED_POLICIES
from functions.actions.briefs import front_door_brief
from functions.console._pages import ConsoleRoute, render
from functions.console._scope import SessionDep, optional_uuid, organization_of
from functions.errors import ApiError

__all__ = ["BAR_WIDTH", "Bar", "bars", "router"]

router = APIRouter(prefix="/console/orgs/{organization_id}/brief", route_class=ConsoleRoute, include_in_schema=False)

BAR_WIDTH = 320
"""The width in pixels of a full budget bar."""


@dataclass(frozen=True, slots=True)
class Bar:
    """One source's budget bar, in pixels."""

    source: str
    """The source."""
    used: int
    """Tokens spent."""
    budget: int | None
    """Its budget, or None when no enabled spec names it."""
    kept: int
    """Items kept."""
    dropped: int
    """Items dropped."""
    used_px: int
    """The spent part of the bar."""
    over_px: int
    """A spend past the budget (never for the packer's own accounting; kept for honesty)."""


def bars(explanation: BriefExplanation) -> list[Bar]:
    """Each source's spend scaled to `BAR_WIDTH` (its budget, or the largest spend when it has none)."""
    widest = max([s.budget or s.used for s in explanation.sources] + [1])
    out: list[Bar] = []
    for s in explanation.sources:
        scale = s.budget or widest
        used_px = min(BAR_WIDTH, round(BAR_WIDTH * s.used / scale)) if scale else 0
        over_px = 0 if s.budget is None or s.used <= s.budget else BAR_WIDTH - used_px
        out.append(Bar(s.source, s.used, s.budget, s.kept, s.dropped, used_px, over_px))
    return out


@router.get("")
async def brief_page(
    request: Request,
    session: SessionDep,
    organization_id: UUID,
    q: Annotated[str, Query(max_length=20_000)] = "",
    person: Annotated[str, Query(max_length=40)] = "",
    policy: Annotated[str, Query(max_length=64)] = FRONT_DOOR_NAME,
    build: Annotated[bool, Query()] = False,
) -> Response:
    """The form; with `build`, the brief and its explanation."""
    svc, org = await organization_of(request, session, organization_id)
    if "\x00" in q:  # the API's body refuses it the same way (`functions._wire.CleanText`)
        raise ApiError(422, "text_invalid", "the query must not hold a NUL byte")
    user_id = optional_uuid(person, "person")
    names = list(NAMED_POLICIES) if session.caller.operator else [FRONT_DOOR_NAME]
    answer = None
    if build:
        answer = await front_door_brief(
            svc, session.caller, org.id, user_id=user_id, query=q,
            policy=None if policy == FRONT_DOOR_NAME else _policy_json(policy), explain=True, route="console",
        )  # fmt: skip
    explanation = None if answer is None else answer.explanation
    return render(
        request, "brief.html", org=org, q=q, person=person, policy=policy, policies=names, answer=answer,
        explanation=explanation, bars=[] if explanation is None else bars(explanation), bar_width=BAR_WIDTH,
    )  # fmt: skip


def _policy_json(name: str) -> dict[str, object]:
    """A registered policy as the JSON an operator would send; an unknown name is an empty (invalid) policy."""
    known = NAMED_POLICIES.get(name)
    return {} if known is None else known.model_dump(mode="json")
