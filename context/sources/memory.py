"""The `memory` source: the live durable memories a subject may read, newest first, behind the subject guard.

It reads `agent.live_memories` on the service role for the subject's organization: organization scope,
plus the asking person's own user chain when the subject has a user and no trigger. An expired memory is
not in that view (migration 0086), so it never reaches a brief, even before the sweep tombstones it. The person's
`preference.*` rows stay in: the source cannot know whether the policy also enables `personal_memory`, and
the packer can. When it does, the `personal_memory` copy (same subject key, higher class) wins and this
copy is counted dropped, so one memory never appears twice; when it does not, the preference is here, so it
never disappears. A subject with no definition reads every definition of the organization: the one filter
this source (and `personal_memory`) drops. The order is `(created_at DESC, id DESC)`; `spec.limit`
caps the read, None reads 20, zero reads nothing. The subject guard (`memory.reads.guard_subjects`) then
drops a memory whose stored ref is malformed, names two subjects, names a kind no resolver owns, or does not
resolve for the organization, and nothing refills the drops.

Each item: kind `memory`, `subject_key` the stored key, `ref` the memory (`agent.memory`), `body_refs` its
subject ref, `recorded_at` its creation time. This module must never write prose or widen on a null user.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import ClassVar

from context.models import ContextItem, ContextKind, ContextRequest, ContextSourceSpec
from context.sources._base import DatabaseSource
from context.tokens import estimate_tokens
from memory.models import LiveMemory
from memory.reads import DEFAULT_MEMORY_LIMIT, GuardedMemory, guard_subjects, read_live_memories
from state.refs import ResourceRef

__all__ = ["MEMORY_REF_KIND", "GuardedMemorySource", "MemoryContextSource", "memory_items"]

MEMORY_REF_KIND = "agent.memory"
"""The ref kind of a memory revision in a brief; `memory.forget` takes its id."""


def memory_items(guarded: Sequence[GuardedMemory], *, source: str, kind: ContextKind) -> list[ContextItem]:
    """One structured item per guarded memory, in read order."""
    items: list[ContextItem] = []
    for entry in guarded:
        memory, subject = entry.memory, entry.subject
        title = memory.attribute if subject is None else f"{memory.attribute} of {subject.kind} {subject.id}"
        items.append(
            ContextItem(
                source=source,
                kind=kind,
                title=title,
                body=memory.text,
                subject_key=memory.subject_key,
                ref=ResourceRef(kind=MEMORY_REF_KIND, id=str(memory.id)),
                body_refs=[] if subject is None else [subject.as_resource_ref(with_label=False)],
                recorded_at=memory.created_at,
                tokens=estimate_tokens(memory.text),
            )
        )
    return items


class GuardedMemorySource(DatabaseSource):
    """Reads live memories for the subject with its `reader`, then keeps those that pass the subject guard."""

    kind: ContextKind
    """The item kind, equal to the source name."""
    reader: ClassVar[Callable[..., Awaitable[list[LiveMemory]]]]
    """Which live memories the subject reads: `read_live_memories` or `read_personal_memories`."""

    async def retrieve(self, request: ContextRequest, spec: ContextSourceSpec) -> list[ContextItem]:
        """The memories the reader returns for the subject that pass the subject guard, as items."""
        subject = request.subject
        rows = await self.reader(
            self._db,
            organization_id=subject.organization_id,
            definition_id=subject.definition_id,
            user_id=subject.user_id,
            trigger_id=subject.trigger_id,
            limit=DEFAULT_MEMORY_LIMIT if spec.limit is None else spec.limit,
        )
        if not rows:
            return []
        report = await guard_subjects(self._db, subject.organization_id, rows)
        return memory_items(report.kept, source=self.name, kind=self.kind)


class MemoryContextSource(GuardedMemorySource):
    """Reads live memories for the subject, newest first, and drops those whose subject does not resolve."""

    name = "memory"
    kind = "memory"
    reader = staticmethod(read_live_memories)
