"""The write-time check of a memory's subject ref: it must name a live row of the writer's organization.

`check_subject` resolves the one subject ref through `state.resolvers.resolve_refs` inside `scoped_db` for
the writer's organization, the same resolvers the read path's guard (`memory.reads`) uses, and refuses with
`memory_subject_not_found` when it resolves to nothing: a row of another organization, a deleted row, a row
that does not exist, or a kind no resolver owns. The refusal never says which, so an id reveals nothing
about another tenant. The read guard stays: a row deleted after the write, or a row written before this
check, is still dropped when read.

This module must never write, and never read outside the writer's organization.
"""

from __future__ import annotations

from uuid import UUID

from memory.errors import MemorySubjectNotFoundError
from state.db import Database
from state.refs import ResourceRef, ref_key
from state.resolvers import SUPPORTED_REF_KINDS, resolve_refs
from state.scoped import scoped_db

__all__ = ["check_subject"]


async def check_subject(db: Database, organization_id: UUID, subject: ResourceRef) -> None:
    """Refuse `subject` unless it resolves to a live row the organization may read."""
    if subject.kind in SUPPORTED_REF_KINDS:
        async with scoped_db(db, organization_id) as client:
            if ref_key(subject) in await resolve_refs(client, [subject]):
                return
    raise MemorySubjectNotFoundError(
        f"subject_refs.0 names no {subject.kind} of this organization (none, deleted, or another organization's)"
    )
