"""The depth of a JSON body measured chunk by chunk: brackets in strings never count, a string or an escape
cut between two chunks is followed across, and a body as deep as the limit passes while one level more does
not, wherever the chunks are cut."""

from __future__ import annotations

import json

import pytest

from functions.api._json_depth import MAX_JSON_DEPTH, JsonDepth


def _too_deep(body: bytes, *, limit: int, cut: int) -> bool:
    """Feed `body` in chunks of `cut` bytes; whether some chunk reported it too deep."""
    depth = JsonDepth(limit)
    return any(depth.too_deep(body[i : i + cut]) for i in range(0, len(body), cut))


def _nested(levels: int) -> bytes:
    inner: object = "leaf"
    for level in range(levels):
        inner = [inner] if level % 2 else {"k": inner}
    return json.dumps({"organization_id": "x", "policy": inner}).encode()


@pytest.mark.parametrize("cut", [1, 2, 3, 7, 64, 1 << 20])
def test_a_body_as_deep_as_the_limit_passes_and_one_level_more_does_not_wherever_it_is_cut(cut: int) -> None:
    assert not _too_deep(_nested(9), limit=10, cut=cut)  # the body's own object is the tenth level
    assert _too_deep(_nested(10), limit=10, cut=cut)


@pytest.mark.parametrize("cut", [1, 2, 5, 1 << 20])
def test_brackets_inside_strings_never_count_even_with_escaped_quotes_and_backslashes(cut: int) -> None:
    tricky = ["[[[[{{{{", 'a \\" [[[[', "\\\\", '\\\\"', '"[[[', "\\u005b[[[", "]]]]}}}}" * 3]
    body = json.dumps({"items": [{"content": text * 40} for text in tricky]}).encode()
    assert not _too_deep(body, limit=3, cut=cut)
    assert _too_deep(json.dumps({"items": [[[{"content": tricky}]]]}).encode(), limit=3, cut=cut)


def test_a_hundred_thousand_nested_arrays_are_too_deep_in_the_first_chunk() -> None:
    depth = JsonDepth()
    assert depth.too_deep(b"[" * 100_000 + b"]" * 100_000)
    assert MAX_JSON_DEPTH == 128


def test_a_body_that_is_not_json_is_left_to_the_parser() -> None:
    assert not _too_deep(b"organization_id=1&query=[[[", limit=128, cut=4)
    assert not _too_deep(b'{"unterminated": "[[[[[[[[', limit=2, cut=3)
