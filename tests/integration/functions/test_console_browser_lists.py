"""Sorting and paging both ways in a real browser (issue 47, item 1): Debian's Chromium through Playwright
against uvicorn serving the app (the `served` fixture of test_console_browser), an organization key signed in.

On the memories list, clicking the Subject header sorts by subject ascending (the header says so), clicking
it again descending; Next walks every page, Previous walks back to the first, First returns to it; every page
holds exactly the rows of one full sorted read. The sources list sorts by its Title header. Each step is
screenshotted into `ARTIFACTS_DIR` (console-screenshots/lists-*.png) and checked as every console page is (no
script, no styled element, the layout whole)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from functions.console import memories as console_memories
from functions.console import sources as console_sources
from memory.pages import page_memories
from tests.integration.functions import test_console_browser as console_browser
from tests.integration.functions.test_console_browser import CHROMIUM, FLAGS, Browser, Served, playwright, sign_in
from tests.integration.memory.helpers import raw_memory

pytestmark = console_browser.pytestmark
served = console_browser.served  # the fixture: uvicorn serving the app over the seeded world

PAGE = 4


async def _ids(page: Any) -> list[str]:
    hrefs = await page.eval_on_selector_all("td a[href*='/memories/']", "els => els.map(e => e.getAttribute('href'))")
    return [re.sub(r".*/memories/", "", h) for h in hrefs]


async def _click(browser: Browser, selector: str, shot: str) -> None:
    async with browser.page.expect_navigation():
        await browser.page.click(selector)
    await browser.check(shot)


async def test_sorting_and_both_paging_directions_in_chromium(served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    w = served.world
    async with served.db.connection() as conn:
        definition = await conn.fetchval("SELECT id FROM agent.definitions WHERE organization_id = $1 LIMIT 1", w.a)
    for i in range(9):
        await raw_memory(served.db, org=w.a, definition=definition, attribute=f"observation.s{(i * 4) % 9}",
                         text=f"browser fact {i}")  # fmt: skip
    monkeypatch.setattr(console_memories, "PAGE_SIZE", PAGE)
    monkeypatch.setattr(console_sources, "PAGE_SIZE", 1)
    full = await page_memories(served.db, organization_id=w.a, sort="subject", direction="asc", limit=1000)
    ascending = [str(m.id) for m in full.items]
    assert len(ascending) > 2 * PAGE

    async with playwright.async_playwright() as p:
        chromium = await p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            browser = await sign_in(await chromium.new_context(viewport={"width": 1280, "height": 900}), served,
                                    w.a_key, "lists")  # fmt: skip
            await browser.open(f"/console/orgs/{w.a}/memories", "memories-default")
            await _click(browser, "th a.sort:has-text('Subject')", "memories-by-subject")
            assert await browser.page.get_attribute("th[aria-sort]", "aria-sort") == "ascending"
            assert "sort=subject" in browser.page.url
            seen = await _ids(browser.page)
            assert await browser.page.query_selector("a[rel=prev]") is None, "the first page has no previous page"
            n = 0
            while await browser.page.query_selector("a[rel=next]") is not None:
                n += 1
                await _click(browser, "a[rel=next]", f"memories-by-subject-next-{n}")
                seen += await _ids(browser.page)
            assert seen == ascending, "next pages show the sorted list exactly, once each"
            back = await _ids(browser.page)
            while await browser.page.query_selector("a[rel=prev]") is not None:
                n -= 1
                await _click(browser, "a[rel=prev]", f"memories-by-subject-prev-{n}")
                back = await _ids(browser.page) + back
            assert back == ascending, "previous pages show it back exactly"
            await _click(browser, "a[rel=next]", "memories-by-subject-again")
            await _click(browser, "a[rel=next]", "memories-by-subject-third")
            await _click(browser, "a[rel=first]", "memories-by-subject-first")
            assert await _ids(browser.page) == ascending[:PAGE], "First returns to the first page, same sort"
            await _click(browser, "th a.sort:has-text('Subject')", "memories-by-subject-desc")
            assert await browser.page.get_attribute("th[aria-sort]", "aria-sort") == "descending"
            assert await _ids(browser.page) == ascending[::-1][:PAGE]
            await browser.open(f"/console/orgs/{w.a}/sources", "sources-default")
            await _click(browser, "th a.sort:has-text('Title')", "sources-by-title")
            first_title = await browser.page.inner_text("tbody tr td a")
            await _click(browser, "a[rel=next]", "sources-by-title-next")
            second_title = await browser.page.inner_text("tbody tr td a")
            assert first_title <= second_title, "titles ascend across pages"
            await _click(browser, "a[rel=prev]", "sources-by-title-prev")
            assert await browser.page.inner_text("tbody tr td a") == first_title
            await browser.open(f"/console/orgs/{w.a}/memories?sort=text", "memories-unknown-sort", status=422)
            assert "unknown_sort" in await browser.page.content()
        finally:
            await chromium.close()
