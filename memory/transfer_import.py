"""Import a memory transfer file into an organization: chains rebuilt exactly, with new ids, under one receipt.

The file is read whole first (`memory.transfer_format.parse_transfer`): one bad line refuses it, naming the
line and a code, and nothing is written. Then each chain is resolved in the importing organization:

- its definition by name (the organization's own agent definition before a platform one), or every chain
  under the one `definition_id` the caller names;
- the person of a user-scope chain by email among the organization's members (without regard to case), or
  every user-scope chain to the one `user_id` the caller names;
- its subject ref by the rule a remember applies (`memory.subjects.check_subject`): a ref that names no live
  row of this organization is refused, never written;
- a chain whose first revision this organization imported before (`agent.memories.imported_from`, unique per
  organization) is skipped, so the same file imported twice writes nothing new; a chain whose key already
  has a chain here is refused (an import never appends to a chain it did not write).

A refused or skipped chain is counted by reason on the receipt (kind `memory_import`, no text). The accepted
chains are written in one transaction that first passes the erasure guard (an organization being erased
refuses the import; a chain naming a person being erased is refused): each revision appended after the
previous one's new id, so order, supersedes links, heads and tombstones are the file's. A revision keeps its
`created_at`, `expires_at` and `forgotten_at`: they are history, and the table's append-only rules hold (an
import inserts, never rewrites). An already expired chain is imported as it was, and stays unread as it was.
No run wrote an imported revision (`proposed_by_run_id` is null). Each live head's text is embedded with the
importing organization's live model (the service's embedder) before the transaction; the file carries no
vector. This module must never update or delete a revision, and never write a chain it refused.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID, uuid4

import asyncpg

from memory import repository as repo
from memory.errors import MemorySubjectNotFoundError
from memory.subjects import check_subject
from memory.transfer_format import MAX_IMPORT_BYTES, ImportChain, MemoryImportError, parse_transfer
from memory.vectors import EmbeddedTexts, MemoryEmbedder, embed_texts, store_vectors
from state.db import Connection, Database
from state.erasure_marks import guard_writes
from state.errors import PersonErasingError, translated_db_errors
from state.ids import entity_ref_problem
from state.organizations import require_organization
from state.receipts import Receipt, add_to_receipt, begin_receipt, finish_receipt
from state.refs import ResourceRef, make_subject_key

__all__ = [
    "REFUSAL_REASONS",
    "ImportTargetError",
    "import_memories",
]

REFUSAL_REASONS = (
    "definition_not_found",
    "person_not_found",
    "subject_not_found",
    "person_erasing",
    "chain_exists",
)
"""Why a chain is refused, as the receipt counts it (`chains_refused_<reason>`, `revisions_refused_<reason>`)."""
_EMBED_BATCH = 256


class ImportTargetError(MemoryImportError):
    """The definition or person an import was told to write under is not one of the organization's."""

    code = "memory_import_target_invalid"


@dataclass(frozen=True)
class _Planned:
    chain: ImportChain
    definition_id: UUID
    user_id: UUID | None
    owner_id: UUID
    subject_key: str
    subject: str | None


async def _definitions(conn: Connection, organization_id: UUID, names: Sequence[str]) -> dict[str, UUID]:
    found: dict[str, UUID] = {}
    for row in await conn.fetch(repo.QUERIES["import_definitions"], organization_id, list(names)):
        found.setdefault(row["name"], row["id"])  # the organization's own before a platform one
    return found


async def _people(conn: Connection, organization_id: UUID, emails: Sequence[str]) -> dict[str, UUID]:
    rows = await conn.fetch(repo.QUERIES["import_people"], organization_id, list(emails))
    by_email: dict[str, list[UUID]] = {}
    for row in rows:
        by_email.setdefault(row["email"], []).append(row["id"])
    return {email: ids[0] for email, ids in by_email.items() if len(ids) == 1}  # two members: no one is guessed


