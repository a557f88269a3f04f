"""Memory that can move: export an organization's or a person's chains as JSONL, import them elsewhere.

The three parts: `memory.transfer_format` (the line, the file's refusals), `memory.transfer_export` (the
lines of an organization, streamed) and `memory.transfer_import` (chains rebuilt in another organization,
with a receipt). This module names what the faces use, and a check they share. It must never write.
"""

from __future__ import annotations

from uuid import UUID

from memory.repository import QUERIES
from memory.transfer_export import EXPORT_MEDIA_TYPE, export_lines
from memory.transfer_format import (
    FORMAT,
    MAX_IMPORT_BYTES,
    VERSION,
    ImportChainError,
    ImportFormatError,
    ImportLineError,
    ImportTooLargeError,
    MemoryImportError,
)
from memory.transfer_import import REFUSAL_REASONS, ImportTargetError, import_memories
from state.db import Database
from state.errors import translated_db_errors

__all__ = [
    "EXPORT_MEDIA_TYPE",
    "FORMAT",
    "MAX_IMPORT_BYTES",
    "REFUSAL_REASONS",
    "VERSION",
    "ImportChainError",
    "ImportFormatError",
    "ImportLineError",
    "ImportTargetError",
    "ImportTooLargeError",
    "MemoryImportError",
    "export_lines",
    "import_memories",
    "is_member",
]


async def is_member(db: Database, organization_id: UUID, user_id: UUID) -> bool:
    """Whether the user is a member of the organization (a person's export names one of its own)."""
    with translated_db_errors():
        async with db.connection() as conn:
            return bool(await conn.fetchval(QUERIES["import_person"], organization_id, user_id))
