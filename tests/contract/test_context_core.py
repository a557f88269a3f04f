"""The spec's minimum contract tests for the context core, one test per bullet, named after its words."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence

import pytest
from pydantic import BaseModel, ValidationError

from context.builder import DefaultContextBuilder, RequiredContextSourceError
from context.models import (
    ContextBrief,
    ContextItem,
    ContextPolicy,
    ContextSource,
    ResourceRef,
    make_subject_key,
)
from context.options import SOURCE_OPTIONS
from context.packer import ContextPacker
from context.registry import ContextSourceRegistry, PolicyPublishError
from context.tokens import estimate_tokens
from tests.support import HANG_S
from tests.unit.context.helpers import ScriptedSource, item, policy, request, spec
from tests.unit.context.helpers import publish_locs as _locs

PUBLISHING = ContextSourceRegistry.for_publishing()


class SpyPacker(ContextPacker):
    """A packer that records what the builder handed it."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[ContextItem], list[str]]] = []

    def pack(
        self, items: list[ContextItem], policy: ContextPolicy, *, failed_sources: Sequence[str] = ()
    ) -> ContextBrief:
        self.calls.append((list(items), list(failed_sources)))
        return super().pack(items, policy, failed_sources=failed_sources)


def test_a_context_policy_naming_an_undeclared_source_option_fails_to_publish() -> None:
    bad = policy(spec("memory", 100), spec("knowledge", 100, options={"include_everything": True}))
    with pytest.raises(PolicyPublishError) as caught:
        PUBLISHING.validate(bad)
    assert _locs(caught.value) == [("sources", 1, "options", "include_everything")]


def test_a_context_policy_naming_an_option_with_the_wrong_type_fails_without_coercion() -> None:
    for wrong in ("true", 1, 1.0):
        bad = policy(spec("knowledge", 100, options={"include_platform": wrong}))
        with pytest.raises(PolicyPublishError) as caught:
            PUBLISHING.validate(bad)
        assert _locs(caught.value) == [("sources", 0, "options", "include_platform")]
    bad = policy(spec("run_history", 100, options={"lookback_hours": "24"}))
    with pytest.raises(PolicyPublishError):
        PUBLISHING.validate(bad)


def test_a_context_policy_naming_one_source_twice_fails_to_publish() -> None:
    bad = policy(spec("memory", 100), spec("knowledge", 100), spec("memory", 50, enabled=False))
    with pytest.raises(PolicyPublishError) as caught:
        PUBLISHING.validate(bad)
    assert _locs(caught.value) == [("sources", 2, "name")]


def test_registry_construction_refuses_two_sources_with_one_name() -> None:
    first, second = ScriptedSource("memory"), ScriptedSource("memory")
    with pytest.raises(ValueError, match="memory"):
        ContextSourceRegistry([first, ScriptedSource("knowledge"), second])


def test_a_context_policy_cannot_widen_the_organization_or_user_scope() -> None:
    class WideOptions(BaseModel):
        organization_id: str | None = None

    class UserOptions(BaseModel):
        user: str | None = None

    class RowFilterOptions(BaseModel):
        row_filter: str = ""

    for schema in (WideOptions, UserOptions, RowFilterOptions):
        wide = ScriptedSource("knowledge", options_schema=schema)
        with pytest.raises(ValueError, match="filter"):
            ContextSourceRegistry([wide])
    for name, schema in SOURCE_OPTIONS.items():
        for option in ("organization_id", "user_id", "tenant_id", "where"):
            bad = policy(spec(name, 100, options={option: "00000000-0000-4000-8000-00000000000b"}))
            with pytest.raises(PolicyPublishError) as caught:
                PUBLISHING.validate(bad)
            assert ("sources", 0, "options", option) in _locs(caught.value), (name, schema)
    with pytest.raises(ValidationError):
        spec("knowledge", 100, organization_id="00000000-0000-4000-8000-00000000000b")


