"""`MemoryService`: the one writer of `agent.memories`, behind the `memory.remember` and `memory.forget` tools.

`remember` makes the subject key itself, with `make_subject_key`, from the one subject ref or from the scope
owner when there is none; it never takes a key from the caller. It refuses an attribute outside the
`observation.` and `preference.` namespaces, user scope for a trigger, more than one subject ref, a subject
ref that is not canonical (`state.ids`: a kind outside the closed set, an id that is not canonical UUID
text; the candidate type refuses both first, this holds for a candidate built without validation), a subject
ref that names no live row of the writer's organization (`memory.subjects`), and
text identical to the live revision under that key. Different text appends a revision after the exact head read
from `agent.memory_heads`; after a tombstone it starts the chain again after the tombstone. An expired head
(`memory.expiry`) is not live: identical text appends after it as new text would, and the run's count
ignores it. Each revision gets its expiry from `memory.expiry.resolve_expiry` (the candidate's
`expires_at` or `ttl`, else its namespace's default), refused at the field's path before anything is read.

Each transition is one insert, in a transaction that first passes the erasure guard (`state.erasure_marks`):
a write for an organization or a person being erased is refused before anything is read. Two writers that
read one head race on the chain constraints; the loser reloads the head and decides again (refuse the same
text, append new text). `forget` accepts the id of a current live head only, checks the invoking principal,
and appends one tombstone. Each call is one span (`state.telemetry`): `upsert_memory` naming the revision it
wrote, `delete_memory` the memory it forgot; the text joins only when the operator allows text in spans.

This service must never update or delete a revision, never infer lineage from timestamps, and never be
handed to a model directly: a model reaches it through the memory tools.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from uuid import UUID

from memory import repository as repo
from memory.errors import (
    AttributeNamespaceError,
    DuplicateMemoryError,
    InvalidInvocationError,
    InvalidSubjectKeyError,
    MemoryAlreadyForgottenError,
    MemoryConflictError,
    MemoryNotCurrentError,
    MemoryNotFoundError,
    PrincipalMismatchError,
    RunMemoryLimitError,
    TooManySubjectRefsError,
    UserScopeForTriggerError,
)
from memory.expiry import DEFAULT_EXPIRY, ExpiryPolicy, resolve_expiry
from memory.models import AgentMemory, MemoryCandidate, ToolInvocation, is_memory_attribute
from memory.subjects import check_subject
from memory.vectors import MemoryEmbedder, embed_texts, store_vectors
from state import telemetry
from state.db import Connection, Database
from state.erasure_marks import guard_writes
from state.ids import entity_ref_problem
from state.refs import ResourceRef, make_subject_key

__all__ = ["DEFAULT_MAX_ATTEMPTS", "MAX_SUBJECT_KEY_BYTES", "MemoryService"]

_log = logging.getLogger(__name__)

DEFAULT_MAX_ATTEMPTS = 200
"""How often one writer reloads a moving head before it gives up; each loss means another writer won."""
MAX_SUBJECT_KEY_BYTES = 1024
"""The longest subject key in UTF-8 bytes (the CHECK `memories_subject_key_shape` agrees)."""


class MemoryService:
    """Appends memory revisions and tombstones for one invoking principal at a time."""

    def __init__(
        self,
        db: Database,
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        expiry: ExpiryPolicy = DEFAULT_EXPIRY,
        embed: MemoryEmbedder | None = None,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self._db = db
        self._max_attempts = max_attempts
        self.expiry = expiry
        """The expiry per namespace (`ExpiryPolicy.from_settings` in the app)."""
        self.embed = embed
        """Embeds a revision's text with the live model for the relevance read (`memory.vectors`); None: none."""
        self.races_lost = 0
        """How many inserts lost the chain race and reloaded the head (observability and tests)."""

    async def remember(
        self,
        inv: ToolInvocation,
        candidate: MemoryCandidate,
        *,
        run_limit: int | None = None,
        now: datetime | None = None,
    ) -> AgentMemory:
        """Append `candidate` as the new head of its chain, or refuse; `run_limit` caps the run's writes."""
        attributes: dict[str, telemetry.AttributeValue] = {
            telemetry.MEMORY_SCOPE: candidate.scope,
            "gen_ai.agent.id": str(inv.definition_id),
            "ac.run.id": str(inv.run_id),
        }
        with telemetry.memory_operation("upsert_memory", inv.organization_id, attributes) as span:
            telemetry.set_text(span, telemetry.MEMORY_CONTENT, candidate.text)
            written = await self._remember(inv, candidate, run_limit=run_limit, now=now)
            span.set_attribute(telemetry.MEMORY_ID, str(written.id))
            return written

    async def _remember(
        self, inv: ToolInvocation, candidate: MemoryCandidate, *, run_limit: int | None, now: datetime | None
    ) -> AgentMemory:
        if not is_memory_attribute(candidate.attribute):
            raise AttributeNamespaceError()
        clock = datetime.now(UTC) if now is None else now
        expires_at = resolve_expiry(candidate, self.expiry, clock)
        if candidate.scope == "user" and inv.user_id is None:
            raise UserScopeForTriggerError()
        if len(candidate.subject_refs) > 1:
            raise TooManySubjectRefsError()
        owner_id = inv.user_id if candidate.scope == "user" else inv.organization_id
        assert owner_id is not None
        subject = candidate.subject_refs[0].as_resource_ref(with_label=False) if candidate.subject_refs else None
        not_canonical = None if subject is None else entity_ref_problem(subject.kind, subject.id)
        if not_canonical is not None:
            field, why = not_canonical
            raise InvalidSubjectKeyError(f"subject_refs.0.{field} {why}")
        owner = ResourceRef(kind=candidate.scope, id=str(owner_id))
        try:
            key = make_subject_key(subject, candidate.attribute, owner=owner)
        except ValueError as exc:  # MemorySubjectRef already refuses these; a constructed candidate may not
            raise InvalidSubjectKeyError(f"the subject ref cannot form a key: {exc}") from exc
        assert key is not None
        if len(key.encode()) > MAX_SUBJECT_KEY_BYTES:
            raise InvalidSubjectKeyError(f"the subject key would exceed {MAX_SUBJECT_KEY_BYTES} bytes")
        stored_refs = [ref.stored() for ref in candidate.subject_refs]
        await self._check_invocation(inv)
        if subject is not None:  # resolved at write time; the read guard stays (memory.subjects)
            await check_subject(self._db, inv.organization_id, subject)
        embedded = await embed_texts(self.embed, inv.organization_id, [candidate.text])  # before any transaction

        for _ in range(self._max_attempts):
            written: AgentMemory | None = None
            async with self._db.connection() as conn, conn.transaction():
                await guard_writes(
                    conn, inv.organization_id, user_id=inv.user_id if candidate.scope == "user" else None,
                    subjects=[] if subject is None else [f"{subject.kind}:{subject.id}"],
                )  # fmt: skip
                if run_limit is not None:
                    await self._check_run_limit(conn, inv.run_id, run_limit)
                head = await repo.fetch_head(
                    conn,
                    organization_id=inv.organization_id,
                    definition_id=inv.definition_id,
                    scope=candidate.scope,
                    scope_owner_id=owner_id,
                    subject_key=key,
                )
                live = None if head is None or head.is_tombstone or head.is_expired(clock) else head
                if live is not None and live.text == candidate.text:
                    raise DuplicateMemoryError(
                        f"memory {live.id} under {key} already holds this text; nothing was written"
                    )
                try:
                    written = await repo.insert_revision(
                        conn,
                        organization_id=inv.organization_id,
                        definition_id=inv.definition_id,
                        scope=candidate.scope,
                        user_id=inv.user_id if candidate.scope == "user" else None,
                        scope_owner_id=owner_id,
                        subject_key=key,
                        text=candidate.text,
                        subject_refs=stored_refs,
                        run_id=inv.run_id,
                        supersedes_id=None if head is None else head.id,
                        expires_at=expires_at,
                    )
                except repo.ChainMoved as moved:
                    self.races_lost += 1
                    _log.debug("memory chain %s moved (%s); reloading the head", key, moved.constraint)
                if written is not None and embedded is not None:
                    await store_vectors(conn, [written.id], embedded)  # in the transaction that wrote it
            if written is not None:
                await self._db.note_write(inv.organization_id)  # its reads on a standby wait for it (state.replicas)
                return written
        raise MemoryConflictError(f"the chain {key} kept moving; gave up after {self._max_attempts} attempts")

    async def forget(self, inv: ToolInvocation, memory_id: UUID) -> AgentMemory:
        """Append one tombstone after `memory_id`, which must be the current live head the principal owns."""
        attributes: dict[str, telemetry.AttributeValue] = {
            telemetry.MEMORY_ID: str(memory_id),
            "gen_ai.agent.id": str(inv.definition_id),
            "ac.run.id": str(inv.run_id),
            "ac.memory.delete": "forget",
        }
        with telemetry.memory_operation("delete_memory", inv.organization_id, attributes):
            return await self._forget(inv, memory_id)

    async def _forget(self, inv: ToolInvocation, memory_id: UUID) -> AgentMemory:
        await self._check_invocation(inv)
        async with self._db.connection() as conn, conn.transaction():
            await guard_writes(conn, inv.organization_id)
            found = await repo.fetch_revision(conn, inv.organization_id, memory_id)
            if found is None:
                raise MemoryNotFoundError(f"no memory {memory_id} in this organization")
            memory, is_head = found
            await guard_writes(  # the people it names: the lock is held already, so the marks cannot change
                conn, inv.organization_id, user_id=memory.user_id, subjects=[_subject_of(memory.subject_key)]
            )
            if memory.definition_id != inv.definition_id:
                raise PrincipalMismatchError(f"memory {memory_id} belongs to another definition")
            if memory.scope == "user" and (inv.user_id is None or memory.user_id != inv.user_id):
                raise PrincipalMismatchError(f"memory {memory_id} is another person's memory")
            if not is_head:
                head = await repo.fetch_head(
                    conn, organization_id=memory.organization_id, definition_id=memory.definition_id,
                    scope=memory.scope, scope_owner_id=memory.scope_owner_id, subject_key=memory.subject_key,
                )  # fmt: skip
                if head is not None and head.is_tombstone and head.supersedes_id == memory_id:
                    raise MemoryAlreadyForgottenError(f"memory {memory_id} is already forgotten (tombstone {head.id})")
                current = (
                    "its subject is forgotten" if head is None or head.is_tombstone else f"the current one is {head.id}"
                )
                raise MemoryNotCurrentError(f"memory {memory_id} is an older revision; {current}")
            if memory.is_tombstone:
                raise MemoryAlreadyForgottenError(f"memory {memory_id} is a tombstone: it already forgets its subject")
            try:
                tombstone = await repo.insert_tombstone(conn, inv.organization_id, memory_id, inv.run_id)
            except repo.ChainMoved as moved:
                self.races_lost += 1
                raise MemoryNotCurrentError(
                    f"memory {memory_id} stopped being the current revision while it was being forgotten"
                ) from moved
        assert tombstone is not None  # the revision was read in this transaction and is never deleted
        await self._db.note_write(inv.organization_id)
        return tombstone

    async def _check_invocation(self, inv: ToolInvocation) -> None:
        async with self._db.connection() as conn:
            check = await repo.fetch_invocation(conn, inv.organization_id, inv.definition_id, inv.run_id, inv.user_id)
        if check.definition_kind is None:
            raise InvalidInvocationError(f"definition {inv.definition_id} is not visible to this organization")
        if check.definition_kind != "agent":
            raise InvalidInvocationError(f"a {check.definition_kind} definition cannot own memory; only an agent")
        if not check.run_matches:
            raise InvalidInvocationError(f"run {inv.run_id} is not a run of this organization and definition")
        if not check.user_matches:
            raise InvalidInvocationError(f"user {inv.user_id} is not a member of this organization")

    @staticmethod
    async def _check_run_limit(conn: Connection, run_id: UUID, limit: int) -> None:
        await repo.lock_run_remembers(conn, run_id)
        written = await repo.count_run_remembers(conn, run_id)
        if written >= limit:
            raise RunMemoryLimitError(f"run {run_id} has written {written} memories; the limit is {limit}")


def _subject_of(subject_key: str) -> str:
    """The `<kind>:<id>` a subject key starts with (a person's erasure names its subject so)."""
    return ":".join(subject_key.split(":")[:2])
