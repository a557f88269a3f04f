"""The read path of durable memory: which live memories a subject reads, and the subject guard.

Two readers, one user chain rule and one widening:

* `personal` rows are the asking person's user-scope `preference.*` memories. They need a user and no
  trigger; a subject with a definition reads that definition, and a subject with none (a Front Door turn)
  reads the person's preferences across the organization's definitions.
* `memory` reads organization scope, plus the person's own user chain (preferences included) when the
  subject has a user and no trigger; a trigger run reads organization scope alone.

A subject with no definition drops the definition filter, and nothing else, in both reads. A preference
therefore reaches both sources when a policy enables both; the packer keeps the `personal_memory` copy (the
same subject key in a higher class) and counts the `memory` copy dropped, so one memory never appears twice,
and a policy without `personal_memory` still shows it under memory, so it never disappears.

Both read `agent.live_memories` on the service role with the organization named explicitly, newest first,
`(created_at DESC, id DESC)`; `read_relevant_memories` reads the same rows of either, ranked against a
question instead (BM25 and the live model's vectors, migration 0101, bounded by 0104: a common lexeme read to its
depth in impact order; from 2,000 memories the vectors through the model's HNSW index, 0110), unranked rows
after, newest first.
The view holds no expired revision (`expires_at <= now()`, migration 0086),
so an expired memory is never read, before or after the expiry sweep closes its chain. The subject guard
then parses each stored `subject_refs` tolerantly, drops a malformed or two-element memory (logged),
drops a ref of a kind no resolver owns, drops a ref whose id is not canonical UUID text (a row written
before the write path refused one: an upper-case or padded id is a look-alike key, so its memory is
dropped and logged, never served and never the page), and resolves the distinct refs through
`state.resolvers.resolve_refs` inside `scoped_db` (one query per kind per batch of 100), dropping a memory
whose ref does not resolve for the organization. No second read refills the drops.

This module must never widen on a null user or trigger, never read another person's chain, and never read
one query per memory.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from uuid import UUID

from memory import repository as repo
from memory.models import LiveMemory, MemorySubjectRef, RankedMemory, RelevanceQuery, parse_stored_refs
from state.db import Database
from state.ids import is_canonical_uuid
from state.refs import ResourceRef
from state.resolvers import SUPPORTED_REF_KINDS, resolve_refs
from state.scoped import scoped_db

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "GuardReport",
    "GuardedMemory",
    "count_live_memories",
    "guard_subjects",
    "read_live_memories",
    "read_personal_memories",
    "read_relevant_memories",
    "reads_personal_memory",
    "reads_user_chain",
]

_log = logging.getLogger(__name__)

DEFAULT_MEMORY_LIMIT = 20
"""The read cap when `spec.limit` is None: memory has no entity list to bound it."""


def reads_user_chain(user_id: UUID | None, trigger_id: UUID | None) -> bool:
    """A subject reads its person's user-scope memories only when it has a user and no trigger."""
    return user_id is not None and trigger_id is None


def reads_personal_memory(user_id: UUID | None, trigger_id: UUID | None) -> bool:
    """`personal_memory` reads only for a person: a user and no trigger (the definition may be None)."""
    return reads_user_chain(user_id, trigger_id)


async def read_live_memories(
    db: Database,
    *,
    organization_id: UUID,
    definition_id: UUID | None,
    user_id: UUID | None,
    trigger_id: UUID | None,
    limit: int,
) -> list[LiveMemory]:
    """The `memory` source rows: organization scope and the person's own chain, preferences included."""
    if limit <= 0:
        return []
    chain_user = user_id if reads_user_chain(user_id, trigger_id) else None
    return await repo.fetch_live_memories(
        db, organization_id=organization_id, definition_id=definition_id, user_id=chain_user, limit=limit
    )


async def count_live_memories(
    db: Database,
    *,
    organization_id: UUID,
    definition_id: UUID | None,
    user_id: UUID | None,
    trigger_id: UUID | None,
) -> int:
    """How many rows `read_live_memories` answers without its limit (the subject rules are the same)."""
    chain_user = user_id if reads_user_chain(user_id, trigger_id) else None
    async with db.connection() as conn:
        return await repo.count_live_memories(
            conn, organization_id=organization_id, definition_id=definition_id, user_id=chain_user
        )


