"""The bounds of one extraction, and the running account that enforces them while a PDF's pages are read.

`ExtractLimits` holds every bound (the operator sets them through `AC_CONTEXT_*`, read by
`extract_limits`). Size, page count and drawn content are checked before any page is read (knowledge.documents._drawn
measures the content); the text, the chunk cap and the time are checked by a `TextBudget` while the pages
are read: between pages, and inside a page through pypdf's visitor callbacks, so one page that draws far
too much text is stopped as soon as it passes a bound rather than when it is done.

The chunk cap is enforced through a lower bound of the text the chunker will see: every byte that is not
whitespace survives normalisation, so a PDF whose non-whitespace text alone proves more chunks than the
cap fails with `too_many_chunks`, and no document the chunker would accept is refused early.

This module must never read a file, touch the database, or refuse a document on a bound it does not name.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Final

from knowledge.documents.chunk import DEFAULT_CHUNK_TOKENS, TooManyChunksError
from knowledge.errors import DocumentTextTooLargeError, ExtractionError, ExtractionTimeoutError
from state.settings import Settings, get_settings

__all__ = ["DEFAULT_EXTRACT_LIMITS", "EXPANSION_FLOOR", "BudgetStop", "ExtractLimits", "TextBudget", "extract_limits"]

EXPANSION_FLOOR: Final = 16 * 1024 * 1024
"""Drawn content up to this size is never refused for its ratio to the file's size (about 16 s of pypdf)."""

_WHITESPACE: Final = (" ", "\t", "\n", "\r", "\f", "\v", "\x00")
"""What normalisation may remove (NUL included); anything else reaches the chunker."""
_CLOCK_EVERY: Final = 256
"""Operators between two looks at the clock inside a page."""


@dataclass(frozen=True, slots=True)
class ExtractLimits:
    """The bounds one extraction enforces, each before it spends the memory or the time they guard."""

    max_bytes: int = 50 * 1024 * 1024
    """Largest accepted input, in bytes (50 MB)."""
    max_pages: int = 2_000
    """Most pages accepted in a PDF."""
    max_content_bytes: int = 128 * 1024 * 1024
    """Most decompressed content the pages of a PDF may draw (a stream drawn by many pages counts for each)."""
    max_expansion: int = 100
    """Past `EXPANSION_FLOOR`, drawn content may be at most this many times the file's size."""
    max_text_bytes: int = 32 * 1024 * 1024
    """Most text, in UTF-8 bytes, one PDF may give."""
    max_page_text_bytes: int = 1024 * 1024
    """Most text one PDF page may give."""
    max_cpu_s: float = 300.0
    """Processor seconds one reader (the thread, or each pool worker) may spend on one document."""
    max_chunks: int | None = None
    """The chunk cap, enforced while the pages are read; None leaves it to the chunker alone."""
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS
    """The chunk size the cap is counted in."""

    def with_chunk_cap(self, max_chunks: int | None, chunk_tokens: int) -> ExtractLimits:
        """These limits, with the chunk cap of a source cut in chunks of `chunk_tokens`."""
        return replace(self, max_chunks=max_chunks, chunk_tokens=chunk_tokens)


DEFAULT_EXTRACT_LIMITS: Final = ExtractLimits()
"""The default limits; a frozen value, safe as a parameter default."""


def extract_limits(settings: Settings | None = None) -> ExtractLimits:
    """The limits the settings name (the process settings when none are given)."""
    settings = settings if settings is not None else get_settings()
    return ExtractLimits(
        max_pages=settings.max_pdf_pages,
        max_content_bytes=settings.max_pdf_content_bytes,
        max_expansion=settings.max_pdf_expansion,
        max_text_bytes=settings.max_extracted_text_bytes,
        max_page_text_bytes=settings.max_page_text_bytes,
        max_cpu_s=settings.max_extract_cpu_s,
    )


class BudgetStop(BaseException):
    """A bound passed inside a page. A BaseException, because pypdf's form-XObject code catches Exception."""

    def __init__(self, error: ExtractionError) -> None:
        super().__init__(error.message)
        self.error = error
        """The refusal to raise once out of pypdf."""


def _measure(text: str) -> tuple[int, int]:
    """The UTF-8 size of `text` and its bytes that are not whitespace (a lone surrogate counts 3)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    return size, size - sum(text.count(c) for c in _WHITESPACE)


class TextBudget:
    """The running account of one reader: the text given so far, and its processor time."""

    def __init__(self, limits: ExtractLimits) -> None:
        self.limits = limits
        """The bounds this account enforces."""
        self.text_bytes = 0
        """UTF-8 bytes of the pages accounted so far."""
        self.solid_bytes = 0
        """Their bytes that are not whitespace."""
        self._deadline = time.thread_time() + limits.max_cpu_s
        self._page = 0
        self._page_bytes = 0
        self._page_solid = 0
        self.operators = 0
        """Content-stream operators seen so far."""

    def begin_page(self, index: int) -> None:
        """Start accounting page `index` (0-based)."""
        self._page, self._page_bytes, self._page_solid = index, 0, 0

    def end_page(self, text: str) -> None:
        """Account the whole text of the current page; raises the bound it passes."""
        size, solid = _measure(text)
        error = self._passed(size, solid)
        if error is not None:
            raise error
        self.text_bytes += size
        self.solid_bytes += solid

    def add_page(self, index: int, text: str) -> None:
        """Account page `index` read elsewhere (a pool worker's text, in page order); raises the bound it passes."""
        self._page = index
        self.end_page(text)

    def on_operator(self, *_: Any) -> None:
        """As `visitor_operand_before` of pypdf: look at the clock every few hundred operators."""
        self.operators += 1
        if self.operators % _CLOCK_EVERY == 0 and time.thread_time() > self._deadline:
            raise BudgetStop(self._timeout())

    def on_text(self, text: Any, *_: Any) -> None:
        """As `visitor_text` of pypdf: count the text the page draws, and stop it at the first bound it passes."""
        if not isinstance(text, str) or not text:
            return
        size, solid = _measure(text)
        self._page_bytes += size
        self._page_solid += solid
        error = self._passed(self._page_bytes, self._page_solid)
        if error is not None:
            raise BudgetStop(error)

    def _passed(self, page_bytes: int, page_solid: int) -> ExtractionError | None:
        """The refusal for a page of `page_bytes` (`page_solid` not whitespace) on top of the text so far."""
        limits, page = self.limits, self._page + 1
        if page_bytes > limits.max_page_text_bytes:
            return DocumentTextTooLargeError.because(
                "page {page:,} gives more text than the limit of {limit:,} bytes per page",
                page=page, limit=limits.max_page_text_bytes,
            )  # fmt: skip
        if limits.max_chunks is not None:
            tokens = -(-(self.solid_bytes + page_solid) // 4)
            least = -(-tokens // limits.chunk_tokens)
            if least > limits.max_chunks:
                return TooManyChunksError.because(
                    "by page {page:,} the document needs more than {cap:,} chunks, the most one source may hold: "
                    "split it into parts",
                    page=page, cap=limits.max_chunks,
                )  # fmt: skip
        if self.text_bytes + page_bytes > limits.max_text_bytes:
            return DocumentTextTooLargeError.because(
                "the text passes the limit of {limit:,} bytes at page {page:,}: split it into parts",
                limit=limits.max_text_bytes, page=page,
            )  # fmt: skip
        return None

    def _timeout(self) -> ExtractionTimeoutError:
        return ExtractionTimeoutError.because(
            "reading the document took more than {seconds:g} s of processor time (stopped at page {page:,})",
            seconds=self.limits.max_cpu_s, page=self._page + 1,
        )  # fmt: skip
