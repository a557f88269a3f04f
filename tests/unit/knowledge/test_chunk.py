from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context.tokens import estimate_tokens
from knowledge.documents.chunk import (
    DEFAULT_CHUNK_TOKENS,
    DEFAULT_OVERLAP_TOKENS,
    FRAME_TOKENS,
    FRONT_DOOR_KNOWLEDGE_BUDGET,
    FRONT_DOOR_KNOWLEDGE_ITEMS,
    HEADING_TOKENS,
    Chunk,
    chunk_text,
)

FASTAPI = Path(__file__).resolve().parents[3] / ".." / "shared" / "corpus" / "markdown" / "fastapi-docs"

texts = st.text(alphabet=st.characters(codec="utf-8"), min_size=0, max_size=3_000) | st.lists(
    st.sampled_from(["Lorem", "ipsum", "dolor.", "Straße", "東京", "🙂", "\n", "\n\n", "  ", "\t", "-", "x" * 50]),
    max_size=400,
).map(" ".join)


def check_invariants(chunks: list[Chunk], size: int) -> None:
    assert [c.ordinal for c in chunks] == list(range(len(chunks))), "ordinals are 0..n-1 without gaps"
    for c in chunks:
        assert c.text.strip(), "no chunk is empty or whitespace only"
        assert c.tokens == estimate_tokens(c.text)
        assert c.tokens <= size, f"chunk {c.ordinal} has {c.tokens} tokens > {size}"


@settings(max_examples=150, deadline=None)
@given(text=texts, size=st.integers(min_value=1, max_value=300))
def test_chunks_are_contiguous_non_empty_and_within_size(text: str, size: int) -> None:
    chunks = chunk_text(text, size=size)
    check_invariants(chunks, size)
    if text.strip():
        assert chunks, "non-empty text yields at least one chunk"


@settings(max_examples=150, deadline=None)
@given(text=texts, size=st.integers(min_value=2, max_value=300), data=st.data())
def test_overlapping_chunks_keep_the_same_invariants(text: str, size: int, data: st.DataObject) -> None:
    overlap = data.draw(st.integers(min_value=0, max_value=size - 1))
    check_invariants(chunk_text(text, size=size, overlap=overlap), size)


@settings(max_examples=60, deadline=None)
@given(words=st.lists(st.from_regex(r"[a-z]{1,12}", fullmatch=True), min_size=1, max_size=600))
def test_without_overlap_no_word_is_lost_or_repeated(words: list[str]) -> None:
    text = " ".join(words)
    chunks = chunk_text(text, size=20)
    assert " ".join(c.text for c in chunks).split() == words


def test_chunking_is_deterministic() -> None:
    text = (FASTAPI / "python-types.md").read_text()
    assert chunk_text(text) == chunk_text(text)


def test_overlap_repeats_text_across_neighbours() -> None:
    text = " ".join(f"word{i}" for i in range(2_000))
    plain = chunk_text(text, size=50)
    overlapping = chunk_text(text, size=50, overlap=20)
    assert len(overlapping) > len(plain)
    first, second = overlapping[0].text.split(), overlapping[1].text.split()
    assert set(first) & set(second), "neighbouring chunks share words when overlap > 0"


def test_real_markdown_chunks_respect_the_default_size() -> None:
    chunks = chunk_text((FASTAPI / "release-notes.md").read_text())
    assert len(chunks) > 100
    check_invariants(chunks, DEFAULT_CHUNK_TOKENS)
    assert sum(c.tokens for c in chunks) / len(chunks) > DEFAULT_CHUNK_TOKENS / 2, "chunks are not fragments"


def test_empty_text_gives_no_chunks() -> None:
    assert chunk_text("") == []
    assert chunk_text(" \n\t ") == []


@pytest.mark.parametrize(
    ("size", "overlap", "message"),
    [
        (0, 0, "chunk size must be a positive"),
        (-5, 0, "chunk size must be a positive"),
        (10, -1, "overlap must be at least 0"),
        (10, 10, "smaller than the chunk size 10"),
        (10, 11, "smaller than the chunk size"),
    ],
)
def test_bad_size_or_overlap_is_refused(size: int, overlap: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        chunk_text("some text", size=size, overlap=overlap)


def test_default_overlap_is_zero() -> None:
    assert DEFAULT_OVERLAP_TOKENS == 0


def test_frame_tokens_cover_the_rendered_frame_of_a_knowledge_item() -> None:
    frame = f"- [knowledge_source {uuid.uuid4()}] {'T' * 80}: " + "\n"
    assert estimate_tokens(frame) <= FRAME_TOKENS


def test_eight_default_chunks_with_frames_and_heading_fit_the_front_door_budget() -> None:
    # 8 * (150 + 36) + 5 = 1,493 <= 1,500
    total = FRONT_DOOR_KNOWLEDGE_ITEMS * (DEFAULT_CHUNK_TOKENS + FRAME_TOKENS) + HEADING_TOKENS
    assert total <= FRONT_DOOR_KNOWLEDGE_BUDGET
    assert FRONT_DOOR_KNOWLEDGE_ITEMS == 8 and FRONT_DOOR_KNOWLEDGE_BUDGET == 1_500
    assert estimate_tokens("## Knowledge\n") <= HEADING_TOKENS


def test_eight_rendered_worst_case_chunks_fit_1500_tokens() -> None:
    text = " ".join(f"tok{i:05d}" for i in range(20_000))
    chunks = chunk_text(text)[:8]
    assert all(c.tokens >= DEFAULT_CHUNK_TOKENS - 3 for c in chunks), "these chunks are (nearly) full"
    rendered = "## Knowledge\n" + "\n".join(f"- [knowledge_source {uuid.uuid4()}] {'T' * 80}: {c.text}" for c in chunks)
    assert estimate_tokens(rendered) <= FRONT_DOOR_KNOWLEDGE_BUDGET


def test_overlap_never_lets_a_chunk_exceed_the_size() -> None:
    # Raw semchunk returns a 151-token piece (server-workers.md, leading spaces) at size 150, overlap 30.
    for path in sorted(FASTAPI.rglob("*.md")):
        check_invariants(chunk_text(path.read_text(), size=150, overlap=30), 150)