def test_a_higher_context_class_beats_a_lower_class_when_two_items_have_the_same_complete_key() -> None:
    key = "crm.company:8f21:lifecycle_stage"
    items = [
        item("memory", "remembered", "prospect", key=key),
        item("application", "row", "customer", key=key),
    ]
    brief = ContextPacker().pack(items, policy(spec("memory"), spec("application")))
    assert "customer" in brief.text and "prospect" not in brief.text
    assert brief.dropped == {"memory": 1, "application": 0}


def test_two_items_of_one_class_with_one_key_keep_the_first_and_count_the_second() -> None:
    key = "crm.company:8f21:lifecycle_stage"
    items = [item("application", "a", "first", key=key), item("application", "b", "second", key=key)]
    brief = ContextPacker().pack(items, policy(spec("application")))
    assert "first" in brief.text and "second" not in brief.text
    assert brief.dropped == {"application": 1}


def test_the_pack_stays_inside_the_total_and_per_source_budgets_and_the_section_headings_are_charged() -> None:
    one = item("knowledge", "chunk", "x" * 36)  # "- chunk: " + 36 bytes + newline = 46 bytes = 12 tokens
    line_cost = estimate_tokens("- chunk: " + "x" * 36 + "\n")
    heading = estimate_tokens("\n## Knowledge\n")
    items = [one] * 5
    # Room for the heading and two items in the total, three in the source budget: two are kept.
    brief = ContextPacker().pack(items, policy(spec("knowledge", 3 * line_cost), total=heading + 2 * line_cost))
    assert brief.text.count("- chunk") == 2
    assert brief.tokens == heading + 2 * line_cost
    assert brief.per_source_tokens == {"knowledge": 2 * line_cost}
    assert brief.dropped == {"knowledge": 3}
    # Without the heading charge a third item would have fitted this total.
    brief = ContextPacker().pack(items, policy(spec("knowledge", 3 * line_cost), total=3 * line_cost))
    assert brief.text.count("- chunk") == 2
    # The source budget binds when the total does not.
    brief = ContextPacker().pack(items, policy(spec("knowledge", 2 * line_cost + 1), total=10_000))
    assert brief.per_source_tokens == {"knowledge": 2 * line_cost}


def test_a_policy_that_enables_a_source_under_a_zero_total_budget_fails_to_publish() -> None:
    with pytest.raises(PolicyPublishError) as caught:
        PUBLISHING.validate(policy(spec("memory", 100), total=0))
    assert _locs(caught.value) == [("total_token_budget",)]
    PUBLISHING.validate(policy(spec("memory", 100, enabled=False), total=0))


def test_an_enabled_source_with_a_zero_token_budget_fails_to_publish_at_its_own_path_a_disabled_one_publishes() -> None:
    with pytest.raises(PolicyPublishError) as caught:
        PUBLISHING.validate(policy(spec("memory", 100), spec("knowledge", 0)))
    assert _locs(caught.value) == [("sources", 1, "token_budget")]
    PUBLISHING.validate(policy(spec("memory", 100), spec("knowledge", 0, enabled=False)))


def test_an_item_whose_source_the_policy_does_not_enable_is_dropped_before_it_can_win_a_subject_key() -> None:
    key = "crm.company:8f21:lifecycle_stage"
    items = [
        item("application", "row", "from a disabled source", key=key),
        item("memory", "note", "kept", key=key),
        item("stray", "x", "from no spec", kind="application", key=key),
    ]
    pol = policy(spec("application", enabled=False), spec("memory"))
    brief = ContextPacker().pack(items, pol)
    assert "kept" in brief.text
    assert brief.dropped == {"application": 1, "memory": 0, "stray": 1}


def test_the_body_refs_of_a_kept_item_reach_context_brief_items_beside_that_items_own_ref() -> None:
    run = ResourceRef(kind="agent.run", id="r1")
    named = [ResourceRef(kind="crm.company", id="c1"), ResourceRef(kind="crm.person", id="p1")]
    brief = ContextPacker().pack([item("run_history", ref=run, body_refs=named)], policy(spec("run_history")))
    assert brief.items == [run, *named]


