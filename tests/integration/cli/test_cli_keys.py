"""`ac-context keys mint|list|revoke` (issue 21): a key is minted for one organization or as an operator key,
its secret printed once and stored only as a hash; a listing never shows a secret; a revoked key is
refused by the next authentication."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from functions.cli import app
from state.api_keys import authenticate_key
from state.db import Database
from state.settings import get_settings
from tests.factories import Factory
from tests.support import keeping_the_session_loop


@pytest.fixture
def cli_env(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("DATABASE_URL", db_url)
    get_settings.cache_clear()
    try:
        with keeping_the_session_loop():
            yield
    finally:
        get_settings.cache_clear()


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


async def test_keys_are_minted_listed_and_revoked_from_the_cli(cli_env: None, db: Database, factory: Factory) -> None:
    org = await factory.organization()
    status, out, err = await asyncio.to_thread(invoke, "keys", "mint", "--org", str(org), "--name", "billing", "--json")
    assert status == 0, err
    minted = json.loads(out)
    assert minted["scope"] == "organization" and minted["organization_id"] == str(org) and minted["name"] == "billing"
    holder = await authenticate_key(db, minted["secret"])
    assert holder is not None and holder.organization_id == org and not holder.revoked

    status, out, err = await asyncio.to_thread(invoke, "keys", "mint", "--operator")
    assert status == 0, err
    secret = next(line for line in out.splitlines() if line.startswith("ack_"))
    assert "only time the secret is shown" in out
    operator = await authenticate_key(db, secret)
    assert operator is not None and operator.scope == "operator" and operator.organization_id is None

    status, out, err = await asyncio.to_thread(invoke, "keys", "list", "--json")
    assert status == 0, err
    listed = json.loads(out)
    assert {k["id"] for k in listed} == {minted["id"], operator.id}
    assert minted["secret"] not in out and secret not in out, "a listing never shows a secret"
    status, out, _ = await asyncio.to_thread(invoke, "keys", "list", "--org", str(org), "--json")
    assert [k["id"] for k in json.loads(out)] == [minted["id"]]

    status, out, err = await asyncio.to_thread(invoke, "keys", "revoke", minted["id"], "--json")
    assert status == 0 and json.loads(out)["revoked_at"] is not None, err
    revoked = await authenticate_key(db, minted["secret"])
    assert revoked is not None and revoked.revoked, "the next authentication refuses a revoked key"
    status, out, _ = await asyncio.to_thread(invoke, "keys", "list", "--active", "--json")
    assert [k["id"] for k in json.loads(out)] == [operator.id]


@pytest.mark.parametrize(
    ("args", "status", "expected"),
    [
        (["keys", "mint"], 2, "give exactly one of --org ORG or"),
        (["keys", "mint", "--operator", "--org", "00000000-0000-4000-8000-0000000000a1"], 2, "exactly one"),
        (["keys", "mint", "--org", "00000000-0000-4000-8000-00000000dead"], 1, "error: organization_not_found:"),
        (["keys", "revoke", "ffffffffffffffff"], 1, "error: api_key_not_found:"),
        (["keys", "revoke", "not-an-id"], 1, "error: api_key_not_found:"),
    ],
)
async def test_the_keys_commands_refuse_bad_input_in_one_line(
    cli_env: None, db: Database, args: list[str], status: int, expected: str
) -> None:
    code, out, err = await asyncio.to_thread(invoke, *args)
    assert code == status and expected in out + err, out + err
    if status == 1:
        assert len(err.strip().splitlines()) == 1, "a project error is one line"
    async with db.connection() as conn:
        assert await conn.fetchval("SELECT count(*) FROM agent.api_keys") == 0


def test_keys_help_lists_the_three_commands() -> None:
    result = CliRunner().invoke(app, ["keys", "--help"])
    assert result.exit_code == 0
    assert all(name in result.stdout for name in ("mint", "list", "revoke"))
