"""`/mcp` on a real `ac-context serve`, driven by the MCP SDK's own streamable HTTP client (issue 46, item 1).

One serve per test module's test (a real subprocess on the test database); the client authenticates with the
operator token or an organization key, exactly as `/v1/` does."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from uuid import uuid4

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from state.db import Database
from tests.integration.mcp.support import ROOT, TOKEN, TOOL_NAMES, Tenant, answer, process_env, refused
from tests.support import free_port, wait_until_answering


@dataclass
class Served:
    """A running `ac-context serve`, and how to reach its `/mcp`."""

    url: str

    def client(self, bearer: str | None) -> AbstractAsyncContextManager[Client]:
        """The SDK's client of `/mcp`, sending `Authorization: Bearer <bearer>` (none when None)."""
        return _client(self.url, bearer)


@asynccontextmanager
async def _client(url: str, bearer: str | None) -> AsyncIterator[Client]:
    headers = {} if bearer is None else {"Authorization": f"Bearer {bearer}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client


@pytest.fixture
async def served(db_url: str, tmp_path: Path, tenant: Tenant) -> AsyncIterator[Served]:
    port, log = free_port(), tmp_path / "serve.out"
    env = process_env(tmp_path / "data", db_url) | {
        "AC_CONTEXT_API_TOKEN": TOKEN, "AC_CONTEXT_RUN_FUNCTIONS": "in-process", "AC_CONTEXT_MAX_JSON_BYTES": "200000",
    }  # fmt: skip
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-c", "from functions.cli import main; main()", "serve", "--port", str(port)],
            env=env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
        )  # fmt: skip
    try:
        await asyncio.to_thread(wait_until_answering, process, f"http://127.0.0.1:{port}/readyz", exited=log.read_text)
        yield Served(f"http://127.0.0.1:{port}/mcp")
    finally:
        process.terminate()
        process.wait(timeout=60)
    assert "Traceback" not in log.read_text(), log.read_text()


async def test_the_tools_list_names_six_tools_with_typed_input_schemas(served: Served, tenant: Tenant) -> None:
    async with served.client(tenant.key) as client:
        listed = await client.list_tools()
        templates = await client.list_resource_templates()
    tools = {t.name: t for t in listed.tools}
    assert list(tools) == TOOL_NAMES
    brief = tools["build_brief"].input_schema
    assert brief["required"] == ["organization_id"] and brief["additionalProperties"] is False
    assert {"query", "policy", "explain", "entities"} <= set(brief["properties"])
    remember = tools["remember"].input_schema["properties"]
    assert set(remember) == {"invocation", "arguments"}
    assert {"attribute", "text", "scope", "subject_refs"} <= set(remember["arguments"]["properties"])
    assert tools["search_knowledge"].annotations is not None and tools["search_knowledge"].annotations.read_only_hint
    assert [t.uri_template for t in templates.resource_templates] == ["source://{organization_id}/{source_id}"]


async def test_each_tool_answers_its_happy_path_as_the_api_would(served: Served, tenant: Tenant) -> None:
    org = str(tenant.org)
    async with served.client(tenant.key) as client:
        hits = answer(await client.call_tool("search_knowledge", {"organization_id": org, "query": "reset a password"}))
        assert hits["hits"] and {h["source_id"] for h in hits["hits"]} == {str(tenant.source)}
        remembered = answer(await client.call_tool("remember", {
            "invocation": tenant.invocation(),
            "arguments": {"attribute": "preference.tone", "text": "Prefers short answers", "scope": "user"},
        }))  # fmt: skip
        assert remembered["text"] == "Prefers short answers" and remembered["forgotten"] is False
        listed = answer(await client.call_tool("list_memories", {"organization_id": org, "user_id": str(tenant.user)}))
        assert [m["id"] for m in listed["items"]] == [remembered["memory_id"]] and listed["total"] == 1
        built = answer(await client.call_tool("build_brief", {
            "organization_id": org, "user_id": str(tenant.user), "query": "how do I reset a password?", "explain": True,
        }))  # fmt: skip
        assert built["policy"] == "front_door" and built["explanation"] is not None
        assert "Prefers short answers" in built["brief"]["text"] and "choose reset" in built["brief"]["text"]
        cited = {(ref["kind"], ref["id"]) for ref in built["brief"]["items"]}
        assert ("agent.memory", remembered["memory_id"]) in cited and ("knowledge_source", str(tenant.source)) in cited
        forgot = answer(await client.call_tool("forget", {
            "invocation": tenant.invocation(), "arguments": {"memory_id": remembered["memory_id"]},
        }))  # fmt: skip
        assert forgot["forgotten"] is True and forgot["supersedes_id"] == remembered["memory_id"]
        source = answer(await client.call_tool("get_source", {"organization_id": org, "source_id": str(tenant.source)}))
        assert source["status"] == "ready" and source["id"] == str(tenant.source) and source["models"][0]["chunks"] >= 1
        read = await client.read_resource(source["text_uri"])
    assert "open the account page and choose reset" in read.contents[0].text  # type: ignore[union-attr]


