"""Brief receipts over the console seed (`console_seed.World`): organization A's and B's briefs citing their own
sources and memories and the same platform source, and segment builds of one agent run each."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from uuid import UUID, uuid4

from knowledge.documents.objects import ObjectStore
from knowledge.ingestion.core import Ingestion, ingest_source
from knowledge.ingestion.registration import register_upload
from state.brief_receipts import BriefKind, BriefReceipt, SourceCounts, insert_receipts
from state.db import Database
from tests.integration.functions.conftest import fake_embedders
from tests.integration.functions.console_seed import World


@dataclass
class Cited:
    """The ids the tests look for."""

    platform: UUID
    a_run: UUID
    b_run: UUID


def _receipt(
    org: UUID, refs: list[tuple[str, str]], *, run: UUID, segment: int, kind: BriefKind, ago: int
) -> BriefReceipt:
    return BriefReceipt(
        org, datetime.now(UTC) - timedelta(minutes=ago), "segment", kind, "run_snapshot", 120 if refs else 0,
        sources={"knowledge": SourceCounts(tokens=100, dropped=2), "memory": SourceCounts(tokens=20, failed=False)}
        if refs else {},
        cited=tuple(refs), run_id=run, segment=segment, dedupe_key=f"{kind}:{run}:{segment}",
    )  # fmt: skip


async def seed_citations(db: Database, store: ObjectStore, w: World) -> Cited:
    """A's run builds, hits its memo and rebuilds citing A's source, memory and the platform source; B's run
    cites B's source and the same platform source."""
    registered = await register_upload(
        db, store, organization_id=None, data=b"# Platform guide\n\nShared by every tenant.", filename="guide.md"
    )
    await ingest_source(Ingestion(db, store, fake_embedders().get), registered.source_id)
    platform = registered.source_id
    a_run, b_run = uuid4(), uuid4()
    a_refs = [
        ("knowledge_source", str(w.ready)),
        ("agent.memory", str(w.a_memory)),
        ("knowledge_source", str(platform)),
    ]
    b_refs = [("knowledge_source", str(w.b_source)), ("knowledge_source", str(platform))]
    async with db.connection() as conn:
        await insert_receipts(conn, [
            _receipt(w.a, a_refs, run=a_run, segment=0, kind="build", ago=30),
            _receipt(w.a, [], run=a_run, segment=1, kind="memo_hit", ago=20),
            _receipt(w.a, a_refs, run=a_run, segment=2, kind="rebuild", ago=10),
            _receipt(w.b, b_refs, run=b_run, segment=0, kind="build", ago=5),
        ])  # fmt: skip
    return Cited(platform, a_run, b_run)
