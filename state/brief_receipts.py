"""Brief receipts: what a built (or reused) brief cited, by ids, names and counts, never by text.

A receipt (`BriefReceipt`) is made from a brief as soon as it is answered and written later, in batches
(`insert_receipts`; `functions._brief_receipts` owns the buffer and its flush). The reads answer one
organization's receipts only, with an explicit organization filter (and row-level security for the tenant
roles, migration 0122): `page_citing` ("which briefs cited these refs") and `page_segments` (an organization's
segment builds, rebuilds and memo hits). `prune_receipts` enforces the retention, `erase_organization_receipts`
the organization erasure. This module must never store a brief's text, query, item title or body.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal
from uuid import UUID, uuid4

from state.db import Connection, Database
from state.errors import translated_db_errors
from state.paging import FIRST_DESC, Page, fingerprint, page_of, page_size, start
from state.queries import load_queries

__all__ = [
    "BriefFace",
    "BriefKind",
    "BriefReceipt",
    "ReceiptRow",
    "SourceCounts",
    "erase_organization_receipts",
    "erase_person_receipts",
    "insert_receipts",
    "page_citing",
    "page_segments",
    "prune_receipts",
]

QUERIES = load_queries(__file__)

BriefFace = Literal["http", "cli", "mcp", "console", "segment"]
"""Which face asked for the brief."""
BriefKind = Literal["front_door", "build", "rebuild", "memo_hit"]
"""A front door brief; a segment's build, its rebuild after an unreadable memo, or its reuse (memo hit)."""
MAX_CITED = 999
"""Refs recorded per receipt at most (a brief holds at most MAX_CONTEXT_ITEM_LIMIT items and their body refs)."""


@dataclass(frozen=True, slots=True)
class SourceCounts:
    """One source's share of a brief."""

    tokens: int = 0
    """Tokens its kept items spent."""
    dropped: int = 0
    """Items the packer dropped from it."""
    failed: bool = False
    """Whether it did not answer."""


@dataclass(frozen=True, slots=True)
class BriefReceipt:
    """One brief to record: ids, names and counts only."""

    organization_id: UUID
    """The organization the brief was built for."""
    built_at: datetime
    """When it was answered."""
    face: BriefFace
    """Who asked."""
    kind: BriefKind
    """What happened."""
    policy: str
    """The policy's name."""
    tokens: int
    """The brief's tokens."""
    sources: dict[str, SourceCounts] = field(default_factory=dict)
    """Per source: tokens, dropped items, failure."""
    cited: tuple[tuple[str, str], ...] = ()
    """The refs it cited, `(kind, id)`, each once."""
    run_id: UUID | None = None
    """The agent run, for a segment."""
    segment: int | None = None
    """The segment number, for a segment."""
    dedupe_key: str | None = None
    """Set for a segment: a second receipt with the same key is not written (a replayed record step)."""
    id: UUID = field(default_factory=uuid4)
    """The receipt's id."""


@dataclass(frozen=True, slots=True)
class ReceiptRow:
    """A recorded receipt as the console and the API read it."""

    id: UUID
    built_at: datetime
    face: str
    kind: str
    policy: str
    run_id: UUID | None
    segment: int | None
    tokens: int
    cited: int
    sources: dict[str, dict[str, Any]]

    @classmethod
    def from_row(cls, row: Any) -> ReceiptRow:
        """A row of `page_citing_receipts` or `page_segment_receipts`."""
        return cls(
            row["id"], row["built_at"], row["face"], row["kind"], row["policy"], row["run_id"], row["segment"],
            row["tokens"], row["cited"], json.loads(row["sources"]),
        )  # fmt: skip

    @property
    def kept_sources(self) -> list[str]:
        """Sources that spent tokens in the brief."""
        return sorted(name for name, c in self.sources.items() if c.get("tokens", 0) > 0)

    @property
    def dropped_items(self) -> int:
        """Items dropped over every source."""
        return sum(int(c.get("dropped", 0)) for c in self.sources.values())

    @property
    def failed_sources(self) -> list[str]:
        """Sources that did not answer."""
        return sorted(name for name, c in self.sources.items() if c.get("failed"))


def _sources_json(sources: dict[str, SourceCounts]) -> str:
    return json.dumps(
        {name: {"tokens": c.tokens, "dropped": c.dropped, "failed": c.failed} for name, c in sorted(sources.items())},
        separators=(",", ":"),
    )


