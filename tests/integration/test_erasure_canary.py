"""The canary test of erasure (issue 22): seed a unique marker into every text field this layer stores, erase,
then scan every table of the schemas `public` and `agent` as the service role, and every object in the store.

Part "organization": one organization created here holds its marker in its name, an API key's name, an
uploaded document (title, file name, text, and so its lexemes and postings), a synced URI re-synced twice (the
first replacement's object delete stranded by a crash after the swap, so an object no row names), and
memories; a second organization has the same with its own. After `erase_organization` the first marker is
nowhere, the second is in exactly the rows it was in before; the store's whole prefix of the organization
lists nothing (referenced or not), no folder of it is left, and no object name anywhere holds the SHA-256 of
an erased document. Then the raw files: the touched tables are ANALYZEd before the erasure (so pg_statistic
holds the marker, and skipping the erasure's rewrite of it shows), and after the erasure's own steps (rewrite
or VACUUM, ANALYZE, pg_statistic rewritten, CHECKPOINT: the receipt's `physical`), the first marker's bytes
are in no file of the test database's folder (`base/<oid>/`: heap, index, TOAST, and pg_statistic's files).
The WAL still holds it (docs/operations.md, "What an erasure leaves on disk").

Part "person": one person's marker sits in the memory texts of several revisions (superseded, forgotten and
live again), in `subject_refs` labels, in chains of two definitions, and in the organization memories about
the person's CRM record; a second person of the same organization has the same, with their own marker. After
`erase_user(..., subject=crm.person:<id>)` the first marker is nowhere (the receipt included) and the second is
still in the database and the object store, and, the memory tables ANALYZEd before the erasure, the first
marker's bytes are in no file of the database's folder (the erasure's disk step rewrote the memory tables and
pg_statistic).
"""

from __future__ import annotations

import hashlib
import secrets
from pathlib import Path
from typing import Any
from uuid import UUID

from context.sources.memory_vectors import live_memory_embedder
from functions.organization_erasure import erase_organization
from knowledge.documents.objects import LocalObjectStore, object_prefix_for
from knowledge.embedding.live_model import register_embedding_model
from knowledge.embedding.registry import FakeEmbedder
from knowledge.ingestion.core import ingest_source
from knowledge.ingestion.registration import register_upload, register_uri
from knowledge.ingestion.steps import embed_batch, mark_ready, prepare_chunks
from memory.erasure import erase_user
from memory.models import ToolInvocation
from memory.service import MemoryService
from memory.tools import FORGET_TOOL, REMEMBER_TOOL, MemoryTools
from state.db import Database
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit

TRIGGER = UUID("00000000-0000-4000-8000-00000000ca11")
MEMORY_TABLES = ("agent.memories", "agent.memory_postings", "agent.memory_embeddings")
"""The tables a person's erasure removes rows from, and so rewrites."""


def marker() -> str:
    """A unique marker: lower-case letters and digits only, so no tokenizer or stemmer splits or changes it."""
    return "zqxcanary" + secrets.token_hex(8)


async def tables_holding(db: Database, text: str) -> dict[str, int]:
    """Every table of `public` and `agent` whose rows hold `text`, with how many rows (read as the service role)."""
    found: dict[str, int] = {}
    async with db.connection() as conn:
        tables = await conn.fetch(
            "SELECT schemaname, tablename, format('%I.%I', schemaname, tablename) AS name FROM pg_tables"
            " WHERE schemaname IN ('public', 'agent') ORDER BY 1, 2"
        )
        assert {"agent.memories", "agent.removal_receipts", "public.users"} <= {t["name"] for t in tables}
        for table in tables:
            count = await conn.fetchval(
                f"SELECT count(*) FROM {table['name']} AS t WHERE t::text ILIKE $1", f"%{text}%"
            )
            if count:
                found[table["name"]] = count
    return found


def names_holding(root: Path, texts: set[str]) -> list[str]:
    """Every file or folder name in the local store that holds one of `texts`."""
    return [str(p.relative_to(root)) for p in sorted(root.rglob("*")) if any(t in p.name for t in texts)]


def objects_holding(root: Path, text: str) -> list[str]:
    """Every object in the local store whose bytes hold `text`."""
    needle = text.encode()
    return [str(p.relative_to(root)) for p in sorted(root.rglob("*")) if p.is_file() and needle in p.read_bytes()]