def _count(counts: dict[str, int], outcome: str, chain: ImportChain) -> None:
    counts[f"chains_{outcome}"] = counts.get(f"chains_{outcome}", 0) + 1
    counts[f"revisions_{outcome}"] = counts.get(f"revisions_{outcome}", 0) + len(chain.lines)


async def _plan(
    db: Database,
    organization_id: UUID,
    chains: list[ImportChain],
    counts: dict[str, int],
    *,
    definition_id: UUID | None,
    user_id: UUID | None,
) -> list[_Planned]:
    async with db.connection() as conn:
        if definition_id is not None:
            if await conn.fetchrow(repo.QUERIES["import_definition"], organization_id, definition_id) is None:
                raise ImportTargetError(f"definition {definition_id} is no agent definition of this organization")
            definitions: dict[str, UUID] = {}
        else:
            definitions = await _definitions(conn, organization_id, sorted({c.root.definition.name for c in chains}))
        if user_id is not None:
            if not await conn.fetchval(repo.QUERIES["import_person"], organization_id, user_id):
                raise ImportTargetError(f"user {user_id} is not a member of this organization")
            people: dict[str, UUID] = {}
        else:
            emails = sorted({c.root.user.email.lower() for c in chains if c.root.user and c.root.user.email})
            people = await _people(conn, organization_id, emails)
        imported = {
            r["source_id"]
            for r in await conn.fetch(repo.QUERIES["imported_sources"], organization_id, [c.root.id for c in chains])
        }
    subjects: dict[tuple[str, str], bool] = {}
    planned: list[_Planned] = []
    for chain in chains:
        root = chain.root
        if root.id in imported:
            _count(counts, "already_imported", chain)
            continue
        target_definition = definition_id or definitions.get(root.definition.name)
        if target_definition is None:
            _count(counts, "refused_definition_not_found", chain)
            continue
        target_user: UUID | None = None
        if root.scope == "user":
            email = root.user.email.lower() if root.user and root.user.email else None
            target_user = user_id or (people.get(email) if email else None)
            if target_user is None:
                _count(counts, "refused_person_not_found", chain)
                continue
        owner_id = target_user if target_user is not None else organization_id
        ref = root.subject_refs[0] if root.subject_refs else None
        subject = None if ref is None else ResourceRef(kind=ref.kind, id=ref.id)
        if subject is not None:
            known = subjects.get((subject.kind, subject.id))
            if known is None:
                known = entity_ref_problem(subject.kind, subject.id) is None
                if known:
                    try:
                        await check_subject(db, organization_id, subject)
                    except MemorySubjectNotFoundError:
                        known = False
                subjects[(subject.kind, subject.id)] = known
            if not known:
                _count(counts, "refused_subject_not_found", chain)
                continue
        key = make_subject_key(subject, root.attribute, owner=ResourceRef(kind=root.scope, id=str(owner_id)))
        assert key is not None
        planned.append(_Planned(
            chain, target_definition, target_user, owner_id, key,
            None if subject is None else f"{subject.kind}:{subject.id}",
        ))  # fmt: skip
    return planned


async def _embed_heads(
    embed: MemoryEmbedder | None, organization_id: UUID, planned: list[_Planned]
) -> dict[UUID, tuple[str, list[float]]]:
    """The live model's vector of each chain head that may be read (text, not expired), by its file id."""
    heads = [p.chain.head for p in planned if p.chain.head.text is not None and not p.chain.expired]
    vectors: dict[UUID, tuple[str, list[float]]] = {}
    for start in range(0, len(heads), _EMBED_BATCH):
        batch = heads[start : start + _EMBED_BATCH]
        embedded = await embed_texts(embed, organization_id, [h.text or "" for h in batch])
        if embedded is None:
            continue  # no embedder, or it failed: ranked lexically until a vector is filled in (memory.vectors)
        for head, vector in zip(batch, embedded.vectors, strict=True):
            vectors[head.id] = (embedded.model, vector)
    return vectors


