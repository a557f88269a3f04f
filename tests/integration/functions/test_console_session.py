"""The console's session edges over real HTTP through the app, on the test database.

Sign-out revokes the session server-side, so a copy of the cookie taken before it is refused after it; an
expired session row is refused and the next sign-in deletes it; a sign-in whose CSRF token is not the
pre-session cookie's is 403 and starts no session; the pre-session cookie is HttpOnly, SameSite=Strict,
Path=/console and Secure in production; `next` never sends the browser out of `/console`; in production
every answer (console, API, docs, health) carries Strict-Transport-Security, in development none.
"""

from __future__ import annotations

import hashlib
import re
from http.cookies import SimpleCookie

import httpx
import pytest

from functions.console._session import COOKIE, PRE_COOKIE
from state.api_keys import mint_key, revoke_key
from tests.factories import Factory
from tests.integration.functions.conftest import TOKEN, Service
from tests.integration.functions.support import RecordingInngest
from tests.integration.functions.test_console import CSRF, Console, sign_in

HSTS = "max-age=31536000"


def _session_cookies(answer: httpx.Response) -> list[str]:
    return [v for v in answer.headers.get_list("set-cookie") if v.startswith(f"{COOKIE}=")]


def _refused(answer: httpx.Response) -> bool:
    return answer.status_code == 303 and answer.headers["location"].startswith("/console/sign-in")


async def _form(http: httpx.AsyncClient) -> tuple[str, str]:
    """A fresh sign-in form: its pre-session cookie and the token the form carries."""
    page = await http.get("/console/sign-in")
    token = CSRF.search(page.text)
    assert token is not None
    return page.cookies[PRE_COOKIE], token.group(1)


async def test_a_cookie_copied_before_sign_out_is_refused_after_it(service: Service, factory: Factory) -> None:
    org = await factory.organization("Copy Ltd")
    key = (await mint_key(service.db, organization_id=org, name="copied")).secret
    for secret, page in ((TOKEN, "/console/orgs"), (key, f"/console/orgs/{org}/sources")):
        _, console = await sign_in(service.http, secret)
        assert console is not None
        copy = Console(service.http, console.cookie, console.csrf)  # what a thief took before sign-out
        assert (await copy.get(page)).status_code == 200
        out = await console.post("/console/sign-out")
        assert out.status_code == 303 and f'{COOKIE}=""' in out.headers["set-cookie"]
        assert _refused(await copy.get(page)), "a cookie copied before sign-out opens nothing after it"
        assert _refused(await copy.post("/console/sign-out")), "nor signs out again"
    _, other = await sign_in(service.http, TOKEN)
    assert other is not None and (await other.get("/console/orgs")).status_code == 200, "others stay signed in"


async def test_a_session_ends_when_its_key_is_revoked_or_deleted(service: Service, factory: Factory) -> None:
    org = await factory.organization("Gone Ltd")
    for end in ("revoke", "delete"):
        minted = await mint_key(service.db, organization_id=org, name=end)
        _, console = await sign_in(service.http, minted.secret)
        assert console is not None and (await console.get(f"/console/orgs/{org}/sources")).status_code == 200
        if end == "revoke":
            await revoke_key(service.db, minted.key.id)
        else:  # what an organization erasure does to the organization's keys (state/erasure.py)
            await service.db.pool.execute("DELETE FROM agent.api_keys WHERE id = $1", minted.key.id)
        assert _refused(await console.get(f"/console/orgs/{org}/sources")), end


async def test_an_expired_session_row_is_refused_and_the_next_sign_in_deletes_it(service: Service) -> None:
    _, console = await sign_in(service.http, TOKEN)
    assert console is not None
    async with service.db.connection() as conn:
        await conn.execute(
            "UPDATE agent.console_sessions SET created_at = now() - interval '9 hours',"
            " expires_at = now() - interval '1 hour'"
        )
    assert _refused(await console.get("/console/orgs")), "the row's expiry ends the session"
    _, fresh = await sign_in(service.http, TOKEN)
    assert fresh is not None
    left = await service.db.pool.fetchval("SELECT count(*) FROM agent.console_sessions WHERE expires_at <= now()")
    assert left == 0, "a sign-in deletes the sessions past their expiry"
    stored = await service.db.pool.fetch("SELECT id_sha256 FROM agent.console_sessions")
    assert stored and all(console.cookie.encode() not in bytes(r["id_sha256"]) for r in stored)


