"""Explain mode: the record the packer keeps, in the same pass, of why each item it was given stayed or went.

The packer calls `Explainer.note(position, reason)` once per item at the site that decides it (kept, or
dropped because its source is not enabled, its document is overdue under `overdue: drop`, its subject was
taken by a stronger item, or a budget was spent); `explanation(brief)` then writes one entry per item in
the order given, and the spend of every source against its budget. It reads only the items, the policy
and the finished brief.

This module must never decide what is kept, change a brief, store or log anything: an explanation is
computed for the caller that asked and handed back beside the brief.
"""

from __future__ import annotations

from context._render import render_item
from context.models import (
    BriefExplanation,
    ContextBrief,
    ContextItem,
    ContextPolicy,
    DropReason,
    ExplainedItem,
    SourceSpend,
)

__all__ = ["Explainer"]


class Explainer:
    """Collects the packer's decision for each item position, then writes the explanation."""

    def __init__(self, items: list[ContextItem], policy: ContextPolicy) -> None:
        self._items = items
        self._policy = policy
        self._notes: dict[int, tuple[DropReason, ContextItem | None]] = {}

    def note(self, position: int, reason: DropReason, *, winner: ContextItem | None = None) -> None:
        """Record the decision for the item at `position` (the index in the items given)."""
        if position in self._notes:
            raise AssertionError(f"the packer decided item {position} twice")
        self._notes[position] = (reason, winner)

    def explanation(self, brief: ContextBrief) -> BriefExplanation:
        """One entry per item given, in the order given, and each source's spend against its budget."""
        budgets: dict[str, int] = {}
        for spec in self._policy.sources:
            if spec.enabled and spec.name not in budgets:
                budgets[spec.name] = spec.token_budget
        entries: list[ExplainedItem] = []
        kept: dict[str, int] = {}
        for position, item in enumerate(self._items):
            if position not in self._notes:
                raise AssertionError(f"the packer never decided item {position}")
            reason, winner = self._notes[position]
            kept[item.source] = kept.get(item.source, 0) + (reason == "kept")
            entries.append(
                ExplainedItem(
                    source=item.source,
                    kind=item.kind,
                    ref=item.ref,
                    title=item.title,
                    tokens=render_item(item)[1],
                    kept=reason == "kept",
                    reason=reason,
                    winner_source=None if winner is None else winner.source,
                    winner_kind=None if winner is None else winner.kind,
                    message=_message(item, reason, winner, budgets, self._policy.total_token_budget),
                )
            )
        sources = [
            SourceSpend(
                source=name,
                used=brief.per_source_tokens.get(name, 0),
                budget=budgets.get(name),
                kept=kept.get(name, 0),
                dropped=brief.dropped.get(name, 0),
            )
            for name in brief.dropped
        ]
        return BriefExplanation(
            items=entries, sources=sources, total_budget=self._policy.total_token_budget, total_used=brief.tokens
        )


_PLACED = {
    "rank": ", placed by its score",
    "cap_fill": ", placed past its document's cap, in room no other document's candidate took",
}
"""How a kept item's placement reads, by the source's rule (`ContextItem.placed_by`)."""


def _message(
    item: ContextItem, reason: DropReason, winner: ContextItem | None, budgets: dict[str, int], total: int
) -> str:
    """The reason in the words the CLI uses."""
    if reason == "kept":
        return "kept" + _PLACED.get(item.placed_by or "", "")
    if reason == "source_not_enabled":
        return f"source {item.source} is not enabled in the policy"
    if reason == "overdue":
        assert item.review_overdue is not None
        return f"its document's review was due {item.review_overdue.isoformat()} (overdue: drop)"
    if reason == "subject_lost":
        assert winner is not None
        return f"same subject lost to {winner.source} of class {winner.kind}"
    if reason == "source_budget_spent":
        return f"source budget of {item.source} spent ({budgets.get(item.source, 0)} tokens)"
    return f"total budget spent ({total} tokens)"
