"""The console's layout in Debian's Chromium at 1280 px: every page of the seeded organization, no badge wrapped
and no table cell breaking a word across lines (`console_layout`), with a screenshot of each page.

The world is `console_seed`'s (hostile text in every shown field), served by `test_console_browser`'s fixture.
A second test serves a plain organization (no hostile text) and saves the README's screenshot of the brief
explorer, `readme-brief-explorer.png`, copied to `docs/console-brief-explorer.png` by hand when the page
changes. Run only where Chromium is installed.
"""

from __future__ import annotations

import asyncio
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from context.models import ContextRequest, ContextSourceSpec, CutCandidate
from context.registry import ContextSourceRegistry
from context.sources import default_sources
from functions.app import create_app
from knowledge.documents.objects import LocalObjectStore
from state.db import Database
from state.settings import load_settings
from tests.factories import Factory
from tests.integration.functions.conftest import TOKEN, fake_embedders
from tests.integration.functions.console_layout import assert_layout_whole
from tests.integration.functions.console_seed import PAYLOADS, _upload
from tests.integration.functions.cutting_source import CuttingKnowledge
from tests.integration.functions.support import RecordingInngest, new_signing_key
from tests.integration.functions.test_console_browser import CHROMIUM, FLAGS, Served, sign_in
from tests.integration.functions.test_console_browser import served as served  # the fixture
from tests.integration.memory.helpers import raw_memory
from tests.support import eventually

playwright = pytest.importorskip("playwright.async_api")

WIDE = {"width": 1280, "height": 900}
"""The viewport the layout is held at."""


async def _visit(browser: Any, path: str, shot: str, *, status: int = 200) -> None:
    await browser.open(path, f"layout-{shot}", status=status)
    await assert_layout_whole(browser.page, f"{shot} ({path})")


async def test_no_badge_wraps_and_no_cell_breaks_a_word_on_any_console_page_at_1280px(served: Served) -> None:
    w = served.world
    async with served.db.connection() as conn:  # the chain gets two more revisions: a change, then its tombstone
        definition = await conn.fetchval("SELECT definition_id FROM agent.memories WHERE id = $1", w.a_memory)
    later = await raw_memory(
        served.db, org=w.a, definition=definition, supersedes=w.a_memory, text=f"prefers coffee {PAYLOADS[4]}",
        expires_at=datetime(2027, 3, 1, tzinfo=UTC),
    )  # fmt: skip
    await raw_memory(served.db, org=w.a, definition=definition, supersedes=later, text=None, forgotten=True)
    a = f"/console/orgs/{w.a}"
    brief = f"{a}/brief?build=true&q=What+price+per+seat+did+we+agree&person={w.user}&policy=front_door"
    pages = [
        ("/console/orgs", "organizations"), (f"{a}/sources", "sources"), (f"{a}/sources?status=failed", "failed"),
        (f"{a}/sources/{w.ready}", "source-ready"), (f"{a}/sources/{w.failed}", "source-failed"),
        (f"{a}/search?q=price+per+seat&mode=hybrid", "search"), (brief, "brief-explorer"),
        (f"{a}/memories", "memories"), (f"{a}/memories/{w.a_memory}", "memory-chain"), (f"{a}/people", "people"),
        (f"{a}/receipts", "receipts"), (f"{a}/receipts/{w.a_receipt}", "receipt"), ("/console/health", "health"),
    ]  # fmt: skip
    async with playwright.async_playwright() as p:
        chromium = await p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            operator = await sign_in(await chromium.new_context(viewport=WIDE), served, TOKEN, "operator")
            for path, shot in pages:
                await _visit(operator, path, shot)
            await _visit(operator, f"{a}/sources/{w.b_memory}", "not-found", status=404)
        finally:
            await chromium.close()


PRICING = (
    "# Pilot pricing\n\nThe pilot runs for 90 days at 40 euros per seat per month, billed annually after the pilot. "
    "Volume discounts start at 200 seats.\n\n## Support\n\nPilot customers get a named success manager and a "
    "weekly check-in.\n"
)
FAQ = "# Security FAQ\n\nData is encrypted at rest and in transit. Single sign-on comes with the enterprise plan.\n"


class PlainCut(CuttingKnowledge):
    """The real knowledge source, reporting one plain candidate it cut (for the README's screenshot)."""

    async def retrieve_explained(
        self, request: ContextRequest, spec: ContextSourceSpec
    ) -> tuple[list[Any], list[CutCandidate]]:
        cut = CutCandidate(
            source=self.name, kind="knowledge", ref=None, title="Security FAQ (part 1)", tokens=61, rank=3,
            score=0.18, rule="relevance_floor", message="fused score 0.18 under the relevance floor 0.30",
        )  # fmt: skip
        return await self.retrieve(request, spec), [cut]


async def test_the_readme_screenshot_of_the_brief_explorer_on_a_plain_organization(
    db: Database, factory: Factory, tmp_path: Path, fake_live_model: str
) -> None:
    embedders = fake_embedders()
    sources = [PlainCut(s) if s.name == "knowledge" else s for s in default_sources(db, embedders=embedders.get)]
    store = LocalObjectStore(tmp_path / "objects")
    app = create_app(
        load_settings(api_token=TOKEN, data_dir=tmp_path), db=db, object_store=store, embedders=embedders,
        inngest_client=RecordingInngest(app_id="ac-context", is_production=True, signing_key=new_signing_key()),
        registry=ContextSourceRegistry(sources),
    )  # fmt: skip
    org = await factory.organization("Acme Robotics")
    user, definition = await factory.user(org), await factory.definition(org)
    await _upload(db, store, org, PRICING, "pilot-pricing.md", ingest=True)
    await _upload(db, store, org, FAQ, "security-faq.md", ingest=True)
    text = "Acme's buyer prefers annual invoices in euros."
    await raw_memory(db, org=org, definition=definition, scope="user", user=user, text=text)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="warning"))
    shots = Path(os.environ.get("ARTIFACTS_DIR") or tmp_path) / "console-screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    async with app.router.lifespan_context(app):
        serving = asyncio.create_task(server.serve())
        await eventually(lambda: asyncio.sleep(0, server.started), "uvicorn starting", every=0.01)
        try:
            async with playwright.async_playwright() as p:
                chromium = await p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
                try:
                    page = await (await chromium.new_context(viewport=WIDE)).new_page()
                    base = f"http://127.0.0.1:{port}"
                    await page.goto(f"{base}/console/sign-in")
                    await page.fill("#key", TOKEN)
                    async with page.expect_navigation():
                        await page.press("#key", "Enter")
                    query = "What+pricing+did+we+agree+for+the+pilot%3F"
                    answer = await page.goto(f"{base}/console/orgs/{org}/brief?build=true&q={query}&person={user}")
                    assert answer is not None and answer.status == 200
                    assert "40 euros per seat" in await page.inner_text("#brief-text")
                    assert "Security FAQ (part 1)" in await page.inner_text("#cut")
                    await assert_layout_whole(page, "the README's brief explorer")
                    await page.screenshot(path=str(shots / "readme-brief-explorer.png"), full_page=True)
                finally:
                    await chromium.close()
        finally:
            server.should_exit = True
            await serving
