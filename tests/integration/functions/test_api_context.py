"""Spec fidelity over the real service (issue 14): the person's preferences on the front door, malformed
entities dropped at every entry point, the front door's conversation required, and the workflow-node check
on the validate route."""

from __future__ import annotations

from typing import Any
from uuid import UUID, uuid4

import pytest

from context.builder import DefaultContextBuilder
from context.models import ContextPolicy, ContextSourceSpec
from context.packer import ContextPacker
from context.registry import ContextSourceRegistry
from functions.inngest.context_segment import FUNCTION_ID as SEGMENT
from functions.inngest.context_segment import RETRIES as SEGMENT_RETRIES
from memory.tools import FORGET_TOOL, REMEMBER_TOOL
from tests.factories import Factory
from tests.integration.functions.conftest import Service
from tests.integration.functions.support import ScriptedConversation
from tests.integration.functions.support import error_code as code
from tests.integration.memory.helpers import raw_memory


def section(text: str, heading: str) -> str:
    """The lines of one section of a brief's text, heading excluded ('' when it is absent)."""
    lines = text.split("\n")
    if heading not in lines:
        return ""
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("## ")), len(lines))
    return "\n".join(lines[start:end])


# --- personal memory where the person is ------------------------------------------------------------------


async def test_a_front_door_brief_shows_the_persons_preference_under_personal_memory_above_application_state(
    service: Service, factory: Factory
) -> None:
    tenant = await factory.tenant(users=2)
    org, person, colleague = tenant.id, tenant.users[0], tenant.users[1]
    agent = await factory.definition(org)
    company = await factory.company(org, name="Contoso Robotics")
    elsewhere = await factory.company(await factory.organization(), name="Another tenant's row")
    await raw_memory(
        service.db, org=org, definition=agent, scope="user", user=person,
        attribute="preference.language", text="Answer in German",
    )  # fmt: skip
    # The user chain rule and the subject guard hold on the widened read: another person's preference, and a
    # preference naming another tenant's row, never reach this person's brief.
    await raw_memory(
        service.db, org=org, definition=agent, scope="user", user=colleague,
        attribute="preference.language", text="Answer in French",
    )  # fmt: skip
    await raw_memory(
        service.db, org=org, definition=agent, scope="user", user=person, attribute="preference.format",
        text="Use tables for that row", refs=[{"kind": "crm.company", "id": str(elsewhere)}],
    )  # fmt: skip
    body = {
        "organization_id": str(org),
        "user_id": str(person),
        "query": "Where is Contoso?",
        "entities": [{"kind": "crm.company", "id": str(company)}],
    }
    response = await service.http.post("/v1/context/briefs", json=body, headers=service.auth)

    assert response.status_code == 200, response.text
    brief = response.json()["brief"]
    text = brief["text"]
    assert "Answer in German" in section(text, "## Personal memory"), text
    assert text.index("## Personal memory") < text.index("## Application state"), "the person's instructions rank first"
    assert text.count("Answer in German") == 1, "one memory never appears twice"
    assert brief["dropped"]["memory"] == 1, "memory's copy of the preference loses upward, and the drop is counted"
    assert "Answer in French" not in text, "the user chain rule: never another person's chain"
    assert "Use tables" not in text, "the subject guard: a ref of another tenant drops its memory"


# --- malformed entities -----------------------------------------------------------------------------------

MALFORMED: list[Any] = [
    {"kind": "crm.company", "id": "urn:uuid:{company}"},
    {"kind": "crm.company"},
    "crm.company:{company}",
    {"kind": "crm.company", "id": "{company}", "label": 7},
]


def _entities(first: UUID, second: UUID, malformed: Any) -> list[Any]:
    bad = malformed.replace("{company}", str(second)) if isinstance(malformed, str) else {
        k: v.replace("{company}", str(second)) if isinstance(v, str) else v for k, v in malformed.items()
    }  # fmt: skip
    return [{"kind": "crm.company", "id": str(first)}, bad, {"kind": "crm.company", "id": str(second)}]


@pytest.mark.parametrize("malformed", MALFORMED, ids=["urn-uuid", "no-id", "a-string", "label-not-text"])
async def test_a_front_door_body_with_one_malformed_entity_builds_a_brief_from_the_valid_ones(
    service: Service, factory: Factory, malformed: Any, caplog: pytest.LogCaptureFixture
) -> None:
    org = await factory.organization()
    first = await factory.company(org, name="First Robotics")
    second = await factory.company(org, name="Second Robotics")
    body = {"organization_id": str(org), "entities": _entities(first, second, malformed)}
    response = await service.http.post("/v1/context/briefs", json=body, headers=service.auth)

    assert response.status_code == 200, response.text
    answer = response.json()
    text = answer["brief"]["text"]
    assert text.index("First Robotics") < text.index("Second Robotics"), "the valid refs keep their order"
    assert answer["brief"]["failed_sources"] == [], "a malformed entity never fails a source"
    assert answer["brief"]["dropped_entities"] == 1, "counted in the brief's accounting"
    assert [d["position"] for d in answer["dropped_entities"]] == [1]
    assert any("front door body entity 1 dropped" in r.getMessage() for r in caplog.records), "logged with position"


