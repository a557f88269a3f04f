"""The `personal_memory` source: the standing instructions of the person who asks.

It reads the asking person's user-scope `preference.*` live memories, newest first, `(created_at DESC,
id DESC)`, and they rank above application state. A subject with a definition reads that definition; a
subject with a user and no definition (a Front Door turn, where the person asks with no agent) reads that
person's preferences across the organization's definitions: the same single widening as `memory`, the
organization filter, the user chain rule and the subject guard all still applying. A subject with no user,
or with a trigger, reads nothing and runs no query. `memory` reads the same rows too; the packer keeps this
copy and counts that one dropped (same subject key, higher class), so one memory never appears twice.
`spec.limit` caps the read, None reads 20, zero reads nothing.

This module must never read another person's memory and never write prose.
"""

from __future__ import annotations

from pydantic import BaseModel

from context.models import ContextItem, ContextRequest, ContextSourceSpec
from context.options import EmptyOptions
from context.sources.memory import memory_items
from memory.reads import DEFAULT_MEMORY_LIMIT, guard_subjects, read_personal_memories
from state.db import Database

__all__ = ["PersonalMemoryContextSource"]


class PersonalMemoryContextSource:
    """Reads the asking person's preference memories in this definition, behind the subject guard."""

    name = "personal_memory"
    options_schema: type[BaseModel] = EmptyOptions

    def __init__(self, db: Database) -> None:
        self._db = db

    async def retrieve(self, request: ContextRequest, spec: ContextSourceSpec) -> list[ContextItem]:
        """The person's live preference memories that pass the subject guard, as `personal_memory` items."""
        limit = DEFAULT_MEMORY_LIMIT if spec.limit is None else spec.limit
        subject = request.subject
        rows = await read_personal_memories(
            self._db,
            organization_id=subject.organization_id,
            definition_id=subject.definition_id,
            user_id=subject.user_id,
            trigger_id=subject.trigger_id,
            limit=limit,
        )
        if not rows:
            return []
        report = await guard_subjects(self._db, subject.organization_id, rows)
        return memory_items(report.kept, source=self.name, kind="personal_memory")
