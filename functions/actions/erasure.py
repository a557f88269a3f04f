"""Erase a person's memories, or an organization: the acts behind `/v1/erasures` and the console's erase pages.

A person's erasure is `memory.erasure.erase_user` (an organization key erases a person of its own
organization only); an organization's is `functions.organization_erasure.erase_organization` (operator
only). Each answers its receipt, recording who asked; a repeat of a complete one answers the same receipt,
an interrupted one resumes. This module must never erase anything itself.
"""

from __future__ import annotations

from uuid import UUID

from functions.actions.scope import Caller, forbidden, requester, require_operator
from functions.organization_erasure import DEFAULT_ERASE_BATCH
from functions.organization_erasure import erase_organization as erase_organization_core
from knowledge.documents.objects import ObjectStore
from memory.erasure import DEFAULT_USER_ERASE_BATCH, erase_user
from state.db import Database
from state.receipts import Receipt

__all__ = ["erase_organization", "erase_person"]


async def erase_person(
    db: Database,
    caller: Caller,
    organization_id: UUID,
    user_id: UUID,
    *,
    subject: str | None,
    batch_size: int = DEFAULT_USER_ERASE_BATCH,
) -> Receipt:
    """Erase every revision of the user's memories (and, with `subject`, the organization memories about them)."""
    if not caller.operator and organization_id != caller.organization_id:
        raise forbidden()
    return await erase_user(
        db, organization_id, user_id, subject=subject, requested_by=requester(caller), batch_size=batch_size
    )


async def erase_organization(
    db: Database,
    store: ObjectStore,
    caller: Caller,
    organization_id: UUID,
    *,
    batch_size: int = DEFAULT_ERASE_BATCH,
) -> Receipt:
    """Erase an organization (operator only); a repeat answers the same receipt, an interrupted one resumes."""
    require_operator(caller)
    return await erase_organization_core(
        db, store, organization_id, requested_by=requester(caller), batch_size=batch_size
    )
