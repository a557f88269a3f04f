"""Registering documents: one upload or URI (`register_upload`, `register_uri`), or many of one scope.

`register_upload` and `register_uri` store one document's bytes and make (or find) its source row in one
transaction under the erasure guard: the same content twice in one scope is one source, and a URI whose
content changed gets a new version that replaces the live one once it is ready. `register_many` is their
bulk half: the objects of identities not registered yet are stored first (concurrently, each under the key of the
row it will make), then every new source is inserted by one statement and the ones already registered are
read by another; a URI whose content changed goes through `register_uri`, which
registers its new version. Each document gets the same `RegisteredSource` the one-at-a-time call returns.
A source's URI is a link its readers may render, so it is an absolute `http`/`https` URL with a host and no
whitespace or control character, or `SourceUriInvalidError` (`source_uri_invalid`), on every face.
This module must never extract, chunk or embed.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit
from uuid import UUID

import asyncpg

from knowledge._sql import QUERIES, translated
from knowledge.documents.objects import ObjectStore, object_key_for
from knowledge.errors import KnowledgeInputError, SourceDeletingError, SourceNotFoundError
from knowledge.ingestion._step_records import RegisteredSource
from knowledge.ingestion.attempts import say_cause
from knowledge.ingestion.object_deletes import drain_quietly
from knowledge.ingestion.review import Review, checked_review
from state.db import Connection, Database
from state.erasure_marks import guard_writes

__all__ = [
    "Announce",
    "AnnounceMany",
    "Document",
    "RegisteredSource",
    "SourceUriInvalidError",
    "checked_uri",
    "register_many",
    "register_upload",
    "register_uri",
]

Announce = Callable[[Connection, RegisteredSource], Awaitable[None]]
"""Called inside the registration's transaction for a pending source, so its event commits with it (the
service writes the ingestion event to the outbox, `state.outbox`)."""

AnnounceMany = Callable[[Connection, Sequence[UUID]], Awaitable[None]]
"""`register_many`'s `Announce`: called inside each transaction that leaves sources pending, with their ids
(each pending source once per call), so no pending source of a batch commits without its event."""


class SourceUriInvalidError(KnowledgeInputError, ValueError):
    """A source's URI is not an absolute http or https URL with a host (a `javascript:` link, a path, ...)."""

    code = "source_uri_invalid"


_URI_SCHEMES = frozenset({"http", "https"})


def checked_uri(uri: str) -> str:
    """`uri` when it is an absolute http(s) URL with a host and no whitespace or control character."""
    if not uri.strip():
        raise SourceUriInvalidError("a URI-backed source needs a URI")
    if any(c.isspace() or not c.isprintable() for c in uri):  # a browser drops them: " javascript:" runs
        raise SourceUriInvalidError("a source's URI holds whitespace or a control character")
    try:
        parts = urlsplit(uri)
        host = parts.hostname
    except ValueError as exc:
        raise SourceUriInvalidError("a source's URI is not a URL") from exc
    if parts.scheme.lower() not in _URI_SCHEMES or not host:
        raise SourceUriInvalidError("a source's URI must be an http or https URL with a host")
    return uri


@dataclass(frozen=True, slots=True)
class Document:
    """One document to register: an upload (no `uri`) or the fetched content of a URI."""

    data: bytes
    """The bytes."""
    filename: str
    """Its file name (for a URI, the last segment when empty)."""
    title: str | None = None
    """A title; defaults to the file name's stem."""
    media_type: str | None = None
    """The declared type, if any."""
    uri: str | None = None
    """The URI it was fetched from: its identity. None for an upload, whose identity is its content."""
    owner: str | None = None
    """Who answers for it; None: none (or, registered again, keep the source's)."""
    review_by: date | None = None
    """When it must be reviewed; None: none (or, registered again, keep the source's)."""


