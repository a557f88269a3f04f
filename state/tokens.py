"""The token estimate: one token per four UTF-8 bytes, rounded up.

The count is bytes, not characters, so CJK text and emoji are not under-reported. It is never zero for a
non-empty text, so short items cannot pass a budget that never binds. The chunker counts with this same
function, so a chunk size is a brief budget. It must never call a tokenizer.
"""

from __future__ import annotations

__all__ = ["estimate_tokens"]


def estimate_tokens(text: str) -> int:
    """One token per four UTF-8 bytes of `text`, rounded up; 0 only for the empty string."""
    return -(-len(text.encode("utf-8")) // 4)