async def insert_receipts(conn: Connection, receipts: Sequence[BriefReceipt]) -> tuple[int, int]:
    """Write a batch in one statement; answers (receipts, citations) written (see `insert_brief_receipts`)."""
    if not receipts:
        return 0, 0
    cites = [(r.id, kind, ident) for r in receipts for kind, ident in r.cited[:MAX_CITED]]
    with translated_db_errors():
        row = await conn.fetchrow(
            QUERIES["insert_brief_receipts"],
            [r.id for r in receipts], [r.organization_id for r in receipts], [r.built_at for r in receipts],
            [r.face for r in receipts], [r.kind for r in receipts], [r.policy for r in receipts],
            [r.run_id for r in receipts], [r.segment for r in receipts], [r.tokens for r in receipts],
            [min(len(r.cited), MAX_CITED) for r in receipts], [_sources_json(r.sources) for r in receipts],
            [r.dedupe_key for r in receipts],
            [c[0] for c in cites], [c[1] for c in cites], [c[2] for c in cites],
        )  # fmt: skip
    assert row is not None
    return int(row["receipts"]), int(row["citations"])


async def page_citing(
    db: Database,
    *,
    organization_id: UUID,
    ref_kind: str,
    ref_ids: Iterable[str],
    cursor: str | None = None,
    limit: int = 25,
) -> Page[ReceiptRow]:
    """A page of the organization's receipts that cited any of `ref_ids` (of `ref_kind`), newest first."""
    ids = sorted(set(ref_ids))
    scope = fingerprint(organization_id, ref_kind, *ids)
    after = start(cursor, "cited_by", scope, FIRST_DESC, (datetime, UUID))
    with translated_db_errors():
        async with db.connection() as conn:
            total = int(await conn.fetchval(QUERIES["count_citing_receipts"], organization_id, ref_kind, ids))
            rows = await conn.fetch(
                QUERIES["page_citing_receipts"], organization_id, ref_kind, ids, *after, page_size(limit) + 1
            )
    return page_of(
        [ReceiptRow.from_row(r) for r in rows], limit=limit, total=total, listing="cited_by", scope=scope,
        position=lambda r: (r.built_at, r.id),
    )  # fmt: skip


async def page_segments(
    db: Database, *, organization_id: UUID, run_id: UUID | None = None, cursor: str | None = None, limit: int = 50
) -> Page[ReceiptRow]:
    """A page of the organization's segment receipts (builds, rebuilds, memo hits), newest first."""
    scope = fingerprint(organization_id, run_id)
    after = start(cursor, "segment_briefs", scope, FIRST_DESC, (datetime, UUID))
    with translated_db_errors():
        async with db.connection() as conn:
            total = int(await conn.fetchval(QUERIES["count_segment_receipts"], organization_id, run_id))
            rows = await conn.fetch(
                QUERIES["page_segment_receipts"], organization_id, run_id, *after, page_size(limit) + 1
            )
    return page_of(
        [ReceiptRow.from_row(r) for r in rows], limit=limit, total=total, listing="segment_briefs", scope=scope,
        position=lambda r: (r.built_at, r.id),
    )  # fmt: skip


async def prune_receipts(db: Database, *, days: int, batch: int = 5000) -> int:
    """Delete the receipts older than `days`, in batches; answers how many went."""
    total = 0
    with translated_db_errors():
        while True:
            async with db.connection() as conn:
                gone = int(await conn.fetchval(QUERIES["prune_brief_receipts"], days, batch))
            total += gone
            if gone < batch:
                return total


async def erase_organization_receipts(conn: Connection, organization_id: UUID) -> dict[str, int]:
    """Delete the organization's receipts and citations (in the caller's transaction); answers the counts."""
    with translated_db_errors():
        citations = int(await conn.fetchval(QUERIES["erase_organization_brief_citations"], organization_id))
        receipts = int(await conn.fetchval(QUERIES["erase_organization_brief_receipts"], organization_id))
    return {"agent.brief_citations": citations, "agent.brief_receipts": receipts}


async def erase_person_receipts(conn: Connection, organization_id: UUID, user_id: UUID) -> dict[str, int]:
    """Delete the receipts of the agent runs the person started, with their citations; answers the counts."""
    with translated_db_errors():
        citations = int(await conn.fetchval(QUERIES["erase_person_brief_citations"], organization_id, user_id))
        receipts = int(await conn.fetchval(QUERIES["erase_person_brief_receipts"], organization_id, user_id))
    return {"agent.brief_citations": citations, "agent.brief_receipts": receipts}
