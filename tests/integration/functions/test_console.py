"""The console's rules over real HTTP through the app (httpx ASGI), on the test database.

Sign-in accepts exactly the keys `/v1/` accepts, into an HttpOnly, SameSite=Strict, Secure, expiring
cookie that never holds the key; every answer carries the strict CSP and no framing; a POST without the
session's CSRF token changes nothing; an organization key reaches no page and no action of another
organization (404, foreign object ids included) and no operator page (403); a revoked key ends its
session; hostile text is escaped in the HTML. The browser tests (`test_console_browser.py`) check the
same pages in Chromium."""

from __future__ import annotations

import re
from uuid import UUID, uuid4

import httpx
import pytest

from functions.console import sources as console_sources
from functions.console._session import COOKIE
from knowledge.embedding.live_model import begin_switch
from state.api_keys import mint_key, parse_key, revoke_key
from tests.factories import Factory
from tests.integration.functions.conftest import TOKEN, Service
from tests.integration.functions.console_seed import PAYLOADS, World, seed

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
EXPECTED_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
"""The console's policy written out here, not read from the module, so a weakened constant fails the test."""


class Console:
    """One signed-in console user over the app (the Secure cookie is carried by hand over plain ASGI HTTP)."""

    def __init__(self, http: httpx.AsyncClient, cookie: str, csrf: str) -> None:
        self.http, self.cookie, self.csrf = http, cookie, csrf

    async def get(self, path: str, **params: str) -> httpx.Response:
        return await self.http.get(path, params=params, headers={"Cookie": f"{COOKIE}={self.cookie}"})

    async def post(self, path: str, data: dict[str, str] | None = None, *, csrf: bool = True) -> httpx.Response:
        form = {**(data or {}), **({"csrf": self.csrf} if csrf else {})}
        return await self.http.post(path, data=form, headers={"Cookie": f"{COOKIE}={self.cookie}"})


async def sign_in(http: httpx.AsyncClient, key: str) -> tuple[httpx.Response, Console | None]:
    form = await http.get("/console/sign-in")
    token = CSRF.search(form.text)
    assert token is not None
    answer = await http.post(
        "/console/sign-in", data={"key": key, "csrf": token.group(1), "next": "/console"},
        headers={"Cookie": f"ac_console_pre={form.cookies['ac_console_pre']}"},
    )  # fmt: skip
    if answer.status_code != 303:
        return answer, None
    cookie = re.search(rf"{COOKIE}=([^;]+)", answer.headers["set-cookie"])
    assert cookie is not None
    page = await http.get("/console/orgs", headers={"Cookie": f"{COOKIE}={cookie.group(1)}"})
    session_csrf = CSRF.search(page.text)
    assert session_csrf is not None
    return answer, Console(http, cookie.group(1), session_csrf.group(1))


@pytest.fixture
async def world(service: Service, factory: Factory, tmp_path: object) -> World:
    operator = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=service.app), base_url="http://test", headers=service.auth
    )
    async with operator:
        return await seed(service.db, service.services.object_store, factory, operator)


def _secret(key: str) -> str:
    parsed = parse_key(key)
    assert parsed is not None
    return parsed[1]


def code_of(answer: httpx.Response) -> str:
    found = re.search(r'<code id="error-code">([^<]+)</code>', answer.text)
    return found.group(1) if found else f"(no error code; status {answer.status_code})"


