"""`ac-context user|agent|run` (issue 46, item 3): a member, an agent and a run made from the command line are
what `memory remember` names; the refusals are one line with their code and the next step (a member with
memories is erased first, an agent that owns memories or runs is archived); ids are canonical UUID text or a
usage error; every command has `--help`."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from functions.cli import app
from state.db import Database
from state.settings import get_settings
from tests.factories import Factory
from tests.support import keeping_the_session_loop

COMMANDS = [
    ("user", "add"), ("user", "list"), ("user", "remove"), ("agent", "add"), ("agent", "list"),
    ("agent", "archive"), ("agent", "publish"), ("agent", "remove"), ("run", "start"), ("run", "list"),
    ("run", "finish"),
]  # fmt: skip


@pytest.fixture
def cli_env(db_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("AC_CONTEXT_ALLOW_TEST_MODELS", "1")
    get_settings.cache_clear()
    try:
        with keeping_the_session_loop():
            yield
    finally:
        get_settings.cache_clear()


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


async def cli(*args: str) -> tuple[int, str, str]:
    return await asyncio.to_thread(invoke, *args)


async def ok(*args: str) -> str:
    status, out, err = await cli(*args)
    assert status == 0, (args, out, err)
    return out


async def refused(code: str, *args: str) -> str:
    status, out, err = await cli(*args)
    assert status == 1, (args, out, err)
    flat = " ".join(err.split())
    assert flat.startswith(f"error: {code}: "), err
    assert len(err.strip().splitlines()) == 1, "one line"
    return flat


def test_every_command_has_help() -> None:
    for group, command in COMMANDS:
        status, out, _ = invoke(group, command, "--help")
        assert status == 0 and "Usage:" in out, (group, command)
        assert "--json" in out, (group, command)


async def test_a_member_agent_and_run_from_the_cli_are_what_memory_remember_names(
    cli_env: None, db: Database, factory: Factory
) -> None:
    org = str(await factory.organization())
    user = json.loads(await ok("user", "add", "ada@acme.test", "--name", "Ada", "--org", org, "--json"))
    assert user["email"] == "ada@acme.test" and user["display_name"] == "Ada"
    agent = (await ok("agent", "add", "Assistant", "--org", org, "--quiet")).strip()
    run = (await ok("run", "start", "--org", org, "--agent", agent, "--user", user["id"], "--quiet")).strip()
    uuid.UUID(agent), uuid.UUID(run)
    remembered = await ok(
        "memory", "remember", "--org", org, "--definition", agent, "--run", run, "--user", user["id"],
        "--scope", "user", "--attribute", "preference.tone", "--text", "Short answers", "--json",
    )  # fmt: skip
    assert json.loads(remembered)["text"] == "Short answers"

    users = json.loads(await ok("user", "list", "--org", org, "--json"))
    assert [(u["id"], u["memories"], u["runs"]) for u in users["items"]] == [(user["id"], 1, 1)]
    agents = json.loads(await ok("agent", "list", "--org", org, "--json"))
    assert [(a["id"], a["memories"], a["runs"]) for a in agents["items"]] == [(agent, 1, 1)]
    runs = json.loads(await ok("run", "list", "--org", org, "--agent", agent, "--json"))
    assert [(r["id"], r["status"]) for r in runs["items"]] == [(run, "running")]
    assert "run " + run + " succeeded" in await ok("run", "finish", run, "--org", org)
    await refused("run_finished", "run", "finish", run, "--org", org)

    said = await refused("user_has_memories", "user", "remove", user["id"], "--org", org)
    assert "erase the person first: `ac-context erase user" in said
    said = await refused("agent_in_use", "agent", "remove", agent, "--org", org)
    assert "`ac-context agent archive" in said
    assert "is archived" in await ok("agent", "archive", agent, "--org", org)
    await refused("agent_archived", "run", "start", "--org", org, "--agent", agent, "--user", user["id"])
    async with db.connection() as conn:
        assert await conn.fetchval("SELECT count(*) FROM agent.memories") == 1, "no refusal removed a memory"

    await ok("erase", "user", user["id"], "--org", org, "--yes")
    assert "removed user" in await ok("user", "remove", user["id"], "--org", org)
    assert json.loads(await ok("user", "list", "--org", org, "--json"))["total"] == 0


async def test_the_cli_refuses_bad_input_with_one_line_and_its_code(cli_env: None, factory: Factory) -> None:
    org = str(await factory.organization())
    await ok("user", "add", "ada@acme.test", "--org", org)
    await refused("user_email_invalid", "user", "add", "not-an-email", "--org", org)
    await refused("user_email_taken", "user", "add", "ADA@acme.test", "--org", org)
    await ok("agent", "add", "Assistant", "--org", org)
    await refused("agent_name_taken", "agent", "add", "assistant", "--org", org)
    await refused("agent_status_invalid", "agent", "add", "Other", "--status", "gone", "--org", org)
    missing = str(uuid.uuid4())
    await refused("user_not_found", "user", "remove", missing, "--org", org)
    await refused("agent_not_found", "agent", "remove", missing, "--org", org)
    await refused("run_not_found", "run", "finish", missing, "--org", org)
    await refused("organization_not_found", "user", "list", "--org", missing)
    for args in (("user", "remove", missing.upper(), "--org", org), ("run", "start", "--org", org, "--agent", "x",
                                                                     "--user", missing)):  # fmt: skip
        status, _, err = await cli(*args)
        assert status == 2 and "not a valid UUID" in " ".join(err.split()), err