async def test_a_strict_front_door_body_refuses_an_id_that_cannot_form_a_subject_key_with_its_own_code(
    service: Service, factory: Factory
) -> None:
    org = await factory.organization()
    company = await factory.company(org, name="Contoso")
    body = {
        "organization_id": str(org),
        "strict_entities": True,
        "entities": [{"kind": "crm.company", "id": str(company)}, {"kind": "crm.company", "id": f"urn:uuid:{company}"}],
    }
    refused = await service.http.post("/v1/context/briefs", json=body, headers=service.auth)
    assert refused.status_code == 422 and code(refused) == "invalid_entity_ref", refused.text
    [detail] = refused.json()["error"]["details"]
    assert detail["loc"] == ["entities", 1] and "subject key" in detail["reason"]
    not_bool = await service.http.post(
        "/v1/context/briefs", json={**body, "strict_entities": "yes"}, headers=service.auth
    )
    assert not_bool.status_code == 422 and code(not_bool) == "invalid_request"


@pytest.mark.parametrize("malformed", MALFORMED, ids=["urn-uuid", "no-id", "a-string", "label-not-text"])
async def test_a_segment_event_with_one_malformed_entity_builds_a_brief_from_the_valid_ones(
    service: Service, factory: Factory, malformed: Any
) -> None:
    org = await factory.organization()
    first = await factory.company(org, name="First Robotics")
    second = await factory.company(org, name="Second Robotics")
    policy = ContextPolicy(
        sources=[ContextSourceSpec(name="application", required=True, token_budget=2000)], total_token_budget=3000
    )
    event = {
        "name": "context/segment.brief.requested",
        "data": {
            "run_id": str(uuid4()),
            "segment": 0,
            "waited": False,
            "request": {
                "subject": {"organization_id": str(org)},
                "query": "q",
                "entities": _entities(first, second, malformed),
            },
            "policy": policy.model_dump(mode="json"),
        },
    }
    run = await service.executor.run(SEGMENT, event, retries=SEGMENT_RETRIES)

    assert run.status == "completed", run.output
    brief = run.output["brief"]
    assert brief["text"].index("First Robotics") < brief["text"].index("Second Robotics")
    assert brief["dropped_entities"] == 1 and brief["failed_sources"] == []


# --- the front door's conversation is required ------------------------------------------------------------


async def test_a_conversation_failure_on_the_front_door_answers_503_required_context_source_failed(
    service: Service, factory: Factory
) -> None:
    failing = ScriptedConversation(fail_next=1)
    others = [source for source in service.services.registry if source.name != "conversation"]
    service.services.builder = DefaultContextBuilder(ContextSourceRegistry([failing, *others]), ContextPacker())
    tenant = await factory.tenant(users=1)
    conversation = await factory.conversation(tenant.id, user_id=tenant.user)
    body = {"organization_id": str(tenant.id), "user_id": str(tenant.user), "conversation_id": str(conversation)}
    response = await service.http.post("/v1/context/briefs", json=body, headers=service.auth)

    assert failing.reads == 1
    assert response.status_code == 503 and code(response) == "required_context_source_failed", response.text
    assert response.json()["error"]["details"] == {"sources": ["conversation"]}
    retried = await service.http.post("/v1/context/briefs", json=body, headers=service.auth)
    assert retried.status_code == 200, "the caller retries, and the next read answers"


# --- the workflow-node check ------------------------------------------------------------------------------


async def test_the_validate_route_refuses_a_workflow_node_that_calls_a_memory_tool(service: Service) -> None:
    policy = {"sources": [{"name": "memory", "token_budget": 300}], "total_token_budget": 500}
    nodes = ["crm.search", REMEMBER_TOOL, "email.send", FORGET_TOOL]
    refused = await service.http.post(
        "/v1/context/policies/validate",
        json={"policy": policy, "definition": {"kind": "workflow", "tool_nodes": nodes}},
        headers=service.auth,
    )
    assert refused.status_code == 422 and code(refused) == "memory_tool_in_workflow", refused.text
    assert [d["loc"] for d in refused.json()["error"]["details"]] == [
        ["definition", "tool_nodes", 1],
        ["definition", "tool_nodes", 3],
    ]
    agent = await service.http.post(
        "/v1/context/policies/validate",
        json={"policy": policy, "definition": {"kind": "agent", "tool_nodes": nodes}},
        headers=service.auth,
    )
    assert agent.status_code == 200 and agent.json()["valid"] is True, "an agent owns memory"
    both = await service.http.post(
        "/v1/context/policies/validate",
        json={"policy": {**policy, "total_token_budget": 0}, "definition": {"kind": "skill", "tool_nodes": nodes}},
        headers=service.auth,
    )
    assert both.status_code == 422 and code(both) == "policy_invalid"
    locs = [d["loc"] for d in both.json()["error"]["details"]]
    assert ["total_token_budget"] in locs and ["definition", "tool_nodes", 1] in locs, "every problem is listed"