async def register_many(
    db: Database,
    store: ObjectStore,
    *,
    organization_id: UUID | None,
    documents: Sequence[Document],
    announce: AnnounceMany | None = None,
) -> list[RegisteredSource]:
    """Store and register `documents` in one scope; the result is in input order.

    The owner and review date follow the re-upload rule of `register_upload`; when one identity appears
    twice in `documents`, its first entry is the one registered. `announce` is called in the transaction that
    inserts the new sources (with their ids), in the one that reads the known ones back (with those still
    pending) and, for a URI's new version, in `register_uri`'s.
    """
    for doc in documents:
        if doc.uri is not None:
            checked_uri(doc.uri)
    reviews = [checked_review(doc.owner, doc.review_by, loc=("items", n)) for n, doc in enumerate(documents)]
    digests = [hashlib.sha256(doc.data).hexdigest() for doc in documents]
    names = [_filename(doc) for doc in documents]
    identities = [doc.uri if doc.uri is not None else f"sha256:{d}" for doc, d in zip(documents, digests, strict=True)]
    titles = [
        (doc.title or PurePosixPath(name).stem or doc.uri or "document").strip()[:500] or "document"
        for doc, name in zip(documents, names, strict=True)
    ]
    # Only a document whose identity has no row yet gets an object (the first entry of each): its key names
    # the row it will make. A new version of a known URI goes through `register_uri`, which writes its own.
    with translated():
        async with db.connection() as conn:
            known = {
                r["identity"] for r in await conn.fetch(QUERIES["existing_sources_many"], organization_id, identities)
            }
    fresh = list(
        {identity: index for index, identity in reversed(list(enumerate(identities))) if identity not in known}.values()
    )
    fresh.sort()
    new_ids = {index: uuid.uuid4() for index in fresh}
    keys = {index: object_key_for(organization_id, new_ids[index]) for index in fresh}
    gate = asyncio.Semaphore(16)

    async def put(key: str, doc: Document) -> None:
        async with gate:
            await store.put(key, doc.data, content_type=doc.media_type or "application/octet-stream")

    try:
        with translated():
            async with db.connection() as conn, conn.transaction():
                if organization_id is not None:  # the puts too, under the erasure guard (state.erasure_marks)
                    await guard_writes(conn, organization_id)
                await say_cause(conn, "batch")  # its sources' first attempts are a batch's (migrations/0120)
                await asyncio.gather(*(put(keys[index], documents[index]) for index in fresh))
                inserted = await _insert_fresh(
                    conn, organization_id, fresh, documents, titles=titles, keys=keys, digests=digests, names=names,
                    reviews=reviews, new_ids=new_ids,
                )  # fmt: skip
                if announce is not None and inserted:
                    await announce(conn, [r["id"] for r in inserted if r["status"] == "pending"])
    except BaseException:  # no row names the objects written (a failed put may have written some)
        await asyncio.gather(*(store.delete(keys[index]) for index in fresh))
        raise
    with translated():
        async with db.connection() as conn:
            created = {r["identity"]: r for r in inserted}
            existing = {
                r["identity"]: r
                for r in await conn.fetch(
                    QUERIES["existing_sources_many"], organization_id, [i for i in identities if i not in created]
                )
            }
    made = {r["id"] for r in inserted}
    unused = [keys[index] for index in fresh if new_ids[index] not in made]  # a row made meanwhile won the identity
    await asyncio.gather(*(store.delete(key) for key in unused))
    changed = {
        index
        for index, (identity, digest) in enumerate(zip(identities, digests, strict=True))
        if identity not in created and identity in existing and existing[identity]["content_sha256"] != digest
    }
    results: dict[int, RegisteredSource] = {}
    one = None if announce is None else _one_at_a_time(announce)
    for index in sorted(changed):  # new versions of URIs: rare, one at a time
        doc = documents[index]
        assert doc.uri is not None
        results[index] = await register_uri(
            db, store, organization_id=organization_id, uri=doc.uri, data=doc.data, title=doc.title,
            media_type=doc.media_type, filename=names[index], owner=doc.owner, review_by=doc.review_by,
            announce=one,
        )  # fmt: skip
    plain = [i for i in range(len(documents)) if i not in changed]
    ids = {
        identity: (created.get(identity) or existing[identity])["id"] for identity in map(identities.__getitem__, plain)
    }
    landed: dict[UUID, int] = {}  # an existing row -> the first document that named it again, if it sets a field
    firsts = {identities[index]: index for index in reversed(plain)}
    for identity, index in firsts.items():
        if identity not in created and (reviews[index].owner is not None or reviews[index].review_by is not None):
            landed[ids[identity]] = index
    with translated():
        async with db.connection() as conn, conn.transaction():
            if organization_id is not None:
                await guard_writes(conn, organization_id)
            if landed:
                await conn.execute(
                    QUERIES["set_sources_review"], list(landed),
                    [reviews[i].owner for i in landed.values()], [reviews[i].review_by for i in landed.values()],
                )  # fmt: skip
            pending = await conn.fetch(QUERIES["ensure_wanted_models_many"], list(set(ids.values())))
            still = [i for ident, i in ids.items() if ident in existing and existing[ident]["status"] == "pending"]
            if announce is not None and still:
                await announce(conn, list(dict.fromkeys(still)))
    models: dict[UUID, list[str]] = {}
    for row in pending:
        models.setdefault(row["source_id"], []).append(row["embedding_model"])
    first_seen: set[str] = set()
    for index in plain:
        identity = identities[index]
        row = created.get(identity) or existing[identity]
        new = identity in created and identity not in first_seen
        first_seen.add(identity)
        results[index] = RegisteredSource(
            source_id=row["id"], created=new, status=row["status"], models=tuple(sorted(models.get(row["id"], []))),
            outcome="created" if new else "unchanged",
        )  # fmt: skip
    return [results[i] for i in range(len(documents))]


