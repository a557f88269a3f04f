from __future__ import annotations

import pytest

from context._render import HEADINGS, header_cost, normalise, render_item, written_as_stored
from context.models import CLASS_ORDER, ResourceRef
from context.packer import ContextPacker
from context.tokens import estimate_tokens
from tests.unit.context.helpers import item, policy, spec

PACK = ContextPacker().pack


def _line_cost(line: str) -> int:
    return estimate_tokens(line + "\n")


def test_every_kind_has_a_heading_in_class_order() -> None:
    assert tuple(HEADINGS) == CLASS_ORDER
    assert len(set(HEADINGS.values())) == 10


def test_the_item_line_format() -> None:
    ref = ResourceRef(kind="crm.company", id="c1", label="ignored")
    assert render_item(item("application", "Stage", "customer", ref=ref))[0] == ("- [crm.company c1] Stage: customer")
    assert render_item(item("memory", "Note", ""))[0] == "- Note"
    assert render_item(item("memory", "", "only body"))[0] == "- only body"


def test_an_item_is_charged_its_measured_tokens_plus_the_frame() -> None:
    ref = ResourceRef(kind="crm.company", id="c1")
    _, cost = render_item(item("application", "Stage", "x" * 400, ref=ref, tokens=7))
    assert cost == 7 + estimate_tokens("- [crm.company c1] Stage: \n")
    _, cost = render_item(item("application", "Stage", "customer", ref=ref))
    assert cost == estimate_tokens("- [crm.company c1] Stage: customer\n")


def test_normalise_collapses_every_whitespace_and_rewrites_brackets() -> None:
    text = " a\r\nb\tc\x0bd\x0ce\x1cf\x1dg\x1eh\x1fi\x85j\u2028k\u2029l\u00a0m\u3000n\x00o [p] \uff3bq\uff3d "
    assert normalise(text) == "a b c d e f g h i j k l m n o (p) (q)"


def test_a_lone_surrogate_becomes_the_replacement_character_and_the_brief_still_packs() -> None:
    """JSON's `"\\ud800"` decodes to a lone surrogate, which UTF-8 cannot encode: the count would raise."""
    assert normalise("a\ud800b\udfff") == "a\ufffdb\ufffd"
    line, cost = render_item(
        item("application", "Stage\udc00", "x\ud800", ref=ResourceRef(kind="crm.company", id="c1"))
    )
    assert "\ud800" not in line and cost == estimate_tokens(line)


@pytest.mark.parametrize(
    ("kind", "ident", "ok"),
    [
        ("crm.company", "8f21-aa", True),
        ("crm.company", "a b", False),
        ("crm company", "a", False),
        ("crm.company", "a]", False),
        ("crm.company", "[a", False),
        ("crm.company", "a\u2028", False),
        ("crm.company", "a\x00", False),
    ],
)
def test_written_as_stored(kind: str, ident: str, ok: bool) -> None:
    assert written_as_stored(ResourceRef(kind=kind, id=ident)) is ok


def test_sections_render_in_class_order_with_headings() -> None:
    items = [item("run_history", "r"), item("memory", "m"), item("conversation", "c")]
    brief = PACK(items, policy(spec("run_history"), spec("memory"), spec("conversation")))
    assert brief.text == "## Conversation\n- c: b\n\n## Memory\n- m: b\n\n## Run history\n- r: b"


def test_page_order_moves_sections_but_never_changes_what_is_kept() -> None:
    items = [item("conversation", "c"), item("knowledge", "k", "x" * 200), item("memory", "m")]
    base = policy(spec("conversation"), spec("knowledge"), spec("memory"), total=40)
    moved = policy(spec("conversation"), spec("knowledge"), spec("memory"), total=40, page_order=["memory"])
    a, b = PACK(items, base), PACK(items, moved)
    assert b.text.index("## Memory") < b.text.index("## Conversation")
    assert (a.tokens, a.dropped, a.per_source_tokens, a.items) == (b.tokens, b.dropped, b.per_source_tokens, b.items)
    assert sorted(a.text.splitlines()) == sorted(b.text.splitlines())


