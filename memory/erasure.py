"""Erasing a person's memory: whole revision chains removed through the one audited database path, with a receipt.

What counts as a person's data in this layer (docs/decisions.md, erasure): every user-scope memory of the user
in their organization (every definition, every revision, tombstones included: text and `subject_refs` go with
the rows), and, when the request names the person's subject ref (`crm.person:<id>`), the organization-scope
memories whose subject is that ref. The rows the platform owns and this layer only reads (`public.users`, CRM
rows, conversation messages, `agent.runs`) are the platform's to erase.

`erase_user` checks the organization and the user, opens (or resumes) the `user` receipt, marks the person
erasing (`state.erasure_marks`: the memory writes naming the user or the subject are refused until the receipt
completes, which ends the mark), erases in bounded batches, each batch's counts added to the receipt in the
batch's own transaction, and completes the receipt with its disk step pending; then it reclaims the space the
erased rows held in the memory tables' files (`state.reclaim`: the tables the receipt counts, `agent.memories`
and its index tables, rewritten when small, and `pg_statistic`), which ends the step. A repeat of a complete
erasure that finds nothing new answers the same receipt, after running its disk step if a kill left it
pending; a rerun of an interrupted one resumes it. `erase_organization_memories` is the memory part of an
organization erasure, counted into a receipt its caller holds. Every removal goes through
`agent.erase_memory_chains` (migration 0083): this module must never delete a revision any other way, never
tombstone instead of erasing, and never write text into a receipt. Each erasure is one `delete_memory` span
(`state.telemetry`) naming its receipt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from uuid import UUID

from memory.errors import InvalidErasureSubjectError, UserNotFoundError
from state import telemetry
from state.brief_receipts import erase_person_receipts
from state.db import Connection, Database
from state.erasure_marks import clear_person_mark, mark_person_erasing
from state.errors import translated_db_errors
from state.organizations import require_organization
from state.queries import load_queries
from state.receipts import Receipt, add_to_receipt, begin_receipt, finish_receipt, latest_receipt
from state.reclaim import finish_disk_step, mark_disk_step_pending
from state.refs import ResourceRef, normalize_refs

__all__ = [
    "DEFAULT_USER_ERASE_BATCH",
    "INDEX_COUNT_KEYS",
    "MAX_ERASURE_BATCH",
    "MEMORY_COUNT_KEY",
    "PERSON_KINDS",
    "ErasedBatch",
    "ErasureScope",
    "erase_memory_batch",
    "erase_organization_memories",
    "erase_user",
    "parse_erasure_subject",
]

DEFAULT_USER_ERASE_BATCH = 1000
"""Memory revisions erased per transaction by a person's (or an organization's memory) erasure."""

QUERIES = load_queries(__file__)

ErasureScope = Literal["user", "subject", "organization"]
"""Which chains a batch takes: a user's user-scope chains, the organization chains about a subject, or all."""
PERSON_KINDS = frozenset({"crm.person", "intelligence.person"})
"""The entity kinds that name a person, the only subjects an erasure of a person takes."""
MEMORY_COUNT_KEY = "agent.memories"
"""The receipt's count key for the revisions removed."""
INDEX_COUNT_KEYS = ("agent.memory_postings", "agent.memory_embeddings", "agent.brief_citations")
"""The receipt's count keys for the relevance index rows (migrations/0101) and the brief citations (0122) that
go with the revisions."""
MAX_ERASURE_BATCH = 100_000
"""The largest batch (in chains) the database function accepts."""


@dataclass(frozen=True, slots=True)
class ErasedBatch:
    """What one batch removed."""

    chains: int
    """Whole chains removed."""
    revisions: int
    """Rows removed: every revision of those chains, tombstones included."""


