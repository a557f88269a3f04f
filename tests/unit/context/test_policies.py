from __future__ import annotations

from context.models import ContextPolicy
from context.options import SOURCE_OPTIONS
from context.policies import FRONT_DOOR, NAMED_POLICIES, OUTREACH_PLANNER
from context.registry import ContextSourceRegistry

PUBLISHING = ContextSourceRegistry.for_publishing()


def _names(pol: ContextPolicy) -> list[str]:
    return [s.name for s in pol.sources if s.enabled]


def test_both_fixed_policies_pass_the_publish_check() -> None:
    for pol in NAMED_POLICIES.values():
        assert PUBLISHING.validate(pol) is pol
    assert NAMED_POLICIES == {"front_door": FRONT_DOOR, "outreach_planner": OUTREACH_PLANNER}


def test_front_door_reads_the_turn_sources_and_no_outreach_class() -> None:
    assert set(_names(FRONT_DOOR)) == {
        "conversation", "personal_memory", "memory", "application", "dossier",
        "definition_summary", "knowledge", "run_history",
    }  # fmt: skip
    assert not {"outreach", "outreach_thread"} & {s.name for s in FRONT_DOOR.sources}


def test_front_door_knowledge_is_the_decided_budget_with_both_scopes() -> None:
    [knowledge] = [s for s in FRONT_DOOR.sources if s.name == "knowledge"]
    assert (knowledge.token_budget, knowledge.limit) == (1500, 8)
    assert knowledge.options == {"include_platform": True, "include_organization": True}


def test_only_the_outreach_planner_holds_the_outreach_classes() -> None:
    assert {"outreach", "outreach_thread"} <= set(_names(OUTREACH_PLANNER))
    for name, pol in NAMED_POLICIES.items():
        if name != "outreach_planner":
            assert not {"outreach", "outreach_thread"} & {s.name for s in pol.sources}


def test_no_fixed_policy_marks_the_dossier_required_or_names_an_unknown_source() -> None:
    for pol in NAMED_POLICIES.values():
        assert all(not (s.name == "dossier" and s.required) for s in pol.sources)
        assert {s.name for s in pol.sources} <= set(SOURCE_OPTIONS)
        assert pol.total_token_budget > 0


def test_the_persons_words_are_required_on_the_front_door_and_the_thread_in_the_outreach_planner() -> None:
    # Conversation is the one class never cut: a brief without it answers a question nobody asked (issue 14).
    assert [s.name for s in FRONT_DOOR.sources if s.required] == ["conversation"]
    assert [s.name for s in OUTREACH_PLANNER.sources if s.required] == ["conversation", "outreach_thread"]


def test_the_front_doors_memory_order_is_the_recorded_decision() -> None:
    # docs/decisions.md, "Memory": relevance, measured on REALTALK (issue 43); personal_memory stays newest first.
    from context.options import MemoryOptions
    from context.policies import FRONT_DOOR_MEMORY_ORDER

    assert FRONT_DOOR_MEMORY_ORDER == "relevance"
    specs = {s.name: MemoryOptions.model_validate(s.options) for s in FRONT_DOOR.sources if "memory" in s.name}
    assert specs["memory"].order == FRONT_DOOR_MEMORY_ORDER
    assert specs["personal_memory"].order == "recency"
