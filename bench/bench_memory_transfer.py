"""What moving memory costs (issue 46, item 4): an organization's export, and its import into another.

Data shape: one organization with `CHAINS` memory chains of one agent definition, each of three revisions
(the first superseded twice), every fourth chain then forgotten (a tombstone), half of them user-scope for
one of `PEOPLE` members, a quarter about a CRM company; the text is a sentence of 12 to 40 words drawn from a
fixed vocabulary. The importing organization holds the same people (by email), the definition (by name) and
the companies (by id: the exporter's rows are moved to it, as after an erasure). The live model is the
platform default (WordLlama, on this machine's CPU).

Measured in one run: the export (`memory.transfer.export_lines`, every line joined) and the import
(`memory.transfer.import_memories`) twice, into two organizations: with no embedder, then with the live
model embedding the heads (the model loaded beforehand), so the embedding's share is the difference; each as
wall time and this process's CPU time, with rates per revision. The database runs on the same machine, so
wall time includes its work. Nothing is asserted.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
from pathlib import Path
from typing import Any
from uuid import UUID

from bench._scratch import bench_server, scratch_database
from context.sources.memory_vectors import live_memory_embedder
from memory.transfer import export_lines, import_memories
from state.db import Database
from state.migrate import apply_migrations
from state.organizations import create_organization
from state.settings import load_settings

CHAINS = 2000
PEOPLE = 20
WORDS = (
    "buys through a committee of three prefers email answers in german budget frozen until the next quarter "
    "meets on mondays asks for tables uses the enterprise plan renewal due in march champion is the cto "
    "procurement needs two weeks security review required pilot with ten seats expanding to europe"
).split()


def run() -> dict[str, Any]:
    """Seed, export, import twice (with and without the embedder); the figures."""
    return asyncio.run(_run())


async def _run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ac-bench-transfer-") as tmp, bench_server(Path(tmp) / "pg") as server:
        async with scratch_database(server, "ac_bench_transfer") as url:
            await apply_migrations(url)
            db = await Database.open(load_settings(pool_min_size=2, pool_max_size=4), url=url, migrate=False)
            try:
                return await _measure(db)
            finally:
                await db.close()


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(12, 40)))


async def _seed(db: Database, org: UUID, rng: random.Random) -> tuple[list[UUID], int]:
    async with db.connection() as conn:
        agent = await conn.fetchval(
            "INSERT INTO agent.definitions (organization_id, definition_kind, name, status)"
            " VALUES ($1, 'agent', 'Account agent', 'published') RETURNING id", org,
        )  # fmt: skip
        people = []
        for i in range(PEOPLE):
            people.append(await conn.fetchval(
                "INSERT INTO public.users (organization_id, email, display_name) VALUES ($1, $2, $3) RETURNING id",
                org, f"person{i}@example.test", f"Person {i}",
            ))  # fmt: skip
        companies = [
            await conn.fetchval(
                "INSERT INTO public.crm_companies (organization_id, name) VALUES ($1, $2) RETURNING id", org, f"Co {i}"
            )
            for i in range(CHAINS // 4)
        ]
        revisions = 0
        for n in range(CHAINS):
            user = people[n % PEOPLE] if n % 2 else None
            attribute = f"observation.fact_{n}"
            refs: list[dict[str, str]] = []
            if user is not None:
                key = f"user:{user}:{attribute}"
            elif n % 4 == 0:
                refs = [{"kind": "crm.company", "id": str(companies[n // 4])}]
                key = f"crm.company:{companies[n // 4]}:{attribute}"
            else:
                key = f"organization:{org}:{attribute}"
            previous = None
            for depth in range(3):
                previous = await conn.fetchval(
                    "INSERT INTO agent.memories (organization_id, definition_id, scope, user_id, scope_owner_id,"
                    " subject_key, text, subject_refs, supersedes_id, created_at)"
                    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8::jsonb, $9, now() - make_interval(days => $10))"
                    " RETURNING id",
                    org, agent, "user" if user else "organization", user, user or org, key, _sentence(rng), refs,
                    previous, 3 - depth,
                )  # fmt: skip
                revisions += 1
            if n % 4 == 3:
                await conn.execute(
                    "INSERT INTO agent.memories (organization_id, definition_id, scope, user_id, scope_owner_id,"
                    " subject_key, subject_refs, supersedes_id, forgotten_at)"
                    " SELECT organization_id, definition_id, scope, user_id, scope_owner_id, subject_key,"
                    " subject_refs, id, now() FROM agent.memories WHERE id = $1", previous,
                )  # fmt: skip
                revisions += 1
    return companies, revisions


async def _target(db: Database, name: str, companies: list[UUID]) -> UUID:
    org = (await create_organization(db, name)).id
    async with db.connection() as conn:
        await conn.execute(
            "INSERT INTO agent.definitions (organization_id, definition_kind, name, status)"
            " VALUES ($1, 'agent', 'Account agent', 'published')", org,
        )  # fmt: skip
        for i in range(PEOPLE):
            await conn.execute(
                "INSERT INTO public.users (organization_id, email, display_name) VALUES ($1, $2, $3)",
                org, f"person{i}@example.test", f"Person {i}",
            )  # fmt: skip
        await conn.execute(
            "UPDATE public.crm_companies SET organization_id = $1 WHERE id = ANY($2::uuid[])", org, companies
        )
    return org


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(start: tuple[float, float], revisions: int) -> dict[str, float]:
    wall, cpu = time.perf_counter() - start[0], time.process_time() - start[1]
    return {
        "wall_s": round(wall, 3), "cpu_s": round(cpu, 3),
        "revisions_per_s": round(revisions / wall, 1), "cpu_ms_per_1000_revisions": round(1e6 * cpu / revisions, 1),
    }  # fmt: skip


async def _measure(db: Database) -> dict[str, Any]:
    rng = random.Random(46)
    source = (await create_organization(db, "exporter")).id
    companies, revisions = await _seed(db, source, rng)

    start = _clock()
    data = "".join([line async for line in export_lines(db, source)]).encode()
    exported = _since(start, revisions)

    bare_org = await _target(db, "importer without vectors", companies)
    start = _clock()
    bare = await import_memories(db, bare_org, data, requested_by="bench", embed=None)
    imported_bare = _since(start, revisions)

    first = await _target(db, "importer", companies)  # the companies move on, as after another erasure
    embed = live_memory_embedder(db)
    await embed(first, ["warm the model"])  # the model's load is not the import's cost
    start = _clock()
    receipt = await import_memories(db, first, data, requested_by="bench", embed=embed)
    imported = _since(start, revisions)
    return {
        "chains": CHAINS,
        "revisions": revisions,
        "file_bytes": len(data),
        "export": exported,
        "import_with_live_model": {**imported, "counts": dict(receipt.counts)},
        "import_without_vectors": {**imported_bare, "counts": dict(bare.counts)},
    }
