"""Register many documents of one scope in a few statements: the bulk half of `register_upload`/`register_uri`.

The objects of identities not registered yet are stored first (concurrently, each under the key of the
row it will make), then every new source is inserted by one statement and the ones already registered are
read by another; a URI whose content changed goes through `register_uri`, which
registers its new version. Each document gets the same `RegisteredSource` the one-at-a-time call returns.
This module must never extract, chunk or embed.
"""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import PurePosixPath
from uuid import UUID

import asyncpg

from knowledge._ingest_records import RegisteredSource
from knowledge._sql import QUERIES, translated
from knowledge.ingest import register_uri
from knowledge.objects import ObjectStore, object_key_for
from knowledge.review import Review, checked_review
from state.db import Connection, Database
from state.erasure_marks import guard_writes

__all__ = ["Document", "register_many"]


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
    db: Database, store: ObjectStore, *, organization_id: UUID | None, documents: Sequence[Document]
) -> list[RegisteredSource]:
    """Store and register `documents` in one scope; the result is in input order.

    The owner and review date follow the re-upload rule of `register_upload`; when one identity appears
    twice in `documents`, its first entry is the one registered.
    """
    for doc in documents:
        if doc.uri is not None and not doc.uri.strip():
            raise ValueError("a URI-backed source needs a URI")
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
                await asyncio.gather(*(put(keys[index], documents[index]) for index in fresh))
                inserted = await _insert_fresh(
                    conn, organization_id, fresh, documents, titles=titles, keys=keys, digests=digests, names=names,
                    reviews=reviews, new_ids=new_ids,
                )  # fmt: skip
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
    for index in sorted(changed):  # new versions of URIs: rare, one at a time
        doc = documents[index]
        assert doc.uri is not None
        results[index] = await register_uri(
            db, store, organization_id=organization_id, uri=doc.uri, data=doc.data, title=doc.title,
            media_type=doc.media_type, filename=names[index], owner=doc.owner, review_by=doc.review_by,
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
