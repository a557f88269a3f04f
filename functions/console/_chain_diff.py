"""What changed between a memory chain's consecutive revisions: the text by words, the expiry, a tombstone.

`chain_steps(chain)` answers one `Step` per revision after the first: the words of the earlier text with
the removed ones marked, the words of the later text with the added ones marked (`difflib` over words,
whitespace kept), and whether the expiry changed or the later revision is a tombstone. The pieces are plain
text: the template escapes them like any other value. This module must never mark text safe.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from difflib import SequenceMatcher
from typing import Literal

from memory.pages import ChainRevision, MemoryChain

__all__ = ["Piece", "Step", "chain_steps", "word_diff"]

_TOKENS = re.compile(r"\s+|\S+")


@dataclass(frozen=True, slots=True)
class Piece:
    """A run of text on one side of a diff."""

    kind: Literal["same", "removed", "added"]
    """Whether both revisions hold it, only the earlier one or only the later one."""
    text: str
    """The words, with their whitespace."""


@dataclass(frozen=True, slots=True)
class Step:
    """One revision and the one before it, with what changed."""

    before: ChainRevision
    """The earlier revision."""
    after: ChainRevision
    """The later revision."""
    removed: list[Piece]
    """The earlier text, its removed words marked."""
    added: list[Piece]
    """The later text, its added words marked."""
    expiry: tuple[datetime | None, datetime | None] | None
    """The expiry before and after, when it changed; None when it did not."""

    @property
    def tombstone(self) -> bool:
        """The later revision forgets the chain."""
        return self.after.revision.is_tombstone


def word_diff(before: str, after: str) -> tuple[list[Piece], list[Piece]]:
    """The two texts as pieces: `before` with the words `after` lost, `after` with the words it gained."""
    a, b = _TOKENS.findall(before), _TOKENS.findall(after)
    left: list[Piece] = []
    right: list[Piece] = []
    for op, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            left.append(Piece("same", "".join(a[i1:i2])))
            right.append(Piece("same", "".join(b[j1:j2])))
            continue
        if i2 > i1:
            left.append(Piece("removed", "".join(a[i1:i2])))
        if j2 > j1:
            right.append(Piece("added", "".join(b[j1:j2])))
    return left, right


def chain_steps(chain: MemoryChain) -> list[Step]:
    """One `Step` per consecutive pair of revisions, oldest first."""
    steps: list[Step] = []
    for before, after in zip(chain.revisions, chain.revisions[1:], strict=False):
        removed, added = word_diff(before.revision.text or "", after.revision.text or "")
        old, new = before.revision.expires_at, after.revision.expires_at
        steps.append(Step(before, after, removed, added, None if old == new else (old, new)))
    return steps