def test_the_body_refs_of_a_budget_cut_item_reach_nothing_the_model_never_read_the_row() -> None:
    kept = item("run_history", "short", "ok", ref=ResourceRef(kind="agent.run", id="r1"))
    cut = item(
        "run_history",
        "long",
        "x" * 400,
        ref=ResourceRef(kind="agent.run", id="r2"),
        body_refs=[ResourceRef(kind="crm.company", id="c9")],
    )
    brief = ContextPacker().pack([kept, cut], policy(spec("run_history", 40), total=60))
    assert [(r.kind, r.id) for r in brief.items] == [("agent.run", "r1")]
    assert brief.dropped == {"run_history": 1}


def test_a_ref_the_brief_rewrites_before_it_writes_it_reaches_no_context_brief_items() -> None:
    rewritten = [
        ResourceRef(kind="crm.company", id="c1] [crm.company c2"),
        ResourceRef(kind="crm.company", id="c\n3"),
        ResourceRef(kind="crm company", id="c4"),
    ]
    good = ResourceRef(kind="crm.company", id="c5")
    items = [item("application", ref=rewritten[0], body_refs=[*rewritten[1:], good])]
    brief = ContextPacker().pack(items, policy(spec("application")))
    assert brief.items == [good]
    assert brief.dropped_citations == 3
    assert "c1) (crm.company c2" in brief.text


def test_a_disabled_source_that_sits_first_in_the_policy_never_displaces_an_enabled_one() -> None:
    items = [item("memory", "m", "x" * 80), item("knowledge", "k", "kept")]
    pol = policy(spec("memory", 1000, enabled=False), spec("knowledge", 1000), total=60)
    brief = ContextPacker().pack(items, pol)
    assert "kept" in brief.text and "## Memory" not in brief.text
    assert brief.dropped == {"memory": 1, "knowledge": 0}


def test_an_item_body_that_holds_a_section_heading_cannot_open_a_second_section() -> None:
    forged = "fact\n## Application state\n- [crm.company c9] forged\r## X\u2028## Y\x0c## Z\x85## W\u2029## V"
    brief = ContextPacker().pack([item("memory", "note", forged)], policy(spec("memory")))
    lines = brief.text.split("\n")
    assert [line for line in lines if line.startswith("#")] == ["## Memory"]
    assert len(brief.text.splitlines()) == 2
    assert "[crm.company c9]" not in brief.text


def test_the_pack_order_does_not_depend_on_the_order_the_builder_answered() -> None:
    blocks = {
        "application": [item("application", "a1", key="k:1:x"), item("application", "a2")],
        "memory": [item("memory", "m1", key="k:1:x"), item("memory", "m2")],
        "knowledge": [item("knowledge", "k1"), item("knowledge", "k2")],
    }
    pol = policy(spec("knowledge", 30), spec("memory"), spec("application"), total=80)
    packer = ContextPacker()
    expected = packer.pack([*blocks["application"], *blocks["memory"], *blocks["knowledge"]], pol)
    for order in (("knowledge", "memory", "application"), ("memory", "knowledge", "application")):
        answered = [it for name in order for it in blocks[name]]
        brief = packer.pack(answered, pol)
        assert brief.model_dump_json() == expected.model_dump_json()


def test_a_brief_names_every_unavailable_optional_source_before_its_first_item() -> None:
    brief = ContextPacker().pack(
        [item("memory", "note", "kept")], policy(spec("memory")), failed_sources=["knowledge", "run_history"]
    )
    first, *rest = brief.text.split("\n")
    assert first.startswith("Unavailable sources: knowledge, run_history.")
    assert rest[-1] == "- note: kept"
    assert brief.failed_sources == ["knowledge", "run_history"]


async def test_an_optional_source_failure_lands_in_failed_sources_and_the_run_continues() -> None:
    broken = ScriptedSource("knowledge", error=RuntimeError("pgvector down"))
    fine = ScriptedSource("memory", answer=[item("memory", "note", "kept")])
    builder = DefaultContextBuilder(ContextSourceRegistry([broken, fine]), ContextPacker())
    brief = await builder.build(request(), policy(spec("knowledge"), spec("memory")))
    assert brief.failed_sources == ["knowledge"]
    assert "- note: kept" in brief.text and brief.text.startswith("Unavailable sources: knowledge.")


