"""`/v1/receipts`: the receipts that deletions and erasures leave, read by id or listed newest first.

A receipt says what was asked (kind, organization, target, subject), by whom, when it started and ended, and
what left the layer: counts per table or store and the object keys removed, without file names. It holds no
content. An organization key names its organization (`organization_id`, as on every organization route) and
sees only that organization's receipts: another organization's receipt, or a platform source's, answers 404
`receipt_not_found` exactly as an unknown id does, so an id reveals nothing. An operator may name an erased
organization (its row gone, its erasure receipt complete) and reads its receipts. This module must never change a
receipt. The list pages by cursor (`functions.api._pages`), newest first.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict

from functions.actions.receipts import receipts_page, show_receipt
from functions.actions.scope import Caller
from functions.api._body import BodyRoute
from functions.api._deps import ServicesDep
from functions.api._http import ERROR_RESPONSES, ErrorEnvelope, route_errors
from functions.api._pages import CURSOR_ERRORS, SORT_ERRORS, CursorQuery, DirQuery, PageOut, limit_query, sort_query
from functions.api._params import NamedOrganization, ReceiptIdPath
from functions.api._scopes import organization_scope
from state.receipts import RECEIPT_SORTS, Receipt

__all__ = ["ReceiptList", "ReceiptOut", "receipt_out", "router"]

_ReceiptsCaller = Annotated[Caller, organization_scope(erased=True)]
"""Scope `organization`; an operator may also name an erased organization, whose receipts stay readable."""

router = APIRouter(prefix="/v1/receipts", tags=["receipts"], responses=ERROR_RESPONSES, route_class=BodyRoute)


class ReceiptOut(BaseModel):
    """One removal: what was asked, by whom, when, and what left the layer (never any content)."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    id: UUID
    """The receipt's id."""
    kind: Literal["source", "user", "organization", "memory_import"]
    """What was removed (one knowledge source, one person's data, one organization's), or `memory_import`."""
    organization_id: UUID | None
    """The organization the removal belongs to (null for a platform source)."""
    target_id: UUID
    """The source, user or organization removed."""
    subject: str | None
    """The person's subject ref whose organization memories went with a user (`crm.person:<id>`), or null."""
    requested_by: str
    """Who asked: `key:<id>` for an API key, `operator_token`, or `cli:<login>`."""
    status: Literal["running", "complete"]
    """`running` until every batch is done; a rerun of the same request resumes a running one."""
    counts: dict[str, int]
    """Rows or objects removed, per table or store (`agent.memories`, `objects`, ...)."""
    object_keys: list[str]
    """Object store keys deleted, each cut after its last `/` (no file name)."""
    versions: list[UUID]
    """For a source: every version the delete removed (the live row and a re-sync's new version)."""
    resumed: int
    """How many reruns picked this removal up after it was interrupted."""
    started_at: str
    """When the removal started (ISO 8601)."""
    finished_at: str | None
    """When it completed (ISO 8601), or null while running."""
    physical: dict[str, Any] = {}
    """What an organization erasure did to the disk after it completed: `rewritten` and `vacuumed` tables (each
    ANALYZEd), `statistics` (pg_statistic rewritten, or why not), `checkpoint` (true, or why not), `skipped`
    (table -> why), `at`; empty otherwise (docs/operations.md, "What an erasure leaves on disk")."""


class ReceiptList(PageOut):
    """A page of receipts, newest first."""

    items: list[ReceiptOut]
    """At most `limit` receipts."""
    receipts: list[ReceiptOut]
    """The same rows as `items` (the key this list answered before it paged), for older callers."""


def receipt_out(receipt: Receipt) -> ReceiptOut:
    """A core receipt as the HTTP answer."""
    return ReceiptOut.model_validate(receipt.as_json())


NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorEnvelope, "description": "`receipt_not_found`, or `organization_not_found`."}
}


@router.get("/{receipt_id}", responses=NOT_FOUND)
async def show(
    receipt_id: ReceiptIdPath,
    caller: _ReceiptsCaller,
    svc: ServicesDep,
    organization_id: NamedOrganization = None,
) -> ReceiptOut:
    """One receipt; 404 `receipt_not_found` for an unknown id or another organization's receipt."""
    return receipt_out(await show_receipt(svc, caller, receipt_id, organization_id=organization_id))


@router.get(
    "",
    responses={
        404: {"model": ErrorEnvelope, "description": "`organization_not_found`."},
        **route_errors({422: f"{CURSOR_ERRORS} {SORT_ERRORS}"}),
    },
)
async def list_all(
    caller: _ReceiptsCaller,
    svc: ServicesDep,
    organization_id: NamedOrganization = None,
    sort: Annotated[str | None, sort_query(sorted(RECEIPT_SORTS), "started")] = None,
    dir: DirQuery = None,
    cursor: CursorQuery = None,
    limit: Annotated[int, limit_query("receipts")] = 100,
) -> ReceiptList:
    """A page of receipts of one organization (an organization key: its own), or of all for an operator."""
    page = await receipts_page(
        svc.db, caller, organization_id=organization_id, sort=sort, direction=dir, cursor=cursor, limit=limit
    )
    rows = [receipt_out(r) for r in page.items]
    return ReceiptList(
        items=rows, receipts=rows, total=page.total, next_cursor=page.next_cursor, prev_cursor=page.prev_cursor
    )
