""" "Cited by" and the segment briefs page over real HTTP (issue 47, items 3 and 4): an organization key sees
its own briefs only, even for the platform source both organizations' briefs cited; another organization's
source or memory is 404; a chunk has its own page; the builds page shows builds, memo hits and rebuilds."""

from __future__ import annotations

import httpx
import pytest

from tests.factories import Factory
from tests.integration.functions.citations_seed import Cited, seed_citations
from tests.integration.functions.conftest import Service
from tests.integration.functions.console_seed import World, seed
from tests.integration.functions.test_console import Console, sign_in


@pytest.fixture
async def seeded(service: Service, factory: Factory) -> tuple[World, Cited]:
    operator = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=service.app), base_url="http://test", headers=service.auth
    )
    async with operator:
        world = await seed(service.db, service.services.object_store, factory, operator)
    return world, await seed_citations(service.db, service.services.object_store, world)


async def a_console(service: Service, world: World) -> Console:
    _, console = await sign_in(service.http, world.a_key)
    assert console is not None
    return console


async def test_cited_by_on_a_platform_source_shows_only_the_organizations_own_briefs(
    service: Service, seeded: tuple[World, Cited]
) -> None:
    w, cited = seeded
    for key, run, other in ((w.a_key, cited.a_run, cited.b_run), (w.b_key, cited.b_run, cited.a_run)):
        _, console = await sign_in(service.http, key)
        assert console is not None
        org = w.a if key == w.a_key else w.b
        page = await console.get(f"/console/orgs/{org}/sources/{cited.platform}/cited-by")
        assert page.status_code == 200, page.text
        assert str(run) in page.text and str(other) not in page.text, "never another organization's brief"
        expected = "(2 briefs of this organization)" if key == w.a_key else "(1 brief of this organization)"
        assert expected in page.text


async def test_cited_by_on_a_source_a_chunk_and_a_memory(service: Service, seeded: tuple[World, Cited]) -> None:
    w, cited = seeded
    console = await a_console(service, w)
    base = f"/console/orgs/{w.a}"
    source = await console.get(f"{base}/sources/{w.ready}/cited-by")
    assert source.status_code == 200 and "(2 briefs of this organization)" in source.text
    assert 'href="/console/orgs/' in source.text and "rebuild" in source.text and "knowledge, memory" in source.text
    chunk = await console.get(f"{base}/sources/{w.ready}/chunks/1")
    assert chunk.status_code == 200 and 'id="chunk-text"' in chunk.text and str(cited.a_run) in chunk.text
    assert "<script>" not in chunk.text.split('id="chunk-text"')[1], "the chunk's text is escaped"
    assert (await console.get(f"{base}/sources/{w.ready}/chunks/999")).status_code == 404
    memory = await console.get(f"{base}/memories/{w.a_memory}/cited-by")
    assert memory.status_code == 200 and "(2 briefs of this organization)" in memory.text
    assert f"{base}/sources/{w.ready}/cited-by" in (await console.get(f"{base}/sources/{w.ready}")).text
    assert f"{base}/memories/{w.a_memory}/cited-by" in (await console.get(f"{base}/memories/{w.a_memory}")).text


async def test_another_organizations_source_and_memory_are_404(service: Service, seeded: tuple[World, Cited]) -> None:
    w, _ = seeded
    console = await a_console(service, w)
    for path in (
        f"/console/orgs/{w.a}/sources/{w.b_source}/cited-by",
        f"/console/orgs/{w.a}/sources/{w.b_source}/chunks/1",
        f"/console/orgs/{w.a}/memories/{w.b_memory}/cited-by",
        f"/console/orgs/{w.b}/briefs",
    ):
        assert (await console.get(path)).status_code == 404, path


async def test_the_segment_briefs_page_shows_builds_memo_hits_and_rebuilds_of_its_organization(
    service: Service, seeded: tuple[World, Cited]
) -> None:
    w, cited = seeded
    console = await a_console(service, w)
    page = await console.get(f"/console/orgs/{w.a}/briefs")
    assert page.status_code == 200 and 'Segment briefs <span class="muted">(3)</span>' in page.text
    for kind in ("build", "memo hit", "rebuild"):
        assert f">{kind}</span>" in page.text
    assert str(cited.a_run) in page.text and str(cited.b_run) not in page.text
    one_run = await console.get(f"/console/orgs/{w.a}/briefs", run=str(cited.b_run))
    assert "(0)" in one_run.text, "another organization's run id shows nothing"
    assert 'href="/console/orgs/' + str(w.a) + '/briefs"' in page.text, "the nav links the page"
