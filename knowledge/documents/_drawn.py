"""How much decompressed content a PDF's pages draw: the measure that refuses a decompression bomb.

pypdf parses a page's content stream again for every page that draws it, and a form XObject again for
every `Do` that invokes it, at about a megabyte a second. So a small file can make extraction read
gigabytes: one compressed stream shared by 2,000 pages, or a form invoked thousands of times. The measure
counts what pypdf will parse: each page's content streams, plus, for each `/Name Do` in them, the content
of that form (recursively, a cycle counting nothing), a stream counted once per page or invocation that
draws it. A page whose content has no operator that can add text counts nothing: extraction skips it
unparsed (`TEXT_OPERATOR`). Every distinct stream is decoded once, and never kept; counting stops once it
passes `limit`.

A stream that cannot be decoded counts nothing here: reading its page reports the damage, in page order.
This module must never extract text, and never keep decoded content beyond one stream.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Final

import pypdf
from pypdf.filters import decode_stream_data
from pypdf.generic import ArrayObject, DictionaryObject, EncodedStreamObject, StreamObject

__all__ = ["MAX_FORM_DEPTH", "TEXT_OPERATOR", "drawn_content_bytes"]

MAX_FORM_DEPTH: Final = 32
"""Forms nested deeper than this count nothing (pypdf would give up on them too)."""
_DO: Final = re.compile(rb"/([^\x00\t\n\f\r ()<>\[\]{}/%]+)[\x00\t\n\f\r ]+Do(?![^\x00\t\n\f\r ()<>\[\]{}/%])")
"""A `/Name Do` operation: a form or an image drawn by name."""
TEXT_OPERATOR: Final = re.compile(rb"T[jJ]|Do|['\"]")
"""The operators that can add text: pypdf skips a content stream without any, unless a visitor watches."""


class _Past(Exception):
    """The count passed its limit: stop counting."""


class _Count:
    """One count: per-stream decoded sizes and `Do` names, and per-form costs, memoized by object."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self.streams: dict[int, tuple[Any, int, Counter[str], bool]] = {}
        self.forms: dict[int, int] = {}
        self.open: set[int] = set()

    def add(self, amount: int) -> None:
        self.total += amount
        if self.total > self.limit:
            raise _Past

    def stream(self, obj: Any) -> tuple[int, Counter[str], bool]:
        """A stream's decoded size, the names it invokes with `Do`, and whether it can add text (decoded once)."""
        seen = self.streams.get(id(obj))
        if seen is not None:
            return seen[1], seen[2], seen[3]
        try:
            if isinstance(obj, EncodedStreamObject) and obj.decoded_self is None:
                data = decode_stream_data(obj)
            else:
                data = obj.get_data()
        except Exception:  # an undecodable stream: its page reports the damage when it is read
            data = b""
        names = Counter(m.group(1).decode("latin-1") for m in _DO.finditer(data))
        texty = TEXT_OPERATOR.search(data) is not None
        self.streams[id(obj)] = (obj, len(data), names, texty)  # the object is kept so that its id is not reused
        return len(data), names, texty

    def draws(self, names: Counter[str], resources: Any, depth: int) -> int:
        """The content the forms invoked by `names` draw, each invocation counted."""
        xobjects = _resolve(resources.get("/XObject")) if isinstance(resources, DictionaryObject) else None
        if not isinstance(xobjects, DictionaryObject):
            return 0
        cost = 0
        for name, times in names.items():
            form = _resolve(xobjects.get("/" + name))
            if isinstance(form, StreamObject) and form.get("/Subtype") == "/Form":
                cost += times * self.form(form, depth + 1)
        return cost

    def form(self, form: StreamObject, depth: int) -> int:
        """The content one invocation of `form` draws: its own stream and the forms it invokes."""
        key = id(form)
        if key in self.forms:
            return self.forms[key]
        if key in self.open or depth > MAX_FORM_DEPTH:  # a cycle, or too deep: pypdf draws nothing there
            return 0
        self.open.add(key)
        try:
            size, names, _ = self.stream(form)  # pypdf parses a form it is told to draw, text or not
            cost = size + self.draws(names, _resolve(form.get("/Resources")), depth)
        finally:
            self.open.discard(key)
        self.forms[key] = cost
        return cost


def _resolve(value: Any) -> Any:
    try:
        return value.get_object() if value is not None else None
    except Exception:  # a dangling reference draws nothing
        return None


def drawn_content_bytes(reader: pypdf.PdfReader, pages: int, *, limit: int) -> int:
    """Decompressed bytes pypdf parses to read `pages` pages; a value above `limit` means "more than limit"."""
    count = _Count(limit)
    try:
        for index in range(pages):
            try:
                page = reader.pages[index]
                contents = _resolve(page.get("/Contents"))
                streams = list(contents) if isinstance(contents, ArrayObject) else [contents]
                resources = _resolve(page.get("/Resources"))
            except Exception:  # a damaged page: reading it reports the damage
                continue
            drawn = [count.stream(s) for s in map(_resolve, streams) if isinstance(s, StreamObject)]
            if any(texty for _, _, texty in drawn):  # else extraction skips the page without parsing it
                count.add(sum(size + count.draws(names, resources, 0) for size, names, _ in drawn))
    except _Past:
        pass
    return count.total