async def database_files_holding(db: Database, text: str) -> list[str] | None:
    """The relations whose files in the database's folder hold `text`'s bytes; None when the folder is not here."""
    async with db.connection() as conn:
        folder = Path(await conn.fetchval("SELECT current_setting('data_directory')")) / await conn.fetchval(
            "SELECT 'base/' || oid FROM pg_database WHERE datname = current_database()"
        )
        names = {
            r["node"]: r["name"]
            for r in await conn.fetch(
                "SELECT pg_relation_filenode(c.oid)::text AS node, c.oid::regclass::text AS name FROM pg_class AS c"
                " WHERE pg_relation_filenode(c.oid) IS NOT NULL"
            )
        }
    if not folder.is_dir():
        return None
    needle = text.encode()
    hits = [p.name for p in sorted(folder.iterdir()) if p.is_file() and needle in p.read_bytes()]
    return [names.get(h.split(".")[0].split("_")[0], h) for h in hits]


async def analyze(db: Database, tables: set[str]) -> None:
    """ANALYZE `tables`, so pg_statistic holds their sample values (the marker's among them: without this no
    statistics hold it and skipping the erasure's pg_statistic rewrite goes unseen), then CHECKPOINT, so the
    files hold what the buffers do."""
    async with db.connection() as conn:
        await conn.execute(f"ANALYZE {', '.join(sorted(tables))}")  # names from the test's own lists
        await conn.execute("CHECKPOINT")


async def use_fake_live_model(db: Database) -> None:
    """The fake model as the platform's live model, so the memory service stores a vector per revision."""
    await register_embedding_model(db, FakeEmbedder.model_id, dimensions=FakeEmbedder.dimensions)
    async with db.connection() as conn:
        await conn.execute("UPDATE public.knowledge_settings SET active_embedding_model = $1"
                           " WHERE organization_id IS NULL", FakeEmbedder.model_id)  # fmt: skip


async def memory_ids_holding(db: Database, text: str) -> list[UUID]:
    """The memory revisions whose text holds `text`."""
    async with db.connection() as conn:
        rows = await conn.fetch("SELECT id FROM agent.memories WHERE text LIKE $1", f"%{text}%")
    return [r["id"] for r in rows]


async def index_rows_of(db: Database, memory_ids: list[UUID]) -> dict[str, int]:
    """How many rows of each relevance index table (migrations/0101) name one of `memory_ids`; none: {}."""
    found: dict[str, int] = {}
    async with db.connection() as conn:
        for table in ("agent.memory_postings", "agent.memory_embeddings"):
            count = await conn.fetchval(
                f"SELECT count(DISTINCT memory_id) FROM {table} WHERE memory_id = ANY ($1::uuid[])", memory_ids
            )
            if count:
                found[table] = count
    return found


async def seed_person(
    db: Database, factory: Factory, tools: MemoryTools, *, org: UUID, definitions: list[UUID], mark: str
) -> tuple[UUID, UUID]:
    """A user and their CRM person record, with `mark` in every memory field this layer stores for them."""
    user = await factory.user(org)
    person = await factory.person(org)
    about = [{"kind": "crm.person", "id": str(person), "label": f"Ada {mark}"}]

    async def call(definition: UUID, name: str, args: dict[str, Any], *, trigger: bool = False) -> dict[str, Any]:
        actor: dict[str, Any] = {"trigger_id": TRIGGER} if trigger else {"user_id": user}
        run = await factory.run(org, definition_id=definition, status="running", **actor)
        inv = ToolInvocation(organization_id=org, definition_id=definition, run_id=run, **actor)
        return await tools.call(name, inv, args)

    async def remember(definition: UUID, attribute: str, scope: str, text: str, **more: Any) -> dict[str, Any]:
        trigger = bool(more.pop("trigger", False))
        args = {"attribute": attribute, "scope": scope, "text": f"{text} {mark}", **more}
        return await call(definition, REMEMBER_TOOL, args, trigger=trigger)

    for definition in definitions:
        # A user-scope chain: superseded, forgotten, remembered again.
        first = await remember(definition, "preference.tone", "user", "write tersely")
        second = await remember(definition, "preference.tone", "user", "write warmly")
        assert second["supersedes_id"] == first["memory_id"]
        await call(definition, FORGET_TOOL, {"memory_id": second["memory_id"]})
        await remember(definition, "preference.tone", "user", "write plainly")
        # A user-scope memory about the person's own CRM record, the label holding the marker too.
        await remember(definition, "observation.met", "user", "met at the fair", subject_refs=about)
        # Organization memories about the person: one forgotten, one written by a trigger.
        role = await remember(definition, "observation.role", "organization", "buys for the team", subject_refs=about)
        await call(definition, FORGET_TOOL, {"memory_id": role["memory_id"]})
        await remember(definition, "observation.budget", "organization", "budget is small", subject_refs=about,
                       trigger=True)  # fmt: skip
    return user, person


