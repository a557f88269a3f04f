"""The console in a real browser: Debian's Chromium driven by Playwright (no browser of its own), against a
real uvicorn serving the app on a free loopback port, with no network but loopback.

Each kind of key signs in through the form; every page is opened, each filter and action used, the main
controls tabbed through, and a screenshot of each page saved (`ARTIFACTS_DIR`, else the test's tmp dir).
On every page the hostile text seeded in every shown field stayed text: no script ran (`window.__pwned`,
`document.title`), the DOM holds no script, no event-handler attribute, no `javascript:` link and no
styled element, and the layout (header, main) is whole. An organization key tampering with URLs gets the
404 page for every page and action of another organization. Run only where Chromium is installed
(`.ci/run` installs it)."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
import uvicorn

from context.registry import ContextSourceRegistry
from context.sources import default_sources
from functions.app import create_app
from knowledge.documents.objects import LocalObjectStore
from state.db import Database
from state.settings import load_settings
from tests.factories import Factory
from tests.integration.functions.conftest import TOKEN, fake_embedders
from tests.integration.functions.console_seed import PAYLOADS, World, seed
from tests.integration.functions.cutting_source import CUT_TITLE, CuttingKnowledge
from tests.integration.functions.support import RecordingInngest, asgi_client, new_signing_key
from tests.support import eventually

playwright = pytest.importorskip("playwright.async_api")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")

FLAGS = [  # as scripts/check_docs_browser.py: no sandbox (root in CI), no background traffic, no network but loopback
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--proxy-server=http://127.0.0.1:9",
]  # fmt: skip

INSPECT = """() => ({
  pwned: window.__pwned === undefined ? null : String(window.__pwned),
  title: document.title,
  scripts: document.scripts.length,
  handlers: [...document.querySelectorAll('*')]
    .filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length,
  jsLinks: document.querySelectorAll('a[href^="javascript" i], [src^="javascript" i]').length,
  styled: document.querySelectorAll('[style]').length,
  images: document.images.length,
  header: document.querySelectorAll('header.top').length,
  main: document.querySelectorAll('main#main').length,
  overflow: document.documentElement.scrollWidth - window.innerWidth,
})"""


@dataclass
class Served:
    base: str
    world: World
    shots: Path
    db: Database


@pytest.fixture
async def served(db: Database, factory: Factory, tmp_path: Path, fake_live_model: str) -> AsyncIterator[Served]:
    embedders = fake_embedders()
    sources = [
        CuttingKnowledge(s) if s.name == "knowledge" else s for s in default_sources(db, embedders=embedders.get)
    ]
    key = new_signing_key()
    app = create_app(
        load_settings(api_token=TOKEN, data_dir=tmp_path),
        db=db, inngest_client=RecordingInngest(app_id="ac-context", is_production=True, signing_key=key),
        registry=ContextSourceRegistry(sources), object_store=LocalObjectStore(tmp_path / "objects"),
        embedders=embedders,
    )  # fmt: skip
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="warning"))
    shots = Path(os.environ.get("ARTIFACTS_DIR") or tmp_path) / "console-screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    async with app.router.lifespan_context(app):
        async with asgi_client(app) as http:
            http.headers["Authorization"] = f"Bearer {TOKEN}"
            world = await seed(db, app.state.slot.get().object_store, factory, http)
        serving = asyncio.create_task(server.serve())
        await eventually(lambda: asyncio.sleep(0, server.started), "uvicorn starting", every=0.01)
        try:
            yield Served(f"http://127.0.0.1:{port}", world, shots, db)
        finally:
            server.should_exit = True
            await serving


class Browser:
    """One signed-in browser context and what it checks on every page."""

    def __init__(self, page: Any, served: Served, who: str) -> None:
        self.page, self.served, self.who = page, served, who

    async def open(self, path: str, shot: str, *, status: int = 200) -> Any:
        answer = await self.page.goto(self.served.base + path)
        assert answer is not None and answer.status == status, (path, answer and answer.status)
        await self.check(shot)
        return answer

    async def check(self, shot: str) -> None:
        seen = await self.page.evaluate(INSPECT)
        where = f"{self.who} {shot} ({self.page.url})"
        assert seen["pwned"] is None and "pwned" not in seen["title"], f"a script ran on {where}: {seen}"
        assert seen["scripts"] == 0 and seen["handlers"] == 0 and seen["jsLinks"] == 0, f"markup got in: {where}"
        assert seen["styled"] == 0 and seen["images"] == 0, f"markup got in: {where} {seen}"
        assert seen["header"] == 1 and seen["main"] == 1 and seen["overflow"] <= 1, f"layout broken: {where} {seen}"
        await self.page.screenshot(path=str(self.served.shots / f"{self.who}-{shot}.png"), full_page=True)

    async def submit(self, button: str, *, status: int = 200) -> None:
        async with self.page.expect_navigation() as navigation:
            await self.page.click(button)
        answer = await navigation.value
        assert answer is not None and answer.status == status, (button, self.page.url, answer and answer.status)


async def sign_in(context: Any, served: Served, key: str, who: str) -> Browser:
    page = await context.new_page()
    browser = Browser(page, served, who)
    await browser.open("/console", "sign-in")  # no session: the sign-in page
    assert "/console/sign-in" in page.url
    await page.fill("#key", key)
    async with page.expect_navigation():
        await page.press("#key", "Enter")
    return browser


async def tab_order(page: Any, presses: int) -> list[str]:
    await page.focus("body")
    seen: list[str] = []
    for _ in range(presses):
        await page.keyboard.press("Tab")
        seen.append(
            await page.evaluate(
                "() => { const e = document.activeElement;"
                " return e.tagName + ':' + (e.id || e.textContent.trim()).slice(0, 30) }"
            )
        )
    return seen


async def test_the_operator_and_an_organization_key_use_every_page_in_chromium(served: Served) -> None:
    w = served.world
    a, b = f"/console/orgs/{w.a}", f"/console/orgs/{w.b}"
    async with playwright.async_playwright() as p:
        chromium = await p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            operator = await sign_in(await chromium.new_context(), served, TOKEN, "operator")
            page = operator.page
            assert page.url.endswith("/console/orgs")
            await operator.check("organizations")
            await page.fill("#q", "Acme")
            await operator.submit("button:has-text('Search')")
            await operator.check("organizations-filtered")
            assert await page.locator("tbody tr").count() == 1 and "Beta" not in await page.inner_text("tbody")

            await operator.open(f"{a}/sources", "sources")
            order = await tab_order(page, 16)  # the nav, then the filters, in reading order, all reachable by Tab
            wanted = ["A:Sources", "A:Search", "BUTTON:Sign out", "SELECT:status", "INPUT:q", "BUTTON:Filter"]
            assert all(w in order for w in wanted), order
            assert [order.index(w) for w in wanted] == sorted(order.index(w) for w in wanted), order
            await page.select_option("#status", "failed")
            await operator.submit("button:has-text('Filter')")
            await operator.check("sources-failed")
            assert await page.locator("tbody tr").count() == 1 and "broken" in await page.inner_text("tbody")
            await page.select_option("#status", "")
            await page.check("input[name=overdue]")
            await operator.submit("button:has-text('Filter')")
            assert "No source matches" in await page.inner_text("tbody")
            await operator.open(f"{a}/sources?q=onerror", "sources-title")
            assert await page.locator("tbody tr").count() == 1

            await operator.open(f"{a}/sources/{w.ready}", "source-ready")
            assert "40 euros per seat" in await page.inner_text("ol.chunks")
            await operator.open(f"{a}/sources/{w.failed}", "source-failed")
            await operator.submit("#retry")
            await operator.check("source-retried")
            assert "Retry requested" in await page.inner_text("main")

            for mode in ("hybrid", "dense", "lexical"):
                await operator.open(f"{a}/search", f"search-{mode}")
                await page.fill("#q", f"{PAYLOADS[0]} price per seat")
                await page.select_option("#mode", mode)
                await operator.submit("button:has-text('Search')")
                await operator.check(f"search-{mode}-hits")
                assert "40 euros per seat" in await page.inner_text("ol.hits"), mode
                assert "fused" in await page.inner_text("ol.hits")

            await operator.open(f"{a}/brief", "brief-form")
            await page.fill("#q", f"What price per seat did we agree? {PAYLOADS[2]}")
            await page.fill("#person", str(w.user))
            await page.select_option("#policy", "front_door")
            await operator.submit("button:has-text('Build')")
            await operator.check("brief-explorer")
            assert await page.locator("svg.bars rect").count() >= 2
            cut = await page.inner_text("#cut")
            assert "relevance_floor" in cut and CUT_TITLE in cut and "0.210" in cut
            assert "kept" in await page.inner_text("#explained")

            await operator.open(f"{a}/memories", "memories")
            await page.fill("#person", str(w.user))
            await operator.submit("button:has-text('Show')")
            await operator.check("memories-person")
            shown = await page.inner_text("tbody")
            assert "likes" in shown and "prefers" not in shown, "the person's own memories only"
            async with page.expect_navigation():
                await page.click("text=revisions")
            await operator.check("memory-chain")
            await operator.open(f"{a}/receipts", "receipts")
            async with page.expect_navigation():
                await page.click("tbody a >> nth=0")
            await operator.check("receipt")
            await operator.open("/console/health", "health")
            assert "ready" in await page.inner_text("#readiness")

            await operator.open(f"{a}/sources/{w.ready}", "source-before-delete")
            async with page.expect_navigation():
                await page.click("#delete")
            await operator.check("source-delete-confirm")
            await operator.submit("#confirm-delete")
            await operator.check("source-deleted-receipt")
            assert "/receipts/" in page.url and await page.inner_text("#receipt-kind") == "source"

            await operator.open(f"{a}/receipts", "erase-form")
            await page.fill("#user_id", str(w.user))
            await page.fill("#confirm-person", w.a_name)
            await operator.submit("button:has-text('Erase this person')")
            await operator.check("person-erased-receipt")
            assert await page.inner_text("#receipt-kind") == "user"
            await operator.submit("button:has-text('Sign out')")
            assert "/console/sign-in" in page.url

            org = await sign_in(await chromium.new_context(), served, w.a_key, "org-key")
            assert org.page.url.endswith(f"{a}/sources")
            await org.check("org-sources")
            for n, path in enumerate([
                f"{b}/sources", f"{b}/sources/{w.b_source}", f"{b}/search?q=price", f"{b}/brief?build=true&q=x",
                f"{b}/memories", f"{b}/memories/{w.b_memory}", f"{b}/receipts", f"{b}/receipts/{w.b_receipt}",
                f"{a}/sources/{w.b_source}", f"{a}/receipts/{w.b_receipt}", f"/console/orgs/{uuid4()}/sources",
            ]):  # fmt: skip
                await org.open(path, f"foreign-{n}", status=404)
                assert "Beta" not in await org.page.inner_text("body")
            await org.open("/console/orgs", "org-key-operator-page", status=403)
            assert await org.page.inner_text("#error-code") == "operator_scope_required"
            await org.open(f"{a}/brief?build=true&q=price&policy=outreach_planner", "org-key-policy", status=403)
            assert await org.page.inner_text("#error-code") == "policy_forbidden"
        finally:
            await chromium.close()
    assert len(list(served.shots.glob("*.png"))) >= 30
