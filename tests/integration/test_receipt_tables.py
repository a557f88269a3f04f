"""A receipt counts every table its removal touched: the row counts of every table of `public` and `agent` are
read before and after a source delete and an organization erasure, and each table whose count changed must be
on the receipt with exactly that many rows (the source-level statistics of migrations/0092, the object
delete queue of 0098 and the source attempts of 0120 included). A new table a removal writes and does not
count fails here by name."""

from __future__ import annotations

from pathlib import Path
from uuid import UUID, uuid4

from functions.organization_erasure import erase_organization
from knowledge.documents.objects import LocalObjectStore
from knowledge.ingestion.core import ingest_source
from knowledge.ingestion.delete import delete_source
from knowledge.ingestion.registration import register_upload, register_uri
from knowledge.ingestion.steps import embed_batch, mark_ready, prepare_chunks
from memory.service import MemoryService
from memory.tools import MemoryTools
from state.db import Database
from state.receipts import Receipt
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit
from tests.integration.test_erasure_canary import seed_person

NOT_REMOVED = {"agent.removal_receipts"}  # the record of the removal itself


async def cite_everything(db: Database, org: UUID) -> None:
    """A brief receipt (migration 0122) of `org` citing each of its memory revisions and knowledge sources, so
    every removal below has citations to take (and a removal that misses them fails by the table's name)."""
    from datetime import UTC, datetime

    from state.brief_receipts import BriefReceipt, insert_receipts

    async with db.connection() as conn:
        memories = await conn.fetch("SELECT id FROM agent.memories WHERE organization_id = $1", org)
        sources = await conn.fetch("SELECT id FROM agent.knowledge_sources WHERE organization_id = $1", org)
        cited = tuple(("agent.memory", str(r["id"])) for r in memories) + tuple(
            ("knowledge_source", str(r["id"])) for r in sources
        )
        receipt = BriefReceipt(org, datetime.now(UTC), "http", "front_door", "front_door", 10, cited=cited)
        assert (await insert_receipts(conn, [receipt]))[1] == len(cited)


async def row_counts(db: Database) -> dict[str, int]:
    """The row count of every table of `public` and `agent`, read as the service role."""
    async with db.connection() as conn:
        tables = await conn.fetch(
            "SELECT format('%I.%I', schemaname, tablename) AS name FROM pg_tables"
            " WHERE schemaname IN ('public', 'agent') ORDER BY 1"
        )
        return {t["name"]: await conn.fetchval(f"SELECT count(*) FROM {t['name']}") for t in tables}