async def test_person_canary_erasure_leaves_the_marker_nowhere(db: Database, factory: Factory, tmp_path: Path) -> None:
    org = await factory.organization()
    definitions = [await factory.definition(org), await factory.definition(org)]
    await use_fake_live_model(db)
    tools = MemoryTools(MemoryService(db, embed=live_memory_embedder(db, lambda _m: FakeEmbedder())))
    gone, kept = marker(), marker()
    user, person = await seed_person(db, factory, tools, org=org, definitions=definitions, mark=gone)
    await seed_person(db, factory, tools, org=org, definitions=definitions, mark=kept)
    store = LocalObjectStore(tmp_path / "objects")
    await register_upload(db, store, organization_id=org, data=f"# Notes\n\n{kept}".encode(), filename="notes.md")
    assert set(await tables_holding(db, gone)) == {"agent.memories", "agent.memory_postings"}, (
        "the seed reached the memory rows and their relevance index"
    )
    # Per definition: three tone revisions and their tombstone (no text, no ref), the meeting, the role and its
    # tombstone (which copies the labelled ref), the budget: 8 rows, 7 of them holding the marker.
    assert (await tables_holding(db, gone))["agent.memories"] == 2 * 7
    erased_ids = await memory_ids_holding(db, gone)  # the 6 per definition with text (a tombstone has none)
    assert await index_rows_of(db, erased_ids) == {"agent.memory_postings": 2 * 6, "agent.memory_embeddings": 2 * 6}

    async with db.connection() as conn:  # what the cascade will remove, row by row, for the receipt
        postings = await conn.fetchval("SELECT count(*) FROM agent.memory_postings WHERE memory_id = ANY ($1)",
                                       erased_ids)  # fmt: skip
    await analyze(db, set(MEMORY_TABLES))
    before = await database_files_holding(db, gone)
    if before is not None:
        assert {"agent.memories", "pg_statistic"} <= set(before), f"the seed reached the files: {before}"

    receipt = await erase_user(db, org, user, subject=f"crm.person:{person}", requested_by="canary")

    assert await tables_holding(db, gone) == {}, "the erased person's marker is nowhere in the database"
    assert await index_rows_of(db, erased_ids) == {}, "no posting and no vector of an erased memory is left"
    assert await index_rows_of(db, await memory_ids_holding(db, kept)) == {
        "agent.memory_postings": 2 * 6, "agent.memory_embeddings": 2 * 6,
    }, "the second person's memories keep their index rows"  # fmt: skip
    assert objects_holding(tmp_path / "objects", gone) == []
    assert gone not in str(receipt.as_json())
    assert (await tables_holding(db, kept)).get("agent.memories") == 2 * 7, "the second person keeps every row"
    assert objects_holding(tmp_path / "objects", kept), "the scan reads the object store"
    assert dict(receipt.counts) == {
        "agent.memories": 2 * 8, "agent.memory_postings": postings, "agent.memory_embeddings": 2 * 6,
    }, "the receipt counts the index rows the revisions took with them"  # fmt: skip
    files = await database_files_holding(db, gone)
    if files is not None:  # the embedded test server's folder (not a DATABASE_URL elsewhere)
        assert files == [], f"the erased person's marker's bytes are still in the files of {files}"
        assert "agent.memories" in (await database_files_holding(db, kept) or []), "the scan reads the files"
    assert set(receipt.physical["rewritten"]) == set(MEMORY_TABLES), receipt.physical
    assert receipt.physical["statistics"] == "rewritten" and receipt.physical["checkpoint"] is True, receipt.physical
    assert await erase_user(db, org, user, subject=f"crm.person:{person}", requested_by="canary") == receipt
    async with db.connection() as conn:
        assert await conn.fetch("SELECT * FROM agent.memory_chain_problems()") == []


