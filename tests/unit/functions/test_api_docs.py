"""`/docs` and `/redoc` load with no network: every asset either page references is served by the app itself.

The app is built without entering its lifespan (no database): the pages and `/openapi.json` need none.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from html.parser import HTMLParser
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi import FastAPI

from functions.app import create_app
from state.settings import load_settings


class _References(HTMLParser):
    """Every URL a page loads: script src, link href, ReDoc's spec-url, and the `url:` Swagger UI fetches."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self._script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        for attribute in ("src", "href", "spec-url"):
            value = named.get(attribute)
            if value:
                self.urls.append(value)
        self._script = tag == "script"

    def handle_data(self, data: str) -> None:
        if self._script:
            self.urls += re.findall(r"""\burl:\s*['"]([^'"]+)['"]""", data)

    def handle_endtag(self, tag: str) -> None:
        self._script = False


def references(html: str) -> list[str]:
    """The URLs the page `html` loads, in order."""
    parser = _References()
    parser.feed(html)
    return parser.urls


@pytest.fixture(scope="module")
def app() -> FastAPI:
    return create_app(load_settings(api_token="docs-test-token-0123456789"), environ={"INNGEST_DEV": "1"})


@pytest.fixture
async def http(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://docs.test") as client:
        yield client


@pytest.mark.parametrize(("page", "least"), [("/docs", 4), ("/redoc", 3)])
async def test_every_asset_the_api_page_references_is_served_by_the_app_without_a_key(
    http: httpx.AsyncClient, page: str, least: int
) -> None:
    answer = await http.get(page)
    assert answer.status_code == 200
    urls = references(answer.text)
    assert len(urls) >= least, f"{page} references {urls}"
    for url in urls:
        parts = urlsplit(url)
        assert not parts.scheme and not parts.netloc, f"{page} loads {url} from another host"
        asset = await http.get(url)  # no Authorization header: the page opens before anyone has a key
        assert asset.status_code == 200, f"{page} references {url}, which answers {asset.status_code}"
        assert asset.content, f"{page} references {url}, which is empty"
    assert not re.search(r"https?://", answer.text), f"{page} names another host"


async def test_swagger_ui_loads_its_script_styles_and_favicon_and_shows_no_validator_badge(
    http: httpx.AsyncClient,
) -> None:
    page = (await http.get("/docs")).text
    urls = references(page)
    assert any(u.endswith(".js") for u in urls) and any(u.endswith(".css") for u in urls), urls
    assert any("favicon" in u for u in urls), urls
    assert '"validatorUrl": null' in page, "the validator badge would be fetched from the validator's host"
    script = await http.get(next(u for u in urls if u.endswith(".js")))
    assert "javascript" in script.headers["content-type"]
