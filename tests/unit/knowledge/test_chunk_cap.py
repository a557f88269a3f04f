"""The chunk cap and the block-wise cut of huge texts."""

from __future__ import annotations

import pytest

from knowledge.documents.chunk import BLOCK_CHARS, DEFAULT_CHUNK_TOKENS, TooManyChunksError, _blocks, chunk_text
from knowledge.errors import ExtractionError
from state.tokens import estimate_tokens


def test_a_text_that_needs_more_chunks_than_the_cap_fails_with_too_many_chunks() -> None:
    text = "\n\n".join(f"Paragraph {i} " + "word " * 100 for i in range(40))
    assert len(chunk_text(text)) > 5
    with pytest.raises(TooManyChunksError) as raised:
        chunk_text(text, max_chunks=5)
    assert raised.value.code == "too_many_chunks" and isinstance(raised.value, ExtractionError)
    assert len(chunk_text(text, max_chunks=len(chunk_text(text)))) == len(chunk_text(text))


def test_a_text_that_passes_the_size_check_but_splits_into_more_chunks_than_the_cap_fails_while_splitting() -> None:
    # Ten paragraphs of ~100 tokens: no two fit one 150-token chunk, so the split makes ten chunks, while
    # the size alone (1,022 tokens) proves only seven. A cap of eight passes the check before splitting.
    text = "\n\n".join(f"Paragraph {i} " + "word " * 79 for i in range(10))
    least = -(-estimate_tokens(text) // DEFAULT_CHUNK_TOKENS)
    assert least <= 8 < len(chunk_text(text)) == 10
    with pytest.raises(TooManyChunksError, match="more than 8 chunks") as raised:
        chunk_text(text, max_chunks=8)
    assert raised.value.code == "too_many_chunks"
    assert len(chunk_text(text, max_chunks=10)) == 10  # the cap itself is allowed


def test_a_huge_text_fails_before_any_split_when_its_size_alone_proves_it() -> None:
    with pytest.raises(TooManyChunksError, match="at least"):
        chunk_text("x" * (8 * 1024 * 1024), max_chunks=100)


def test_blocks_keep_every_character_and_cut_at_whitespace() -> None:
    line = " ".join(f"w{i}" for i in range(60_000))  # one line, ~400 KB
    blocks = _blocks(line)
    assert "".join(blocks) == line
    assert len(blocks) > 1 and all(len(b) <= BLOCK_CHARS for b in blocks)
    assert all(b.endswith(" ") for b in blocks[:-1])


def test_a_huge_single_line_is_chunked_with_nothing_lost_and_nothing_over_size() -> None:
    line = " ".join(f"w{i}" for i in range(60_000))
    chunks = chunk_text(line, size=150)
    assert " ".join(c.text for c in chunks).split() == line.split()
    assert all(c.tokens <= 150 for c in chunks)
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))


def test_an_unbroken_run_longer_than_a_block_is_cut_hard() -> None:
    blocks = _blocks("y" * (BLOCK_CHARS * 2 + 10))
    assert [len(b) for b in blocks] == [BLOCK_CHARS, BLOCK_CHARS, 10]
