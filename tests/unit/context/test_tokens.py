from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from context.tokens import estimate_tokens


def test_one_token_per_four_utf8_bytes_rounded_up() -> None:
    assert estimate_tokens("") == 0
    assert estimate_tokens("a") == 1
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2


def test_bytes_not_characters() -> None:
    assert estimate_tokens("漢") == 1  # three bytes
    assert estimate_tokens("漢字漢字") == 3  # twelve bytes, four characters
    assert estimate_tokens("😀😀") == 2  # eight bytes, two characters


@given(st.text())
def test_never_zero_for_text_and_matches_the_byte_count(text: str) -> None:
    tokens = estimate_tokens(text)
    assert (tokens == 0) == (text == "")
    assert tokens == -(-len(text.encode("utf-8")) // 4)
