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

A source may hold at most `max_chunks` chunks (`DEFAULT_MAX_CHUNKS`, see docs/decisions.md): a text whose
token count alone proves it would exceed the cap fails at once, before any splitting, and one that exceeds
it while splitting fails as soon as it does, with `TooManyChunksError` (`too_many_chunks`). A text longer
than `BLOCK_CHARS` is cut into blocks at the last blank line, line end or space inside each block before
semchunk sees it, so a huge single line costs time and memory in proportion to its length.

This module must never embed, touch the database, or return an empty or over-size chunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from semchunk.semchunk import Chunker, chunkerify

from knowledge.documents.limits import DEFAULT_CHUNK_TOKENS
from knowledge.errors import TooManyChunksError
from state.tokens import estimate_tokens

__all__ = [
    "BLOCK_CHARS",
    "DEFAULT_CHUNK_TOKENS",
    "DEFAULT_MAX_CHUNKS",
    "DEFAULT_OVERLAP_TOKENS",
    "FRAME_TOKENS",
    "FRONT_DOOR_KNOWLEDGE_BUDGET",
    "FRONT_DOOR_KNOWLEDGE_ITEMS",
    "HEADING_TOKENS",
    "Chunk",
    "TooManyChunksError",
    "chunk_text",
]

DEFAULT_OVERLAP_TOKENS: Final = 0
"""Tokens shared by neighbouring chunks by default."""
DEFAULT_MAX_CHUNKS: Final = 20_000
"""Most chunks one source may hold by default (~12 MB of prose; see docs/decisions.md for the measurement)."""
BLOCK_CHARS: Final = 64 * 1024
"""Texts longer than this are cut into blocks of at most this many characters before semchunk runs."""
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


def chunk_text(
    text: str,
    *,
    size: int = DEFAULT_CHUNK_TOKENS,
    overlap: int = DEFAULT_OVERLAP_TOKENS,
    max_chunks: int | None = None,
) -> list[Chunk]:
    """Split `text` into chunks of at most `size` estimated tokens, neighbours sharing ~`overlap` tokens.

    With `max_chunks`, a text that needs more chunks raises `TooManyChunksError` as soon as that is known.
    """
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise ValueError(f"chunk size must be a positive number of tokens, got {size!r}")
    if isinstance(overlap, bool) or not isinstance(overlap, int) or not 0 <= overlap < size:
        raise ValueError(f"overlap must be at least 0 and smaller than the chunk size {size}, got {overlap!r}")
    if max_chunks is not None and max_chunks <= 0:
        raise ValueError(f"max_chunks must be positive, got {max_chunks!r}")
    if not text.strip():
        return []
    if max_chunks is not None:
        least = -(-estimate_tokens(text) // size)  # no chunk holds more than `size` tokens
        if least > max_chunks:
            raise TooManyChunksError.because(_AT_LEAST, count=least, cap=max_chunks)
    result: list[Chunk] = []
    for block in _blocks(text):
        for piece in _split(block, size=size, overlap=overlap):
            # semchunk can overshoot by a token when it merges overlapping sub-chunks; re-cut those pieces.
            parts = [piece] if estimate_tokens(piece) <= size else _split(piece, size=size, overlap=0)
            for part in parts:
                stripped = part.strip()
                if stripped:
                    result.append(Chunk(ordinal=len(result), text=stripped, tokens=estimate_tokens(stripped)))
            if max_chunks is not None and len(result) > max_chunks:
                raise TooManyChunksError.because(_MORE_THAN, count=max_chunks, cap=max_chunks)
    return result


_AT_LEAST: Final = (
    "the document would make at least {count:,} chunks; one source may hold at most {cap:,}: split it into parts"
)
_MORE_THAN: Final = (
    "the document would make more than {count:,} chunks; one source may hold at most {cap:,}: split it into parts"
)


def _blocks(text: str) -> list[str]:
    """`text` cut into blocks of at most `BLOCK_CHARS`, at the last blank line, line end or space of each."""
    if len(text) <= BLOCK_CHARS:
        return [text]
    blocks: list[str] = []
    start = 0
    while len(text) - start > BLOCK_CHARS:
        end = start + BLOCK_CHARS
        cut = -1
        for separator in ("\n\n", "\n", " "):
            cut = text.rfind(separator, start + BLOCK_CHARS // 2, end)
            if cut >= 0:
                cut += len(separator)
                break
        cut = cut if cut > start else end  # one unbroken word: a hard cut
        blocks.append(text[start:cut])
        start = cut
    blocks.append(text[start:])
    return blocks


def _split(text: str, *, size: int, overlap: int) -> list[str]:
    """Run semchunk on one text (a single text in gives a flat list of strings out)."""
    pieces = _chunker(size)(text, overlap=overlap or None)
    assert isinstance(pieces, list)
    return [str(piece) for piece in pieces]


@lru_cache(maxsize=16)
def _chunker(size: int) -> Chunker:
    """A semchunk chunker for `size`; not memoized, because an unbounded count cache would grow forever."""
    return chunkerify(estimate_tokens, size, memoize=False)
