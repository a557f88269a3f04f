"""Export and import memory: the acts behind `/v1/memory/export`, `/v1/memory/imports`, the CLI and the console.

An organization key exports from and imports into its own organization only (403 `organization_forbidden`
for another, as every act); an operator names any existing one. A person's export names a member of the
organization (404 `user_not_found` otherwise, as for an id of another organization). The import embeds with
the importing organization's live model through the services' memory embedder, and its receipt records who
asked. This module must never write memory itself: `memory.transfer_import` does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from uuid import UUID

from functions._services import Services
from functions.actions.scope import Caller, check_organization, requester
from memory.errors import UserNotFoundError
from memory.transfer import MAX_IMPORT_BYTES, export_lines, import_memories, is_member
from state.db import Database
from state.receipts import Receipt

__all__ = ["export_memories", "import_file"]


async def export_memories(
    db: Database, caller: Caller, organization_id: UUID, *, user_id: UUID | None = None
) -> AsyncIterator[str]:
    """The organization's (or one person's) memory as transfer lines; the scope is checked before a line is read."""
    await check_organization(db, caller, organization_id)
    if user_id is not None and not await is_member(db, organization_id, user_id):
        raise UserNotFoundError(f"user {user_id} is not a member of this organization")
    return export_lines(db, organization_id, user_id=user_id)


async def import_file(
    services: Services,
    caller: Caller,
    organization_id: UUID,
    data: bytes,
    *,
    definition_id: UUID | None = None,
    user_id: UUID | None = None,
    max_bytes: int = MAX_IMPORT_BYTES,
) -> Receipt:
    """Import a transfer file into the organization; the receipt counts what was imported and refused."""
    await check_organization(services.db, caller, organization_id)
    return await import_memories(
        services.db, organization_id, data, requested_by=requester(caller), embed=services.memory.embed,
        definition_id=definition_id, user_id=user_id, max_bytes=max_bytes,
    )  # fmt: skip
