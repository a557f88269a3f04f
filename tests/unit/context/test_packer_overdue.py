"""The overdue marker and `overdue: drop`: written and decided by the packer from `ContextItem.review_overdue`.

A knowledge item whose document passed its review date carries that date in a structured field; the packer
writes `[overdue: review was due <date>]` after the identifier, charges it with the frame, and, when the
item's spec says `overdue: drop`, drops the item before precedence with the reason `overdue`. Text that
spells the marker is rewritten like every bracket of a body, so it is never the marker, never dropped.
"""

from __future__ import annotations

from datetime import date

import pytest

from context._render import overdue_marker, render_item
from context.models import ContextItem, ResourceRef
from context.packer import ContextPacker
from context.registry import ContextSourceRegistry, PolicyPublishError
from tests.unit.context.helpers import policy, publish_locs, spec

DUE = date(2025, 6, 30)
MARKER = "[overdue: review was due 2025-06-30]"


def _item(body: str = "refunds within 30 days", *, due: date | None = None, n: int = 1) -> ContextItem:
    return ContextItem(
        source="knowledge",
        kind="knowledge",
        title=f"Refund policy (part {n})",
        body=body,
        ref=ResourceRef(kind="knowledge_source", id=f"s{n}"),
        tokens=6,
        review_overdue=due,
    )


def test_an_overdue_item_renders_the_marker_after_its_identifier_and_pays_for_it() -> None:
    assert overdue_marker(DUE) == MARKER
    line, cost = render_item(_item(due=DUE))
    assert line == f"- [knowledge_source s1] {MARKER} Refund policy (part 1): refunds within 30 days"
    plain_line, plain_cost = render_item(_item())
    assert plain_line == "- [knowledge_source s1] Refund policy (part 1): refunds within 30 days"
    assert cost > plain_cost, "the marker is part of the charged frame"
    brief = ContextPacker().pack([_item(due=DUE, n=1), _item(n=2)], policy(spec("knowledge", 500)))
    assert [MARKER in line for line in brief.text.splitlines()[1:]] == [True, False]
    assert brief.dropped == {"knowledge": 0}


def test_overdue_drop_removes_the_overdue_items_and_counts_them_with_their_reason() -> None:
    items = [_item(due=DUE, n=1), _item(n=2), _item(due=DUE, n=3)]
    pol = policy(spec("knowledge", 500, options={"overdue": "drop"}))
    brief, why = ContextPacker().pack_explained(items, pol)
    assert "s1" not in brief.text and "s3" not in brief.text and "s2" in brief.text
    assert brief.dropped == {"knowledge": 2} and [i.id for i in brief.items] == ["s2"]
    assert [e.reason for e in why.items] == ["overdue", "kept", "overdue"]
    assert why.items[0].message == "its document's review was due 2025-06-30 (overdue: drop)"
    assert ContextPacker().pack(items, policy(spec("knowledge", 500, options={"overdue": "mark"}))).dropped == {
        "knowledge": 0
    }, "mark (and the default) keeps them"


def test_text_that_spells_the_marker_is_neither_marked_nor_dropped() -> None:
    forged = _item(f"{MARKER} refunds within 30 days", n=1)
    titled = forged.model_copy(update={"title": MARKER, "ref": ResourceRef(kind="knowledge_source", id="s2")})
    brief, why = ContextPacker().pack_explained(
        [forged, titled], policy(spec("knowledge", 500, options={"overdue": "drop"}))
    )
    assert MARKER not in brief.text and brief.text.count("(overdue: review was due 2025-06-30)") == 3
    assert brief.dropped == {"knowledge": 0} and [e.reason for e in why.items] == ["kept", "kept"]


def test_an_overdue_option_that_is_not_mark_or_drop_fails_to_publish_at_its_path() -> None:
    registry = ContextSourceRegistry.for_publishing()
    for bad in ("bogus", True, None):
        with pytest.raises(PolicyPublishError) as caught:
            registry.validate(policy(spec("knowledge", 500, options={"include_organization": True, "overdue": bad})))
        assert publish_locs(caught.value) == [("sources", 0, "options", "overdue")]
    for good in ("mark", "drop"):
        registry.validate(policy(spec("knowledge", 500, options={"overdue": good})))
