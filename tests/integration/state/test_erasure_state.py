"""The state half of an organization erasure (issue 22): API keys go, every process hears the dossier
eviction, and the organization row goes only where this deployment created it."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg

from state.api_keys import mint_key, page_keys
from state.db import Database
from state.erasure import erase_organization_state, organization_created_here
from state.organizations import create_organization, organization_exists
from state.receipts import begin_receipt, finish_receipt
from tests.factories import Factory
from tests.support import HANG_S


async def _erase(db: Database, org: uuid.UUID) -> dict[str, int]:
    async with db.connection() as conn:
        receipt = await begin_receipt(conn, "organization", organization_id=org, target_id=org, requested_by="test")
    await erase_organization_state(db, org, receipt_id=receipt.id)
    async with db.connection() as conn:
        return dict((await finish_receipt(conn, receipt.id)).counts)


async def test_an_organization_created_here_loses_its_row_and_keys(db: Database) -> None:
    ours = await create_organization(db, "ours")
    other = await create_organization(db, "other")
    assert await organization_created_here(db, ours.id), "org create marks the organization as created here"
    await mint_key(db, organization_id=ours.id, name="k")
    kept = await mint_key(db, organization_id=other.id, name="k")
    counts = await _erase(db, ours.id)
    assert counts == {
        "agent.api_keys": 1,
        "agent.created_organizations": 1,
        "agent.organization_counts": 1,  # the list totals' row (0117) cascades with its organization
        "public.organizations": 1,
    }
    assert not await organization_exists(db, ours.id)
    assert await organization_exists(db, other.id), "another organization is untouched"
    assert [k.id for k in (await page_keys(db, organization_id=other.id)).items] == [kept.key.id]


async def test_a_platform_owned_organization_keeps_its_row(db: Database, factory: Factory) -> None:
    org = await factory.organization()
    assert not await organization_created_here(db, org), "a row the platform made is not marked"
    counts = await _erase(db, org)
    assert counts == {}, "nothing of the layer's was there; the row is the application's"
    assert await organization_exists(db, org)


async def test_every_process_hears_the_dossier_eviction(db: Database, factory: Factory) -> None:
    org = await factory.organization()
    heard: asyncio.Queue[str] = asyncio.Queue()
    listener = await asyncpg.connect(db.url)
    try:
        await listener.add_listener("ac_dossier_changed", lambda *args: heard.put_nowait(str(args[3])))
        await _erase(db, org)
        assert await asyncio.wait_for(heard.get(), HANG_S) == str(org), "the dossier cache of every process is evicted"
    finally:
        await listener.close()
