"""A small world for the console tests: two organizations with keys, and hostile text in every field shown.

Organization A holds a ready source (its title, filename and chunks full of markup), a failed source whose
stored reason is markup, a live memory of markup, and a receipt; organization B holds a source and a
receipt of its own, the foreign ids an organization key of A must never reach.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

import httpx

from knowledge.documents.objects import ObjectStore
from knowledge.ingestion.core import Ingestion, ingest_source
from knowledge.ingestion.registration import register_upload
from state.api_keys import mint_key
from state.db import Database
from tests.factories import Factory
from tests.integration.functions.conftest import fake_embedders
from tests.integration.memory.helpers import raw_memory

PWN = "window.__pwned=1;document.title='pwned'"
PAYLOADS = [
    f"<script>{PWN}</script>",
    f'<img src=x onerror="{PWN}">',
    f"javascript:{PWN}",
    f'<svg onload="{PWN}"><script>{PWN}</script></svg>',
    "</td></tr></table><div style='position:fixed;inset:0;background:red'>broken",
    f'"><script>{PWN}</script><a href="javascript:{PWN}">x</a>',
]
HOSTILE = " ".join(PAYLOADS)
"""Every payload in one text."""


@dataclass
class World:
    """What the console tests open, tamper with and act on."""

    a: UUID
    a_name: str
    b: UUID
    a_key: str
    b_key: str
    ready: UUID
    failed: UUID
    a_receipt: UUID
    b_source: UUID
    b_receipt: UUID
    user: UUID
    a_memory: UUID
    b_memory: UUID


async def _upload(db: Database, store: ObjectStore, org: UUID, text: str, filename: str, *, ingest: bool) -> UUID:
    registered = await register_upload(db, store, organization_id=org, data=text.encode(), filename=filename)
    if ingest:
        await ingest_source(Ingestion(db, store, fake_embedders().get), registered.source_id)
    return registered.source_id


async def seed(db: Database, store: ObjectStore, factory: Factory, operator: httpx.AsyncClient) -> World:
    """Two organizations as described above; receipts come from real deletes over `/v1/` (`operator`)."""
    a_name = f"Acme {PAYLOADS[0]}"
    a, b = await factory.organization(a_name), await factory.organization("Beta Ltd")
    user = await factory.user(a)
    definition = await factory.definition(a)
    document = f"# Pricing {PAYLOADS[1]}\n\n{HOSTILE}\n\nWe agreed a price of 40 euros per seat for pricing tiers.\n"
    ready = await _upload(db, store, a, document, f"{PAYLOADS[1]}.md", ingest=True)
    failed = await _upload(db, store, a, "# Broken\n\nnothing", "broken.md", ingest=False)
    async with db.connection() as conn:
        await conn.execute(
            "UPDATE agent.knowledge_sources SET status = 'failed', failure_reason = $2, pending_since = NULL"
            " WHERE id = $1",
            failed,
            f"extraction_failed: {HOSTILE}",
        )
    a_memory = await raw_memory(db, org=a, definition=definition, text=f"prefers {HOSTILE}")
    await raw_memory(db, org=a, definition=definition, scope="user", user=user, text=f"likes {PAYLOADS[3]}")
    b_memory = await raw_memory(db, org=b, definition=await factory.definition(b), text="Beta's secret memory")
    gone = await _upload(db, store, a, "# Old\n\nold", "old.md", ingest=False)
    b_source = await _upload(db, store, b, "# Beta pricing\n\nBeta's price is 99", "beta.md", ingest=True)
    b_gone = await _upload(db, store, b, "# Beta old\n\nold", "beta-old.md", ingest=False)
    receipts = []
    for org, source in ((a, gone), (b, b_gone)):
        answer = await operator.delete(f"/v1/knowledge/sources/{source}", params={"organization_id": str(org)})
        assert answer.status_code == 200, answer.text
        receipts.append(UUID(answer.json()["id"]))
    a_key = (await mint_key(db, organization_id=a, name="console a")).secret
    b_key = (await mint_key(db, organization_id=b, name="console b")).secret
    return World(
        a, a_name, b, a_key, b_key, ready, failed, receipts[0], b_source, receipts[1], user, a_memory, b_memory
    )
