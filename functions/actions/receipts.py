"""Read removal receipts as a caller may: its own organization's, or any for an operator.

Another organization's receipt (or a platform source's, for an organization key) answers 404
`receipt_not_found` exactly as an unknown id does, so an id reveals nothing. This module must never
change a receipt.
"""

from __future__ import annotations

from uuid import UUID

from functions._services import Services
from functions.actions.scope import Caller
from state.db import Database
from state.errors import ReceiptNotFoundError
from state.paging import Page
from state.receipts import Receipt, get_receipt, page_receipts

__all__ = ["receipts_page", "show_receipt"]


async def show_receipt(
    services: Services, caller: Caller, receipt_id: UUID, *, organization_id: UUID | None = None
) -> Receipt:
    """One receipt of the caller's organization (an operator: of `organization_id`, or any when it names none)."""
    receipt = await get_receipt(services.db, receipt_id)
    scope = caller.organization_id or organization_id
    if scope is not None and receipt.organization_id != scope:
        raise ReceiptNotFoundError(f"no removal receipt has id {receipt_id}")
    return receipt


async def receipts_page(
    db: Database,
    caller: Caller,
    *,
    organization_id: UUID | None = None,
    sort: str | None = None,
    direction: str | None = None,
    cursor: str | None = None,
    limit: int = 100,
) -> Page[Receipt]:
    """A page of receipts, newest first unless sorted: the caller's organization's (an operator: any or all)."""
    scope = caller.organization_id or organization_id
    return await page_receipts(db, organization_id=scope, sort=sort, direction=direction, cursor=cursor, limit=limit)
