"""The context packer: precedence, dedupe, budget and rendering of a brief, in one deterministic pass.

Steps, in this order:

1. Drop and count every item whose source no enabled spec names (a disabled source included), and every
   item marked overdue (`review_overdue`) whose source's spec says `overdue: drop` (reason `overdue`).
2. Sort by class order, then policy source order, then the order the source returned.
3. Precedence before spending: the first item of a complete subject_key stays, a later one is dropped and
   counted. An empty key is no key; conversation and run history items never take part.
4. Spend. The unavailable-source line is charged to the total first and is never capped. Two items are
   protected, spent first in class order and always kept, charged to the total and their source even when
   they overflow them: the person's newest message (the first conversation item in pack order) and the
   outreach thread's newest reply (the first outreach_thread item; the source puts the reply first). Every
   other item fits whole inside what is left of the total and of its source budget, or is dropped and
   counted. A heading is charged to the total, not to a source budget, once, when the first item of its
   class is admitted.
5. Render the kept sections in `page_order`, then class order; inside a section by `rank_in_section`, then
   spend order. List the refs of kept items that the text writes exactly as stored.

It must never truncate a body, call a model, read a source, or depend on the order the builder answered.
"""

from __future__ import annotations

from collections.abc import Sequence

from context._explain import Explainer
from context._render import (
    header_cost,
    header_line,
    normalise,
    notice_line,
    render_item,
    written_as_stored,
)
from context.models import (
    CLASS_ORDER,
    KEYLESS_KINDS,
    BriefExplanation,
    ContextBrief,
    ContextItem,
    ContextKind,
    ContextPolicy,
    DropReason,
    ResourceRef,
)
from context.options import drops_overdue_items
from context.tokens import estimate_tokens

__all__ = ["ContextPacker"]

_CLASS_RANK: dict[ContextKind, int] = {kind: rank for rank, kind in enumerate(CLASS_ORDER)}
_PROTECTED_KINDS: tuple[ContextKind, ...] = ("conversation", "outreach_thread")
"""The classes whose first item is never cut: the person's newest message, the thread's newest reply."""
_UNNAMED = "(unnamed source)"


class ContextPacker:
    """Turns source items into one brief under a policy's budgets; deterministic and model free."""

    def pack(
        self,
        items: list[ContextItem],
        policy: ContextPolicy,
        *,
        failed_sources: Sequence[str] = (),
    ) -> ContextBrief:
        """Pack `items` under `policy`, naming every source in `failed_sources` before the first item."""
        return self._pack(items, policy, failed_sources, None)

    def pack_explained(
        self,
        items: list[ContextItem],
        policy: ContextPolicy,
        *,
        failed_sources: Sequence[str] = (),
    ) -> tuple[ContextBrief, BriefExplanation]:
        """Pack like `pack`, and say in the same pass why each item given was kept or dropped."""
        explainer = Explainer(items, policy)
        brief = self._pack(items, policy, failed_sources, explainer)
        return brief, explainer.explanation(brief)

    def _pack(
        self,
        items: list[ContextItem],
        policy: ContextPolicy,
        failed_sources: Sequence[str],
        explainer: Explainer | None,
    ) -> ContextBrief:
        budgets: dict[str, tuple[int, int]] = {}  # source -> (policy index, token budget), enabled only
        drops_overdue: set[str] = set()  # enabled sources whose spec drops the items of overdue documents
        for index, spec in enumerate(policy.sources):
            if spec.enabled and spec.name not in budgets:
                budgets[spec.name] = (index, spec.token_budget)
                if drops_overdue_items(spec.options):
                    drops_overdue.add(spec.name)

        dropped: dict[str, int] = dict.fromkeys((item.source for item in items), 0)
        spent: dict[str, int] = dict(dropped)
        note = explainer.note if explainer is not None else _no_note
        ranked: list[tuple[int, int, int]] = []
        for position, item in enumerate(items):
            entry = budgets.get(item.source)
            if entry is None:
                dropped[item.source] += 1
                note(position, "source_not_enabled")
                continue
            if item.review_overdue is not None and item.source in drops_overdue:
                dropped[item.source] += 1
                note(position, "overdue")
                continue
            ranked.append((_CLASS_RANK[item.kind], entry[0], position))
        ranked.sort()

        ordered: list[ContextItem] = []
        positions: list[int] = []  # ordered[i] is items[positions[i]]
        keys_taken: dict[str, ContextItem] = {}
        for _, _, position in ranked:
            item = items[position]
            key = None if item.kind in KEYLESS_KINDS else item.subject_key
            if key:
                if key in keys_taken:
                    dropped[item.source] += 1
                    note(position, "subject_lost", winner=keys_taken[key])
                    continue
                keys_taken[key] = item
            ordered.append(item)
            positions.append(position)

        failed = _failed_names(failed_sources)
        notice = notice_line(failed) if failed else ""
        tokens = estimate_tokens(notice + "\n") if notice else 0
        total_left = policy.total_token_budget - tokens
        source_left = {name: budget for name, (_, budget) in budgets.items()}
        headed: set[ContextKind] = set()
        kept: list[tuple[int, ContextItem, str]] = []

        protected = _protected(ordered)
        for spend_index in _spend_sequence(len(ordered), protected):
            item = ordered[spend_index]
            if spend_index not in protected and min(total_left, source_left[item.source]) <= item.tokens:
                dropped[item.source] += 1  # a line costs its measured tokens plus at least one
                note(positions[spend_index], _budget_cause(item.tokens + 1, source_left[item.source]))
                continue
            line, cost = render_item(item)
            heading = 0 if item.kind in headed else header_cost(item.kind)
            fits = cost + heading <= total_left and cost <= source_left[item.source]
            if not fits and spend_index not in protected:
                dropped[item.source] += 1
                note(positions[spend_index], _budget_cause(cost, source_left[item.source]))
                continue
            headed.add(item.kind)
            total_left -= cost + heading
            source_left[item.source] -= cost
            spent[item.source] += cost
            tokens += cost + heading
            kept.append((spend_index, item, line))
            note(positions[spend_index], "kept")

        text, refs, uncitable = _render(notice, kept, policy.page_order)
        order = _source_order(dropped, budgets)
        return ContextBrief(
            text=text,
            items=refs,
            tokens=tokens,
            per_source_tokens={name: spent[name] for name in order},
            dropped={name: dropped[name] for name in order},
            failed_sources=failed,
            dropped_citations=uncitable,
        )