async def test_a_sign_in_token_that_is_not_the_pre_session_cookies_is_403_with_no_session(service: Service) -> None:
    cookie, _ = await _form(service.http)
    _, other_token = await _form(service.http)  # a real token, of another form
    for sent_cookie, token in ((cookie, other_token), (cookie, ""), (cookie, cookie + "x"), ("", other_token)):
        answer = await service.http.post(
            "/console/sign-in", data={"key": TOKEN, "csrf": token, "next": "/console"},
            headers={"Cookie": f"{PRE_COOKIE}={sent_cookie}"} if sent_cookie else {},
        )  # fmt: skip
        assert answer.status_code == 403 and "<code>csrf_invalid</code>" in answer.text, (sent_cookie, token)
        assert _session_cookies(answer) == [], "a refused sign-in sets no session cookie"
    assert await service.db.pool.fetchval("SELECT count(*) FROM agent.console_sessions") == 0


def _pre_cookie(answer: httpx.Response) -> tuple[str, dict[str, str]]:
    [raw] = [v for v in answer.headers.get_list("set-cookie") if v.startswith(f"{PRE_COOKIE}=")]
    parts = [p.strip() for p in raw.split(";")]
    flags = {p.split("=", 1)[0].lower(): (p.split("=", 1)[1] if "=" in p else "") for p in parts[1:]}
    return raw, flags


async def test_the_pre_session_cookie_is_httponly_strict_on_console_paths_and_secure_in_production(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    for answer in (await service.http.get("/console/sign-in"), await service.http.post("/console/sign-in")):
        raw, flags = _pre_cookie(answer)
        assert "httponly" in flags and flags.get("samesite", "").lower() == "strict", raw
        assert flags.get("path") == "/console" and flags.get("max-age") == "900", raw
        assert "secure" in flags, f"production: {raw}"
    monkeypatch.setattr(service.app.state, "inngest", RecordingInngest(app_id="ac-context", is_production=False))
    raw, flags = _pre_cookie(await service.http.get("/console/sign-in"))
    assert "secure" not in flags and "httponly" in flags, f"development serves plain http: {raw}"
    assert SimpleCookie(raw)[PRE_COOKIE].value


HOSTILE_NEXT = [
    "https://evil.test/x",
    "//evil.test/x",
    "/\\evil.test",
    "/console/\\evil.test",
    "%2F%2Fevil.test",
    "/console/../..",
    "/console/..",
    "/console/%2e%2e/%2e%2e/x",
    "/console/..%2F..%2Fx",
    "/console/%2F%2Fevil.test",
    "/console//evil.test",
    "/console/\t/evil.test",
    "javascript:alert(1)",
    "/consolex/orgs",
    "",
]


@pytest.mark.parametrize("target", HOSTILE_NEXT)
async def test_next_never_leaves_the_console(service: Service, target: str) -> None:
    form = await service.http.get("/console/sign-in", params={"next": target})
    assert re.search(r'name="next" value="/console"', form.text), "the form carries the console's home instead"
    answer = await service.http.post(
        "/console/sign-in", data={"key": TOKEN, "csrf": CSRF.search(form.text).group(1), "next": target},  # type: ignore[union-attr]
        headers={"Cookie": f"{PRE_COOKIE}={form.cookies[PRE_COOKIE]}"},
    )  # fmt: skip
    assert answer.status_code == 303 and answer.headers["location"] == "/console", answer.headers.get("location")


@pytest.mark.parametrize("target", ["/console/orgs", "/console/orgs?cursor=a%2Fb&q=x%20y", "/console"])
async def test_next_keeps_a_console_path(service: Service, target: str) -> None:
    cookie, token = await _form(service.http)
    answer = await service.http.post(
        "/console/sign-in", data={"key": TOKEN, "csrf": token, "next": target},
        headers={"Cookie": f"{PRE_COOKIE}={cookie}"},
    )  # fmt: skip
    assert answer.status_code == 303 and answer.headers["location"] == target


async def test_production_sends_hsts_on_every_answer_and_development_on_none(
    service: Service, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = ["/console/sign-in", "/console/orgs", "/console/static/console.css", "/v1/organizations", "/healthz"]
    paths.append("/docs")
    for path in paths:
        answer = await service.http.get(path, headers={"Authorization": ""})
        assert answer.headers.get("strict-transport-security") == HSTS, (path, answer.status_code)
    monkeypatch.setattr(service.app.state, "inngest", RecordingInngest(app_id="ac-context", is_production=False))
    for path in paths:
        assert "strict-transport-security" not in (await service.http.get(path)).headers, path


async def test_the_session_table_holds_a_digest_of_the_session_id_never_the_key(service: Service) -> None:
    _, console = await sign_in(service.http, TOKEN)
    assert console is not None
    [row] = await service.db.pool.fetch("SELECT id_sha256, key_id FROM agent.console_sessions")
    assert row["key_id"] is None and len(bytes(row["id_sha256"])) == hashlib.sha256().digest_size