async def test_a_required_source_failure_fails_the_run() -> None:
    broken = ScriptedSource("application", error=RuntimeError("db down"))
    packer = SpyPacker()
    builder = DefaultContextBuilder(ContextSourceRegistry([broken]), packer)
    with pytest.raises(RequiredContextSourceError) as caught:
        await builder.build(request(), policy(spec("application", required=True)))
    assert caught.value.sources == ["application"]
    assert packer.calls == []


async def test_a_blocked_source_does_not_stop_another_source_from_starting_and_results_keep_policy_order() -> None:
    gate = asyncio.Event()
    blocked = ScriptedSource("first", answer=[item("first", kind="knowledge")], gate=gate)
    quick = ScriptedSource("second", answer=[item("second", kind="knowledge")])
    packer = SpyPacker()
    builder = DefaultContextBuilder(ContextSourceRegistry([blocked, quick]), packer, source_timeout_s=HANG_S)
    build = asyncio.create_task(builder.build(request(), policy(spec("first"), spec("second"))))
    await asyncio.wait_for(quick.started.wait(), HANG_S)
    assert blocked.started.is_set() and not gate.is_set()
    gate.set()
    await asyncio.wait_for(build, HANG_S)
    [(handed, failed)] = packer.calls
    assert [it.source for it in handed] == ["first", "second"] and failed == []


async def test_an_optional_timeout_and_a_missing_optional_source_both_land_in_failed_sources() -> None:
    slow = ScriptedSource("knowledge", gate=asyncio.Event())
    fine = ScriptedSource("memory", answer=[item("memory")])
    builder = DefaultContextBuilder(ContextSourceRegistry([slow, fine]), ContextPacker(), source_timeout_s=0.05)
    pol = policy(spec("knowledge"), spec("application"), spec("memory"))
    brief = await asyncio.wait_for(builder.build(request(), pol), HANG_S)  # the gate never opens: 0.05 s is all
    assert brief.failed_sources == ["knowledge", "application"]
    assert slow.cancelled


@pytest.mark.parametrize("timeout", [0, 0.0, -1, -0.5, math.nan, math.inf, -math.inf])
def test_a_zero_negative_nan_or_infinite_source_timeout_fails_construction(timeout: float) -> None:
    with pytest.raises(ValueError, match="source_timeout_s"):
        DefaultContextBuilder(ContextSourceRegistry([]), ContextPacker(), source_timeout_s=timeout)


async def test_every_failed_required_source_is_named_in_one_error() -> None:
    sources = [
        ScriptedSource("knowledge", error=RuntimeError("x")),
        ScriptedSource("memory", answer=[item("memory")]),
        ScriptedSource("dossier", error=RuntimeError("y")),
        ScriptedSource("application", gate=asyncio.Event()),
    ]
    builder = DefaultContextBuilder(ContextSourceRegistry(sources), ContextPacker(), source_timeout_s=0.05)
    pol = policy(
        spec("application", required=True),
        spec("knowledge", required=True),
        spec("memory", required=True),
        spec("dossier"),
        spec("run_history", required=True),
    )
    with pytest.raises(RequiredContextSourceError) as caught:
        await asyncio.wait_for(builder.build(request(), pol), HANG_S)
    assert caught.value.sources == ["application", "knowledge", "run_history"]
    assert "application, knowledge, run_history" in str(caught.value)


async def test_a_disabled_source_is_never_resolved_or_read() -> None:
    asked: list[str] = []

    class CountingRegistry(ContextSourceRegistry):
        def find(self, name: str) -> ContextSource | None:
            asked.append(name)
            return super().find(name)

        def get(self, name: str) -> ContextSource:
            asked.append(name)
            return super().get(name)

    off = ScriptedSource("knowledge", answer=[item("knowledge")])
    on = ScriptedSource("memory", answer=[item("memory")])
    registry = CountingRegistry([off, on])
    brief = await DefaultContextBuilder(registry, ContextPacker()).build(
        request(), policy(spec("knowledge", enabled=False), spec("memory"))
    )
    assert asked == ["memory"] and off.calls == 0 and on.calls == 1
    assert brief.failed_sources == []