async def test_sign_in_takes_the_keys_v1_takes_into_a_cookie_that_never_holds_the_key(
    service: Service, world: World
) -> None:
    wrong, _ = await sign_in(service.http, "ack_nope_nope")
    assert wrong.status_code == 401 and "auth_invalid" in wrong.text
    no_csrf = await service.http.post("/console/sign-in", data={"key": TOKEN})
    assert no_csrf.status_code == 403 and "csrf_invalid" in no_csrf.text
    assert not any(v.startswith(f"{COOKIE}=") for v in no_csrf.headers.get_list("set-cookie")), "no session"
    answer, console = await sign_in(service.http, TOKEN)
    assert answer.status_code == 303 and console is not None
    cookie = answer.headers["set-cookie"].lower()
    for attribute in ("httponly", "samesite=strict", "secure", "max-age=28800", "path=/console"):
        assert attribute in cookie, attribute
    assert TOKEN not in answer.headers["set-cookie"] and TOKEN not in console.cookie
    _, org_console = await sign_in(service.http, world.a_key)
    assert org_console is not None and _secret(world.a_key) not in org_console.cookie
    operator_key = (await mint_key(service.db, organization_id=None, name="console operator")).secret
    _, key_console = await sign_in(service.http, operator_key)
    assert key_console is not None and (await key_console.get("/console/health")).status_code == 200
    assert _secret(operator_key) not in key_console.cookie

    flipped = ("B" if console.cookie[0] == "A" else "A") + console.cookie[1:]  # the payload's first byte changes
    tampered = Console(service.http, flipped, console.csrf)
    assert (await tampered.get("/console/orgs")).status_code == 303, "a tampered cookie is no session"
    out = await console.post("/console/sign-out")
    assert out.status_code == 303 and f'{COOKIE}=""' in out.headers["set-cookie"]


async def test_every_console_answer_carries_the_strict_csp_and_refuses_framing(service: Service, world: World) -> None:
    _, console = await sign_in(service.http, TOKEN)
    assert console is not None
    for path in ("/console/sign-in", "/console/orgs", f"/console/orgs/{world.a}/sources", "/console/static/console.css",
                 f"/console/orgs/{uuid4()}/sources"):  # fmt: skip
        answer = await console.get(path)
        assert answer.headers["content-security-policy"] == EXPECTED_CSP, path
        assert answer.headers["x-frame-options"] == "DENY", path
    assert "content-security-policy" not in (await service.http.get("/healthz")).headers


async def test_a_post_without_the_sessions_csrf_token_changes_nothing(service: Service, world: World) -> None:
    _, console = await sign_in(service.http, world.a_key)
    assert console is not None
    before = await service.db.pool.fetchval("SELECT attempts FROM agent.knowledge_sources WHERE id = $1", world.failed)
    base = f"/console/orgs/{world.a}"
    for path, data in (
        (f"{base}/sources/{world.failed}/retry", {}),
        (f"{base}/sources/{world.ready}/delete", {}),
        (f"{base}/erase/person", {"user_id": str(world.user), "confirm": world.a_name}),
        ("/console/sign-out", {}),
    ):
        refused = await console.post(path, data, csrf=False)
        assert (refused.status_code, code_of(refused)) == (403, "csrf_invalid"), path
        forged = await console.post(path, {**data, "csrf": "forged"}, csrf=False)
        assert (forged.status_code, code_of(forged)) == (403, "csrf_invalid"), path
    after = await service.db.pool.fetchval("SELECT attempts FROM agent.knowledge_sources WHERE id = $1", world.failed)
    assert after == before
    assert (await console.get(f"{base}/sources/{world.ready}")).status_code == 200, "the source is still there"


async def test_an_organization_key_reaches_nothing_of_another_organization(service: Service, world: World) -> None:
    _, console = await sign_in(service.http, world.a_key)
    assert console is not None
    a, b = f"/console/orgs/{world.a}", f"/console/orgs/{world.b}"
    pages = [
        f"{b}/sources", f"{b}/sources/{world.b_source}", f"{b}/sources/{world.b_source}/delete", f"{b}/search",
        f"{b}/brief", f"{b}/memories", f"{b}/memories/{world.b_memory}", f"{b}/receipts",
        f"{b}/receipts/{world.b_receipt}", f"{a}/sources/{world.b_source}", f"{a}/sources/{world.b_source}/delete",
        f"{a}/receipts/{world.b_receipt}", f"{a}/memories/{world.b_memory}",
        f"/console/orgs/{uuid4()}/sources",
    ]  # fmt: skip
    for path in pages:
        answer = await console.get(path, q="pricing", build="true")
        assert answer.status_code == 404, (path, answer.status_code, code_of(answer))
        assert "Beta" not in answer.text, path
    actions = [
        (f"{b}/sources/{world.b_source}/retry", {}), (f"{b}/sources/{world.b_source}/delete", {}),
        (f"{a}/sources/{world.b_source}/retry", {}), (f"{a}/sources/{world.b_source}/delete", {}),
        (f"{b}/erase/person", {"user_id": str(uuid4()), "confirm": "Beta Ltd"}),
        (f"{b}/erase/organization", {"confirm": "Beta Ltd"}),
    ]  # fmt: skip
    for path, data in actions:
        answer = await console.post(path, data)
        assert answer.status_code in (403, 404), (path, answer.status_code, code_of(answer))
        assert answer.status_code == 404 or code_of(answer) == "operator_scope_required", path
    for path in ("/console/orgs", "/console/health"):
        answer = await console.get(path)
        assert (answer.status_code, code_of(answer)) == (403, "operator_scope_required"), path
    async with service.db.connection() as conn:
        alive = await conn.fetchval("SELECT count(*) FROM agent.knowledge_sources WHERE id = $1", world.b_source)
    assert alive == 1 and (await console.get(f"{a}/sources")).status_code == 200