def parse_erasure_subject(subject: str, *, field: str = "subject") -> ResourceRef:
    """A person's subject `<kind>:<id>` as a ref, or `InvalidErasureSubjectError` naming `field`."""
    if not isinstance(subject, str):
        raise InvalidErasureSubjectError(field, "is not text")
    kind, sep, ident = subject.partition(":")
    if not sep:
        raise InvalidErasureSubjectError(field, "is not <kind>:<id>, e.g. crm.person:<uuid>")
    parsed = normalize_refs([{"kind": kind, "id": ident}], source="erasure")
    if parsed.dropped:
        raise InvalidErasureSubjectError(field, parsed.dropped[0].reason)
    ref = parsed.refs[0]
    if ref.kind not in PERSON_KINDS:
        raise InvalidErasureSubjectError(field, f"names a {ref.kind}, not a person ({', '.join(sorted(PERSON_KINDS))})")
    return ref


def _check_batch_size(batch_size: int) -> None:
    if not 1 <= batch_size <= MAX_ERASURE_BATCH:
        raise ValueError(f"batch_size is 1 to {MAX_ERASURE_BATCH}")


async def erase_memory_batch(
    conn: Connection,
    scope: ErasureScope,
    organization_id: UUID,
    *,
    user_id: UUID | None = None,
    subject: str | None = None,
    limit: int = 1000,
) -> ErasedBatch:
    """Erase at most `limit` whole chains of one scope through `agent.erase_memory_chains`; run it in a transaction."""
    with translated_db_errors():
        row = await conn.fetchrow(QUERIES["erase_memory_chains"], scope, organization_id, user_id, subject, limit)
    assert row is not None  # the function answers one row
    return ErasedBatch(chains=int(row["chains"]), revisions=int(row["revisions"]))


async def _index_rows(
    conn: Connection, scope: ErasureScope, organization_id: UUID, *, user_id: UUID | None, subject: str | None
) -> dict[str, int]:
    """The relevance index rows (postings, vectors) the scope's revisions hold: the cascade removes them."""
    with translated_db_errors():
        row = await conn.fetchrow(QUERIES["erasable_index_rows"], scope, organization_id, user_id, subject)
    assert row is not None
    return dict(zip(INDEX_COUNT_KEYS, (int(row["postings"]), int(row["vectors"]), int(row["citations"])), strict=True))


async def _erasable(
    conn: Connection, scope: ErasureScope, organization_id: UUID, *, user_id: UUID | None, subject: str | None
) -> bool:
    with translated_db_errors():
        return bool(await conn.fetchval(QUERIES["erasable_memory_exists"], scope, organization_id, user_id, subject))


async def _erase_scope(
    db: Database,
    receipt_id: UUID,
    scope: ErasureScope,
    organization_id: UUID,
    *,
    user_id: UUID | None = None,
    subject: str | None = None,
    batch_size: int,
) -> None:
    """Erase every chain of one scope, batch by batch, each batch counted into the receipt in its transaction."""
    while True:
        async with db.connection() as conn, conn.transaction():
            before = await _index_rows(conn, scope, organization_id, user_id=user_id, subject=subject)
            batch = await erase_memory_batch(
                conn, scope, organization_id, user_id=user_id, subject=subject, limit=batch_size
            )
            after = await _index_rows(conn, scope, organization_id, user_id=user_id, subject=subject)
            cascaded = {table: before[table] - after[table] for table in INDEX_COUNT_KEYS}
            await add_to_receipt(conn, receipt_id, {MEMORY_COUNT_KEY: batch.revisions, **cascaded})
        if batch.chains < batch_size:  # the batch took every chain left in the scope
            return


async def _nothing_left(conn: Connection, organization_id: UUID, user_id: UUID, subject: str | None) -> bool:
    if await _erasable(conn, "user", organization_id, user_id=user_id, subject=None):
        return False
    return subject is None or not await _erasable(conn, "subject", organization_id, user_id=None, subject=subject)


