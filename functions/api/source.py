"""`/v1/knowledge/sources/{id}`: one source's routes, in one module: read it, its chunks and progress, retry, delete.

`GET …/sources/{id}` answers one source with its status, reason, pending age and its readiness and chunk
counts per model. Its chunks page in ordinal order with their full text, under the model it is shown under
unless `model` names another; its progress says the stage (`extracting`, `embedding`, `finishing`, or the
final status) and the chunks embedded of those written (`knowledge.ingestion.source_pages`). A retry is the
one retry rule (`functions.actions.knowledge.retry`): a failed source is reset to pending and
`knowledge/source.retry.requested` is written in the reset's transaction, then sent (queued in the outbox
when Inngest cannot be reached); a pending or ready source answers 409 `source_not_failed`. `DELETE` deletes
the source (`functions.actions.knowledge.delete`) and answers its receipt; the id of any version of a
re-synced URI deletes every version (the receipt's `versions`): an organization key deletes its own
organization's sources only (another's answers 404, as an unknown one); an operator key any source, a
platform source included. A source outside the named scope answers 404 `knowledge_source_not_found`,
exactly as an unknown id. This module must never extract, chunk or embed: the functions do.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any
from uuid import UUID

from fastapi import APIRouter, Query, Request

from functions.actions import knowledge as knowledge_actions
from functions.api._body import BodyRoute
from functions.api._deps import ServicesDep
from functions.api._http import ERROR_RESPONSES, route_errors
from functions.api._knowledge_models import AttemptsOut, RetryOut, SourceDetailOut
from functions.api._pages import CURSOR_ERRORS, CursorQuery, limit_query, page_body, scope_of
from functions.api._params import PlatformScope, ScopeOrganization, SourceIdPath
from functions.api._scopes import OrganizationCaller
from functions.api.receipts import ReceiptOut
from functions.api.source_pages import ChunkPage, ProgressOut
from knowledge.ingestion.sources import ModelReadiness, SourceView

__all__ = ["readiness_json", "router", "source_json"]

router = APIRouter(prefix="/v1/knowledge", responses=ERROR_RESPONSES, route_class=BodyRoute)

_ORG_404 = "`organization_not_found`: the organization the request names does not exist."
_ONE_404 = f"`knowledge_source_not_found`: no such source in this scope. Or {_ORG_404}"
_PAGE_404 = f"`knowledge_source_not_found`: no such source in this scope (another's answers the same). Or {_ORG_404}"
_DELETE_404 = "`source_not_found`: no such source in this scope (another organization's answers the same)."


def _age_s(since: datetime | None) -> float | None:
    return None if since is None else round((datetime.now(UTC) - since).total_seconds(), 1)


def readiness_json(r: ModelReadiness) -> dict[str, Any]:
    """One source's readiness under one model, as JSON."""
    return {
        "model": r.model,
        "status": r.status,
        "chunks": r.chunk_count,
        "embedded": r.embedded_count,
        "failure_reason": r.failure_reason,
        "pending_age_s": _age_s(r.pending_since) if r.status == "pending" else None,
    }


def source_json(v: SourceView, models: list[ModelReadiness]) -> dict[str, Any]:
    """A source with its readiness per model, as JSON."""
    return {
        **v.identity_json(),
        "pending_age_s": _age_s(v.pending_since) if v.status == "pending" else None,
        "updated_at": v.updated_at.isoformat(),
        "models": [readiness_json(m) for m in models],
    }


@router.get(
    "/sources/{source_id}",
    tags=["knowledge operations"],
    response_model=SourceDetailOut,
    responses=route_errors({404: _ONE_404}),
)
async def get_one_source(
    svc: ServicesDep,
    caller: OrganizationCaller,
    source_id: SourceIdPath,
    organization_id: ScopeOrganization = None,
    platform: PlatformScope = False,
) -> dict[str, Any]:
    """One source of a scope with its status, reason, pending age, and its readiness per model."""
    scope = scope_of(organization_id, platform)
    detail = await knowledge_actions.source_detail(svc.db, caller, source_id, organization_id=scope)
    return source_json(detail.view, detail.models)


