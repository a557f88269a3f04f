"""`ac-context sources delete ID --yes [--org ORG] [--platform]`: refusals are one line with a code and change
nothing; a delete prints its receipt."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from typer.testing import CliRunner

from functions.cli import app
from knowledge.documents.objects import LocalObjectStore
from knowledge.ingestion.registration import register_upload
from state.db import Database
from state.settings import get_settings
from tests.factories import Factory
from tests.support import cli_error_line

NO_PROGRESS = re.compile(r"^$")


@pytest.fixture
def cli_env(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("AC_CONTEXT_DATA_DIR", str(tmp_path / "cli"))
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


async def _invoke(*args: str) -> Any:
    return await asyncio.to_thread(CliRunner().invoke, app, ["sources", "delete", *args])


async def _exists(db: Database, source_id: UUID) -> bool:
    async with db.connection() as conn:
        return bool(await conn.fetchval("SELECT count(*) FROM agent.knowledge_sources WHERE id = $1", source_id))


async def test_sources_delete_refuses_without_yes_another_org_and_a_platform_source_then_deletes(
    cli_env: None, db: Database, factory: Factory, tmp_path: Path
) -> None:
    org, other = await factory.organization(), await factory.organization()
    store = LocalObjectStore(tmp_path / "objects")
    mine = (await register_upload(db, store, organization_id=org, data=b"# A\n\nalpha", filename="a.md")).source_id
    shared = (await register_upload(db, store, organization_id=None, data=b"# P\n\nbeta", filename="p.md")).source_id

    cli_error_line(await _invoke(str(mine)), "confirmation_required", progress=NO_PROGRESS)
    cli_error_line(await _invoke(str(mine), "--yes", "--org", str(other)), "source_not_found", progress=NO_PROGRESS)
    line = cli_error_line(await _invoke(str(shared), "--yes"), "platform_source_forbidden", progress=NO_PROGRESS)
    assert "--platform" in line
    assert await _exists(db, mine) and await _exists(db, shared)

    done = await _invoke(str(mine), "--yes", "--org", str(org), "--json")
    assert done.exit_code == 0, done.output
    receipt = json.loads(done.stdout)
    assert receipt["target_id"] == str(mine) and receipt["counts"]["agent.knowledge_sources"] == 1
    again = cli_error_line(await _invoke(str(mine), "--yes", "--org", str(org)), "source_deleted", progress=NO_PROGRESS)
    assert receipt["id"] in again
    human = await _invoke(str(shared), "--yes", "--platform")
    assert human.exit_code == 0, human.output
    assert "receipt" in human.stdout and "agent.knowledge_sources: 1" in human.stdout
    assert not await _exists(db, mine) and not await _exists(db, shared)
