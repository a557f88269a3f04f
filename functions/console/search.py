"""`/console/orgs/{organization}/search`: a query against the organization's knowledge, mode switchable.

The search is `functions.actions.search.search_knowledge`, the act `POST /v1/knowledge/search` calls, over the
organization's own documents and the platform's, with its defaults (relevance floor, per-source cap).
The mode sets the fusion weights: `hybrid` the measured default (dense 0.3, lexical 0.7), `dense` or
`lexical` one list alone. Each hit shows its fused score beside its parts: the dense similarity
(1 - cosine distance) and rank, and the BM25 score and rank.
"""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from fastapi import APIRouter, Query, Request, Response

from functions.actions.search import search_knowledge
from functions.console._pages import ConsoleRoute, render
from functions.console._scope import SessionDep, organization_of
from functions.errors import ApiError
from knowledge.search import DEFAULT_FUSION, Fusion

__all__ = ["MODES", "router"]

router = APIRouter(prefix="/console/orgs/{organization_id}/search", route_class=ConsoleRoute, include_in_schema=False)

MODES: dict[str, Fusion] = {
    "hybrid": DEFAULT_FUSION,
    "dense": Fusion(dense=1.0, lexical=0.0),
    "lexical": Fusion(dense=0.0, lexical=1.0),
}
"""The fusion of each mode the page offers."""
HITS = 10
"""Hits shown for one query."""


@router.get("")
async def search_page(
    request: Request,
    session: SessionDep,
    organization_id: UUID,
    q: Annotated[str, Query(max_length=2000)] = "",
    mode: Annotated[Literal["hybrid", "dense", "lexical"], Query()] = "hybrid",
) -> Response:
    """The form, and the hits when a query is given."""
    svc, org = await organization_of(request, session, organization_id)
    if "\x00" in q:
        raise ApiError(422, "text_invalid", "the query must not hold a NUL byte")
    hits = []
    if q.strip():
        hits = await search_knowledge(
            svc.db, svc.embedders.get, session.caller, org.id, q, limit=HITS, fusion=MODES[mode]
        )
    return render(request, "search.html", org=org, q=q, mode=mode, modes=list(MODES), hits=hits)
