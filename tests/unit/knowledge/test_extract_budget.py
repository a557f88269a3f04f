"""Each bound of one extraction, enforced before or while the pages are read, in-process and over the pool.

Bombs are built with pypdf in `pdf_bombs`. A test that proves a bound acts *while* reading uses a PDF whose
third page is damaged: a bound checked only after every page would report the damage instead.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from knowledge.documents.chunk import DEFAULT_CHUNK_TOKENS, TooManyChunksError, chunk_text
from knowledge.documents.extract import (
    EXPANSION_FLOOR,
    ExtractLimits,
    TextBudget,
    extract_limits,
    extract_text,
    open_pdf_checked,
)
from knowledge.documents.extract import pdf_pages_text as read_pages
from knowledge.errors import (
    DocumentTextTooLargeError,
    ExtractionError,
    ExtractionTimeoutError,
    MalformedDocumentError,
    NoTextLayerError,
    PdfContentTooLargeError,
)
from knowledge.ingestion.pool import Failure, IngestPool, extract_pooled, pdf_pages, prepare_documents
from state.settings import load_settings
from tests.unit.knowledge.pdf_bombs import FIGURE, form_bomb, shared_stream_bomb, text_pages
from tests.unit.knowledge.test_extract import GEOTOPO

UNBOUNDED = ExtractLimits(max_content_bytes=10**12, max_expansion=10**9)
"""No drawn-content bound, so that the bounds checked while reading are the ones that act."""
BROKEN = text_pages(5, 100, broken_page=3)
"""Five pages of 100 lines (3,390 bytes of text each, 2,790 of them not whitespace), the third one damaged."""


@pytest.fixture(scope="module")
async def pool() -> AsyncIterator[IngestPool]:
    workers = IngestPool(2)
    yield workers
    workers.close()


def _refusal(data: bytes, limits: ExtractLimits) -> ExtractionError:
    with pytest.raises(ExtractionError) as raised:
        extract_text(data, limits=limits)
    return raised.value


# --- before any page is read: drawn content -------------------------------------------------------------


def test_a_stream_shared_by_2000_pages_is_refused_for_what_the_pages_draw() -> None:
    refused = _refusal(shared_stream_bomb(), ExtractLimits())
    assert isinstance(refused, PdfContentTooLargeError) and refused.code == "pdf_content_too_large"
    assert "pages that share one content stream" in refused.message


def test_the_64_kib_variant_under_the_absolute_bound_is_refused_for_its_ratio_to_the_file_size() -> None:
    data = shared_stream_bomb(stream_bytes=64 * 1024)
    assert 2_000 * 64 * 1024 < ExtractLimits().max_content_bytes, "the variant passes the absolute bound"
    refused = _refusal(data, ExtractLimits(max_cpu_s=5))  # without the ratio it would be read until the clock
    assert isinstance(refused, PdfContentTooLargeError)
    assert f"more than 100 times the file's {len(data):,} bytes" in refused.message


def test_the_absolute_drawn_content_bound_refuses_an_ordinary_pdf_set_below_it() -> None:
    refused = _refusal(GEOTOPO.read_bytes(), ExtractLimits(max_content_bytes=1024 * 1024))
    assert isinstance(refused, PdfContentTooLargeError)
    assert "more than the limit of 1,048,576 bytes" in refused.message


def test_a_form_invoked_thousands_of_times_counts_once_per_invocation() -> None:
    data = form_bomb()
    assert len(data) < 4096
    refused = _refusal(data, ExtractLimits())
    assert isinstance(refused, PdfContentTooLargeError), refused


def test_pages_without_a_text_operator_draw_nothing_and_are_not_parsed() -> None:
    figures = shared_stream_bomb(line=FIGURE)  # 800 MB of paths: pypdf skips each page unparsed
    refused = _refusal(figures, ExtractLimits(max_cpu_s=5))  # parsed, the pages would run into the clock
    assert isinstance(refused, NoTextLayerError), refused


def test_small_drawn_content_is_never_refused_for_its_ratio() -> None:
    data = shared_stream_bomb(pages=20, stream_bytes=64 * 1024)  # 1.3 MB drawn from a few KB: under the floor
    assert 20 * 64 * 1024 < EXPANSION_FLOOR and len(data) * 100 < 20 * 64 * 1024
    assert extract_text(data).pages == 20


# --- while the pages are read ----------------------------------------------------------------------------


def test_the_text_bound_stops_the_reading_at_the_page_that_passes_it() -> None:
    refused = _refusal(BROKEN, ExtractLimits(max_text_bytes=5 * 1024))
    assert isinstance(refused, DocumentTextTooLargeError) and refused.code == "document_text_too_large"
    assert "at page 2" in refused.message, "checked after every page, the damaged page 3 would answer"
    assert isinstance(_refusal(BROKEN, ExtractLimits()), MalformedDocumentError)


def test_the_chunk_cap_stops_the_reading_at_the_page_that_proves_it() -> None:
    refused = _refusal(BROKEN, ExtractLimits().with_chunk_cap(9, DEFAULT_CHUNK_TOKENS))  # 5 chunks a page
    assert isinstance(refused, TooManyChunksError) and refused.code == "too_many_chunks"
    assert "by page 2" in refused.message


def test_the_chunk_cap_never_refuses_what_the_chunker_accepts() -> None:
    data = text_pages(5, 100)
    needed = len(chunk_text(extract_text(data).text, size=DEFAULT_CHUNK_TOKENS))
    assert extract_text(data, limits=ExtractLimits().with_chunk_cap(needed, DEFAULT_CHUNK_TOKENS)).pages == 5


def test_a_page_that_draws_too_much_text_is_stopped_inside_the_page() -> None:
    data = form_bomb(invocations=200, form_bytes=40_000)  # each invocation draws ~25 KB of text
    reader, pages = open_pdf_checked(data, None, UNBOUNDED)
    budget = TextBudget(ExtractLimits(max_page_text_bytes=64 * 1024))
    texts, failure = read_pages(reader, 0, pages, budget)
    assert isinstance(failure, DocumentTextTooLargeError) and texts == []
    assert "page 1 gives more text than the limit of 65,536 bytes" in failure.message
    assert budget.operators < 10 * 2_500, "the page was read to its end before the bound was checked"


def test_the_time_bound_stops_a_page_inside_it() -> None:
    data = form_bomb(invocations=200, form_bytes=40_000)
    reader, pages = open_pdf_checked(data, None, UNBOUNDED)
    budget = TextBudget(ExtractLimits(max_cpu_s=0.2, max_page_text_bytes=10**9, max_text_bytes=10**9))
    texts, failure = read_pages(reader, 0, pages, budget)
    assert isinstance(failure, ExtractionTimeoutError) and failure.code == "document_extraction_timeout"
    assert texts == []
    assert budget.operators < 200 * 2_500, "the page was read to its end before the clock was looked at"
    refused = _refusal(GEOTOPO.read_bytes(), ExtractLimits(max_cpu_s=0.05))
    assert isinstance(refused, ExtractionTimeoutError) and "0.05 s of processor time" in refused.message


# --- the pool enforces the same bounds ------------------------------------------------------------------


@pytest.mark.parametrize(
    "limits",
    [
        ExtractLimits(max_text_bytes=16 * 1024),  # passed at page 5, the second range's first
        ExtractLimits(max_page_text_bytes=2 * 1024),
        ExtractLimits().with_chunk_cap(25, DEFAULT_CHUNK_TOKENS),  # proved at page 6
        ExtractLimits(max_content_bytes=1024 * 1024),
    ],
    ids=["text", "page-text", "chunk-cap", "drawn-content"],
)
async def test_pooled_pages_fail_on_the_same_bound_at_the_same_page(pool: IngestPool, limits: ExtractLimits) -> None:
    data = text_pages(8, 100) if limits.max_content_bytes > 1024 * 1024 else GEOTOPO.read_bytes()
    single = _refusal(data, limits)
    with pytest.raises(ExtractionError) as pooled:
        await extract_pooled(pool, data, limits=limits, min_bytes=0, min_pages=2)
    assert (type(pooled.value), pooled.value.message) == (type(single), single.message)


async def test_a_bomb_sent_to_a_worker_whole_comes_back_as_its_refusal(pool: IngestPool) -> None:
    docs = [(form_bomb(), "application/pdf", "form.pdf"), (shared_stream_bomb(pages=300), None, "shared.pdf")]
    outs = await pool.run(prepare_documents, docs, ExtractLimits(), DEFAULT_CHUNK_TOKENS, 20_000)
    assert [type(o) for o in outs] == [Failure, Failure]
    assert all(isinstance(o, Failure) and o.error is PdfContentTooLargeError for o in outs)


async def test_a_worker_reading_a_page_range_stops_at_the_bound_and_returns_the_pages_before(
    pool: IngestPool,
) -> None:
    texts, _, failure = await pool.run(pdf_pages, BROKEN, None, 0, 5, ExtractLimits(max_text_bytes=5 * 1024))
    assert len(texts) == 1 and isinstance(failure, Failure) and failure.error is DocumentTextTooLargeError
    assert "at page 2" in failure.message


async def test_a_worker_applies_the_chunk_cap_while_it_reads(pool: IngestPool) -> None:
    (out,) = await pool.run(prepare_documents, [(BROKEN, None, "broken.pdf")], ExtractLimits(), 150, 9)
    assert isinstance(out, Failure) and out.error is TooManyChunksError and "by page 2" in out.message


# --- the settings --------------------------------------------------------------------------------------


def test_every_bound_is_read_from_its_setting() -> None:
    settings = load_settings(
        max_pdf_pages=7, max_pdf_content_bytes=2048, max_pdf_expansion=3, max_extracted_text_bytes=4096,
        max_page_text_bytes=1025, max_extract_cpu_s=9.5,
    )  # fmt: skip
    assert extract_limits(settings) == ExtractLimits(
        max_pages=7, max_content_bytes=2048, max_expansion=3, max_text_bytes=4096, max_page_text_bytes=1025,
        max_cpu_s=9.5,
    )  # fmt: skip
    assert extract_limits(load_settings()) == ExtractLimits(), "the settings' defaults are the limits' defaults"
