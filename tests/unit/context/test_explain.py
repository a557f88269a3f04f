"""Explain mode: the packer says, in the same pass, why each item it was given was kept or dropped."""

from __future__ import annotations

from hypothesis import given, settings

from context.models import BriefExplanation, ContextBrief, ContextItem, ContextPolicy, ResourceRef
from context.packer import ContextPacker
from tests.unit.context.helpers import item, policy, spec
from tests.unit.context.test_packer_properties import MARK, Case, cases


def _explain(items: list[ContextItem], pol: ContextPolicy) -> tuple[ContextBrief, BriefExplanation]:
    return ContextPacker().pack_explained(items, pol)


def test_an_item_of_a_source_the_policy_does_not_enable_is_dropped_as_not_enabled() -> None:
    items = [item("knowledge", "kept"), item("memory", "off"), item("dossier", "disabled")]
    pol = policy(spec("knowledge"), spec("dossier", enabled=False))
    _, why = _explain(items, pol)
    assert [e.reason for e in why.items] == ["kept", "source_not_enabled", "source_not_enabled"]
    assert why.items[1].message == "source memory is not enabled in the policy"


def test_an_item_whose_subject_a_stronger_class_took_names_the_winner_source_and_class() -> None:
    key = "crm.company:c1:stage"
    items = [item("knowledge", "weak", key=key), item("application", "strong", key=key)]
    _, why = _explain(items, policy(spec("knowledge"), spec("application")))
    lost, won = why.items
    assert (lost.reason, lost.kept, lost.winner_source, lost.winner_kind) == (
        "subject_lost",
        False,
        "application",
        "application",
    )
    assert lost.message == "same subject lost to application of class application"
    assert won.reason == "kept" and won.winner_source is None


def test_an_item_over_its_source_budget_is_dropped_as_source_budget_spent() -> None:
    items = [item("knowledge", "first", "x" * 40), item("knowledge", "second", "y" * 40)]
    brief, why = _explain(items, policy(spec("knowledge", budget=20), total=10_000))
    assert [e.reason for e in why.items] == ["kept", "source_budget_spent"]
    assert why.items[1].message == "source budget of knowledge spent (20 tokens)"
    assert brief.dropped == {"knowledge": 1}


def test_an_item_over_the_total_budget_is_dropped_as_total_budget_spent() -> None:
    items = [item("application", "first", "x" * 40), item("knowledge", "second", "y" * 40)]
    _, why = _explain(items, policy(spec("application"), spec("knowledge"), total=30))
    assert [e.reason for e in why.items] == ["kept", "total_budget_spent"]
    assert why.items[1].message == "total budget spent (30 tokens)"


def test_a_source_whose_whole_budget_is_below_one_item_says_source_budget() -> None:
    items = [item("knowledge", f"chunk {n}", "z" * 640, tokens=160) for n in range(8)]
    brief, why = _explain(items, policy(spec("knowledge", budget=150), total=6000))
    assert brief.text == "" and brief.dropped == {"knowledge": 8}
    assert {e.reason for e in why.items} == {"source_budget_spent"}, "150 tokens hold no 160-token chunk"
    (spend,) = why.sources
    assert (spend.source, spend.used, spend.budget, spend.kept, spend.dropped) == ("knowledge", 0, 150, 0, 8)


def test_each_entry_carries_the_ref_and_the_line_cost() -> None:
    ref = ResourceRef(kind="crm.company", id="c1")
    brief, why = _explain([item("application", "Stage", "customer", ref=ref)], policy(spec("application")))
    (entry,) = why.items
    assert entry.ref == ref and entry.tokens == brief.per_source_tokens["application"]
    assert why.total_used == brief.tokens and why.total_budget == 10_000


def test_the_newest_message_that_overflows_is_kept() -> None:
    items = [item("conversation", "newest", "w" * 400)]
    _, why = _explain(items, policy(spec("conversation", budget=5), total=5))
    assert why.items[0].reason == "kept"


def test_nothing_given_explains_nothing() -> None:
    brief, why = _explain([], policy(spec("knowledge")))
    assert why.items == [] and brief.text == ""


@settings(max_examples=300, deadline=None)
@given(cases())
def test_explaining_changes_nothing_in_the_brief_and_explains_exactly_the_items_given(case: Case) -> None:
    plain = ContextPacker().pack(case.items, case.policy, failed_sources=case.failed)
    brief, why = ContextPacker().pack_explained(case.items, case.policy, failed_sources=case.failed)
    assert brief == plain, "explain mode must not change the brief"
    assert len(why.items) == len(case.items)
    in_text = {int(m) for m in MARK.findall(brief.text)}
    for position, (given_item, entry) in enumerate(zip(case.items, why.items, strict=True)):
        assert (entry.source, entry.kind, entry.title, entry.ref) == (
            given_item.source, given_item.kind, given_item.title, given_item.ref,
        )  # fmt: skip
        assert entry.kept == (entry.reason == "kept") == (position in in_text)
    for spend in why.sources:
        assert spend.dropped == sum(1 for e in why.items if e.source == spend.source and not e.kept)
        assert spend.used == brief.per_source_tokens[spend.source]
    assert [s.source for s in why.sources] == list(brief.dropped)
