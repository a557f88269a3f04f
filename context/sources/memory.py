"""The `memory` source: the live durable memories a subject may read, newest first or by relevance, guarded.

It reads `agent.live_memories` on the service role for the subject's organization: organization scope,
plus the asking person's own user chain when the subject has a user and no trigger. An expired memory is
not in that view (migration 0086), so it never reaches a brief, even before the sweep tombstones it. The person's
`preference.*` rows stay in: the source cannot know whether the policy also enables `personal_memory`, and
the packer can. When it does, the `personal_memory` copy (same subject key, higher class) wins and this
copy is counted dropped, so one memory never appears twice; when it does not, the preference is here, so it
never disappears. A subject with no definition reads every definition of the organization: the one filter
this source (and `personal_memory`) drops. The order is the option `order`: `recency` (the default, the
spec's V1) is `(created_at DESC, id DESC)`; `relevance` ranks the same rows against the question by
knowledge's hybrid scoring (`memory.reads.read_relevant_memories`, with `memory_vectors`'s settings).
`spec.limit` caps the read, None reads 20, zero reads nothing. The subject guard
(`memory.reads.guard_subjects`) then drops a memory whose stored ref is malformed, names two subjects,
names a kind no resolver owns, or does not resolve for the organization, and nothing refills the drops.
In explain mode the next `EXPLAIN_BEYOND_LIMIT` memories in the same order that pass the guard are named
as cut (`beyond_limit`).

Each item: kind `memory`, `subject_key` the stored key, `ref` the memory (`agent.memory`), `body_refs` its
subject ref, `recorded_at` its creation time. Each read is one `search_memory` span (`state.telemetry`) with
the limit and the count it answered; the question joins it only when the operator allows text in spans.
This module must never write prose or widen on a null user.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar

from context.models import ContextItem, ContextKind, ContextRequest, ContextSourceSpec, CutCandidate
from context.options import MemoryOptions
from context.sources._base import DatabaseSource
from context.sources.memory_vectors import relevance_query
from context.tokens import estimate_tokens
from knowledge.embedding.registry import EmbedderLookup, get_embedder
from memory.models import LiveMemory
from memory.reads import (
    DEFAULT_MEMORY_LIMIT,
    GuardedMemory,
    guard_subjects,
    read_live_memories,
    read_relevant_memories,
    reads_personal_memory,
)
from state import telemetry
from state.db import Database
from state.refs import ResourceRef

__all__ = ["EXPLAIN_BEYOND_LIMIT", "MEMORY_REF_KIND", "GuardedMemorySource", "MemoryContextSource", "memory_items"]

EXPLAIN_BEYOND_LIMIT = 10
"""How many memories past the count limit explain mode reads and names (rule `beyond_limit`)."""

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
    """Which live memories the subject reads by recency: `read_live_memories` or `read_personal_memories`."""
    personal: ClassVar[bool] = False
    """Which rows the relevance read ranks: the `memory` source's (False) or `personal_memory`'s (True)."""
    options_schema = MemoryOptions

    def __init__(self, db: Database, embedders: EmbedderLookup = get_embedder) -> None:
        super().__init__(db)
        self._embedders = embedders

    async def retrieve(self, request: ContextRequest, spec: ContextSourceSpec) -> list[ContextItem]:
        """The memories the reader returns for the subject that pass the subject guard, as items."""
        items, _ = await self._read(request, spec, beyond=0)
        return items

    async def retrieve_explained(
        self, request: ContextRequest, spec: ContextSourceSpec
    ) -> tuple[list[ContextItem], list[CutCandidate]]:
        """The same items as `retrieve`, and the next memories in the read's order that the limit cut."""
        return await self._read(request, spec, beyond=EXPLAIN_BEYOND_LIMIT)

    async def _read(
        self, request: ContextRequest, spec: ContextSourceSpec, *, beyond: int
    ) -> tuple[list[ContextItem], list[CutCandidate]]:
        limit = DEFAULT_MEMORY_LIMIT if spec.limit is None else spec.limit
        if limit <= 0:
            return [], []
        attributes: dict[str, telemetry.AttributeValue] = {
            telemetry.RETRIEVAL_TOP_K: limit,
            "ac.context.source": self.name,
            "ac.memory.order": _order_word(spec),
        }
        with telemetry.memory_operation("search_memory", request.subject.organization_id, attributes) as span:
            telemetry.set_text(span, telemetry.MEMORY_QUERY, request.query)
            items, cut = await self._guarded_read(request, spec, limit=limit, beyond=beyond)
            span.set_attribute(telemetry.MEMORY_RESULT_COUNT, len(items))
            return items, cut

    async def _guarded_read(
        self, request: ContextRequest, spec: ContextSourceSpec, *, limit: int, beyond: int
    ) -> tuple[list[ContextItem], list[CutCandidate]]:
        subject = request.subject
        where: dict[str, Any] = {
            "organization_id": subject.organization_id,
            "definition_id": subject.definition_id,
            "user_id": subject.user_id,
            "trigger_id": subject.trigger_id,
        }
        ranked: list[tuple[LiveMemory, float | None]]
        if MemoryOptions.model_validate(spec.options).order == "relevance":
            if self.personal and not reads_personal_memory(subject.user_id, subject.trigger_id):
                return [], []
            query = await relevance_query(self._db, subject.organization_id, request.query, self._embedders)
            read = await read_relevant_memories(
                self._db, **where, limit=limit, query=query, personal=self.personal, beyond=beyond
            )
            ranked = [(r.memory, r.score) for r in read]
        else:
            ranked = [(row, None) for row in await self.reader(self._db, **where, limit=limit + beyond)]
        if not ranked:
            return [], []
        report = await guard_subjects(self._db, subject.organization_id, [row for row, _ in ranked])
        place = {row.id: (n, score) for n, (row, score) in enumerate(ranked, start=1)}
        kept = [g for g in report.kept if place[g.memory.id][0] <= limit]
        past = [g for g in report.kept if place[g.memory.id][0] > limit]
        cut = [
            CutCandidate(
                source=self.name,
                kind=item.kind,
                ref=item.ref,
                title=item.title,
                tokens=item.tokens,
                rank=place[entry.memory.id][0],
                score=place[entry.memory.id][1],
                rule="beyond_limit",
                message=f"ranked {place[entry.memory.id][0]} by {_order_word(spec)}, past the limit of {limit}",
            )
            for entry, item in zip(past, memory_items(past, source=self.name, kind=self.kind), strict=True)
        ]
        return memory_items(kept, source=self.name, kind=self.kind), cut


def _order_word(spec: ContextSourceSpec) -> str:
    return "relevance" if MemoryOptions.model_validate(spec.options).order == "relevance" else "recency"


class MemoryContextSource(GuardedMemorySource):
    """Reads live memories for the subject, newest first, and drops those whose subject does not resolve."""

    name = "memory"
    kind = "memory"
    reader = staticmethod(read_live_memories)
