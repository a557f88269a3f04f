"""Brief receipts (issue 47, items 3 and 4; migration 0122): every face records one, a replay never records
twice, a receipt holds no text, "cited by" answers an organization's own briefs only, and what is deleted
(a source, a person's memories, an organization) leaves the receipts too."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

from context.models import ContextPolicy, ContextSourceSpec
from functions.inngest.context_segment import FUNCTION_ID as SEGMENT
from functions.inngest.context_segment import RETRIES as SEGMENT_RETRIES
from functions.organization_erasure import erase_organization
from knowledge.documents.objects import LocalObjectStore
from knowledge.ingestion.core import ingest_source
from knowledge.ingestion.delete import delete_source
from memory.erasure import erase_user
from state.brief_receipts import BriefReceipt, insert_receipts, page_citing, page_segments, prune_receipts
from state.db import Database
from tests.factories import Factory
from tests.integration.functions.conftest import Service
from tests.integration.knowledge.helpers import Kit
from tests.integration.memory.helpers import raw_memory

SECRET = "Zebrafish-ledger-7741-quartz"
"""Distinctive text put in a memory, a query and a company name: it must appear in no receipt table."""


async def receipts(db: Database, org: UUID) -> list[dict[str, Any]]:
    async with db.connection() as conn:
        rows = await conn.fetch(
            "SELECT r.*, ARRAY(SELECT c.ref_kind || ':' || c.ref_id FROM agent.brief_citations c"
            " WHERE c.receipt_id = r.id ORDER BY 1) AS refs FROM agent.brief_receipts r"
            " WHERE r.organization_id = $1 ORDER BY r.built_at, r.id",
            org,
        )
    return [dict(r) for r in rows]


async def tables_text(db: Database) -> str:
    """Every row of both receipt tables as text: what a copy of them would show."""
    async with db.connection() as conn:
        a = await conn.fetch("SELECT r::text AS t FROM agent.brief_receipts r")
        b = await conn.fetch("SELECT c::text AS t FROM agent.brief_citations c")
    return "\n".join(r["t"] for r in [*a, *b])


def application_event(org: UUID, company: UUID, *, run: UUID, segment: int, waited: bool = False) -> dict[str, Any]:
    policy = ContextPolicy(
        sources=[ContextSourceSpec(name="application", required=True, token_budget=2000)], total_token_budget=3000
    )
    return {
        "name": "context/segment.brief.requested",
        "data": {
            "run_id": str(run), "segment": segment, "waited": waited,
            "request": {
                "subject": {"organization_id": str(org)}, "query": f"q {SECRET}",
                "entities": [{"kind": "crm.company", "id": str(company)}],
            },
            "policy": policy.model_dump(mode="json"),
        },
    }  # fmt: skip


async def test_a_front_door_brief_over_http_leaves_a_receipt_of_ids_and_counts_and_no_text(
    service: Service, factory: Factory
) -> None:
    tenant = await factory.tenant(users=1)
    org, person = tenant.id, tenant.users[0]
    agent = await factory.definition(org)
    memory = await raw_memory(
        service.db, org=org, definition=agent, scope="user", user=person, attribute="preference.language",
        text=f"Answer in German {SECRET}",
    )  # fmt: skip
    body = {"organization_id": str(org), "user_id": str(person), "query": f"Where is {SECRET}?"}
    response = await service.http.post("/v1/context/briefs", json=body, headers=service.auth)
    assert response.status_code == 200, response.text
    assert SECRET in response.json()["brief"]["text"]
    assert service.services.receipts.pending == 1, "queued after the answer, not written on the brief's path"
    assert await receipts(service.db, org) == []
    await service.services.receipts.flush()

    [receipt] = await receipts(service.db, org)
    assert (receipt["face"], receipt["kind"], receipt["policy"]) == ("http", "front_door", "front_door")
    assert receipt["run_id"] is None and receipt["segment"] is None
    assert receipt["tokens"] == response.json()["brief"]["tokens"] > 0
    assert f"agent.memory:{memory}" in receipt["refs"]
    assert SECRET not in await tables_text(service.db), "a receipt holds no text, query or item body"


async def test_a_segment_build_is_recorded_in_its_step_and_a_replay_records_nothing_twice(
    service: Service, factory: Factory
) -> None:
    org = await factory.organization()
    company = await factory.company(org, name=f"Acme {SECRET}")
    run_id = uuid4()
    event = application_event(org, company, run=run_id, segment=0)
    run = await service.executor.run(SEGMENT, event, retries=SEGMENT_RETRIES)
    assert run.status == "completed", run.output
    [receipt] = await receipts(service.db, org)
    assert (receipt["face"], receipt["kind"], receipt["run_id"], receipt["segment"]) == ("segment", "build", run_id, 0)
    assert receipt["policy"] == "run_snapshot" and f"crm.company:{company}" in receipt["refs"]
    assert receipt["sources"]["application"]["tokens"] > 0

    replay = await service.executor.run(SEGMENT, event, retries=SEGMENT_RETRIES, steps=run.steps)
    assert replay.status == "completed" and replay.step_names == []
    assert len(await receipts(service.db, org)) == 1, "the memoized step records nothing again"
    assert SECRET not in await tables_text(service.db)


async def test_a_memo_hit_is_recorded_once_per_segment_and_a_rebuild_as_a_rebuild(
    service: Service, factory: Factory
) -> None:
    org = await factory.organization()
    company = await factory.company(org, name="Acme")
    run_id = uuid4()
    reuse = application_event(org, company, run=run_id, segment=2)
    for _ in range(2):  # the segment, then a replay of it
        run = await service.executor.run(SEGMENT, reuse, retries=SEGMENT_RETRIES)
        assert run.status == "completed" and run.output["action"] == "reuse"
    [hit] = await receipts(service.db, org)
    assert (hit["kind"], hit["segment"], hit["tokens"], hit["refs"]) == ("memo_hit", 2, 0, [])

    build = application_event(org, company, run=run_id, segment=0)
    first = await service.executor.run(SEGMENT, build, retries=SEGMENT_RETRIES)
    (hashed,) = first.steps
    rebuilt = await service.executor.run(SEGMENT, build, retries=SEGMENT_RETRIES, steps={hashed: {"data": {"text": 1}}})
    assert rebuilt.status == "completed", rebuilt.output
    kinds = [r["kind"] for r in await receipts(service.db, org)]
    assert sorted(kinds) == ["build", "memo_hit", "rebuild"]
    page = await page_segments(service.db, organization_id=org, run_id=run_id, limit=2)
    assert page.total == 3 and len(page.items) == 2 and page.next_cursor is not None
    rest = await page_segments(service.db, organization_id=org, run_id=run_id, cursor=page.next_cursor, limit=2)
    assert [r.kind for r in [*page.items, *rest.items]] == kinds[::-1] and rest.next_cursor is None


async def platform_source(db: Database, tmp_path: Path) -> tuple[Kit, UUID]:
    kit = Kit(db, LocalObjectStore(tmp_path / "objects"))
    await kit.use_platform_model()
    source = await kit.register(None, "# Platform handbook\n\nRefunds take five days.")
    await ingest_source(kit.ingestion(), source)
    return kit, source


def cited(org: UUID, *refs: tuple[str, str], at: datetime | None = None) -> BriefReceipt:
    return BriefReceipt(org, at or datetime.now(UTC), "http", "front_door", "front_door", 5, cited=refs)


async def test_cited_by_never_shows_another_organizations_brief(db: Database, factory: Factory, tmp_path: Path) -> None:
    _, source = await platform_source(db, tmp_path)
    ours, theirs = await factory.organization(), await factory.organization()
    ref = ("knowledge_source", str(source))
    async with db.connection() as conn:
        await insert_receipts(conn, [cited(ours, ref), cited(theirs, ref), cited(theirs, ref)])
    for org, expected in ((ours, 1), (theirs, 2)):
        page = await page_citing(db, organization_id=org, ref_kind=ref[0], ref_ids=[ref[1]])
        assert page.total == len(page.items) == expected, "an organization sees only its own briefs"
    async with db.tenant(ours) as conn:  # row-level security holds it again for the tenant role
        assert await conn.fetchval("SELECT count(*) FROM agent.brief_citations") == 1


async def test_deleting_a_source_and_erasing_a_person_remove_their_citations_counted(
    db: Database, factory: Factory, tmp_path: Path
) -> None:
    kit, _ = await platform_source(db, tmp_path)
    tenant = await factory.tenant(users=1)
    org, person = tenant.id, tenant.users[0]
    own = await kit.register(org, "# Ours\n\nOur refund rule.")
    await ingest_source(kit.ingestion(), own)
    agent = await factory.definition(org)
    memory = await raw_memory(db, org=org, definition=agent, scope="user", user=person, text="terse")
    async with db.connection() as conn:
        await insert_receipts(conn, [cited(org, ("knowledge_source", str(own)), ("agent.memory", str(memory)))])

    their_run, other_run = await factory.run(org, user_id=person), await factory.run(org)
    async with db.connection() as conn:
        for run in (their_run, other_run):
            segment = BriefReceipt(
                org, datetime.now(UTC), "segment", "build", "run_snapshot", 9, cited=(("crm.company", "c"),),
                run_id=run, segment=0,
            )  # fmt: skip
            await insert_receipts(conn, [segment])

    receipt = await delete_source(db, kit.store, own, organization_id=org, operator=False, requested_by="t")
    assert receipt.counts.get("agent.brief_citations") == 1
    erased = await erase_user(db, org, person, requested_by="t")
    assert erased.counts.get("agent.brief_citations") == 2, "the memory's citation and their run's"
    assert erased.counts.get("agent.brief_receipts") == 1, "the receipt of the run they started"
    left = await receipts(db, org)
    assert [r["run_id"] for r in left] == [None, other_run]
    assert left[0]["refs"] == [], "what is deleted is gone from every receipt"


async def test_erasing_a_platform_organization_removes_its_receipts(
    db: Database, factory: Factory, tmp_path: Path
) -> None:
    org = await factory.organization()  # the platform's row: the erasure keeps it, and must still take the receipts
    other = await factory.organization()
    async with db.connection() as conn:
        await insert_receipts(conn, [cited(org, ("crm.company", str(uuid4()))), cited(other, ("x", "1"))])
    receipt = await erase_organization(db, LocalObjectStore(tmp_path / "o"), org, requested_by="t")
    assert await receipts(db, org) == []
    assert receipt.counts.get("agent.brief_receipts") == 1 and receipt.counts.get("agent.brief_citations") == 1
    assert len(await receipts(db, other)) == 1


async def test_receipts_past_their_retention_are_pruned(db: Database, factory: Factory) -> None:
    org = await factory.organization()
    old, new = datetime.now(UTC) - timedelta(days=31), datetime.now(UTC) - timedelta(days=29)
    async with db.connection() as conn:
        await insert_receipts(conn, [cited(org, ("x", "1"), at=old), cited(org, ("x", "2"), at=new)])
    assert await prune_receipts(db, days=30) == 1
    assert [r["refs"] for r in await receipts(db, org)] == [["x:2"]]


async def test_a_full_buffer_drops_the_new_receipt_counted_and_closing_writes_what_is_left(
    db: Database, factory: Factory
) -> None:
    from functions._brief_receipts import ReceiptRecorder
    from functions._metrics import Metrics

    org = await factory.organization()
    metrics = Metrics()
    recorder = ReceiptRecorder(db, metrics=metrics, capacity=2, batch=100, interval_s=3600)
    for n in range(5):
        recorder.record(cited(org, ("x", str(n))))
    assert recorder.pending == 2
    assert 'ac_context_brief_receipts_dropped_total{reason="overflow"} 3.0' in metrics.render().decode()
    await recorder.aclose()  # the services' shutdown: what the buffer holds is written
    assert len(await receipts(db, org)) == 2
    assert "ac_context_brief_receipts_written_total 2.0" in metrics.render().decode()


async def test_a_cli_brief_leaves_a_receipt_of_the_cli_face(
    db: Database, db_url: str, factory: Factory, tmp_path: Path, monkeypatch: Any
) -> None:
    import asyncio

    from typer.testing import CliRunner

    from functions.cli import app as cli_app
    from state.settings import get_settings

    org = await factory.organization()
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("AC_CONTEXT_DATA_DIR", str(tmp_path / "data"))

    def call() -> Any:
        get_settings.cache_clear()
        return CliRunner().invoke(cli_app, ["brief", "--org", str(org), "--query", f"q {SECRET}", "--json"])

    result = await asyncio.to_thread(call)
    get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    [receipt] = await receipts(db, org)  # the CLI's services wrote it as they closed
    assert (receipt["face"], receipt["kind"], receipt["policy"]) == ("cli", "front_door", "front_door")
    assert SECRET not in await tables_text(db)
