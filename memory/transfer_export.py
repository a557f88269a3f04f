"""Export an organization's (or one person's) memory as transfer lines (`memory.transfer_format`).

`export_lines` yields one JSON line per revision: every chain of the organization (with `user_id`, that
person's user-scope chains only), live, superseded and expired revisions and tombstones alike, chains in a
stable order (their root's creation, then its id) and each chain oldest first by its supersedes links. An
erased revision does not exist any more, so it is in no file. The lines stream from a server-side cursor in
one read-only transaction, so a large organization is never held in memory and the file is one snapshot.
A line is ASCII (every other character escaped by JSON), so no line splitter, however Unicode-aware (U+2028,
U+0085), cuts a memory text in two; the text decodes back byte for byte.

The caller checks the scope (`functions.actions.memory_transfer`); this module filters by the organization it
is given, explicitly, because the service role is not filtered by row security. It must never write.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any
from uuid import UUID

from memory.models import attribute_of, parse_stored_refs
from memory.repository import QUERIES
from memory.transfer_format import FORMAT, VERSION
from state.db import Database
from state.errors import translated_db_errors

__all__ = ["EXPORT_MEDIA_TYPE", "export_lines", "line_of"]

EXPORT_MEDIA_TYPE = "application/x-ndjson"
"""The media type of an export (one JSON document per line)."""
_PREFETCH = 500


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def line_of(row: Any) -> dict[str, Any]:
    """The transfer line of one `export_revisions` row."""
    stored = row["subject_refs"]
    if isinstance(stored, str):
        stored = json.loads(stored)
    refs = [ref.model_dump(exclude_none=True) for ref in parse_stored_refs(stored).refs]
    user = None if row["user_id"] is None else {"id": str(row["user_id"]), "email": row["user_email"]}
    return {
        "format": FORMAT,
        "version": VERSION,
        "id": str(row["id"]),
        "chain_id": str(row["root_id"]),
        "supersedes_id": None if row["supersedes_id"] is None else str(row["supersedes_id"]),
        "organization_id": str(row["organization_id"]),
        "definition": {"id": str(row["definition_id"]), "name": row["definition_name"]},
        "scope": row["scope"],
        "user": user,
        "attribute": attribute_of(row["subject_key"]),
        "subject_key": row["subject_key"],
        "subject_refs": refs,
        "text": row["text"],
        "created_at": _time(row["created_at"]),
        "expires_at": _time(row["expires_at"]),
        "forgotten_at": _time(row["forgotten_at"]),
    }


async def export_lines(db: Database, organization_id: UUID, *, user_id: UUID | None = None) -> AsyncIterator[str]:
    """Yield the organization's (or the person's) revisions as transfer lines, each ending with a newline."""
    with translated_db_errors():
        async with db.connection() as conn, conn.transaction(readonly=True, isolation="repeatable_read"):
            cursor = conn.cursor(QUERIES["export_revisions"], organization_id, user_id, prefetch=_PREFETCH)
            async for row in cursor:
                yield json.dumps(line_of(row), ensure_ascii=True, separators=(",", ":")) + "\n"