async def read_personal_memories(
    db: Database,
    *,
    organization_id: UUID,
    definition_id: UUID | None,
    user_id: UUID | None,
    trigger_id: UUID | None,
    limit: int,
) -> list[LiveMemory]:
    """The `personal_memory` source rows; none, with no query, for a subject with no person or a trigger."""
    if limit <= 0 or not reads_personal_memory(user_id, trigger_id):
        return []
    assert user_id is not None
    return await repo.fetch_personal_memories(
        db, organization_id=organization_id, definition_id=definition_id, user_id=user_id, limit=limit
    )


async def read_relevant_memories(
    db: Database,
    *,
    organization_id: UUID,
    definition_id: UUID | None,
    user_id: UUID | None,
    trigger_id: UUID | None,
    limit: int,
    query: RelevanceQuery,
    personal: bool,
    beyond: int = 0,
) -> list[RankedMemory]:
    """Either source's rows (`personal` picks which) ranked by relevance; `beyond` more rows past the limit.

    The same subject rules, filters and widening as `read_live_memories` / `read_personal_memories`; only
    the order differs. The candidates each half reads follow `limit` alone, so asking for rows `beyond` it
    (explain mode) never changes the first `limit`.
    """
    if limit <= 0:
        return []
    if personal and not reads_personal_memory(user_id, trigger_id):
        return []
    chain_user = user_id if reads_user_chain(user_id, trigger_id) else None
    return await repo.fetch_relevant_memories(
        db,
        organization_id=organization_id,
        definition_id=definition_id,
        user_id=chain_user,
        limit=limit + max(beyond, 0),
        candidates=max(limit * query.candidates_per_limit, limit),
        personal=personal,
        query=query,
    )


@dataclass(frozen=True)
class GuardedMemory:
    """A memory that passed the subject guard, with its one subject ref (None when it names no row)."""

    memory: LiveMemory
    """The live row."""
    subject: MemorySubjectRef | None
    """The resolved subject, or None for a memory about its scope owner."""


@dataclass
class GuardReport:
    """What the subject guard kept, in read order, and how many memories it dropped for each reason."""

    kept: list[GuardedMemory] = field(default_factory=list)
    """The memories that reach the source's items."""
    malformed: int = 0
    """Dropped: a stored element (or the value) is not a well-formed subject ref."""
    two_refs: int = 0
    """Dropped: the stored array holds more than one element."""
    unowned_kind: int = 0
    """Dropped: the ref names a kind no resolver owns."""
    non_canonical: int = 0
    """Dropped: the ref's id is not canonical UUID text (a look-alike of a row's key)."""
    unresolved: int = 0
    """Dropped: the ref names another tenant's row, a deleted row or a row that never existed."""

    @property
    def dropped(self) -> int:
        """Every memory the guard dropped."""
        return self.malformed + self.two_refs + self.unowned_kind + self.non_canonical + self.unresolved


async def guard_subjects(db: Database, organization_id: UUID, memories: list[LiveMemory]) -> GuardReport:
    """Keep the memories whose subject ref resolves for the organization (or that name none)."""
    report = GuardReport()
    pending: list[tuple[LiveMemory, MemorySubjectRef | None]] = []
    wanted: list[ResourceRef] = []
    for memory in memories:
        parsed = parse_stored_refs(memory.subject_refs)
        if parsed.malformed:
            report.malformed += 1
            _log.warning("memory %s dropped: %d malformed subject ref element(s)", memory.id, parsed.malformed)
            continue
        if len(parsed.refs) > 1:
            report.two_refs += 1
            _log.warning("memory %s dropped: it names %d subjects, and V1 reads one", memory.id, len(parsed.refs))
            continue
        subject = parsed.refs[0] if parsed.refs else None
        if subject is not None:
            if subject.kind not in SUPPORTED_REF_KINDS:
                report.unowned_kind += 1
                continue
            if not is_canonical_uuid(subject.id):
                report.non_canonical += 1
                _log.warning("memory %s dropped: its subject ref id is not a canonical UUID", memory.id)
                continue
            wanted.append(subject.as_resource_ref(with_label=False))
        pending.append((memory, subject))
    resolved: set[tuple[str, str]] = set()
    if wanted:
        async with scoped_db(db, organization_id) as client:
            resolved = set(await resolve_refs(client, wanted))
    for memory, subject in pending:
        if subject is not None and (subject.kind, subject.id) not in resolved:
            report.unresolved += 1
            continue
        report.kept.append(GuardedMemory(memory=memory, subject=subject))
    return report