async def test_an_organization_key_naming_another_organization_is_refused_with_the_apis_code(
    served: Served, tenant: Tenant
) -> None:
    other = str(tenant.other)
    async with served.client(tenant.key) as client:
        for name, arguments in (
            ("search_knowledge", {"organization_id": other, "query": "password"}),
            ("build_brief", {"organization_id": other, "query": "password"}),
            ("list_memories", {"organization_id": other}),
            ("get_source", {"organization_id": other, "source_id": str(tenant.source)}),
            ("remember", {"invocation": tenant.invocation() | {"organization_id": other},
                          "arguments": {"attribute": "preference.tone", "text": "x", "scope": "user"}}),
        ):  # fmt: skip
            code, _ = refused(await client.call_tool(name, arguments))
            assert code == "organization_forbidden", name
        code, _ = refused(await client.call_tool("get_source", {"platform": True, "source_id": str(tenant.source)}))
        assert code == "platform_forbidden"
        with pytest.raises(MCPError) as caught:
            await client.read_resource(f"source://{other}/{tenant.source}")
    assert caught.value.data["code"] == "organization_forbidden"
    async with served.client(TOKEN) as operator:  # the operator reaches it, as over /v1/
        answer(await operator.call_tool("list_memories", {"organization_id": other}))
        code, _ = refused(await operator.call_tool("list_memories", {"organization_id": str(uuid4())}))
    assert code == "organization_not_found"


async def test_malformed_arguments_are_refused_with_their_code_and_path(served: Served, tenant: Tenant) -> None:
    org = str(tenant.org)
    async with served.client(tenant.key) as client:
        search = {"organization_id": org, "query": "x"}
        code, details = refused(await client.call_tool("search_knowledge", search | {"organization_id": "not-a-uuid"}))
        assert code == "invalid_request" and details[0]["loc"] == ["organization_id"]
        code, details = refused(await client.call_tool("search_knowledge", search | {"k": 1}))
        assert code == "invalid_request" and details[0]["loc"] == ["k"]
        code, _ = refused(await client.call_tool("search_knowledge", {"organization_id": org, "query": "a\x00b"}))
        assert code == "text_invalid"
        wrong = {"attribute": "preference.tone", "text": 5, "scope": "user"}
        code, details = refused(
            await client.call_tool("remember", {"invocation": tenant.invocation(), "arguments": wrong})
        )
        assert code == "invalid_input" and details[0]["loc"] == ["text"]
        code, _ = refused(await client.call_tool("forget", {
            "invocation": tenant.invocation(), "arguments": {"memory_id": str(uuid4())},
        }))  # fmt: skip
        assert code == "memory_not_found"
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("drop_tables", {})
        with pytest.raises(MCPError) as bad_uri:
            await client.read_resource(f"source://{org}/not-a-uuid")
    assert unknown.value.data["code"] == "unknown_tool"
    assert bad_uri.value.data["code"] == "invalid_request"


async def test_a_request_without_a_valid_key_is_refused_before_the_sdk_reads_it(served: Served, tenant: Tenant) -> None:
    with pytest.raises(BaseExceptionGroup) as caught:  # the SDK's client fails on the 401 answer
        async with served.client("ack_nope_nope") as client:
            await client.list_tools()
    assert caught.group_contains(MCPError)
    async with httpx.AsyncClient() as http:
        answered = await http.post(served.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert answered.status_code == 401 and answered.json()["error"]["code"] == "auth_missing"
    assert answered.headers["www-authenticate"] == "Bearer"


async def test_an_oversized_or_hostile_request_is_refused_with_a_code_and_the_service_stays_up(
    served: Served, tenant: Tenant, db: Database
) -> None:
    headers = {"Authorization": f"Bearer {tenant.key}", "Accept": "application/json, text/event-stream"}
    arguments = {"organization_id": str(tenant.org), "query": "x" * 300_000}
    huge = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search_knowledge", "arguments": arguments},
    }
    async with httpx.AsyncClient(timeout=60) as http:
        too_large = await http.post(served.url, json=huge, headers=headers)
        assert too_large.status_code == 413 and too_large.json()["error"]["code"] == "request_too_large"
        not_json = await http.post(served.url, content=b"{nope", headers=headers | {"Content-Type": "application/json"})
        assert not_json.status_code < 500
        nested: object = "x"
        for _ in range(200):
            nested = [nested]
        deep = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "build_brief", "arguments": nested},
        }
        too_deep = await http.post(served.url, json=deep, headers=headers)
        assert too_deep.status_code == 422 and too_deep.json()["error"]["details"][0]["type"] == "json_too_deep"
    async with served.client(tenant.key) as client:
        long_query = {"organization_id": str(tenant.org), "query": "x" * 2001}
        code, details = refused(await client.call_tool("search_knowledge", long_query))
        assert code == "invalid_request" and details[0]["type"] == "string_too_long"
        hostile = "'); DROP TABLE knowledge_sources; -- \u202e <script>"
        answer(await client.call_tool("search_knowledge", {"organization_id": str(tenant.org), "query": hostile}))
    assert await db.fetchval("SELECT count(*) FROM agent.knowledge_sources") == 2


async def test_each_request_is_answered_on_its_own_in_json_so_any_worker_can_answer_it(
    served: Served, tenant: Tenant
) -> None:
    """Stateless with JSON responses: a tools/call with no initialize and no session id is answered at once."""
    headers = {
        "Authorization": f"Bearer {tenant.key}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
    }
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "list_memories", "arguments": {"organization_id": str(tenant.org)}}}  # fmt: skip
    async with httpx.AsyncClient(timeout=60) as http:
        answered = await http.post(served.url, json=call, headers=headers)
    assert answered.status_code == 200 and answered.headers["content-type"].startswith("application/json")
    assert "mcp-session-id" not in answered.headers
    assert answered.json()["result"]["structuredContent"] == {"items": [], "total": 0, "next_cursor": None}
