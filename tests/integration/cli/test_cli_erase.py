"""`ac-context erase user` and `ac-context receipts show|list` (issue 22): an erasure needs --yes, erases the
person's memories and prints the receipt, the same receipt when repeated; every refusal is one line with its
code, exit 1 (a usage error exit 2), and changes nothing."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import Iterator
from functools import partial
from typing import Any
from uuid import UUID

import pytest
from typer.testing import CliRunner

from functions.cli import app
from state.db import Database
from state.settings import get_settings
from tests.factories import Factory
from tests.integration.memory.helpers import raw_memory
from tests.support import cli_error_line, keeping_the_session_loop

project_error = partial(cli_error_line, progress=re.compile(r"^$"))


@pytest.fixture
def cli_env(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("DATABASE_URL", db_url)
    get_settings.cache_clear()
    try:
        with keeping_the_session_loop():
            yield
    finally:
        get_settings.cache_clear()


async def invoke(*args: str) -> Any:
    return await asyncio.to_thread(CliRunner().invoke, app, list(args))


async def memory_count(db: Database, org: UUID) -> int:
    async with db.connection() as conn:
        return int(await conn.fetchval("SELECT count(*) FROM agent.memories WHERE organization_id = $1", org))


async def test_erase_user_needs_yes_then_erases_and_repeats_the_receipt(
    cli_env: None, db: Database, factory: Factory
) -> None:
    org = await factory.organization()
    user, other = await factory.user(org), await factory.user(org)
    definition = await factory.definition(org)
    person = await factory.person(org)
    root = await raw_memory(db, org=org, definition=definition, scope="user", user=user, text="first")
    await raw_memory(db, org=org, definition=definition, scope="user", user=user, text="second", supersedes=root)
    await raw_memory(db, org=org, definition=definition, refs=[{"kind": "crm.person", "id": str(person)}], text="x")
    await raw_memory(db, org=org, definition=definition, scope="user", user=other, text="theirs")
    args = ["erase", "user", str(user), "--org", str(org), "--subject", f"crm.person:{person}"]

    refused = await invoke(*args)
    line = project_error(refused, "confirmation_required")
    assert "--yes" in line
    assert await memory_count(db, org) == 4, "without --yes nothing is erased"

    done = await invoke(*args, "--yes", "--json")
    assert done.exit_code == 0, done.output
    receipt = json.loads(done.stdout)
    assert receipt["counts"] == {"agent.memories": 3, "agent.memory_postings": 3} and receipt["status"] == "complete"
    assert receipt["requested_by"].startswith("cli")
    assert await memory_count(db, org) == 1

    again = await invoke(*args, "--yes", "--json")
    assert again.exit_code == 0 and json.loads(again.stdout) == receipt, "a repeat answers the same receipt"

    human = await invoke(*args, "--yes")
    assert human.exit_code == 0 and receipt["id"] in human.stdout and "agent.memories: 3" in human.stdout

    shown = await invoke("receipts", "show", receipt["id"], "--json")
    assert shown.exit_code == 0 and json.loads(shown.stdout) == receipt
    listed = await invoke("receipts", "list", "--org", str(org), "--json")
    assert listed.exit_code == 0 and [r["id"] for r in json.loads(listed.stdout)] == [receipt["id"]]
    table = await invoke("receipts", "list", "--limit", "5")
    assert table.exit_code == 0 and receipt["id"] in table.stdout


async def test_erase_and_receipts_refusals_are_one_line_with_a_code(
    cli_env: None, db: Database, factory: Factory
) -> None:
    tenant, elsewhere = await factory.tenant(), await factory.tenant()
    definition = await factory.definition(tenant.id)
    await raw_memory(db, org=tenant.id, definition=definition, scope="user", user=tenant.user)
    org = str(tenant.id)
    project_error(await invoke("erase", "user", str(tenant.user), "--org", str(uuid.uuid4()), "--yes"),
                  "organization_not_found")  # fmt: skip
    project_error(await invoke("erase", "user", str(elsewhere.user), "--org", org, "--yes"), "user_not_found")
    bad = await invoke("erase", "user", str(tenant.user), "--org", org, "--subject", "crm.deal:x", "--yes")
    assert "subject" in project_error(bad, "erasure_subject_invalid")
    project_error(await invoke("receipts", "show", str(uuid.uuid4())), "receipt_not_found")
    project_error(await invoke("receipts", "list", "--org", str(uuid.uuid4())), "organization_not_found")
    usage = await invoke("erase", "user", str(tenant.user).upper(), "--org", org, "--yes")
    assert usage.exit_code == 2 and "canonical" in usage.output
    assert await memory_count(db, tenant.id) == 1
    async with db.connection() as conn:
        assert await conn.fetchval("SELECT count(*) FROM agent.removal_receipts") == 0


async def test_erase_organization_needs_yes_and_refuses_an_unknown_one_in_one_line(
    cli_env: None, db: Database, factory: Factory
) -> None:
    org = await factory.organization()
    await raw_memory(db, org=org, definition=await factory.definition(org), text="kept until the erasure")
    unconfirmed = await invoke("erase", "organization", str(org))
    project_error(unconfirmed, "confirmation_required")
    assert await memory_count(db, org) == 1, "nothing is erased without --yes"
    unknown = await invoke("erase", "organization", str(uuid.uuid4()), "--yes")
    project_error(unknown, "organization_not_found")
    done = await invoke("erase", "organization", str(org), "--yes", "--json")
    assert done.exit_code == 0, done.output
    receipt = json.loads(done.stdout)
    assert receipt["kind"] == "organization" and receipt["counts"]["agent.memories"] == 1
    assert await memory_count(db, org) == 0


async def test_a_write_for_an_organization_being_erased_is_one_line_organization_erasing(
    cli_env: None, db: Database, factory: Factory
) -> None:
    from state.erasure_marks import mark_organization_erasing

    org = await factory.organization()
    await mark_organization_erasing(db, org, receipt_id=uuid.uuid4())
    refused = await invoke("keys", "mint", "--org", str(org), "--name", "late")
    line = project_error(refused, "organization_erasing")
    assert str(org) in line and "receipts list" in line
    async with db.connection() as conn:
        assert await conn.fetchval("SELECT count(*) FROM agent.api_keys WHERE organization_id = $1", org) == 0
