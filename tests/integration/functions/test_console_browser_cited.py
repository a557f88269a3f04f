""" "Cited by" on a chunk and a memory, and the segment briefs page, in Debian's Chromium (issue 47, items 3 and
4): the pages the links lead to, with the console's every-page checks (no script ran, no markup got in, the
layout whole) and a screenshot each (`ARTIFACTS_DIR`, else the test's tmp dir)."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge.documents.objects import LocalObjectStore
from tests.integration.functions.citations_seed import seed_citations
from tests.integration.functions.test_console_browser import CHROMIUM, FLAGS, Served, served, sign_in

__all__ = ["served"]  # the fixture, imported so pytest finds it here

playwright = pytest.importorskip("playwright.async_api")
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")


async def test_cited_by_on_a_chunk_and_a_memory_and_the_segment_briefs_page_in_chromium(served: Served) -> None:
    w = served.world
    store = LocalObjectStore(served.shots.parent / "cited-objects")
    cited = await seed_citations(served.db, store, w)
    async with playwright.async_playwright() as p:
        chromium = await p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            b = await sign_in(
                await chromium.new_context(viewport={"width": 1280, "height": 900}), served, w.a_key, "cited"
            )
            page = b.page
            await b.open(f"/console/orgs/{w.a}/sources/{w.ready}", "source")
            async with page.expect_navigation():
                await page.click("ol.chunks li:first-child a")
            await b.check("chunk-cited-by")
            assert await page.inner_text("#cited-by") == "Cited by (2 briefs of this organization)"
            rows = await page.locator("#cited-by-table tbody tr").count()
            assert rows == 2 and str(cited.b_run) not in await page.content()

            await b.open(f"/console/orgs/{w.a}/memories/{w.a_memory}", "memory")
            async with page.expect_navigation():
                await page.click("#cited-by-link")
            await b.check("memory-cited-by")
            assert await page.locator("#cited-by-table tbody tr").count() == 2

            await b.open(f"/console/orgs/{w.a}/sources/{cited.platform}/cited-by", "platform-cited-by")
            assert str(cited.b_run) not in await page.content(), "never another organization's brief"

            async with page.expect_navigation():
                await page.click("nav >> text=Segment briefs")
            await b.check("segment-briefs")
            kinds = await page.locator("#segment-briefs tbody tr td:nth-child(3)").all_inner_texts()
            assert kinds == ["rebuild", "memo hit", "build"]
            async with page.expect_navigation():
                await page.click(f"#segment-briefs a >> text={cited.a_run}")
            await b.check("segment-briefs-one-run")
            await b.open(f"/console/orgs/{w.b}/briefs", "foreign-briefs", status=404)
        finally:
            await chromium.close()
