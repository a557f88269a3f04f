"""The one list of blank characters that the memory CHECK, `parse_stored_refs` and the model types share.

A subject ref's `kind` and `id` join the subject key, so each must hold a character that is not blank.
"Blank" cannot be left to each validator's own idea of whitespace: PostgreSQL's `[[:space:]]` under a
C.UTF-8 locale matches a tab and U+2028 but not the no-break space U+00A0, U+2007, U+202F, U+0085 or
U+001C-U+001F, all of which Python's `str.isspace()` counts as blank. This module states the list once:
every character `str.isspace()` accepts, plus the zero-width characters that render as nothing (U+180E,
U+200B-U+200D, U+2060, U+FEFF). Migration `0020_agent_memories.sql` writes the same list as the SQL
literal `BLANK_CHARACTERS_SQL` inside `agent.memory_blank_characters()`, and a test compares the two.

This module must never grow a second list, and never read the database.
"""

from __future__ import annotations

__all__ = ["BLANK_CHARACTERS", "BLANK_CHARACTERS_SQL", "ZERO_WIDTH_CHARACTERS", "is_blank", "sql_literal"]

_WHITESPACE_CODEPOINTS: tuple[int, ...] = (
    0x0009, 0x000A, 0x000B, 0x000C, 0x000D,  # tab, line feed, vertical tab, form feed, carriage return
    0x001C, 0x001D, 0x001E, 0x001F,  # the information separators Python counts as whitespace
    0x0020, 0x0085, 0x00A0,  # space, next line, no-break space
    0x1680,  # ogham space mark
    0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A,  # en quad … hair
    0x2028, 0x2029,  # line and paragraph separators
    0x202F, 0x205F, 0x3000,  # narrow no-break, medium mathematical, ideographic spaces
)  # fmt: skip
"""Exactly the characters `str.isspace()` accepts (a unit test enumerates every code point)."""

ZERO_WIDTH_CHARACTERS: str = "\u180e\u200b\u200c\u200d\u2060\ufeff"
"""Characters that render as nothing, counted blank by decision: a part made of them names nothing."""

BLANK_CHARACTERS: str = "".join(sorted({chr(c) for c in _WHITESPACE_CODEPOINTS} | set(ZERO_WIDTH_CHARACTERS)))
"""Every blank character, in code point order."""


def sql_literal(characters: str) -> str:
    """The PostgreSQL escape-string literal that writes `characters`, one unicode escape per character."""
    return "E'" + "".join(f"\\u{ord(c):04x}" for c in characters) + "'"


BLANK_CHARACTERS_SQL: str = sql_literal(BLANK_CHARACTERS)
"""The literal migration 0020 writes inside `agent.memory_blank_characters()`."""


def is_blank(value: str) -> bool:
    """True when `value` is empty or holds blank characters only."""
    return value.strip(BLANK_CHARACTERS) == ""
