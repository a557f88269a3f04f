"""The one blank list: what it holds, that the migration writes the same list, and what it calls blank."""

from __future__ import annotations

import sys

import pytest

from memory._blank import BLANK_CHARACTERS, BLANK_CHARACTERS_SQL, ZERO_WIDTH_CHARACTERS, is_blank
from state.migrate import MIGRATIONS_DIR


def test_the_blank_list_is_python_whitespace_plus_the_zero_width_characters() -> None:
    whitespace = {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}
    assert set(BLANK_CHARACTERS) == whitespace | set(ZERO_WIDTH_CHARACTERS)
    assert len(BLANK_CHARACTERS) == len(set(BLANK_CHARACTERS))


def test_the_memory_migration_writes_the_same_blank_list() -> None:
    sql = (MIGRATIONS_DIR / "0020_agent_memories.sql").read_text(encoding="utf-8")
    assert BLANK_CHARACTERS_SQL in sql, "agent.memory_blank_characters() must write memory._blank's list"


@pytest.mark.parametrize(
    ("text", "blank"),
    [
        ("", True),
        (" ", True),
        ("\t", True),
        ("\u00a0", True),  # no-break space: PostgreSQL's [[:space:]] misses it, this list does not
        ("\u2028", True),
        ("\u3000", True),
        ("\u200b", True),  # zero-width space: blank by decision (docs/decisions.md, Durable memory)
        ("\ufeff\u2060", True),
        ("\x00", False),  # the null byte is refused by its own rule, not as blank
        (":", False),
        ("a", False),
        ("\u00a0a\u00a0", False),
        ("Acme: HQ", False),
    ],
)
def test_is_blank_names_every_blank_character_and_nothing_else(text: str, blank: bool) -> None:
    assert is_blank(text) is blank
