"""When an agent segment builds its brief, and how the brief becomes the system block.

The spec's rule ("When the brief is built"): segment 0 builds the brief and puts it in the system block; a
later segment rebuilds only when the frozen policy says `refresh_on_resume` and a wait (an approval, a
sleep, an event) happened before it. Otherwise the runtime reuses the block it stored beside the session.

A rebuilt brief REPLACES the system block; it is never appended. `compose_system_block` therefore builds a
block from the agent's own instructions and one brief, never from an earlier block, so a composed block
holds exactly one brief. `context=None` means "reuse the stored block", because the framework rebuilds the
system message from what it is handed on every run and would otherwise silently lose the brief.

This module is pure: it must never import Inngest, read a database or call the builder. The Inngest
function `context-segment-brief` and the agent runtime call it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from context.errors import ContextMisuseError
from context.models import ContextBrief, ContextPolicy

__all__ = [
    "BRIEF_CLOSE",
    "BRIEF_OPEN",
    "MissingSystemBlockError",
    "SegmentAction",
    "SegmentDecision",
    "SystemBlock",
    "compose_system_block",
    "decide_segment",
]

BRIEF_OPEN = "<context-brief>"
"""The line that opens the brief inside a system block."""
BRIEF_CLOSE = "</context-brief>"
"""The line that closes the brief inside a system block."""


class SegmentAction(StrEnum):
    """What a segment does with its brief."""

    BUILD = "build"
    """Run the builder and replace the system block with the new brief."""
    REUSE = "reuse"
    """Do not build: the runtime reuses the system block it stored for the session."""


@dataclass(frozen=True)
class SegmentDecision:
    """The build-or-reuse answer for one segment, with the reason an operator reads."""

    action: SegmentAction
    """Build or reuse."""
    reason: str
    """Why, in a few words (`first segment`, `resumed after a wait`, ...)."""

    @property
    def builds(self) -> bool:
        """True when the segment runs the builder."""
        return self.action is SegmentAction.BUILD


class MissingSystemBlockError(ContextMisuseError):
    """No brief was given and no system block is stored, so there is nothing to reuse."""

    code = "system_block_missing"


def decide_segment(segment: int, *, waited: bool, policy: ContextPolicy) -> SegmentDecision:
    """Segment 0 builds; a later segment builds only when `refresh_on_resume` is true and a wait happened."""
    if isinstance(segment, bool) or not isinstance(segment, int) or segment < 0:
        raise ValueError(f"a segment number is a non-negative integer, not {segment!r}")
    if segment == 0:
        return SegmentDecision(SegmentAction.BUILD, "first segment")
    if not waited:
        return SegmentDecision(SegmentAction.REUSE, "no wait happened since the last segment")
    if not policy.refresh_on_resume:
        return SegmentDecision(SegmentAction.REUSE, "the policy does not refresh on resume")
    return SegmentDecision(SegmentAction.BUILD, "resumed after a wait, and the policy refreshes on resume")


@dataclass(frozen=True)
class SystemBlock:
    """The system block the runtime hands the framework: the agent's instructions and one brief."""

    instructions: str
    """The agent's own instructions, without any brief."""
    brief_text: str
    """The text of the one brief this block holds ('' for an empty brief)."""

    @property
    def text(self) -> str:
        """The block as the model reads it: the instructions, then the brief between its markers."""
        parts = [self.instructions.rstrip()] if self.instructions.strip() else []
        parts.append(f"{BRIEF_OPEN}\n{self.brief_text.strip()}\n{BRIEF_CLOSE}")
        return "\n\n".join(parts)


def compose_system_block(
    instructions: str,
    context: ContextBrief | None,
    *,
    stored: SystemBlock | None = None,
) -> SystemBlock:
    """The block for this segment: a new brief replaces the stored block; `context=None` reuses it.

    The new block is made from `instructions` and `context` alone, so an earlier brief can never survive
    into it. With no `context`, the stored block is returned unchanged; with neither, the runtime has lost
    its block and `MissingSystemBlockError` says so instead of handing the framework a block with no brief.
    """
    if context is None:
        if stored is None:
            raise MissingSystemBlockError()
        return stored
    return SystemBlock(instructions=instructions, brief_text=context.text)