def removed(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Per table whose row count changed, how many rows left it."""
    return {t: before[t] - after.get(t, 0) for t in before if before[t] != after.get(t, 0) and t not in NOT_REMOVED}


def counted_tables(receipt: Receipt) -> dict[str, int]:
    """The receipt's counts of tables (not of the object store)."""
    return {name: n for name, n in receipt.counts.items() if "." in name}


async def seed_knowledge(kit: Kit, org: UUID, *, word: str) -> tuple[UUID, UUID]:
    """An ingested upload, and a synced URI with a ready replaced version (its object delete stranded in the queue)
    and a pending newer version: every knowledge table an organization can hold rows in."""
    upload = await register_upload(
        kit.db, kit.store, organization_id=org, data=f"# Handbook\n\nThe {word} refund rule.".encode(),
        filename="handbook.md",
    )  # fmt: skip
    await ingest_source(kit.ingestion(), upload.source_id)
    uri = f"https://help.example/{word}"

    async def sync(text: str) -> UUID:
        reg = await register_uri(kit.db, kit.store, organization_id=org, uri=uri, data=text.encode(),
                                 media_type="text/markdown")  # fmt: skip
        return reg.source_id

    first = await sync(f"# Help\n\n{word} help, first")
    await ingest_source(kit.ingestion(), first)
    second = await sync(f"# Help\n\n{word} help, second")
    await prepare_chunks(kit.db, kit.store, second, FAKE)
    await embed_batch(kit.db, second, kit.embedders[FAKE], batch_size=100)
    assert (await mark_ready(kit.db, second, FAKE)).source_ready  # no store: the replaced object stays queued
    await sync(f"# Help\n\n{word} help, third")  # pending
    return upload.source_id, second


async def test_a_source_delete_counts_every_table_it_touched(db: Database, factory: Factory, tmp_path: Path) -> None:
    kit = Kit(db, LocalObjectStore(tmp_path / "objects"))
    await kit.use_platform_model()
    org = await factory.organization()
    await seed_knowledge(kit, org, word="keep")
    upload, synced = await seed_knowledge(kit, org, word="gone")
    await cite_everything(db, org)
    for source in (upload, synced):
        before = await row_counts(db)
        receipt = await delete_source(db, kit.store, source, organization_id=org, operator=False, requested_by="t")
        changed = removed(before, await row_counts(db))
        assert {"agent.knowledge_source_terms", "agent.knowledge_lexical_sources", "agent.brief_citations"} <= set(
            changed
        )
        assert "agent.knowledge_source_attempts" in changed, "a source's attempts leave with it (migrations/0120)"
        assert counted_tables(receipt) == changed, "the receipt counts every table the delete touched, exactly"


async def erase_seeded_organization(db: Database, factory: Factory, tmp_path: Path) -> tuple[Receipt, dict[str, int]]:
    """Two organizations created here with keys, knowledge and memories; erase the first; its receipt and
    the rows that left each table."""
    from state.api_keys import mint_key
    from state.organizations import create_organization

    kit = Kit(db, LocalObjectStore(tmp_path / "objects"))
    await kit.use_platform_model()
    orgs = [(await create_organization(db, f"Org {n}")).id for n in range(2)]
    for n, org in enumerate(orgs):
        await mint_key(db, organization_id=org, name=f"key {n}")
        await seed_knowledge(kit, org, word=f"word{n}")
        definitions = [await factory.definition(org)]
        await seed_person(db, factory, MemoryTools(MemoryService(db)), org=org, definitions=definitions, mark=f"m{n}")
        await cite_everything(db, org)
    before = await row_counts(db)
    receipt = await erase_organization(db, kit.store, orgs[0], requested_by="t")
    return receipt, removed(before, await row_counts(db))


async def test_an_organization_erasure_counts_every_table_it_touched(
    db: Database, factory: Factory, tmp_path: Path
) -> None:
    receipt, changed = await erase_seeded_organization(db, factory, tmp_path)
    statistics = {"agent.knowledge_source_terms", "agent.knowledge_lexical_sources", "agent.knowledge_lexical_chunks"}
    assert statistics | {
        "agent.knowledge_object_deletes",
        "agent.knowledge_source_attempts",
        "agent.brief_receipts",
        "agent.brief_citations",
    } <= set(changed)
    assert counted_tables(receipt) == changed, "the receipt counts every table the erasure touched, exactly"
    cascaded = {"agent.created_organizations", "agent.definitions", "agent.runs", "public.crm_people", "public.users"}
    assert cascaded <= set(counted_tables(receipt)), "the organization row's cascade is counted, table by table"


async def test_stray_statistics_rows_go_with_the_scope_and_are_counted(
    db: Database, factory: Factory, tmp_path: Path
) -> None:
    """Rows of the source-level statistics that outlived their chunks (a fault) leave with the erased scope,
    counted: their lexemes are the organization's words."""
    kit = Kit(db, LocalObjectStore(tmp_path / "objects"))
    await kit.use_platform_model()
    org = await factory.organization()
    await seed_knowledge(kit, org, word="strayseed")
    async with db.connection() as conn:
        scope = await conn.fetchval("SELECT id FROM agent.knowledge_lexical_scopes WHERE organization_id = $1", org)
        ghost = uuid4()
        await conn.execute(
            "INSERT INTO agent.knowledge_lexical_chunks VALUES (-1, $1, $2, 3);"
            " INSERT INTO agent.knowledge_lexical_sources VALUES ($2, $1, 1, 3);"
            " INSERT INTO agent.knowledge_source_terms VALUES ($2, $1, 'zqxstray', 3)"
            .replace("$1", str(scope)).replace("$2", f"'{ghost}'")
        )  # fmt: skip
    before = await row_counts(db)
    receipt = await erase_organization(db, kit.store, org, requested_by="t")
    changed = removed(before, await row_counts(db))
    assert counted_tables(receipt) == changed
    async with db.connection() as conn:
        assert not await conn.fetchval("SELECT count(*) FROM agent.knowledge_source_terms WHERE lexeme = 'zqxstray'")