def test_a_higher_rank_renders_lower_and_never_changes_the_spend() -> None:
    items = [item("memory", "first", rank=2), item("memory", "second", rank=0), item("memory", "third", rank=0)]
    brief = PACK(items, policy(spec("memory")))
    assert brief.text.splitlines()[1:] == ["- second: b", "- third: b", "- first: b"]
    # Budget for the heading and one item: the first in spend order is kept, whatever its rank.
    tight = header_cost("memory") + _line_cost("- first: b")
    brief = PACK(items, policy(spec("memory"), total=tight))
    assert brief.text.splitlines()[1:] == ["- first: b"]


def test_an_empty_subject_key_is_no_key() -> None:
    items = [item("memory", "a", key=""), item("memory", "b", key=""), item("application", "c", key="")]
    brief = PACK(items, policy(spec("memory"), spec("application")))
    assert brief.dropped == {"memory": 0, "application": 0}
    assert brief.text.count("\n- ") == 3


def test_a_whole_item_is_dropped_never_truncated() -> None:
    items = [item("knowledge", "big", "word " * 100), item("knowledge", "small", "fits")]
    brief = PACK(items, policy(spec("knowledge", 100), total=100))
    assert "word" not in brief.text and "- small: fits" in brief.text
    assert brief.dropped == {"knowledge": 1}


def test_the_heading_is_charged_once_per_section_and_to_the_total_only() -> None:
    items = [item("memory", "a"), item("memory", "b")]
    per_item = _line_cost("- a: b")
    brief = PACK(items, policy(spec("memory", 2 * per_item)))
    assert brief.per_source_tokens == {"memory": 2 * per_item}
    assert brief.tokens == header_cost("memory") + 2 * per_item


def test_an_item_whose_heading_does_not_fit_the_total_is_dropped() -> None:
    line = _line_cost("- a: b")
    brief = PACK([item("memory", "a")], policy(spec("memory"), total=line + header_cost("memory") - 1))
    assert brief.text == "" and brief.tokens == 0 and brief.dropped == {"memory": 1}
    brief = PACK([item("memory", "a")], policy(spec("memory"), total=line + header_cost("memory")))
    assert brief.text == "## Memory\n- a: b"


def test_per_source_maps_name_every_source_in_the_items_and_no_other() -> None:
    items = [item("memory"), item("stray", kind="memory")]
    brief = PACK(items, policy(spec("knowledge"), spec("memory"), spec("application", enabled=False)))
    assert list(brief.dropped) == ["memory", "stray"]
    assert brief.dropped == {"memory": 0, "stray": 1}
    assert brief.per_source_tokens["stray"] == 0 and "knowledge" not in brief.per_source_tokens


def test_the_unavailable_line_is_charged_first_and_never_capped() -> None:
    names = ["knowledge", "memory", "run_history"]
    notice = "Unavailable sources: knowledge, memory, run_history. Their facts are missing from this brief."
    brief = PACK([item("application", "a")], policy(spec("application")), failed_sources=names)
    assert brief.text.splitlines()[0] == notice
    assert brief.tokens == _line_cost(notice) + header_cost("application") + _line_cost("- a: b")
    tiny = PACK([item("application", "a")], policy(spec("application"), total=3), failed_sources=names)
    assert tiny.text == notice and tiny.tokens == _line_cost(notice) > 3
    assert tiny.dropped == {"application": 1}


def test_failed_source_names_are_normalised_and_named_once() -> None:
    brief = PACK([], policy(), failed_sources=["knowledge\n## Forged", "knowledge\n## Forged", "  ", "[x]"])
    assert brief.failed_sources == ["knowledge ## Forged", "(unnamed source)", "(x)"]
    assert len(brief.text.splitlines()) == 1


def test_nothing_given_gives_an_empty_brief() -> None:
    brief = PACK([], policy(spec("memory")))
    assert (brief.text, brief.tokens, brief.items, brief.dropped, brief.per_source_tokens) == ("", 0, [], {}, {})