async def test_a_revoked_key_ends_its_session_at_the_next_request(service: Service, world: World) -> None:
    _, console = await sign_in(service.http, world.a_key)
    assert console is not None
    assert (await console.get(f"/console/orgs/{world.a}/sources")).status_code == 200
    parsed = parse_key(world.a_key)
    assert parsed is not None
    await revoke_key(service.db, parsed[0])
    answer = await console.get(f"/console/orgs/{world.a}/sources")
    assert answer.status_code == 303 and answer.headers["location"].startswith("/console/sign-in")


async def test_hostile_text_is_escaped_in_every_page_that_shows_it(service: Service, world: World) -> None:
    _, console = await sign_in(service.http, TOKEN)
    assert console is not None
    a = f"/console/orgs/{world.a}"
    for path, params in (
        (f"{a}/sources", {}), (f"{a}/sources/{world.ready}", {}), (f"{a}/sources/{world.failed}", {}),
        (f"{a}/search", {"q": PAYLOADS[0] + " pricing"}), (f"{a}/memories", {}), (f"{a}/memories/{world.a_memory}", {}),
        (f"{a}/brief", {"q": PAYLOADS[0] + " pricing", "build": "true"}), ("/console/orgs", {}),
    ):  # fmt: skip
        answer = await console.get(path, **params)
        assert answer.status_code == 200, (path, code_of(answer))
        for payload in PAYLOADS[:2]:
            assert payload not in answer.text, (path, payload)
        assert "&lt;script&gt;" in answer.text, path
    for path in (f"{a}/search", f"{a}/brief"):
        nul = await console.get(path, q="price\x00", build="true")
        assert (nul.status_code, code_of(nul)) == (422, "text_invalid"), path


async def test_a_source_is_retried_and_deleted_through_the_console_with_its_receipt(
    service: Service, world: World
) -> None:
    _, console = await sign_in(service.http, world.a_key)
    assert console is not None
    a = f"/console/orgs/{world.a}"
    retried = await console.post(f"{a}/sources/{world.failed}/retry")
    assert retried.status_code == 303, code_of(retried)
    again = await console.post(f"{a}/sources/{world.ready}/retry")
    assert (again.status_code, code_of(again)) == (409, "source_not_failed")
    confirm = await console.get(f"{a}/sources/{world.ready}/delete")
    assert confirm.status_code == 200 and 'id="confirm-delete"' in confirm.text
    deleted = await console.post(f"{a}/sources/{world.ready}/delete")
    assert deleted.status_code == 303 and "/receipts/" in deleted.headers["location"]
    receipt = await console.get(deleted.headers["location"])
    assert receipt.status_code == 200 and 'id="receipt-kind">source<' in receipt.text
    gone = await console.post(f"{a}/sources/{world.ready}/delete")
    assert gone.status_code in (404, 410), code_of(gone)


