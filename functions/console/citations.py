"""`/console/orgs/{organization}/…/cited-by`, a chunk's page, and `/briefs`: what the organization's briefs read.

"Cited by" on a source, a chunk (its document's citations: briefs cite documents) and a memory chain, and the
segment brief builds page, each a page at a time, newest first. They call the acts in
`functions.actions.citations` with the session's caller: an organization sees only its own briefs, and another
organization's source or memory is 404 as an unknown one is.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlencode
from uuid import UUID

from fastapi import APIRouter, Path, Query, Request, Response

from functions.actions import citations
from functions.console._pages import ConsoleRoute, render
from functions.console._scope import SessionDep, optional_uuid, organization_of

__all__ = ["router"]

router = APIRouter(prefix="/console/orgs/{organization_id}", route_class=ConsoleRoute, include_in_schema=False)

Cursor = Annotated[str | None, Query(max_length=500)]
SOURCE_NOTE = "Briefs cite a document, not a single chunk: these briefs had this document in their text."


@router.get("/sources/{source_id}/cited-by")
async def source_cited_by(
    request: Request, session: SessionDep, organization_id: UUID, source_id: UUID, cursor: Cursor = None
) -> Response:
    """The organization's briefs that cited this source."""
    svc, org = await organization_of(request, session, organization_id)
    found = await citations.source_cited_by(svc.db, session.caller, org.id, source_id, cursor=cursor or None)
    return render(
        request, "cited_by.html", org=org, heading=f"Briefs that cited {found.source.title}", source=found.source,
        page=found.page, note=SOURCE_NOTE, keep="",
    )  # fmt: skip


@router.get("/sources/{source_id}/chunks/{ordinal}")
async def chunk_page(
    request: Request,
    session: SessionDep,
    organization_id: UUID,
    source_id: UUID,
    ordinal: Annotated[int, Path(ge=1, le=1_000_000)],
    cursor: Cursor = None,
) -> Response:
    """One chunk (numbered from 1, as the source page shows them) and the briefs that cited its document."""
    svc, org = await organization_of(request, session, organization_id)
    found = await citations.chunk_cited_by(
        svc.db, session.caller, org.id, source_id, ordinal - 1, cursor=cursor or None
    )
    return render(
        request, "cited_by.html", org=org, heading=f"{found.source.title}, chunk {ordinal}", source=found.source,
        chunk=found.chunk, page=found.page, note=SOURCE_NOTE, keep="",
    )  # fmt: skip


@router.get("/memories/{memory_id}/cited-by")
async def memory_cited_by(
    request: Request, session: SessionDep, organization_id: UUID, memory_id: UUID, cursor: Cursor = None
) -> Response:
    """The organization's briefs that cited any revision of this memory's chain."""
    svc, org = await organization_of(request, session, organization_id)
    found = await citations.memory_cited_by(svc.db, session.caller, org.id, memory_id, cursor=cursor or None)
    head = found.chain.revisions[-1].revision
    return render(
        request, "cited_by.html", org=org, heading=f"Briefs that cited the memory {head.subject_key}",
        chain=found.chain, memory_id=memory_id, page=found.page,
        note="Every revision of the chain counts: a brief cited the revision that was live when it was built.",
        keep="",
    )  # fmt: skip


@router.get("/briefs")
async def segment_briefs(
    request: Request,
    session: SessionDep,
    organization_id: UUID,
    run: Annotated[str, Query(max_length=40)] = "",
    cursor: Cursor = None,
) -> Response:
    """The organization's segment briefs: builds, rebuilds and memo hits, per run and segment."""
    svc, org = await organization_of(request, session, organization_id)
    run_id = optional_uuid(run, "run")
    page = await citations.segment_builds(svc.db, session.caller, org.id, run_id=run_id, cursor=cursor or None)
    keep = urlencode({"run": str(run_id)}) if run_id else ""
    return render(
        request, "segment_briefs.html", org=org, page=page, run=run, keep=keep, days=svc.settings.brief_receipt_days
    )