def _one_at_a_time(announce: AnnounceMany) -> Announce:
    """`announce` for `register_uri`'s one source, called only when it is pending."""

    async def one(conn: Connection, registered: RegisteredSource) -> None:
        await announce(conn, [registered.source_id])

    return one


def _filename(doc: Document) -> str:
    if doc.uri is not None and not doc.filename:
        return PurePosixPath(doc.uri.split("?", 1)[0].rstrip("/")).name or "document"
    return doc.filename or "document"


async def _insert_fresh(
    conn: Connection,
    organization_id: UUID | None,
    fresh: list[int],
    documents: Sequence[Document],
    *,
    titles: list[str],
    keys: dict[int, str],
    digests: list[str],
    names: list[str],
    reviews: list[Review],
    new_ids: dict[int, UUID],
) -> list[asyncpg.Record]:
    """Insert the rows of the documents `fresh` (indexes) in one statement; the rows made (a conflict makes none)."""
    rows: list[asyncpg.Record] = await conn.fetch(
        QUERIES["insert_sources_many"], organization_id,
        ["uri" if documents[i].uri is not None else "upload" for i in fresh], [titles[i] for i in fresh],
        [documents[i].uri for i in fresh], [keys[i] for i in fresh], [digests[i] for i in fresh],
        [documents[i].media_type for i in fresh], [names[i] for i in fresh],
        [len(documents[i].data) for i in fresh], [reviews[i].owner for i in fresh],
        [reviews[i].review_by for i in fresh], [new_ids[i] for i in fresh],
    )  # fmt: skip
    return rows


async def register_upload(
    db: Database,
    store: ObjectStore,
    *,
    organization_id: UUID | None,
    data: bytes,
    filename: str,
    title: str | None = None,
    media_type: str | None = None,
    owner: str | None = None,
    review_by: date | None = None,
    announce: Announce | None = None,
) -> RegisteredSource:
    """Store an uploaded document and register it; the same content twice in one scope is one source.

    `owner` and `review_by` (None: none, or keep what the source holds) follow the re-upload rule: the same
    content again with either sets it on the source it lands on.
    """
    return await _register(
        db, store, organization_id=organization_id, kind="upload", uri=None, data=data,
        filename=filename, title=title, media_type=media_type, review=checked_review(owner, review_by),
        announce=announce,
    )  # fmt: skip


async def register_uri(
    db: Database,
    store: ObjectStore,
    *,
    organization_id: UUID | None,
    uri: str,
    data: bytes,
    title: str | None = None,
    media_type: str | None = None,
    filename: str | None = None,
    owner: str | None = None,
    review_by: date | None = None,
    announce: Announce | None = None,
) -> RegisteredSource:
    """Store the fetched bytes of a URI and register it; the same URI twice in one scope is one source.

    A new version carries over the live one's owner and review date unless `owner` or `review_by` is given.
    """
    checked_uri(uri)
    review = checked_review(owner, review_by)
    name = filename or PurePosixPath(uri.split("?", 1)[0].rstrip("/")).name or "document"
    return await _register(
        db, store, organization_id=organization_id, kind="uri", uri=uri, data=data,
        filename=name, title=title, media_type=media_type, review=review, announce=announce,
    )  # fmt: skip


async def _register(
    db: Database,
    store: ObjectStore,
    *,
    organization_id: UUID | None,
    kind: str,
    uri: str | None,
    data: bytes,
    filename: str,
    title: str | None,
    media_type: str | None,
    review: Review,
    announce: Announce | None = None,
) -> RegisteredSource:
    digest = hashlib.sha256(data).hexdigest()
    label = (title or PurePosixPath(filename).stem or uri or "document").strip()[:500] or "document"
    identity = uri if uri is not None else f"sha256:{digest}"
    new_id = uuid.uuid4()
    key = object_key_for(organization_id, new_id)
    args = (organization_id, kind, label, uri, key, digest, media_type, filename, len(data))
    # The object is written in the transaction that makes the row naming it (under the erasure guard), and
    # only when a row may be made: the same content again lands on its row without a write. A row made
    # concurrently sends the transaction back for it.
    stored = not await _already_registered(db, organization_id, identity, digest)
    superseded: list[str] = []
    put = _Put(store, key, data, media_type or "application/octet-stream")
    while True:
        try:
            registered, superseded = await _register_row(
                db, organization_id, identity, digest, args, review, new_id=new_id, put=put if stored else None,
                announce=announce,
            )  # fmt: skip
        except _ObjectNeeded:
            stored = True
            continue
        except BaseException:
            if stored:  # no row names the object: a refusal (e.g. `source_deleting`) leaves nothing behind
                await store.delete(key)
            raise
        break
    if stored and registered.source_id != new_id:  # the content landed on a row made meanwhile: ours is unused
        await store.delete(key)
    await drain_quietly(db, store, superseded)
    return registered


