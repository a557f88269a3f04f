"""The memory tools, `memory.remember` and `memory.forget`: the only way a model reaches `agent.memories`.

Each tool has a strict input model (an extra field such as `subject_key`, or a wrong type, is
`invalid_input`, never ignored and never coerced; so is an identity that is not canonical: a subject kind
outside the closed set, a subject or memory id that is not canonical UUID text, each refused at its path,
e.g. `subject_refs.0.kind`), a JSON schema exported for the platform's tool layer,
and a small JSON result. `memory.remember` carries a per-run count limit, counted in the database by
`proposed_by_run_id` under a per-run lock. `check_workflow_tool_nodes` is the publish check that refuses a
workflow (or skill) tool node calling either tool: only an agent definition owns memory.

The platform's ToolInvoker and policy sit in front of `MemoryTools.call`; this module must never bypass
`MemoryService`, and never accept a subject key from the model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from memory.errors import InvalidToolInputError, UnknownMemoryToolError, WorkflowMemoryToolError
from memory.models import AgentMemory, MemoryCandidate, ToolInvocation, parse_stored_refs
from memory.service import MemoryService
from state.ids import CanonicalUuid

__all__ = [
    "DEFAULT_REMEMBER_LIMIT_PER_RUN",
    "FORGET_TOOL",
    "MEMORY_TOOLS",
    "MEMORY_TOOL_NAMES",
    "REMEMBER_TOOL",
    "ForgetInput",
    "MemoryToolSpec",
    "MemoryTools",
    "RememberInput",
    "check_workflow_tool_nodes",
    "parse_tool_input",
    "tool_result",
    "tool_schemas",
]

REMEMBER_TOOL = "memory.remember"
FORGET_TOOL = "memory.forget"
MEMORY_TOOL_NAMES: frozenset[str] = frozenset({REMEMBER_TOOL, FORGET_TOOL})
DEFAULT_REMEMBER_LIMIT_PER_RUN = 20
"""memory.remember writes one run may append (the spec's "an agent proposes 40 memories in one run")."""


class RememberInput(MemoryCandidate):
    """Arguments of memory.remember: an attribute, the text, the scope and at most one subject ref."""


class ForgetInput(BaseModel):
    """Arguments of memory.forget: the id of a current live memory."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")

    memory_id: CanonicalUuid
    """The id the brief showed as `[agent.memory <id>]`, in canonical text."""


@dataclass(frozen=True)
class MemoryToolSpec:
    """One memory tool as the tool layer sees it: name, description and strict input model."""

    name: str
    """The tool name the model calls."""
    description: str
    """What the tool does, for the model."""
    input_model: type[BaseModel]
    """The strict pydantic model its arguments must match."""

    def json_schema(self) -> dict[str, Any]:
        """The tool's definition for the tool layer: name, description and JSON schema of its parameters."""
        return {"name": self.name, "description": self.description, "parameters": self.input_model.model_json_schema()}


MEMORY_TOOLS: Mapping[str, MemoryToolSpec] = {
    REMEMBER_TOOL: MemoryToolSpec(
        name=REMEMBER_TOOL,
        description=(
            "Keep a durable observation or preference for later runs of this agent. attribute is "
            "observation.<name> or preference.<name>; scope 'user' keeps it for this person, 'organization' "
            "for every user of this agent; subject_refs names at most one row it is about, by its kind and its "
            "lower-case hyphenated UUID. Saying the same thing again is refused; new text under the same "
            "attribute and subject replaces the old. expires_at (a date-time with offset) or ttl (an ISO 8601 "
            "duration such as P30D) sets when it stops being read; without either, observations expire after "
            "the deployment's default and preferences are kept. An expired memory may be remembered again."
        ),
        input_model=RememberInput,
    ),
    FORGET_TOOL: MemoryToolSpec(
        name=FORGET_TOOL,
        description="Forget a memory by the id of its current revision, as the brief showed it.",
        input_model=ForgetInput,
    ),
}
"""The two memory tools by name."""


def tool_schemas() -> list[dict[str, Any]]:
    """The JSON definitions of both memory tools, for the platform's tool layer."""
    return [spec.json_schema() for spec in MEMORY_TOOLS.values()]


def parse_tool_input(name: str, arguments: str | bytes | Mapping[str, Any]) -> BaseModel:
    """Validate tool arguments as JSON against the tool's strict model; any mismatch is `invalid_input`."""
    spec = MEMORY_TOOLS.get(name)
    if spec is None:
        raise UnknownMemoryToolError(f"no memory tool named {name!r}")
    if isinstance(arguments, Mapping):
        try:
            arguments = json.dumps(arguments)
        except (TypeError, ValueError) as exc:
            raise InvalidToolInputError(name, [{"loc": (), "msg": f"arguments are not JSON: {exc}"}]) from exc
    try:
        return spec.input_model.model_validate_json(arguments, strict=True)
    except ValidationError as exc:
        problems = [{"loc": tuple(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors()]
        raise InvalidToolInputError(name, problems) from exc


def tool_result(memory: AgentMemory) -> dict[str, Any]:
    """The JSON answer of a memory tool: the revision written, its subject refs read tolerantly."""
    parsed = parse_stored_refs(memory.subject_refs)
    return {
        "memory_id": str(memory.id),
        "subject_key": memory.subject_key,
        "attribute": memory.attribute,
        "scope": memory.scope,
        "text": memory.text,
        "subject_refs": [ref.model_dump(exclude_none=True) for ref in parsed.refs],
        "supersedes_id": None if memory.supersedes_id is None else str(memory.supersedes_id),
        "forgotten": memory.is_tombstone,
        "created_at": memory.created_at.isoformat(),
        "expires_at": None if memory.expires_at is None else memory.expires_at.isoformat(),
    }


class MemoryTools:
    """The handlers of the two memory tools over one `MemoryService`."""

    def __init__(self, service: MemoryService, *, remember_limit_per_run: int = DEFAULT_REMEMBER_LIMIT_PER_RUN) -> None:
        if remember_limit_per_run < 0:
            raise ValueError("remember_limit_per_run must not be negative")
        self._service = service
        self.remember_limit_per_run = remember_limit_per_run

    async def call(self, name: str, inv: ToolInvocation, arguments: str | bytes | Mapping[str, Any]) -> dict[str, Any]:
        """Validate the arguments of tool `name`, run it for `inv`, and return its JSON result."""
        parsed = parse_tool_input(name, arguments)
        if isinstance(parsed, RememberInput):
            memory = await self._service.remember(inv, parsed, run_limit=self.remember_limit_per_run)
        elif isinstance(parsed, ForgetInput):
            memory = await self._service.forget(inv, parsed.memory_id)
        else:  # pragma: no cover - MEMORY_TOOLS holds these two models only
            raise UnknownMemoryToolError(f"no handler for {name!r}")
        return tool_result(memory)


def check_workflow_tool_nodes(definition_kind: str, tool_names: Sequence[str]) -> None:
    """Publish check: refuse a non-agent definition whose tool nodes call a memory tool (in node order)."""
    if definition_kind == "agent":
        return
    offending = [(index, name) for index, name in enumerate(tool_names) if name in MEMORY_TOOL_NAMES]
    if offending:
        raise WorkflowMemoryToolError(definition_kind, offending)
