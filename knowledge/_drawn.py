"""How much decompressed content a PDF's pages draw: the measure that refuses a decompression bomb.

pypdf parses a page's content stream again for every page that draws it, and a form XObject again for
every `Do` that invokes it, at about a megabyte a second. So a small file can make extraction read
gigabytes: one compressed stream shared by 2,000 pages, or a form invoked thousands of times. The measure
counts what pypdf will parse: each page's content streams, plus, for each `/Name Do` in them, the content
of that form (recursively, a cycle counting nothing), a stream counted once per page or invocation that
draws it. Every distinct stream is decoded once, and never kept; counting stops once it passes `limit`.

A stream that cannot be decoded counts nothing here: reading its page reports the damage in page order,
as before. This module must never extract text, and never keep decoded content beyond one stream.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Final

import pypdf
from pypdf.filters import decode_stream_data
from pypdf.generic import ArrayObject, DictionaryObject, EncodedStreamObject, StreamObject

__all__ = ["MAX_FORM_DEPTH", "drawn_content_bytes"]

MAX_FORM_DEPTH: Final = 32
"""Forms nested deeper than this count nothing (pypdf would give up on them too)."""
_DO: Final = re.compile(rb"/([^\x00\t\n\f\r ()<>\[\]{}/%]+)[\x00\t\n\f\r ]+Do(?![^\x00\t\n\f\r ()<>\[\]{}/%])")
"""A `/Name Do` operation: a form or an image drawn by name."""


class _Past(Exception):
    """The count passed its limit: stop counting."""


class _Count:
    """One count: per-stream decoded sizes and `Do` names, and per-form costs, memoized by object."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self.streams: dict[int, tuple[Any, int, Counter[str]]] = {}
        self.forms: dict[int, int] = {}
        self.open: set[int] = set()

    def add(self, amount: int) -> None:
        self.total += amount
        if self.total > self.limit:
            raise _Past

    def stream(self, obj: Any) -> tuple[int, Counter[str]]:
        """The decoded size of a stream and the names it invokes with `Do` (decoded once, then forgotten)."""
        seen = self.streams.get(id(obj))
        if seen is not None:
            return seen[1], seen[2]
        try:
            if isinstance(obj, EncodedStreamObject) and obj.decoded_self is None:
                data = decode_stream_data(obj)
            else:
                data = obj.get_data()
        except Exception:  # an undecodable stream: its page reports the damage when it is read
            data = b""
        names = Counter(m.group(1).decode("latin-1") for m in _DO.finditer(data))
        self.streams[id(obj)] = (obj, len(data), names)  # the object is kept so that its id is not reused
        return len(data), names

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
            size, names = self.stream(form)
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
            for item in streams:
                stream = _resolve(item)
                if isinstance(stream, StreamObject):
                    size, names = count.stream(stream)
                    count.add(size + count.draws(names, resources, 0))
    except _Past:
        pass
    return count.total
