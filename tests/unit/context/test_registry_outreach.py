"""The publish check and the outreach classes (issue 21, item 10): only the Outreach planner policy, recognised
by value, may name `outreach` or `outreach_thread`; any other policy is refused at that source's path."""

from __future__ import annotations

import json

import pytest

from context.errors import PolicyPublishError
from context.models import ContextPolicy
from context.policies import FRONT_DOOR, OUTREACH_PLANNER
from context.registry import ContextSourceRegistry
from tests.unit.context.helpers import policy, spec

PUBLISHING = ContextSourceRegistry.for_publishing()
CODE = "outreach_outside_planner"


def _refusals(pol: ContextPolicy) -> list[tuple[tuple[str | int, ...], str]]:
    with pytest.raises(PolicyPublishError) as caught:
        PUBLISHING.validate(pol)
    return [(e["loc"], e["type"]) for e in caught.value.errors]


@pytest.mark.parametrize("name", ["outreach", "outreach_thread"])
def test_a_policy_that_is_not_the_planners_naming_an_outreach_class_fails_to_publish_at_its_path(name: str) -> None:
    assert _refusals(policy(spec("conversation", 500), spec(name, 500), total=1000)) == [(("sources", 1, "name"), CODE)]
    disabled = policy(spec("memory", 500), spec(name, 0, enabled=False), total=1000)
    assert _refusals(disabled) == [(("sources", 1, "name"), CODE)], "naming it is enough, enabled or not"
    with pytest.raises(PolicyPublishError, match="only the Outreach planner policy may name"):
        PUBLISHING.publish({"sources": [{"name": name, "token_budget": 5}], "total_token_budget": 5})


def test_the_front_door_with_the_outreach_classes_added_is_refused_at_each_of_them() -> None:
    widened = FRONT_DOOR.model_copy(
        update={"sources": [*FRONT_DOOR.sources, spec("outreach_thread", 600), spec("outreach", 300)]}
    )
    n = len(FRONT_DOOR.sources)
    assert _refusals(widened) == [(("sources", n, "name"), CODE), (("sources", n + 1, "name"), CODE)]


def test_the_outreach_planner_policy_publishes_as_the_object_and_as_data() -> None:
    assert PUBLISHING.validate(OUTREACH_PLANNER) is OUTREACH_PLANNER
    as_json = json.loads(json.dumps(OUTREACH_PLANNER.model_dump(mode="json")))
    frozen = ContextPolicy.model_validate(as_json)  # a run's frozen policy, as a segment event carries it
    assert frozen is not OUTREACH_PLANNER and PUBLISHING.validate(frozen) is frozen
    assert PUBLISHING.publish(as_json) == OUTREACH_PLANNER


def test_a_copy_of_the_planner_that_changes_anything_is_another_policy_and_is_refused() -> None:
    thread, outreach = 1, 2  # their places in OUTREACH_PLANNER
    assert [OUTREACH_PLANNER.sources[i].name for i in (thread, outreach)] == ["outreach_thread", "outreach"]
    expected = [(("sources", thread, "name"), CODE), (("sources", outreach, "name"), CODE)]
    assert _refusals(OUTREACH_PLANNER.model_copy(update={"total_token_budget": 5999})) == expected
    wider_knowledge = [
        s.model_copy(update={"options": {"include_platform": True, "include_organization": True}})
        if s.name == "knowledge"
        else s
        for s in OUTREACH_PLANNER.sources
    ]
    assert _refusals(OUTREACH_PLANNER.model_copy(update={"sources": wider_knowledge})) == expected
    narrowed = [s for s in OUTREACH_PLANNER.sources if s.name != "conversation"]
    assert {loc for loc, _ in _refusals(OUTREACH_PLANNER.model_copy(update={"sources": narrowed}))} == {
        ("sources", 0, "name"),
        ("sources", 1, "name"),
    }
