"""PDF extraction with the pages of a large PDF spread over the ingestion pool.

The PDF is opened here (decryption, the page count and the drawn content and their limits, the title)
exactly as `extract_text` opens it, so a decompression bomb is refused before any worker reads a page; its
pages are then read in contiguous ranges, one per worker, and joined in page order. A range stops at its
first unreadable page or first bound passed, returning the pages before it, and this process accounts the
ranges' text again in page order, so the first failure in page order is the one a single process meets
first: the pooled text and failure reason equal `extract_text`'s (tests compare every corpus PDF, and each
bound). Small PDFs and every other type are extracted in a thread, as before.

This module must never touch the database or the object store.
"""

from __future__ import annotations

import asyncio
from pathlib import PurePath
from typing import Final

from knowledge.documents.extract import (
    DEFAULT_EXTRACT_LIMITS,
    ExtractedDocument,
    ExtractLimits,
    extract_text_async,
    finish_pdf,
    open_pdf_checked,
    pdf_capture,
    pdf_capture_end,
    pdf_title,
)
from knowledge.documents.limits import TextBudget
from knowledge.ingestion.pool import IngestPool, pdf_pages, raise_failure

__all__ = ["POOLED_PDF_BYTES", "POOLED_PDF_PAGES", "extract_pooled"]

POOLED_PDF_BYTES: Final = 256 * 1024
"""PDFs smaller than this are read in one thread: opening them in every worker would cost more."""
POOLED_PDF_PAGES: Final = 8
"""PDFs with fewer pages are read in one thread."""


async def extract_pooled(
    pool: IngestPool | None,
    data: bytes,
    *,
    media_type: str | None = None,
    filename: str | None = None,
    limits: ExtractLimits = DEFAULT_EXTRACT_LIMITS,
    min_bytes: int = POOLED_PDF_BYTES,
    min_pages: int = POOLED_PDF_PAGES,
) -> ExtractedDocument:
    """`extract_text` of `data`, with the pages of a PDF of `min_bytes` and `min_pages` read by the workers."""
    is_pdf = b"%PDF-" in data[:1024]
    if pool is None or pool.workers < 2 or not is_pdf or not min_bytes <= len(data) <= limits.max_bytes:
        return await extract_text_async(data, media_type=media_type, filename=filename, limits=limits)
    pages, title, notices = await asyncio.to_thread(_head, data, limits)
    if pages < min_pages:
        return await extract_text_async(data, media_type=media_type, filename=filename, limits=limits)
    step = -(-pages // pool.workers)
    ranges = [(start, min(start + step, pages)) for start in range(0, pages, step)]
    parts = await asyncio.gather(*(pool.run(pdf_pages, data, None, start, stop, limits) for start, stop in ranges))
    # In page order, each range's text is accounted again as one reader would: the first bound passed, or
    # else the first failure, is the one a single reader meets first.
    budget = TextBudget(limits)
    texts: list[str] = []
    for (start, _), (part, notes, failure) in zip(ranges, parts, strict=True):
        for offset, text in enumerate(part):
            budget.add_page(start + offset, text)
        texts.extend(part)
        notices.extend(notes)
        if failure is not None:
            raise_failure(failure)
    return finish_pdf(texts, pages, title or (PurePath(filename).stem if filename else None), notices)


def _head(data: bytes, limits: ExtractLimits) -> tuple[int, str | None, list[str]]:
    """Open the PDF as `extract_text` does: its page count (within the limit), its title, its notices."""
    notices, token = pdf_capture()
    try:
        reader, pages = open_pdf_checked(data, None, limits)
        title = pdf_title(reader)
    finally:
        pdf_capture_end(token)
    return pages, title, notices
