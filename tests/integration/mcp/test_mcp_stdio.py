"""`ac-context mcp` as a real stdio subprocess, driven by the MCP SDK's own stdio client (issue 46, item 1).

Without a key the process acts as the command line (an operator); with `AC_CONTEXT_MCP_KEY` set to an
organization key it is scoped to that organization exactly as `/mcp` and `/v1/` are."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.integration.mcp.support import ROOT, TOOL_NAMES, Tenant, answer, process_env, refused


@asynccontextmanager
async def _stdio(env: dict[str, str], errlog: Path) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=sys.executable, args=["-c", "from functions.cli import main; main()", "mcp"], env=env, cwd=ROOT
    )
    with errlog.open("w") as err:
        async with Client(stdio_client(params, errlog=err)) as client:
            yield client


async def test_the_stdio_server_lists_the_tools_and_answers_as_the_command_line(
    db_url: str, tmp_path: Path, tenant: Tenant
) -> None:
    env = process_env(tmp_path / "data", db_url)
    async with _stdio(env, tmp_path / "mcp.err") as client:
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == TOOL_NAMES
        hits = answer(
            await client.call_tool("search_knowledge", {"organization_id": str(tenant.org), "query": "reset"})
        )
        assert {h["source_id"] for h in hits["hits"]} == {str(tenant.source)}
        other = answer(await client.call_tool("list_memories", {"organization_id": str(tenant.other)}))
        assert other["total"] == 0  # the command line is an operator: every organization is its to read
        remembered = answer(await client.call_tool("remember", {
            "invocation": tenant.invocation(),
            "arguments": {"attribute": "observation.channel", "text": "Reads email first", "scope": "organization"},
        }))  # fmt: skip
        built = answer(await client.call_tool("build_brief", {"organization_id": str(tenant.org), "query": "email"}))
        assert "Reads email first" in built["brief"]["text"]
        code, details = refused(
            await client.call_tool("list_memories", {"organization_id": str(tenant.org), "limit": 0})
        )
    assert remembered["scope"] == "organization"
    assert code == "invalid_request" and details[0]["loc"] == ["limit"]
    assert "Traceback" not in (tmp_path / "mcp.err").read_text()


async def test_an_organization_key_scopes_the_stdio_server_to_its_organization(
    db_url: str, tmp_path: Path, tenant: Tenant
) -> None:
    env = process_env(tmp_path / "data", db_url) | {"AC_CONTEXT_MCP_KEY": tenant.key}
    async with _stdio(env, tmp_path / "mcp.err") as client:
        answer(await client.call_tool("list_memories", {"organization_id": str(tenant.org)}))
        code, _ = refused(
            await client.call_tool("search_knowledge", {"organization_id": str(tenant.other), "query": "x"})
        )
    assert code == "organization_forbidden"


def test_a_bad_key_stops_the_stdio_server_with_one_line_and_its_code(
    db_url: str, tmp_path: Path, tenant: Tenant
) -> None:
    wrong = tenant.key[:-1] + ("a" if tenant.key[-1] != "a" else "b")  # its id, another secret
    env = process_env(tmp_path / "data", db_url) | {"AC_CONTEXT_MCP_KEY": wrong}
    done = subprocess.run(
        [sys.executable, "-c", "from functions.cli import main; main()", "mcp"],
        env=env, cwd=ROOT, input="", capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.strip().splitlines()[-1].startswith("error: auth_invalid:"), done.stderr


def test_mcp_help_works(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from functions.cli import main; main()", "mcp", "--help"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and "AC_CONTEXT_MCP_KEY" in done.stdout and "stdio" in done.stdout
