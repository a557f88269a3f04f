"""The CLI takes entities and definitions through the same rules as the service (issue 14): a malformed
`--entity` is dropped and counted (or refused with `--strict-entities`), and `policy validate` runs the
workflow-node check."""

from __future__ import annotations

import json
from dataclasses import dataclass
from uuid import UUID, uuid4

import pytest
from typer.testing import CliRunner

from functions.cli import app
from functions.cli._common import parse_entities
from state.refs import ResourceRef
from state.settings import get_settings
from tests.factories import Factory
from tests.support import keeping_the_session_loop


@dataclass
class Seeded:
    url: str
    org: UUID
    first: UUID
    second: UUID


@pytest.fixture
async def seeded(db_url: str, factory: Factory) -> Seeded:
    org = await factory.organization()
    first = await factory.company(org, name="First Robotics")
    second = await factory.company(org, name="Second Robotics")
    return Seeded(db_url, org, first, second)


def test_parse_entities_drops_each_malformed_value_and_keeps_the_rest_in_order() -> None:
    c1, c2, p1 = (str(uuid4()) for _ in range(3))
    values = [f"crm.company:{c1}", "no-separator", f"crm.company:urn:uuid:{c2}", f":{c2}", f"crm.person:{p1}"]
    parsed = parse_entities([*values, "crm.person:p1"])
    assert parsed.refs == [ResourceRef(kind="crm.company", id=c1), ResourceRef(kind="crm.person", id=p1)]
    assert [d.position for d in parsed.dropped] == [1, 2, 3, 5]


def test_the_brief_command_builds_from_the_valid_entities_and_counts_the_malformed_one(
    seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", seeded.url)
    get_settings.cache_clear()
    try:
        with keeping_the_session_loop():
            entities = [
                f"crm.company:{seeded.first}",
                f"crm.company:urn:uuid:{seeded.second}",
                f"crm.company:{seeded.second}",
            ]
            args = ["brief", "--org", str(seeded.org), "--json"]
            for entity in entities:
                args += ["--entity", entity]
            result = CliRunner().invoke(app, args)
            assert result.exit_code == 0, result.output
            brief = json.loads(result.stdout)
            assert brief["text"].index("First Robotics") < brief["text"].index("Second Robotics")
            assert brief["dropped_entities"] == 1 and brief["failed_sources"] == []
            assert "--entity #2 dropped" in result.stderr

            strict = CliRunner().invoke(app, [*args, "--strict-entities"])
            assert strict.exit_code == 2 and "--entity #2" in strict.output
    finally:
        get_settings.cache_clear()


def test_policy_validate_refuses_a_workflow_node_that_calls_a_memory_tool() -> None:
    runner = CliRunner()
    base = ["policy", "validate", "front_door", "--json", "--tool-node", "crm.search", "--tool-node", "memory.remember"]
    refused = runner.invoke(app, [*base, "--kind", "workflow"])
    assert refused.exit_code == 1, refused.output
    [problem] = json.loads(refused.stdout)["errors"]
    assert problem["loc"] == ["definition", "tool_nodes", 1] and problem["type"] == "memory_tool_in_workflow"
    agent = runner.invoke(app, [*base, "--kind", "agent"])
    assert agent.exit_code == 0 and json.loads(agent.stdout) == {"valid": True}