async def seed_organization(
    db: Database, factory: Factory, kit: Kit, *, mark: str
) -> tuple[UUID, dict[str, int], set[str]]:
    """An organization created here with `mark` in every text field the layer stores for it; where it went,
    and the SHA-256 of every document version it stored."""
    from state.api_keys import mint_key
    from state.organizations import create_organization

    org = (await create_organization(db, f"Org {mark}")).id
    await mint_key(db, organization_id=org, name=f"key {mark}")
    handbook = f"# Handbook {mark}\n\nThe {mark} refund rule.".encode()
    upload = await register_upload(
        db, kit.store, organization_id=org, data=handbook, filename=f"handbook-{mark}.md", title=f"Handbook {mark}"
    )
    await ingest_source(kit.ingestion(), upload.source_id)
    versions = [f"# Help\n\n{mark} help, version {n}".encode() for n in range(3)]
    for n, data in enumerate(versions):
        synced = await register_uri(db, kit.store, organization_id=org, uri=f"https://help.example/{mark}", data=data,
                                    media_type="text/markdown")  # fmt: skip
        if n == 1:  # the swap commits, then the process dies before the store is called: no row names the old object
            await prepare_chunks(db, kit.store, synced.source_id, FAKE)
            await embed_batch(db, synced.source_id, kit.embedders[FAKE], batch_size=100)
            assert (await mark_ready(db, synced.source_id, FAKE)).source_ready
        else:
            await ingest_source(kit.ingestion(), synced.source_id)
    definitions = [await factory.definition(org)]
    tools = MemoryTools(MemoryService(db, embed=live_memory_embedder(db, kit.lookup)))
    await seed_person(db, factory, tools, org=org, definitions=definitions, mark=mark)
    return org, await tables_holding(db, mark), {hashlib.sha256(d).hexdigest() for d in [handbook, *versions]}


async def test_organization_canary_erasure_leaves_the_marker_nowhere(
    db: Database, factory: Factory, tmp_path: Path
) -> None:
    kit = Kit(db, LocalObjectStore(tmp_path / "objects"))
    await kit.use_platform_model()
    gone, kept = marker(), marker()
    org, seeded, gone_digests = await seed_organization(db, factory, kit, mark=gone)
    other, other_seeded, _ = await seed_organization(db, factory, kit, mark=kept)
    layer_tables = {
        "agent.api_keys", "agent.knowledge_chunks", "agent.knowledge_lexemes", "agent.knowledge_postings",
        "agent.knowledge_sources", "agent.memories", "agent.memory_postings", "public.organizations",
    }  # fmt: skip
    assert layer_tables <= set(seeded), f"the seed reached every text field the layer stores: {sorted(seeded)}"
    assert objects_holding(tmp_path / "objects", gone)
    prefix = object_prefix_for(org)
    async with db.connection() as conn:
        referenced = set(await conn.fetchval(
            "SELECT array_agg(object_key) FROM agent.knowledge_sources WHERE organization_id = $1", org
        ))  # fmt: skip
    assert set(await kit.store.list_prefix(prefix)) > referenced, "the seed left an object no row names"
    assert names_holding(tmp_path / "objects", gone_digests | {gone}) == [], "no name holds a hash or the marker"

    erased_ids = await memory_ids_holding(db, gone)
    assert set(await index_rows_of(db, erased_ids)) == {"agent.memory_postings", "agent.memory_embeddings"}
    await analyze(db, set(seeded))
    before = await database_files_holding(db, gone)
    if before is not None:
        assert "pg_statistic" in before, f"ANALYZE put the marker in the statistics: {before}"

    receipt = await erase_organization(db, kit.store, org, requested_by="canary")

    left = await tables_holding(db, gone)
    assert left == {}, f"the erased organization's marker is still in {left}"
    assert await index_rows_of(db, erased_ids) == {}, "no posting and no vector of an erased memory is left"
    assert objects_holding(tmp_path / "objects", gone) == [], "its objects are gone from the store"
    assert await kit.store.list_prefix(prefix) == [], "nothing under its prefix, referenced by a row or not"
    assert not (tmp_path / "objects" / prefix).exists(), "no folder of the organization is left"
    assert names_holding(tmp_path / "objects", gone_digests) == [], "no object name holds an erased document's hash"
    assert not [k for k in receipt.object_keys if any(d in k for d in gone_digests)], "nor does the receipt"
    assert gone not in str(receipt.as_json()), "the receipt holds no content and no file name"
    assert await tables_holding(db, kept) == other_seeded, "the other organization keeps every row"
    assert objects_holding(tmp_path / "objects", kept)
    assert len(await kit.store.list_prefix(object_prefix_for(other))) == 3, (
        "the other organization keeps its objects (its stranded one too: only its own erasure or the sweep drains it)"
    )
    physical = receipt.physical
    assert set(seeded) <= set(physical["rewritten"]) | set(physical["vacuumed"]), "every table it was in is vacuumed"
    assert physical["statistics"] == "rewritten" and physical["checkpoint"] is True, physical
    assert physical["skipped"] == {}, physical
    files = await database_files_holding(db, gone)
    if files is not None:  # the embedded test server's folder (not a DATABASE_URL elsewhere)
        assert files == [], f"the erased marker's bytes are still in the files of {files}"
        assert await database_files_holding(db, kept), "the scan reads the files"
    assert await erase_organization(db, kit.store, org, requested_by="canary") == receipt
    async with db.connection() as conn:
        assert await conn.fetch("SELECT * FROM agent.memory_chain_problems()") == []
