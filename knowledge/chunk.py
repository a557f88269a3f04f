"""Split extracted text into ordered chunks sized in the brief's own token unit.

Chunks are cut by semchunk at the most meaningful boundary that fits (blank lines, then lines, then
sentences, then words) and counted with `context.tokens.estimate_tokens`, the same estimate the context
packer charges, so a chunk size is a brief budget.

The default size comes from the front door's knowledge budget. Each knowledge item is rendered as

    - [knowledge_source <uuid>] <title, at most 80 bytes>: <chunk text>

whose frame is 3 + 16 + 1 + 36 + 2 + 80 + 2 = 140 bytes = 35 tokens, plus 1 for the newline between items:
FRAME_TOKENS = 36. With a section heading of at most HEADING_TOKENS = 5 and eight chunks,

    8 * (DEFAULT_CHUNK_TOKENS + FRAME_TOKENS) + HEADING_TOKENS = 8 * (150 + 36) + 5 = 1,493 <= 1,500,

so eight full chunks always fit the 1,500-token budget. Overlap defaults to 0: semchunk builds an
overlapping chunk from sub-chunks of `overlap` tokens, which cuts inside sentences instead of at paragraph
boundaries, and overlapping neighbours would spend the brief's budget twice on the same words.

This module must never embed, touch the database, or return an empty or over-size chunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from semchunk.semchunk import Chunker, chunkerify

from state.tokens import estimate_tokens

__all__ = [
    "DEFAULT_CHUNK_TOKENS",
    "DEFAULT_OVERLAP_TOKENS",
    "FRAME_TOKENS",
    "FRONT_DOOR_KNOWLEDGE_BUDGET",
    "FRONT_DOOR_KNOWLEDGE_ITEMS",
    "HEADING_TOKENS",
    "Chunk",
    "chunk_text",
]

DEFAULT_CHUNK_TOKENS: Final = 150
"""Largest chunk by default, in estimated tokens (see the module docstring for the arithmetic)."""
DEFAULT_OVERLAP_TOKENS: Final = 0
"""Tokens shared by neighbouring chunks by default."""
FRAME_TOKENS: Final = 36
"""Tokens of one knowledge item's rendering frame with a title of at most 80 bytes, and its newline."""
HEADING_TOKENS: Final = 5
"""Tokens of the knowledge section heading."""
FRONT_DOOR_KNOWLEDGE_ITEMS: Final = 8
"""Chunks the front door policy asks for."""
FRONT_DOOR_KNOWLEDGE_BUDGET: Final = 1_500
"""The front door policy's token budget for knowledge."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk of a document, in document order."""

    ordinal: int
    """Position in the document, 0..n-1 without gaps."""
    text: str
    """The chunk's text: never empty, never only whitespace."""
    tokens: int
    """`estimate_tokens(text)`, never more than the size the chunk was cut for."""


def chunk_text(text: str, *, size: int = DEFAULT_CHUNK_TOKENS, overlap: int = DEFAULT_OVERLAP_TOKENS) -> list[Chunk]:
    """Split `text` into chunks of at most `size` estimated tokens, neighbours sharing ~`overlap` tokens."""
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise ValueError(f"chunk size must be a positive number of tokens, got {size!r}")
    if isinstance(overlap, bool) or not isinstance(overlap, int) or not 0 <= overlap < size:
        raise ValueError(f"overlap must be at least 0 and smaller than the chunk size {size}, got {overlap!r}")
    if not text.strip():
        return []
    pieces = _split(text, size=size, overlap=overlap)
    result: list[Chunk] = []
    for piece in pieces:
        # semchunk can overshoot by a token when it merges overlapping sub-chunks; re-cut those pieces.
        parts = [piece] if estimate_tokens(piece) <= size else _split(piece, size=size, overlap=0)
        for part in parts:
            stripped = part.strip()
            if stripped:
                result.append(Chunk(ordinal=len(result), text=stripped, tokens=estimate_tokens(stripped)))
    return result


def _split(text: str, *, size: int, overlap: int) -> list[str]:
    """Run semchunk on one text (a single text in gives a flat list of strings out)."""
    pieces = _chunker(size)(text, overlap=overlap or None)
    assert isinstance(pieces, list)
    return [str(piece) for piece in pieces]


@lru_cache(maxsize=16)
def _chunker(size: int) -> Chunker:
    """A semchunk chunker for `size`; not memoized, because an unbounded count cache would grow forever."""
    return chunkerify(estimate_tokens, size, memoize=False)