@router.get(
    "/sources/{source_id}/chunks",
    tags=["knowledge"],
    response_model=ChunkPage,
    responses=route_errors({404: _PAGE_404, 422: CURSOR_ERRORS}),
)
async def get_chunks(
    svc: ServicesDep,
    caller: OrganizationCaller,
    source_id: SourceIdPath,
    organization_id: ScopeOrganization = None,
    platform: PlatformScope = False,
    model: Annotated[
        str | None, Query(max_length=200, description="The model whose chunks to read; default: the source's shown.")
    ] = None,
    cursor: CursorQuery = None,
    limit: Annotated[int, limit_query("chunks")] = 100,
) -> dict[str, Any]:
    """A page of a source's chunks in ordinal order, with their full text."""
    scope = scope_of(organization_id, platform)
    page = await knowledge_actions.chunks_page(
        svc.db, caller, source_id, organization_id=scope, model=model, cursor=cursor, limit=limit
    )
    return page_body(page, [c.as_json() for c in page.items])


@router.get(
    "/sources/{source_id}/progress",
    tags=["knowledge"],
    response_model=ProgressOut,
    responses=route_errors({404: _PAGE_404}),
)
async def get_progress(
    svc: ServicesDep,
    caller: OrganizationCaller,
    source_id: SourceIdPath,
    organization_id: ScopeOrganization = None,
    platform: PlatformScope = False,
) -> dict[str, Any]:
    """Where a source's ingestion is: its stage and the chunks embedded of those written, per model."""
    scope = scope_of(organization_id, platform)
    progress = await knowledge_actions.progress(svc.db, caller, source_id, organization_id=scope)
    return progress.as_json()


@router.get(
    "/sources/{source_id}/attempts",
    tags=["knowledge operations"],
    response_model=AttemptsOut,
    responses=route_errors({404: _PAGE_404}),
)
async def get_attempts(
    svc: ServicesDep,
    caller: OrganizationCaller,
    source_id: SourceIdPath,
    organization_id: ScopeOrganization = None,
    platform: PlatformScope = False,
) -> dict[str, Any]:
    """A source's latest ingestion attempts, newest first: when, what started it, how and why it ended."""
    scope = scope_of(organization_id, platform)
    found = await knowledge_actions.attempts(svc.db, caller, source_id, organization_id=scope)
    return {"source_id": str(source_id), "attempts": [a.as_json() for a in found]}


@router.post(
    "/sources/{source_id}/retry",
    tags=["knowledge"],
    status_code=202,
    response_model=RetryOut,
    responses={
        202: {"description": "The source's retry event is written; `event_status` says if it left."},
        **route_errors({
            404: _ONE_404,
            409: "`source_not_failed`: the source is pending or ready; only a failed source is retried.",
        }),
    },
)  # fmt: skip
async def retry(
    request: Request,
    svc: ServicesDep,
    caller: OrganizationCaller,
    source_id: SourceIdPath,
    organization_id: ScopeOrganization = None,
    platform: PlatformScope = False,
) -> dict[str, Any]:
    """Reset a failed source to pending and send `knowledge/source.retry.requested` (through the outbox)."""
    scope = scope_of(organization_id, platform)
    retried = await knowledge_actions.retry(
        svc, caller, source_id, organization_id=scope, deliver=request.app.state.outbox.deliver
    )
    return {
        "source_id": str(source_id),
        "reset": retried.reset,
        "status": retried.status,
        "event_id": retried.event_ids[0] if retried.event_ids else None,
        "event_status": retried.event_status,
        "event_error": retried.event_error,
    }


@router.delete(
    "/sources/{source_id}",
    tags=["knowledge"],
    response_model=ReceiptOut,
    responses=route_errors({
        404: f"{_DELETE_404} Or {_ORG_404}",
        409: "`source_deleting`: another request is deleting it.",
        410: "`source_deleted`: it was deleted already (its receipt says when).",
    }),
)  # fmt: skip
async def delete_knowledge_source(
    svc: ServicesDep,
    caller: OrganizationCaller,
    source_id: SourceIdPath,
    organization_id: Annotated[
        UUID | None, Query(description="The source's organization, for an operator; an organization key's own.")
    ] = None,
) -> dict[str, Any]:
    """Delete a source, every version of its URI: chunks of every model, statistics, objects; answers the receipt."""
    receipt = await knowledge_actions.delete(svc, caller, source_id, organization_id=organization_id)
    return receipt.as_json()
