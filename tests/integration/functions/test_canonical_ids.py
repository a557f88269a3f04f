"""Canonical identity at the edge (issue 21, items 6 and 10), over the real app: an organization id in any
spelling but its canonical text is refused with the field named (path, query, JSON body, tool invocation,
multipart form, segment event); memory subjects with look-alike kinds or ids are 422 `invalid_input` at their
path; and the publish check refuses the outreach classes outside the Outreach planner policy, on HTTP and in
the segment function."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote
from uuid import UUID

import inngest
import pytest
from inngest.experimental import mocked

from context.policies import FRONT_DOOR, OUTREACH_PLANNER
from functions._wire import SegmentBriefInput
from functions.inngest.context_segment import BUILD_STEP, EVENT, make_context_segment_brief
from tests.factories import Factory
from tests.integration.functions.conftest import Service
from tests.integration.functions.support import CountingBuilder, ScriptedConversation, segment_event
from tests.integration.memory.helpers import World, chain_rows, make_world
from tests.unit.state.lookalikes import CANONICAL_KIND, LOOK_ALIKE_KINDS, look_alike_uuids

Json = dict[str, Any]


def _error(response: Any) -> tuple[int, str, Any]:
    body = response.json()
    assert set(body) == {"error"}, body
    return response.status_code, body["error"]["code"], body["error"]["details"]


def _locs(details: Any) -> list[list[Any]]:
    return [d["loc"] for d in details]


async def test_an_organization_path_id_is_its_canonical_text_or_a_422_naming_the_path(
    service: Service, factory: Factory
) -> None:
    org = str(await factory.organization())
    shown = await service.http.get(f"/v1/organizations/{org}", headers=service.auth)
    assert shown.status_code == 200 and shown.json()["id"] == org
    for case, spelled in look_alike_uuids(org).items():
        response = await service.http.get(f"/v1/organizations/{quote(spelled, safe=':')}", headers=service.auth)
        status, code, details = _error(response)
        assert (status, code) == (422, "invalid_request"), case
        assert _locs(details) == [["path", "organization_id"]], case
        assert "\n" not in response.json()["error"]["message"]


async def _invocation(factory: Factory) -> tuple[World, Json]:
    world = await make_world(factory)
    ids = {"organization_id": world.org, "definition_id": world.definition, "run_id": world.run, "user_id": world.user}
    return world, {key: str(value) for key, value in ids.items()}


def _remember(kind: str, ident: str) -> Json:
    subject = [{"kind": kind, "id": ident}]
    return {
        "attribute": "observation.buying_process",
        "text": "Committee",
        "scope": "organization",
        "subject_refs": subject,
    }


async def test_the_memory_route_refuses_look_alike_subjects_at_their_path_and_stores_the_canonical_one(
    service: Service, factory: Factory
) -> None:
    world, invocation = await _invocation(factory)
    company = str(await factory.company(world.org))

    async def remember(arguments: Json) -> Any:
        body = {"invocation": invocation, "arguments": arguments}
        return await service.http.post("/v1/memory/remember", json=body, headers=service.auth)

    for case, kind in LOOK_ALIKE_KINDS.items():
        status, code, details = _error(await remember(_remember(kind, company)))
        assert (status, code, _locs(details)) == (422, "invalid_input", [["subject_refs", 0, "kind"]]), case
    for case, ident in look_alike_uuids(company).items():
        status, code, details = _error(await remember(_remember(CANONICAL_KIND, ident)))
        assert (status, code, _locs(details)) == (422, "invalid_input", [["subject_refs", 0, "id"]]), case
    assert await chain_rows(service.db, world.org) == [], "no look-alike key was stored"

    stored = await remember(_remember(CANONICAL_KIND, company))
    assert stored.status_code == 200, stored.text
    assert stored.json()["subject_key"] == f"crm.company:{company}:observation.buying_process"


@pytest.mark.parametrize("field", ["organization_id", "definition_id", "run_id", "user_id"])
async def test_every_id_of_a_tool_invocation_is_canonical_or_a_422_naming_it(
    service: Service, factory: Factory, field: str
) -> None:
    world, invocation = await _invocation(factory)
    for case, spelled in look_alike_uuids(invocation[field]).items():
        body = {
            "invocation": {**invocation, field: spelled},
            "arguments": _remember(CANONICAL_KIND, invocation["run_id"]),
        }
        response = await service.http.post("/v1/memory/remember", json=body, headers=service.auth)
        status, code, details = _error(response)
        assert (status, code) == (422, "invalid_request"), case
        assert _locs(details) == [["body", "invocation", field]], case
    assert await chain_rows(service.db, world.org) == []


async def test_an_organization_id_the_route_would_parse_leniently_is_refused_at_the_edge_naming_where_it_stood(
    service: Service, factory: Factory
) -> None:
    org = str(await factory.organization())
    spellings = look_alike_uuids(org)
    for case, spelled in spellings.items():
        listed = await service.http.get(
            "/v1/knowledge/sources", params={"organization_id": spelled}, headers=service.auth
        )
        status, code, details = _error(listed)
        assert (status, code, _locs(details)) == (422, "invalid_request", [["query", "organization_id"]]), case

        brief = await service.http.post(
            "/v1/context/briefs", json={"organization_id": spelled, "query": "hi"}, headers=service.auth
        )
        status, code, details = _error(brief)
        assert (status, code, _locs(details)) == (422, "invalid_request", [["body", "organization_id"]]), case

        files = {"file": ("a.md", b"# A\n\nText.", "text/markdown")}
        upload = await service.http.post(
            "/v1/knowledge/sources", files=files, data={"organization_id": spelled}, headers=service.auth
        )
        status, code, _ = _error(upload)
        assert (status, code) == (422, "invalid_request"), case
        assert "organization_id" in upload.json()["error"]["message"], case
    listed = await service.http.get("/v1/knowledge/sources", params={"organization_id": org}, headers=service.auth)
    assert listed.status_code == 200, listed.text


def test_a_segment_event_names_its_organization_canonically() -> None:
    data = segment_event(0, waited=False, policy=FRONT_DOOR)["data"]
    org = data["request"]["subject"]["organization_id"]
    assert SegmentBriefInput.model_validate(data).request.subject.organization_id == UUID(org)
    for case, spelled in look_alike_uuids(org).items():
        data["request"]["subject"]["organization_id"] = spelled
        with pytest.raises(ValueError) as caught:
            SegmentBriefInput.model_validate(data)
        assert [e["loc"] for e in caught.value.errors()] == [("request", "subject", "organization_id")], case  # type: ignore[attr-defined]


async def test_the_policy_route_refuses_an_outreach_class_outside_the_planner_and_publishes_the_planner(
    service: Service,
) -> None:
    widened = FRONT_DOOR.model_dump(mode="json")
    widened["sources"].append({"name": "outreach", "token_budget": 300})
    response = await service.http.post("/v1/context/policies/validate", json={"policy": widened}, headers=service.auth)
    status, code, details = _error(response)
    assert (status, code) == (422, "policy_invalid")
    assert [(d["loc"], d["type"]) for d in details] == [
        (["sources", len(FRONT_DOOR.sources), "name"], "outreach_outside_planner")
    ]
    planner = OUTREACH_PLANNER.model_dump(mode="json")
    published = await service.http.post("/v1/context/policies/validate", json={"policy": planner}, headers=service.auth)
    assert published.status_code == 200 and published.json()["policy"] == planner


def test_the_segment_function_refuses_an_outreach_class_outside_the_planner_and_builds_the_planner(
    session_loop: object,
) -> None:
    builder = CountingBuilder(ScriptedConversation())
    client = mocked.Inngest(app_id="ac-context", is_production=False)
    fn = make_context_segment_brief(client, builder=lambda: builder)
    widened = FRONT_DOOR.model_copy(update={"sources": [*FRONT_DOOR.sources, *OUTREACH_PLANNER.sources[1:3]]})
    refused = mocked.trigger(
        fn, inngest.Event(name=EVENT, data=segment_event(0, waited=False, policy=widened)["data"]), client
    )
    assert isinstance(refused.error, inngest.NonRetriableError) and "outreach" in str(refused.error)
    assert builder.calls == 0

    memo = {"text": "plan", "items": [], "tokens": 1, "per_source_tokens": {}, "dropped": {}, "failed_sources": []}
    planner = inngest.Event(name=EVENT, data=segment_event(0, waited=False, policy=OUTREACH_PLANNER)["data"])
    built = mocked.trigger(fn, planner, client, step_stubs={BUILD_STEP: memo})
    assert built.status is mocked.Status.COMPLETED and built.output["brief"]["text"] == "plan"
