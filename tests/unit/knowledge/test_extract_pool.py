"""Pooled PDF extraction gives the text and the failure reason single-process extraction gives, on every PDF."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from knowledge.documents.extract import ExtractedDocument, ExtractLimits, extract_text
from knowledge.errors import ExtractionError
from knowledge.ingestion.pool import IngestPool, extract_pooled
from tests.unit.knowledge.test_extract import PDF_DIR, PDFS, extracted


@pytest.fixture(scope="module")
async def pool() -> AsyncIterator[IngestPool]:
    workers = IngestPool(2)
    await workers.warm()
    yield workers
    workers.close()


async def _pooled(pool: IngestPool, path: Path) -> ExtractedDocument | ExtractionError:
    try:  # every PDF is split by pages, however small, so every one crosses the process boundary
        return await extract_pooled(pool, path.read_bytes(), filename=path.name, min_bytes=0, min_pages=2)
    except ExtractionError as exc:
        return exc


@pytest.mark.parametrize("path", PDFS, ids=lambda p: p.relative_to(PDF_DIR).as_posix())
async def test_pooled_extraction_equals_single_process_extraction(pool: IngestPool, path: Path) -> None:
    single, pooled = extracted(path), await _pooled(pool, path)
    if isinstance(single, ExtractionError):
        assert isinstance(pooled, ExtractionError), f"pooled extraction read a PDF the single reader refused: {path}"
        assert (type(pooled), pooled.code, pooled.message) == (type(single), single.code, single.message)
        return
    assert isinstance(pooled, ExtractedDocument), f"pooled extraction failed: {pooled}"
    assert (pooled.text, pooled.pages, pooled.title, pooled.media_type) == (
        single.text, single.pages, single.title, single.media_type,
    )  # fmt: skip


async def test_a_pdf_over_the_page_limit_fails_the_same_way_pooled(pool: IngestPool) -> None:
    path = max(PDFS, key=lambda p: p.stat().st_size)
    limits = ExtractLimits(max_pages=1)
    with pytest.raises(ExtractionError) as single:
        extract_text(path.read_bytes(), limits=limits)
    with pytest.raises(ExtractionError) as pooled:
        await extract_pooled(pool, path.read_bytes(), limits=limits, min_bytes=0, min_pages=2)
    assert (pooled.value.code, pooled.value.message) == (single.value.code, single.value.message)