async def erase_user(
    db: Database,
    organization_id: UUID,
    user_id: UUID,
    *,
    subject: str | None = None,
    requested_by: str,
    batch_size: int = DEFAULT_USER_ERASE_BATCH,
) -> Receipt:
    """Erase a person's memories (and, with `subject`, the organization memories about them); answer the receipt.

    Unknown organization: `OrganizationNotFoundError`; a user not in it: `UserNotFoundError`; a malformed
    subject: `InvalidErasureSubjectError` naming `subject`. Each refuses before anything changes.
    """
    attributes: dict[str, telemetry.AttributeValue] = {"ac.memory.delete": "erase_user", "ac.user.id": str(user_id)}
    with telemetry.memory_operation("delete_memory", organization_id, attributes) as span:
        receipt = await _erase_user(
            db, organization_id, user_id, subject=subject, requested_by=requested_by, batch_size=batch_size
        )
        span.set_attribute("ac.receipt.id", str(receipt.id))
        return receipt


async def _erase_user(
    db: Database,
    organization_id: UUID,
    user_id: UUID,
    *,
    subject: str | None,
    requested_by: str,
    batch_size: int,
) -> Receipt:
    ref = None if subject is None else parse_erasure_subject(subject)
    subject_text = "" if ref is None else f"{ref.kind}:{ref.id}"
    subject_arg = subject_text or None
    if not requested_by.strip():
        raise ValueError("requested_by names who asks for the erasure")
    _check_batch_size(batch_size)
    await require_organization(db, organization_id)
    async with db.connection() as conn:
        latest = await latest_receipt(
            conn, "user", organization_id=organization_id, target_id=user_id, subject=subject_text
        )
    if latest is not None:  # a run killed after its receipt completed left its disk step to do
        latest = await finish_disk_step(db, latest)
    async with db.connection() as conn:
        with translated_db_errors():
            member = bool(await conn.fetchval(QUERIES["user_in_organization"], organization_id, user_id))
        done = latest is not None and latest.status == "complete"
        if done and await _nothing_left(conn, organization_id, user_id, subject_arg):
            assert latest is not None
            return latest  # the same request, complete, and nothing new: the same receipt
        if not member:
            raise UserNotFoundError(f"no user {user_id} in organization {organization_id}")
        receipt = await begin_receipt(
            conn,
            "user",
            organization_id=organization_id,
            target_id=user_id,
            requested_by=requested_by,
            subject=subject_text,
        )
        # From here every write naming the person is refused, and the writes in flight have ended.
        await mark_person_erasing(conn, organization_id, user_id, subject=subject_text, receipt_id=receipt.id)
    await _erase_scope(db, receipt.id, "user", organization_id, user_id=user_id, batch_size=batch_size)
    if subject_arg is not None:
        await _erase_scope(db, receipt.id, "subject", organization_id, subject=subject_arg, batch_size=batch_size)
    async with db.connection() as conn, conn.transaction():  # the brief receipts of the runs they started
        await add_to_receipt(conn, receipt.id, await erase_person_receipts(conn, organization_id, user_id))
    async with db.connection() as conn, conn.transaction():
        await clear_person_mark(conn, receipt.id)
        complete = await finish_receipt(conn, receipt.id)
        await mark_disk_step_pending(conn, complete.id)
    return await finish_disk_step(db, complete)


async def erase_organization_memories(
    db: Database, organization_id: UUID, *, receipt_id: UUID, batch_size: int = DEFAULT_USER_ERASE_BATCH
) -> None:
    """Erase every memory revision of the organization in batches, each batch's counts added to `receipt_id`."""
    _check_batch_size(batch_size)
    attributes: dict[str, telemetry.AttributeValue] = {
        "ac.memory.delete": "erase_organization",
        "ac.receipt.id": str(receipt_id),
    }
    with telemetry.memory_operation("delete_memory", organization_id, attributes):
        await _erase_scope(db, receipt_id, "organization", organization_id, batch_size=batch_size)
