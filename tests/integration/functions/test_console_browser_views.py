"""The console's layout in Debian's Chromium at 1280 px: every page of the seeded organization, no badge wrapped
and no table cell breaking a word across lines (`console_layout`), with a screenshot of each page.

The world is `console_seed`'s (hostile text in every shown field), served by `test_console_browser`'s fixture.
Run only where Chromium is installed.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.functions.conftest import TOKEN
from tests.integration.functions.console_layout import assert_layout_whole
from tests.integration.functions.test_console_browser import CHROMIUM, FLAGS, Served, sign_in
from tests.integration.functions.test_console_browser import served as served  # the fixture

playwright = pytest.importorskip("playwright.async_api")

WIDE = {"width": 1280, "height": 900}
"""The viewport the layout is held at."""


async def _visit(browser: Any, path: str, shot: str, *, status: int = 200) -> None:
    await browser.open(path, f"layout-{shot}", status=status)
    await assert_layout_whole(browser.page, f"{shot} ({path})")


async def test_no_badge_wraps_and_no_cell_breaks_a_word_on_any_console_page_at_1280px(served: Served) -> None:
    w = served.world
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