def _protected(ordered: Sequence[ContextItem]) -> list[int]:
    """The pack index of the first item of each protected class present, in class order."""
    first: dict[ContextKind, int] = {}
    for index, item in enumerate(ordered):
        if item.kind in _PROTECTED_KINDS:
            first.setdefault(item.kind, index)
    return sorted(first.values())


def _no_note(position: int, reason: DropReason, *, winner: ContextItem | None = None) -> None:
    """The recorder of a pack that explains nothing."""


def _budget_cause(cost: int, source_left: int) -> DropReason:
    """The budget an item did not fit: its source's when the source's remainder is too small, else the total."""
    return "source_budget_spent" if cost > source_left else "total_budget_spent"


def _spend_sequence(count: int, protected: Sequence[int]) -> list[int]:
    """Spend indices: the protected items first, then pack order."""
    return [*protected, *(i for i in range(count) if i not in protected)]


def _failed_names(failed_sources: Sequence[str]) -> list[str]:
    """Failed source names, normalised like bodies, deduplicated, in the order given."""
    names: list[str] = []
    for raw in failed_sources:
        name = normalise(raw) or _UNNAMED
        if name not in names:
            names.append(name)
    return names


def _source_order(seen: dict[str, int], budgets: dict[str, tuple[int, int]]) -> list[str]:
    """Sources in policy order, then sources no enabled spec names by name: independent of answer order."""
    return sorted(seen, key=lambda name: (0, budgets[name][0], name) if name in budgets else (1, 0, name))


def _render(
    notice: str,
    kept: list[tuple[int, ContextItem, str]],
    page_order: Sequence[ContextKind],
) -> tuple[str, list[ResourceRef], int]:
    """The text, the citable refs in reading order, and the count of refs the text could not write."""
    by_kind: dict[ContextKind, list[tuple[int, int, ContextItem, str]]] = {}
    for spend_index, item, line in kept:
        by_kind.setdefault(item.kind, []).append((item.rank_in_section, spend_index, item, line))
    sections = [*page_order, *(kind for kind in CLASS_ORDER if kind not in page_order)]

    lines: list[str] = [notice] if notice else []
    refs: list[ResourceRef] = []
    seen: set[tuple[str, str]] = set()
    uncitable: set[tuple[str, str]] = set()
    for kind in sections:
        entries = by_kind.get(kind)
        if not entries:
            continue
        if lines:
            lines.append("")
        lines.append(header_line(kind))
        entries.sort(key=lambda e: (e[0], e[1]))
        for _, _, item, line in entries:
            lines.append(line)
            for ref in [item.ref, *item.body_refs] if item.ref is not None else item.body_refs:
                ident = (ref.kind, ref.id)
                if ident in seen or ident in uncitable:
                    continue
                if written_as_stored(ref):
                    seen.add(ident)
                    refs.append(ref)
                else:
                    uncitable.add(ident)
    return "\n".join(lines), refs, len(uncitable)
