"""The memory tools without a database: their exported schemas, strict input and the workflow publish check."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from memory.errors import InvalidToolInputError, UnknownMemoryToolError, WorkflowMemoryToolError
from memory.repository import QUERIES
from memory.tools import (
    FORGET_TOOL,
    MEMORY_TOOLS,
    REMEMBER_TOOL,
    ForgetInput,
    RememberInput,
    check_workflow_tool_nodes,
    parse_tool_input,
    tool_schemas,
)
from state.ids import CANONICAL_UUID_PATTERN, ENTITY_KINDS

MEMORY_DIR = Path(__file__).resolve().parents[3] / "memory"


def test_the_exported_schemas_name_both_tools_and_forbid_undeclared_fields() -> None:
    schemas = {s["name"]: s for s in tool_schemas()}
    assert set(schemas) == {REMEMBER_TOOL, FORGET_TOOL}
    remember = schemas[REMEMBER_TOOL]["parameters"]
    assert remember["additionalProperties"] is False
    assert set(remember["properties"]) == {"attribute", "text", "scope", "subject_refs", "expires_at", "ttl"}
    assert set(remember["required"]) == {"attribute", "text", "scope"}
    assert "subject_key" not in remember["properties"]
    assert remember["properties"]["subject_refs"]["maxItems"] == 1
    ref_schema = remember["$defs"]["CanonicalSubjectRef"]
    assert ref_schema["additionalProperties"] is False and set(ref_schema["required"]) == {"kind", "id"}
    assert set(ref_schema["properties"]["kind"]["enum"]) == ENTITY_KINDS, "the model reads the closed kind set"
    assert ref_schema["properties"]["id"]["pattern"] == CANONICAL_UUID_PATTERN
    forget = schemas[FORGET_TOOL]["parameters"]
    assert forget["additionalProperties"] is False and forget["required"] == ["memory_id"]
    assert all(s["description"] for s in schemas.values())


def _args(**values: Any) -> dict[str, Any]:
    return {"attribute": "preference.language", "text": "British English", "scope": "user", **values}


@pytest.mark.parametrize(
    "arguments",
    [
        _args(subject_key="user:1:preference.language"),
        _args(scope=1),
        _args(text=["British English"]),
        _args(subject_refs={"kind": "crm.company", "id": "1"}),
        _args(subject_refs=[{"kind": "crm.company", "id": 1}]),
        _args(subject_refs=[{"kind": "crm.company", "id": "1", "relation": "x"}]),
        _args(attribute="lifecycle_stage"),
        {"attribute": "preference.language", "text": "x"},
        '{"attribute": "preference.language", "text": "x", "scope": "user", "extra": true}',
        "not json",
        {"attribute": "preference.language", "text": "x", "scope": "user", "at": object()},
    ],
)
def test_wrong_or_extra_arguments_of_remember_are_invalid_input(arguments: Any) -> None:
    with pytest.raises(InvalidToolInputError) as caught:
        parse_tool_input(REMEMBER_TOOL, arguments)
    assert caught.value.code == "invalid_input" and caught.value.tool == REMEMBER_TOOL


def test_forget_takes_a_uuid_string_and_nothing_else() -> None:
    memory_id = uuid4()
    parsed = parse_tool_input(FORGET_TOOL, {"memory_id": str(memory_id)})
    assert isinstance(parsed, ForgetInput) and parsed.memory_id == memory_id
    for bad in ({"memory_id": 5}, {"memory_id": "nope"}, {"memory_id": str(memory_id), "force": True}, {}):
        with pytest.raises(InvalidToolInputError):
            parse_tool_input(FORGET_TOOL, bad)


def test_valid_remember_arguments_parse_from_json_text_or_a_mapping() -> None:
    refs = [{"kind": "crm.company", "id": str(uuid4()), "label": "Acme: HQ"}]
    from_mapping = parse_tool_input(REMEMBER_TOOL, _args(subject_refs=refs))
    assert isinstance(from_mapping, RememberInput) and from_mapping.subject_refs[0].label == "Acme: HQ"
    assert parse_tool_input(REMEMBER_TOOL, '{"attribute": "observation.x", "text": "y", "scope": "organization"}')


def test_an_unknown_memory_tool_is_refused() -> None:
    with pytest.raises(UnknownMemoryToolError):
        parse_tool_input("memory.rewrite", {})


def test_a_workflow_tool_node_calling_a_memory_tool_fails_to_publish() -> None:
    for kind in ("workflow", "skill"):
        with pytest.raises(WorkflowMemoryToolError) as caught:
            check_workflow_tool_nodes(kind, ["crm.search", REMEMBER_TOOL, "email.send", FORGET_TOOL])
        assert caught.value.code == "memory_tool_in_workflow"
        assert caught.value.nodes == [(1, REMEMBER_TOOL), (3, FORGET_TOOL)]
    check_workflow_tool_nodes("workflow", ["crm.search", "email.send"])
    check_workflow_tool_nodes("agent", [REMEMBER_TOOL, FORGET_TOOL])


def test_every_query_the_memory_package_names_exists_in_its_queries_file() -> None:
    used = set()
    for path in MEMORY_DIR.glob("*.py"):
        used |= set(re.findall(r'QUERIES\["([a-z_]+)"\]', path.read_text(encoding="utf-8")))
        used |= set(re.findall(r'_insert\(\s*conn,\s*"([a-z_]+)"', path.read_text(encoding="utf-8")))
    assert used, "the scan found no query names"
    assert used <= set(QUERIES), f"missing from memory/queries.sql: {sorted(used - set(QUERIES))}"
    assert set(QUERIES) <= used, f"unused named queries: {sorted(set(QUERIES) - used)}"


def test_the_tools_map_holds_the_two_strict_models() -> None:
    assert {name: spec.input_model for name, spec in MEMORY_TOOLS.items()} == {
        REMEMBER_TOOL: RememberInput,
        FORGET_TOOL: ForgetInput,
    }
