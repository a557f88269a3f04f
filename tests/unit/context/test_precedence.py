"""Each adjacent pair of the fact-owner order, pinned by behaviour (issue 14): swap any two neighbours in
`CLASS_ORDER` and a test here fails.

The expected order is written out from the spec's "Fact owners" line, never read from the code, and each
pair is checked by the three things precedence does: the section order, the budget order (the upper class
is spent first, so a tight total cuts the lower), and same subject wins upward (for the keyed classes).
The policy lists the sources and the items arrive in reverse class order, so only the class order can put
them right. A protected first item (the newest conversation message, the newest outreach reply) is given
to its class before the competing item, so the pair competes on an ordinary item.
"""

from __future__ import annotations

from itertools import pairwise

import pytest

from context._render import header_cost, header_line, render_item
from context.models import KEYLESS_KINDS, ContextItem, ContextKind
from context.packer import ContextPacker
from tests.unit.context.helpers import item, policy, spec

SPEC_ORDER: list[ContextKind] = [
    "conversation",
    "outreach_thread",
    "outreach",
    "personal_memory",
    "application",
    "dossier",
    "definition_summary",
    "knowledge",
    "memory",
    "run_history",
]
"""conversation > outreach thread > outreach > personal memory > application state > company dossier >
definition summaries > knowledge > memory > run history (the spec)."""

PAIRS = list(pairwise(SPEC_ORDER))
IDS = [f"{upper}>{lower}" for upper, lower in PAIRS]
PROTECTED: frozenset[ContextKind] = frozenset({"conversation", "outreach_thread"})
PACK = ContextPacker().pack


def _pair_policy(upper: ContextKind, lower: ContextKind, total: int) -> object:
    return policy(spec(lower, 10_000), spec(upper, 10_000), total=total)  # reverse class order on purpose


def _fillers(*kinds: ContextKind) -> list[ContextItem]:
    """The protected first item of each protected kind, so the pair competes on ordinary items."""
    return [item(kind, "newest", "kept whatever the budget") for kind in kinds if kind in PROTECTED]


def test_the_pairs_cover_the_whole_order() -> None:
    assert len(PAIRS) == 9 and len(set(SPEC_ORDER)) == 10


@pytest.mark.parametrize(("upper", "lower"), PAIRS, ids=IDS)
def test_the_upper_class_renders_first(upper: ContextKind, lower: ContextKind) -> None:
    items = [item(lower, "lower", "b"), item(upper, "upper", "a")]
    lines = PACK(items, _pair_policy(upper, lower, 10_000)).text.split("\n")  # type: ignore[arg-type]
    assert lines.index(header_line(upper)) < lines.index(header_line(lower)), f"{upper} renders above {lower}"


@pytest.mark.parametrize(("upper", "lower"), PAIRS, ids=IDS)
def test_the_upper_class_is_spent_first_so_a_tight_total_cuts_the_lower(upper: ContextKind, lower: ContextKind) -> None:
    fillers = _fillers(upper, lower)
    contender = {kind: item(kind, f"{kind} contender", "x" * 400) for kind in (upper, lower)}
    fixed = sum(render_item(f)[1] + header_cost(f.kind) for f in fillers)
    need = {
        kind: render_item(it)[1] + (0 if kind in PROTECTED else header_cost(kind)) for kind, it in contender.items()
    }
    total = fixed + max(need.values())  # room for exactly one contender, whichever is spent first
    assert min(need.values()) > total - fixed - min(need.values()), "the test's arithmetic leaves room for one only"
    answered = [it for kind in (lower, upper) for it in (*_fillers(kind), contender[kind])]  # filler first in class
    brief = PACK(answered, _pair_policy(upper, lower, total))  # type: ignore[arg-type]
    assert f"{upper} contender" in brief.text and f"{lower} contender" not in brief.text, (
        f"{upper} is spent before {lower}"
    )
    assert brief.dropped[lower] == 1 and brief.dropped[upper] == 0


KEYED_PAIRS = [(u, lo) for u, lo in PAIRS if u not in KEYLESS_KINDS and lo not in KEYLESS_KINDS]


@pytest.mark.parametrize(("upper", "lower"), KEYED_PAIRS, ids=[f"{u}>{lo}" for u, lo in KEYED_PAIRS])
def test_the_upper_class_wins_a_shared_subject_key(upper: ContextKind, lower: ContextKind) -> None:
    key = "crm.company:c1:preference.stage"
    items = [item(lower, "lower claim", "b", key=key), item(upper, "upper claim", "a", key=key)]
    brief = PACK(items, _pair_policy(upper, lower, 10_000))  # type: ignore[arg-type]
    assert "upper claim" in brief.text and "lower claim" not in brief.text, f"{upper} wins the key over {lower}"
    assert brief.dropped == {lower: 1, upper: 0}