def test_items_are_deduplicated_by_kind_and_id_never_by_label_keeping_the_first() -> None:
    first = ResourceRef(kind="crm.company", id="c1", label="Acme")
    second = ResourceRef(kind="crm.company", id="c1", label="Acme Inc")
    other = ResourceRef(kind="crm.company", id="c2")
    items = [item("application", "a", ref=first, body_refs=[second, other]), item("application", "b", ref=second)]
    brief = PACK(items, policy(spec("application")))
    assert brief.items == [first, other]
    assert brief.items[0].label == "Acme"


def test_the_newest_message_is_never_cut_and_older_messages_obey_the_budgets() -> None:
    newest = item("conversation", "You", "x" * 4000)
    older = [item("conversation", "You", "older one"), item("conversation", "Agent", "older two")]
    rest = item("memory", "note", "m")
    pol = policy(spec("conversation", 100), spec("memory"), total=200)
    brief = PACK([newest, *older, rest], pol)
    newest_cost = header_cost("conversation") + _line_cost("- You: " + "x" * 4000)
    assert "x" * 4000 in brief.text
    assert brief.tokens == newest_cost > 200
    assert brief.dropped == {"conversation": 2, "memory": 1}


def test_the_newest_message_comes_first_and_older_ones_spend_what_is_left() -> None:
    messages = [item("conversation", "You", "now", rank=3), item("conversation", "Agent", "before", rank=2)]
    messages.append(item("conversation", "You", "long ago " * 20, rank=1))
    cost = header_cost("conversation") + _line_cost("- You: now") + _line_cost("- Agent: before")
    brief = PACK(messages, policy(spec("conversation", 1000), total=cost))
    # Spent newest first, so the oldest is cut; rendered oldest first by rank.
    assert brief.text.splitlines()[1:] == ["- Agent: before", "- You: now"]
    assert brief.dropped == {"conversation": 1} and brief.tokens == cost


def test_a_disabled_conversation_source_has_no_protected_message() -> None:
    brief = PACK([item("conversation", "You", "hi")], policy(spec("conversation", enabled=False)))
    assert brief.text == "" and brief.dropped == {"conversation": 1}


def test_items_carry_the_order_the_source_returned_inside_one_class() -> None:
    items = [item("b", "b1", kind="memory"), item("a", "a1", kind="memory"), item("b", "b2", kind="memory")]
    brief = PACK(items, policy(spec("a"), spec("b")))
    assert [line[2:4] for line in brief.text.splitlines()[1:]] == ["a1", "b1", "b2"]


def test_a_1658_token_newest_reply_survives_a_1500_token_thread_budget_and_the_older_line_obeys_it() -> None:
    reply = item("outreach_thread", "inbound email", "r" * 6632, tokens=1658)  # the source puts it first
    older = item("outreach_thread", "outbound email", "Our short opener")
    pol = policy(spec("outreach_thread", 1500), total=6000)
    brief = PACK([reply, older], pol)
    assert "r" * 6632 in brief.text and "Our short opener" not in brief.text
    assert brief.per_source_tokens == {"outreach_thread": render_item(reply)[1]} and brief.dropped == {
        "outreach_thread": 1
    }


def test_the_two_protections_compose_both_first_items_overflow_and_nothing_else_does() -> None:
    message = item("conversation", "You", "m" * 2000)
    older_message = item("conversation", "Agent", "before")
    reply = item("outreach_thread", "inbound email", "r" * 2000)
    knowledge = item("knowledge", "Doc", "k")
    pol = policy(spec("knowledge", 100), spec("outreach_thread", 100), spec("conversation", 100), total=300)
    brief = PACK([knowledge, reply, message, older_message], pol)  # each source answers its newest first
    protected = render_item(message)[1] + render_item(reply)[1]
    assert brief.tokens == protected + header_cost("conversation") + header_cost("outreach_thread") > 300
    assert brief.dropped == {"knowledge": 1, "outreach_thread": 0, "conversation": 1}
    assert brief.text.index("## Conversation") < brief.text.index("## Outreach thread")