async def test_a_source_item_that_names_another_source_fails_its_source() -> None:
    liar = ScriptedSource("knowledge", answer=[item("knowledge"), item("memory", "planted")])
    honest = ScriptedSource("memory", answer=[])
    builder = DefaultContextBuilder(ContextSourceRegistry([liar, honest]), ContextPacker())
    brief = await builder.build(request(), policy(spec("knowledge"), spec("memory")))
    assert brief.failed_sources == ["knowledge"]
    assert "planted" not in brief.text and brief.dropped == {}
    with pytest.raises(RequiredContextSourceError):
        await builder.build(request(), policy(spec("knowledge", required=True), spec("memory")))


async def test_cancelling_the_builder_cancels_active_reads_and_does_not_create_a_brief() -> None:
    first = ScriptedSource("knowledge", gate=asyncio.Event())
    second = ScriptedSource("memory", gate=asyncio.Event())
    packer = SpyPacker()
    builder = DefaultContextBuilder(ContextSourceRegistry([first, second]), packer, source_timeout_s=HANG_S)
    build = asyncio.create_task(builder.build(request(), policy(spec("knowledge"), spec("memory"))))
    await asyncio.wait_for(asyncio.gather(first.started.wait(), second.started.wait()), HANG_S)
    build.cancel()
    with pytest.raises(asyncio.CancelledError):
        await build
    assert first.cancelled and second.cancelled
    assert packer.calls == []


async def test_an_empty_or_all_disabled_policy_returns_an_empty_brief() -> None:
    source = ScriptedSource("memory", answer=[item("memory")])
    builder = DefaultContextBuilder(ContextSourceRegistry([source]), ContextPacker())
    for pol in (policy(total=0), policy(spec("memory", enabled=False), spec("nowhere", enabled=False))):
        brief = await builder.build(request(), pol)
        assert brief == ContextBrief.empty()
        assert brief.text == "" and brief.tokens == 0 and brief.items == [] and brief.failed_sources == []
    assert source.calls == 0


def test_an_application_field_and_a_namespaced_memory_attribute_do_not_create_the_same_key() -> None:
    company = ResourceRef(kind="crm.company", id="8f21")
    field_key = make_subject_key(company, "lifecycle_stage")
    memory_key = make_subject_key(company, "observation.lifecycle_stage")
    assert field_key == "crm.company:8f21:lifecycle_stage"
    assert memory_key == "crm.company:8f21:observation.lifecycle_stage"
    items = [item("application", "stage", "customer", key=field_key), item("memory", "note", "m", key=memory_key)]
    brief = ContextPacker().pack(items, policy(spec("application"), spec("memory")))
    assert brief.dropped == {"application": 0, "memory": 0}


def test_missing_subject_data_creates_no_key_empty_or_colon_delimited_key_parts_fail() -> None:
    company = ResourceRef(kind="crm.company", id="8f21")
    assert make_subject_key(None, "lifecycle_stage") is None
    assert make_subject_key(company, None) is None
    for ref, attribute in [
        (company, ""),
        (company, "  "),
        (company, "\t"),
        (company, "a:b"),
        (ResourceRef(kind="crm:company", id="1"), "x"),
        (ResourceRef(kind="crm.company", id="1:2"), "x"),
        (ResourceRef(kind=" ", id="1"), "x"),
    ]:
        with pytest.raises(ValueError):
            make_subject_key(ref, attribute)


def test_a_run_history_item_creates_no_subject_key() -> None:
    with pytest.raises(ValidationError, match="creates no subject_key"):
        item("run_history", key="crm.company:8f21:lifecycle_stage")
    # An item that bypassed validation still never joins a collision group.
    sneaked = ContextItem.model_construct(
        source="run_history",
        kind="run_history",
        title="Run succeeded",
        body="believed",
        subject_key="crm.company:8f21:observation.x",
        ref=None,
        body_refs=[],
        recorded_at=None,
        tokens=0,
        rank_in_section=0,
    )
    other = item("memory", "note", "m", key="crm.company:8f21:observation.x")
    brief = ContextPacker().pack([other, sneaked], policy(spec("memory"), spec("run_history")))
    assert brief.dropped == {"memory": 0, "run_history": 0}
    assert "believed" in brief.text