async def _write_chain(conn: Connection, organization_id: UUID, plan: _Planned) -> list[UUID]:
    """Insert one planned chain's revisions in one statement, each superseding the one before; their new ids."""
    lines = plan.chain.lines
    ids = [uuid4() for _ in lines]
    await conn.execute(
        repo.QUERIES["insert_imported_chain"], organization_id, plan.definition_id, lines[0].scope, plan.user_id,
        plan.owner_id, plan.subject_key, ids, [line.text for line in lines],
        [json.dumps([ref.stored() for ref in line.subject_refs]) for line in lines], [None, *ids[:-1]],
        [line.forgotten_at for line in lines], [line.created_at for line in lines],
        [line.expires_at for line in lines], [line.id for line in lines],
    )  # fmt: skip
    return ids


async def import_memories(
    db: Database,
    organization_id: UUID,
    data: bytes,
    *,
    requested_by: str,
    embed: MemoryEmbedder | None = None,
    definition_id: UUID | None = None,
    user_id: UUID | None = None,
    max_bytes: int = MAX_IMPORT_BYTES,
) -> Receipt:
    """Import a transfer file into the organization and answer the receipt (see the module docstring).

    `MemoryImportError` (a code and the line) refuses the file before anything is written.
    """
    chains = parse_transfer(data, max_bytes=max_bytes)
    await require_organization(db, organization_id)
    counts: dict[str, int] = {}
    planned = await _plan(db, organization_id, chains, counts, definition_id=definition_id, user_id=user_id)
    vectors = await _embed_heads(embed, organization_id, planned)  # before the transaction, as remember does
    with translated_db_errors():
        async with db.connection() as conn, conn.transaction():
            await guard_writes(conn, organization_id)
            receipt = await begin_receipt(
                conn, "memory_import", organization_id=organization_id, target_id=organization_id,
                requested_by=requested_by,
            )  # fmt: skip
            heads: dict[str, tuple[list[UUID], list[list[float]]]] = {}
            for plan in planned:
                outcome = await _write_planned(conn, organization_id, plan)
                if isinstance(outcome, str):
                    _count(counts, f"refused_{outcome}", plan.chain)
                    continue
                _count(counts, "imported", plan.chain)
                found = vectors.get(plan.chain.head.id)
                if found is not None:
                    ids, rows = heads.setdefault(found[0], ([], []))
                    ids.append(outcome[-1])
                    rows.append(found[1])
                if plan.chain.expired:
                    counts["chains_imported_expired"] = counts.get("chains_imported_expired", 0) + 1
                if plan.chain.head.tombstone:
                    counts["chains_imported_forgotten"] = counts.get("chains_imported_forgotten", 0) + 1
            for model, (ids, rows) in heads.items():  # the written heads' vectors, one statement per model
                await store_vectors(conn, ids, EmbeddedTexts(model=model, vectors=rows))
                counts["vectors_stored"] = counts.get("vectors_stored", 0) + len(ids)
            await add_to_receipt(conn, receipt.id, counts)
            receipt = await finish_receipt(conn, receipt.id)
    await db.note_write(organization_id)  # its reads on a standby wait for it (state.replicas)
    return receipt


async def _write_planned(conn: Connection, organization_id: UUID, plan: _Planned) -> list[UUID] | str:
    """Write one chain inside a savepoint: its new ids, or the reason it was refused (nothing written)."""
    try:
        async with conn.transaction():
            await guard_writes(
                conn, organization_id, user_id=plan.user_id,
                subjects=[] if plan.subject is None else [plan.subject],
            )  # fmt: skip
            head = await repo.fetch_head(
                conn, organization_id=organization_id, definition_id=plan.definition_id,
                scope=plan.chain.root.scope, scope_owner_id=plan.owner_id, subject_key=plan.subject_key,
            )  # fmt: skip
            if head is not None:
                return "chain_exists"
            return await _write_chain(conn, organization_id, plan)
    except PersonErasingError:
        return "person_erasing"
    except asyncpg.UniqueViolationError:  # another import or a remember started this chain meanwhile
        return "chain_exists"
