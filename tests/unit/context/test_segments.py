"""The build-or-reuse decision and the system block composition of `context.segments` (pure, no Inngest)."""

from __future__ import annotations

import pytest

from context.models import ContextBrief, ContextPolicy, ContextSourceSpec
from context.segments import (
    BRIEF_OPEN,
    MissingSystemBlockError,
    SegmentAction,
    SystemBlock,
    compose_system_block,
    decide_segment,
)


def policy(refresh: bool) -> ContextPolicy:
    return ContextPolicy(
        sources=[ContextSourceSpec(name="memory", token_budget=10)], total_token_budget=10, refresh_on_resume=refresh
    )


def brief(text: str) -> ContextBrief:
    return ContextBrief(text=text, items=[], tokens=1, per_source_tokens={}, dropped={}, failed_sources=[])


@pytest.mark.parametrize(
    ("segment", "waited", "refresh", "action"),
    [
        (0, False, False, SegmentAction.BUILD),
        (0, True, False, SegmentAction.BUILD),
        (1, False, True, SegmentAction.REUSE),
        (1, True, False, SegmentAction.REUSE),
        (1, True, True, SegmentAction.BUILD),
        (7, False, False, SegmentAction.REUSE),
    ],
)
def test_segment_zero_builds_and_a_later_one_builds_only_after_a_wait_when_the_policy_refreshes(
    segment: int, waited: bool, refresh: bool, action: SegmentAction
) -> None:
    decision = decide_segment(segment, waited=waited, policy=policy(refresh))
    assert decision.action is action and decision.builds is (action is SegmentAction.BUILD)
    assert decision.reason


@pytest.mark.parametrize("bad", [-1, True, 1.0, "1"])
def test_a_segment_number_is_a_non_negative_integer(bad: object) -> None:
    with pytest.raises(ValueError, match="segment number"):
        decide_segment(bad, waited=False, policy=policy(True))  # type: ignore[arg-type]


def test_a_rebuilt_brief_replaces_the_block_and_is_never_appended() -> None:
    first = compose_system_block("Be brief.", brief("OLD FACT"))
    second = compose_system_block("Be brief.", brief("NEW FACT"), stored=first)
    assert second.text.count(BRIEF_OPEN) == 1
    assert "NEW FACT" in second.text and "OLD FACT" not in second.text
    assert second.text.startswith("Be brief.")


def test_no_brief_reuses_the_stored_block_and_no_stored_block_is_an_error() -> None:
    stored = SystemBlock("Be brief.", "FACT")
    assert compose_system_block("Other instructions", None, stored=stored) is stored
    with pytest.raises(MissingSystemBlockError) as caught:
        compose_system_block("Be brief.", None)
    assert caught.value.code == "system_block_missing"


def test_an_empty_brief_still_makes_one_delimited_block() -> None:
    block = compose_system_block("", brief(""))
    assert block.text.count(BRIEF_OPEN) == 1 and not block.text.startswith("\n")
