"""The bounds of one extraction: every limit a document is read under, and where the operator sets them.

`ExtractLimits` holds every bound (the operator sets them through `AC_CONTEXT_*`, read by
`extract_limits`). Size, page count and drawn content are checked before any page is read
(`knowledge.documents._drawn` measures the content); the text, the chunk cap and the time are checked while
the pages are read, by the running account of `knowledge.documents.extract` (`TextBudget`).

This module must never read a file, touch the database, or import another module of `knowledge`: it is
the floor the documents room stands on.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

from state.settings import Settings, get_settings

__all__ = ["DEFAULT_CHUNK_TOKENS", "DEFAULT_EXTRACT_LIMITS", "EXPANSION_FLOOR", "ExtractLimits", "extract_limits"]

DEFAULT_CHUNK_TOKENS: Final = 150
"""Largest chunk by default, in estimated tokens (`knowledge.documents.chunk` explains the arithmetic); the
chunk cap below is counted in chunks of this size unless a caller names another."""

EXPANSION_FLOOR: Final = 16 * 1024 * 1024
"""Drawn content up to this size is never refused for its ratio to the file's size (about 16 s of pypdf)."""


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
