"""What the MCP tests share: a seeded tenant (a document, a user, an agent definition and its run, an organization
key) in the test database, and the environment a real `ac-context` process runs with on it."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from mcp_types import CallToolResult

from knowledge.documents.objects import LocalObjectStore
from state.api_keys import mint_key
from state.db import Database
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit

ROOT = Path(__file__).resolve().parents[3]
TOKEN = "mcp-test-operator-token"
TOOL_NAMES = ["build_brief", "search_knowledge", "remember", "forget", "list_memories", "get_source"]


@dataclass
class Tenant:
    """One organization with what every tool needs, and a second organization it must not reach."""

    org: UUID
    other: UUID
    user: UUID
    definition: UUID
    run: UUID
    source: UUID
    key: str
    """An organization key of `org`."""

    def invocation(self) -> dict[str, str]:
        """The invocation of a memory call by `run`, for `user`."""
        ids = {"organization_id": self.org, "definition_id": self.definition, "run_id": self.run, "user_id": self.user}
        return {k: str(v) for k, v in ids.items()}


def process_env(data: Path, db_url: str) -> dict[str, str]:
    """The environment of an `ac-context` process on the test database and a data folder of its own."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("AC_CONTEXT_", "INNGEST_"))}
    return keep | {"DATABASE_URL": db_url, "AC_CONTEXT_DATA_DIR": str(data), "AC_CONTEXT_ALLOW_TEST_MODELS": "1"}


@pytest.fixture
async def tenant(db: Database, factory: Factory, tmp_path: Path) -> Tenant:
    """The seeded tenant; its document is stored under `tmp_path / "data"`, the processes' data folder."""
    kit = Kit(db, LocalObjectStore(tmp_path / "data" / "objects"))
    await kit.use_platform_model(FAKE)
    org, other = await factory.organization(), await factory.organization()
    source = await kit.ingest(org, "# Passwords\n\nTo reset a password, open the account page and choose reset.")
    await kit.ingest(other, "# Secret\n\nThe other organization's password policy.")
    user = await factory.user(org)
    definition = await factory.definition(org)
    run = await factory.run(org, definition_id=definition, user_id=user, status="running")
    minted = await mint_key(db, organization_id=org, name="mcp test")
    return Tenant(org, other, user, definition, run, source, minted.secret)


def answer(result: CallToolResult) -> dict[str, Any]:
    """A successful tool result's structured content (its text holds the same JSON)."""
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


def refused(result: CallToolResult) -> tuple[str, Any]:
    """A refused tool result's code and details (the API's envelope, in structured content and text alike)."""
    assert result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    error = result.structured_content["error"]
    assert set(error) == {"code", "message", "details"}
    assert "Traceback" not in error["message"] and "/work/" not in json.dumps(error)
    return error["code"], error["details"]