class _ObjectNeeded(Exception):
    """The registration must make a row, and its object was not written (rolled back, then retried)."""


@dataclass(frozen=True, slots=True)
class _Put:
    """The object a registration writes with its row."""

    store: ObjectStore
    key: str
    data: bytes
    content_type: str


async def _already_registered(db: Database, organization_id: UUID | None, identity: str, digest: str) -> bool:
    """Whether `identity` is registered with this content (live, or as its pending new version)."""
    with translated():
        async with db.connection() as conn:
            live = await conn.fetchrow(QUERIES["existing_version"], organization_id, identity)
    return live is not None and digest in (live["content_sha256"], live["next_sha256"])


async def _register_row(
    db: Database,
    organization_id: UUID | None,
    identity: str,
    digest: str,
    args: tuple[object, ...],
    review: Review,
    *,
    new_id: UUID,
    put: _Put | None,
    announce: Announce | None,
) -> tuple[RegisteredSource, list[str]]:
    """Make or find the row of one registration (writing `put` with it); answers it and superseded versions' keys."""
    superseded: list[str] = []
    stored = put is not None
    with translated():
        async with db.connection() as conn, conn.transaction():
            if organization_id is not None:  # the put too, under the erasure guard (state.erasure_marks)
                await guard_writes(conn, organization_id)
            inserted = None
            if put is not None:
                await put.store.put(put.key, put.data, content_type=put.content_type)
                inserted = await conn.fetchrow(QUERIES["insert_source"], *args, review.owner, review.review_by, new_id)
            outcome, replaces = "created", None
            if inserted is None:
                row, outcome, replaces = await _existing_or_new_version(
                    conn, organization_id, identity, digest, args, review,
                    new_id=new_id, stored=stored, superseded=superseded,
                )  # fmt: skip
                if outcome != "resync":  # the row this document landed on already existed
                    await conn.execute(QUERIES["set_sources_review"], [row["id"]], [review.owner], [review.review_by])
            else:
                row = {"id": inserted["id"], "status": inserted["status"]}
            if row["status"] != "failed":
                await conn.execute(QUERIES["ensure_wanted_models"], row["id"])
            models = tuple(r["embedding_model"] for r in await conn.fetch(QUERIES["models_to_build"], row["id"]))
            registered = RegisteredSource(
                source_id=row["id"], created=outcome in ("created", "resync"), status=row["status"], models=models,
                outcome=outcome, replaces=replaces,
            )  # fmt: skip
            if announce is not None and registered.status == "pending":
                await announce(conn, registered)
    return registered, superseded


async def _existing_or_new_version(
    conn: Connection,
    organization_id: UUID | None,
    identity: str,
    digest: str,
    args: tuple[object, ...],
    review: Review,
    *,
    new_id: UUID,
    stored: bool,
    superseded: list[str],
) -> tuple[dict[str, Any], str, UUID | None]:
    """The registered source of `identity`; for a URI whose content changed, a new version replacing it.

    The object keys of pending versions it drops are appended to `superseded` (queued by migrations/0098).
    """
    await conn.execute(QUERIES["lock_versions_of_identity"], organization_id, identity)  # a delete commits first
    live = await conn.fetchrow(QUERIES["existing_version"], organization_id, identity)
    if live is None:  # deleted between the conflict and the read, or never registered
        if not stored:
            raise _ObjectNeeded
        raise SourceNotFoundError(f"the source {identity!r} vanished while it was registered")
    if live["status"] == "deleting":
        raise SourceDeletingError(f"the knowledge source {live['id']} is being deleted; register it again afterwards")
    if live["content_sha256"] == digest:
        if live["next_id"] is not None:  # the latest sync says the live text: a pending newer one is stale
            superseded += [r["object_key"] for r in await conn.fetch(QUERIES["delete_replacement"], live["next_id"])]
        return {"id": live["id"], "status": live["status"]}, "unchanged", None
    if live["next_id"] is not None:
        if live["next_sha256"] == digest:  # this version is already registered
            return {"id": live["next_id"], "status": live["next_status"]}, "resync_pending", live["id"]
    if not stored:
        raise _ObjectNeeded
    if live["next_id"] is not None:  # a newer version supersedes the pending one
        superseded += [r["object_key"] for r in await conn.fetch(QUERIES["delete_replacement"], live["next_id"])]
    row = await conn.fetchrow(QUERIES["insert_replacement"], *args, live["id"], review.owner, review.review_by, new_id)
    assert row is not None
    return {"id": row["id"], "status": row["status"]}, "resync", live["id"]
