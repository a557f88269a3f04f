"""A service whose DATABASE_URL it cannot use starts anyway: every route answers 503 `database_unavailable` in
the error envelope, and /readyz 503 with the reason in one line naming host:port, no traceback, no password.
Real connects: a port nothing listens on, a host that does not resolve, and the test server refusing a role
that does not exist (a refused login was a crash at start before: it is no network error)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit, urlunsplit
from uuid import uuid4

import pytest

from functions.app import create_app
from state.settings import load_settings
from tests.integration.functions.conftest import TOKEN, fake_embedders
from tests.integration.functions.support import RecordingInngest, asgi_client, new_signing_key
from tests.support import free_port

SECRET = "s3cr3t-pw"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _as_user(url: str, user: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{user}:{SECRET}@{parts.netloc.rpartition('@')[2]}"))


async def _answers(url: str, tmp_path: Path) -> tuple[dict[str, object], dict[str, object]]:
    settings = load_settings(database_url=url, api_token=TOKEN, data_dir=tmp_path, database_retry_interval_s=30)
    client = RecordingInngest(app_id="ac-context", is_production=True, signing_key=new_signing_key())
    app = create_app(settings, inngest_client=client, embedders=fake_embedders())
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        ready = await http.get("/readyz")
        route = await http.get("/v1/knowledge/sources", params={"organization_id": str(uuid4())}, headers=AUTH)
    assert route.status_code == 503, route.text
    assert ready.status_code == 503, ready.text
    assert ready.json()["error"]["code"] == "database_unavailable", "readiness answers in the error envelope"
    return ready.json()["error"]["details"], route.json()


@pytest.mark.parametrize(
    ("host", "why"),
    [("127.0.0.1:{port}", "connection refused"), ("nohost.invalid:5432", "its host name does not resolve")],
    ids=["refused port", "unresolvable host"],
)
async def test_an_unreachable_database_url_answers_503_and_readyz_says_why_in_one_line(
    tmp_path: Path, host: str, why: str
) -> None:
    host = host.format(port=free_port())
    ready, route = await _answers(f"postgresql://u:{SECRET}@{host}/db", tmp_path)
    assert route["error"]["code"] == "database_unavailable"  # type: ignore[index]
    assert ready["status"] == "database_unavailable" and ready["database"] is False
    reason = str(ready["reason"])
    assert reason == f"cannot reach the database at {host} ({why})"
    assert "\n" not in reason and "Traceback" not in reason and SECRET not in reason


async def test_a_server_that_refuses_the_login_answers_503_instead_of_failing_the_start(
    tmp_path: Path, pg_server_url: str
) -> None:
    ready, route = await _answers(_as_user(pg_server_url, "nobody_here"), tmp_path)
    assert route["error"]["code"] == "database_unavailable"  # type: ignore[index]
    reason = str(ready["reason"])
    assert "refused the connection" in reason and 'role "nobody_here" does not exist' in reason, reason
    assert SECRET not in reason
