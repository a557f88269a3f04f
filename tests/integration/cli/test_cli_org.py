"""`--org` takes an organization id in canonical UUID text only (issue 21, item 6): every other spelling is a
usage error naming `--org` (exit 2, the value never echoed), before any database is opened."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from typer.testing import CliRunner

from functions.cli import app
from state.settings import get_settings
from tests.factories import Factory
from tests.unit.state.lookalikes import look_alike_uuids


def test_a_respelled_org_is_a_usage_error_naming_the_option() -> None:
    runner = CliRunner()
    for case, spelled in look_alike_uuids("8f21c0de-0000-4000-8000-00000000000a").items():
        for args in (["sources", "list", "--org", spelled], ["brief", "--org", spelled, "--query", "hi"]):
            result = runner.invoke(app, args)
            assert result.exit_code == 2, (case, result.output)
            flat = " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.output).split())  # rich boxes and wraps the message
            assert "Invalid value for '--org': not a valid UUID: it must be a UUID in canonical form" in flat, case
            assert spelled.strip() not in flat, "the value is never echoed"


async def test_the_canonical_org_reaches_the_command(
    db_url: str, factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    org = await factory.organization()
    monkeypatch.setenv("DATABASE_URL", db_url)
    get_settings.cache_clear()
    try:  # in a thread: the command runs its own event loop
        result = await asyncio.to_thread(CliRunner().invoke, app, ["sources", "list", "--org", str(org), "--json"])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == []
