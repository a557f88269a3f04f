"""How deep a JSON body nests, measured as it streams in, so that no parser ever recurses into a deep one.

Python's `json.loads` (Starlette's `Request.json`, FastAPI's body) raises `RecursionError` a little below
1,000 levels and pydantic's parser gives up at 200, each with its own answer (a 400 from FastAPI, a 500
where a dependency parsed the body itself). `JsonDepth` reads the body chunk by chunk as the edge passes
it on and reports the first chunk that takes the nesting past `MAX_JSON_DEPTH`; the edge then answers 422
for every route alike. Brackets inside strings do not count. The work per chunk is a few regular
expression and bytes operations at C speed, whatever the chunk holds. A body that is not JSON at all is
left to the route's parser, which answers it as before.

This module must never keep a body: it keeps the depth and whether a string is open across chunks.
"""

from __future__ import annotations

import re
from array import array
from itertools import accumulate
from typing import Final

__all__ = ["MAX_JSON_DEPTH", "JsonDepth"]

MAX_JSON_DEPTH: Final = 128
"""Deepest nesting of arrays and objects a JSON body may have: twice what any field of the API allows
(`CleanJson`, 64 levels, answers its own 422 with the field's path), far below what the parsers survive."""

_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
"""A complete JSON string."""
_STRING_REST = re.compile(rb'(?:[^"\\]++|\\.)*+', re.DOTALL)
"""The rest of a string that opened in an earlier chunk, up to (not including) its closing quote."""
_NOT_BRACKETS: Final = bytes(b for b in range(256) if b not in b"[]{}")
_SIGNS: Final = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
"""Openers to +1 and closers to -1 (as signed bytes)."""


class JsonDepth:
    """The nesting depth of one JSON body, fed chunk by chunk."""

    def __init__(self, limit: int = MAX_JSON_DEPTH) -> None:
        self.limit = limit
        self.depth = 0
        """Arrays and objects open at the end of what was fed."""
        self.in_string = False
        """Whether the last chunk ended inside a string."""
        self.escaped = False
        """Whether it ended on the backslash of an escape inside that string."""

    def too_deep(self, chunk: bytes) -> bool:
        """Feed the next chunk; True once the body has nested deeper than `limit`."""
        start = self._close_open_string(chunk)
        if start is None:
            return False
        outside = _STRING.sub(b"", chunk[start:])
        opened = outside.find(b'"')
        if opened >= 0:  # a string that does not close in this chunk
            tail = outside[opened + 1 :]
            self.in_string = True
            self.escaped = (len(tail) - len(tail.rstrip(b"\\"))) % 2 == 1
            outside = outside[:opened]
        return self._nest(outside.translate(None, _NOT_BRACKETS))

    def _close_open_string(self, chunk: bytes) -> int | None:
        """Where the chunk leaves a string carried over from the last one (None when it never does)."""
        if not self.in_string:
            return 0
        position = 0
        if self.escaped:
            if not chunk:
                return None
            self.escaped, position = False, 1
        end = _STRING_REST.match(chunk, position)
        position = end.end() if end is not None else position
        if position >= len(chunk):
            return None
        if chunk[position] == ord("\\"):  # the chunk ends on the backslash of an escape
            self.escaped = True
            return None
        self.in_string = False
        return position + 1

    def _nest(self, brackets: bytes) -> bool:
        opens = brackets.count(b"[") + brackets.count(b"{")
        closes = len(brackets) - opens
        if self.depth + opens > self.limit:
            peak = max(accumulate(array("b", brackets.translate(_SIGNS)), initial=0))
            if self.depth + peak > self.limit:
                return True
        self.depth += opens - closes
        return False
