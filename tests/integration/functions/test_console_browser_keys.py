"""The keys page and a retry's new state in Debian's Chromium (the harness of `test_console_browser.py`).

The operator mints a key from the keys page and sees its secret once; the list, the key's page and its
revoke page never show it again; revoking asks first and the key's page then says revoked. A failed source
retried from its page shows `pending` and the retry as a running attempt above the failed upload at once.
Every page passes the harness's checks (no script, no inline style, whole layout) and is screenshotted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.functions.conftest import TOKEN
from tests.integration.functions.test_console_browser import CHROMIUM, FLAGS, Served, sign_in
from tests.integration.functions.test_console_browser import served as served  # the fixture, reused

playwright = pytest.importorskip("playwright.async_api")
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed")


async def test_the_keys_page_shows_a_secret_once_and_revokes_and_retry_shows_the_new_state(served: Served) -> None:
    w = served.world
    async with playwright.async_playwright() as p:
        chromium = await p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            operator = await sign_in(await chromium.new_context(), served, TOKEN, "operator")
            page = operator.page
            await operator.open("/console/keys", "keys")
            await page.fill("#key-name", "browser key")
            await page.fill("#key-org", str(w.a))
            await operator.submit("#mint", status=201)
            await operator.check("key-minted")
            secret = (await page.inner_text("#secret")).strip()
            assert secret.startswith("ack_"), secret
            key_id = secret.split("_")[1]

            await operator.open("/console/keys", "keys-after-mint")
            assert key_id in await page.inner_text("#keys") and secret not in await page.content()
            await page.click(f"a:has-text('{key_id}')")
            await operator.check("key")
            assert secret not in await page.content() and "active" in await page.inner_text("#key-status")
            await page.click("#revoke")
            await operator.check("key-revoke")
            assert secret not in await page.content()
            await operator.submit("#confirm-revoke")
            await operator.check("key-revoked")
            assert "revoked" in await page.inner_text("#key-status") and await page.locator("#revoke").count() == 0

            a = f"/console/orgs/{w.a}"
            await operator.open(f"{a}/sources/{w.failed}", "source-failed-attempts")
            await operator.submit("#retry")
            await operator.check("source-retried-attempts")
            meta = await page.inner_text("dl.meta")
            assert "pending" in meta and "failed" not in meta.split("Failure reason")[0], meta
            causes = await page.locator("#attempts td.cause").all_inner_texts()
            assert causes[0] == "retry" and "running" in await page.inner_text("#attempts")
            assert await page.locator("#retry").count() == 0, "a pending source offers no retry (the one retry rule)"
            wrapped = await page.evaluate(
                "() => [...document.querySelectorAll('#attempts td:not(.reason)')].filter(td => {"
                " const r = document.createRange(); r.selectNodeContents(td);"
                " return r.getBoundingClientRect().height > 2 * parseFloat(getComputedStyle(td).fontSize) })"
                ".map(td => td.textContent)"
            )
            assert wrapped == [], f"an attempts cell wraps: {wrapped}"
        finally:
            await chromium.close()
