"""The `dossier` source: facts in spec order, options, the document cap, and the cross-process cache."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import pytest

from context.models import ContextPolicy, ContextSourceSpec
from context.registry import ContextSourceRegistry, PolicyPublishError
from context.sources.dossier import DossierContextSource, read_dossier, render_dossier_text
from state.db import Database
from state.scoped import record_queries
from state.settings import load_settings
from tests.integration.sources.helpers import AppFactory, request, spec
from tests.support import eventually


async def _seed(app: AppFactory) -> tuple[object, object]:
    org = await app.organization()
    user = await app.user(org, display_name="Dana", job_title="AE")
    await app.company_profile(org, company_name="Acme", industry="Software")
    await app.service(org, "Audits", description="Security audits", position=1)
    await app.service(org, "Training", position=2)
    await app.icp(org, "Mid-market SaaS", criteria="50-500 staff")
    await app.icp(org, "Clinics", position=1)
    await app.offer(org, "Pilot", price_text="EUR 5k")
    base = datetime(2025, 1, 1, tzinfo=UTC)
    for n in range(3):
        await app.document(org, f"Doc {n}", summary=f"about {n}", created_at=base + timedelta(days=n))
    await app.document(org, "Retired", active=False, created_at=base + timedelta(days=9))
    return org, user


async def test_facts_follow_the_spec_order(db: Database, app: AppFactory) -> None:
    org, user = await _seed(app)
    source = DossierContextSource(db)
    try:
        items = await source.retrieve(request(org, user=user), spec("dossier", include_user=True))
    finally:
        await source.aclose()
    assert [i.title for i in items] == [
        "Company",
        "Services",
        "Ideal customer profile Mid-market SaaS",
        "Ideal customer profile Clinics",
        "Offer Pilot",
        "User",
        "Document Doc 2",
        "Document Doc 1",
        "Document Doc 0",
        "Documents",
    ]
    assert items[0].body == "name Acme; industry Software"
    assert items[1].body == "Audits (Security audits); Training"
    assert items[-1].body == "3 active Company dossier documents (not knowledge sources)"
    assert all(i.ref is None and i.subject_key is None for i in items)


async def test_limit_caps_documents_only_and_the_count_does_not_change(db: Database, app: AppFactory) -> None:
    org, user = await _seed(app)
    source = DossierContextSource(db)
    try:
        items = await source.retrieve(request(org, user=user), spec("dossier", limit=1))
        titles = [i.title for i in items]
        assert titles[-2:] == ["Document Doc 2", "Documents"], "the newest document survives a cap of one"
        assert "User" not in titles, "include_user defaults to false"
        assert items[-1].body == "3 active Company dossier documents (not knowledge sources)"
        no_docs = await source.retrieve(request(org, user=user), spec("dossier", include_documents=False))
        assert [i.title for i in no_docs][-1] == "Offer Pilot"
        no_user = await source.retrieve(request(org), spec("dossier", include_user=True))
        assert "User" not in [i.title for i in no_user], "a subject with no user reads no user section"
        with record_queries() as log:
            assert await source.retrieve(request(org, user=user), spec("dossier", limit=0)) == []
        assert log.entries == []
    finally:
        await source.aclose()


async def test_the_person_reads_what_the_model_reads(db: Database, app: AppFactory) -> None:
    org, user = await _seed(app)
    source = DossierContextSource(db)
    try:
        items = await source.retrieve(request(org, user=user), spec("dossier", limit=2, include_user=True))
    finally:
        await source.aclose()
    dossier = await read_dossier(db, org, user_id=user, include_user=True, document_limit=2)
    assert render_dossier_text(dossier).splitlines() == [f"{i.title}: {i.body}" if i.body else i.title for i in items]


def test_no_policy_may_mark_the_dossier_required() -> None:
    registry = ContextSourceRegistry.for_publishing()
    with pytest.raises(PolicyPublishError):
        registry.validate(
            ContextPolicy(
                sources=[ContextSourceSpec(name="dossier", required=True, token_budget=100)], total_token_budget=100
            )
        )


async def _eventually(check: Callable[[], Awaitable[bool]], what: str) -> None:
    await eventually(check, what)


async def test_the_cache_serves_a_repeat_read_without_a_query(db: Database, app: AppFactory) -> None:
    org, _ = await _seed(app)
    source = DossierContextSource(db)
    try:
        await source.retrieve(request(org), spec("dossier"))
        with record_queries() as log:
            await source.retrieve(request(org), spec("dossier"))
        assert log.entries == [], "the organization part is served from the cache inside its TTL"
    finally:
        await source.aclose()


async def test_a_write_through_a_second_pool_invalidates_the_cache(db: Database, app: AppFactory) -> None:
    org, _ = await _seed(app)
    other = await Database.open(load_settings(pool_min_size=1, pool_max_size=2), url=db.url, migrate=False)
    source = DossierContextSource(db)
    try:
        before = await source.retrieve(request(org), spec("dossier"))
        assert "Offer Retainer" not in [i.title for i in before]
        async with other.connection() as conn:
            await conn.execute("INSERT INTO org_offers (organization_id, name) VALUES ($1, 'Retainer')", org)

        async def sees_it() -> bool:
            items = await source.retrieve(request(org), spec("dossier"))
            return "Offer Retainer" in [i.title for i in items]

        await _eventually(sees_it, "an offer written through another pool must evict this pool's cached dossier")
    finally:
        await source.aclose()
        await other.close()


async def test_the_dossier_cache_is_invalidated_in_a_second_process_by_a_write_in_the_first(
    db: Database, app: AppFactory
) -> None:
    org, _ = await _seed(app)
    source = DossierContextSource(db)
    try:
        await source.retrieve(request(org), spec("dossier"))
        script = (
            "import asyncio, sys, asyncpg\n"
            "async def main():\n"
            "    conn = await asyncpg.connect(sys.argv[1])\n"
            "    await conn.execute(\"UPDATE org_company_profiles SET company_name = 'Acme Renamed' "
            'WHERE organization_id = $1::uuid", sys.argv[2])\n'
            "    await conn.close()\n"
            "asyncio.run(main())\n"
        )
        done = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-c", script, db.url, str(org)], capture_output=True, timeout=60
        )
        assert done.returncode == 0, done.stderr.decode()

        async def renamed() -> bool:
            items = await source.retrieve(request(org), spec("dossier"))
            return items[0].body.startswith("name Acme Renamed")

        await _eventually(renamed, "a write in another process must evict this process's cached dossier")
        assert source.cache.evictions >= 1
    finally:
        await source.aclose()


async def test_an_expired_entry_is_read_again(db: Database, app: AppFactory) -> None:
    org, _ = await _seed(app)
    source = DossierContextSource(db, ttl_s=0.05)
    try:
        await source.retrieve(request(org), spec("dossier"))
        await asyncio.sleep(0.1)
        with record_queries() as log:
            await source.retrieve(request(org), spec("dossier"))
        assert log.entries, "an entry older than its TTL is never served"
    finally:
        await source.aclose()