async def test_erasure_asks_for_the_organizations_name_and_a_repeat_shows_its_receipt(
    service: Service, world: World
) -> None:
    _, console = await sign_in(service.http, TOKEN)
    assert console is not None
    a = f"/console/orgs/{world.a}"
    wrong = await console.post(f"{a}/erase/person", {"user_id": str(world.user), "confirm": "Acme"})
    assert (wrong.status_code, code_of(wrong)) == (422, "confirmation_mismatch")
    person = await console.post(f"{a}/erase/person", {"user_id": str(world.user), "confirm": world.a_name})
    assert person.status_code == 303, code_of(person)
    refused = await console.post(f"{a}/erase/organization", {"confirm": "nope"})
    assert (refused.status_code, code_of(refused)) == (422, "confirmation_mismatch")
    erased = await console.post(f"{a}/erase/organization", {"confirm": world.a_name})
    assert erased.status_code == 303, code_of(erased)
    first = erased.headers["location"]
    repeat = await console.post(f"{a}/erase/organization", {"confirm": world.a_name})
    assert repeat.status_code == 303 and repeat.headers["location"] == first
    shown = await console.get(first)
    assert shown.status_code == 200 and 'id="receipt-kind">organization<' in shown.text
    assert UUID(first.rsplit("/", 1)[1])


async def test_lists_page_by_cursor_and_filter_and_a_foreign_cursor_is_refused(
    service: Service, world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, console = await sign_in(service.http, world.a_key)
    assert console is not None
    a = f"/console/orgs/{world.a}"
    monkeypatch.setattr(console_sources, "PAGE_SIZE", 1)
    first_page = await console.get(f"{a}/sources")
    link = re.search(r'<a rel="next" href="\?([^"]+)"', first_page.text)
    assert link is not None and "(2)" in first_page.text, "one row of two, and a link to the next page"
    second_page = await service.http.get(
        f"{a}/sources?{link.group(1).replace('&amp;', '&')}", headers={"Cookie": f"{COOKIE}={console.cookie}"}
    )
    ids = [set(re.findall(r"/sources/([0-9a-f-]{36})\"", p.text)) for p in (first_page, second_page)]
    assert ids[0] and ids[1] and not ids[0] & ids[1] and ids[0] | ids[1] == {str(world.ready), str(world.failed)}
    assert 'rel="next"' not in second_page.text
    monkeypatch.undo()
    failed = await console.get(f"{a}/sources", status="failed")
    assert failed.status_code == 200 and ">broken</a>" in failed.text and str(world.ready) not in failed.text
    titled = await console.get(f"{a}/sources", q="onerror")  # the ready source's title is its hostile filename
    assert str(world.ready) in titled.text and ">broken</a>" not in titled.text
    first = await console.get(f"{a}/sources/{world.ready}")
    assert first.status_code == 200 and "40 euros per seat" in first.text and 'id="stage">ready' in first.text
    bad = await console.get(f"{a}/sources", cursor="bm90LWEtY3Vyc29y")
    assert (bad.status_code, code_of(bad)) == (422, "invalid_cursor")
    chain = await console.get(f"{a}/memories/{world.a_memory}")
    assert chain.status_code == 200 and "live" in chain.text


async def test_health_shows_a_running_switch_and_the_operator_cancels_it(service: Service, world: World) -> None:
    await begin_switch(service.db, world.a, "test/hash-32", dimensions=32)
    _, org_console = await sign_in(service.http, world.a_key)
    assert org_console is not None
    refused = await org_console.post("/console/health/switch/cancel", {"organization_id": str(world.a)})
    assert (refused.status_code, code_of(refused)) == (403, "operator_scope_required")
    _, console = await sign_in(service.http, TOKEN)
    assert console is not None
    shown = await console.get("/console/health", organization_id=str(world.a))
    assert shown.status_code == 200 and "switching to <code>test/hash-32</code>" in shown.text
    assert "Cancel the switch" in shown.text and 'id="readiness"' in shown.text
    cancelled = await console.post("/console/health/switch/cancel", {"organization_id": str(world.a)})
    assert cancelled.status_code == 303, code_of(cancelled)
    after = await console.get(cancelled.headers["location"])
    assert "no switch running" in after.text and "test/hash-32" not in after.text
    bad = await console.get("/console/health", organization_id="not-a-uuid")
    assert (bad.status_code, code_of(bad)) == (422, "invalid_request")
