from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from knowledge.documents.extract import (
    ExtractedDocument,
    ExtractLimits,
    extract_text,
    extract_text_async,
    normalise_text,
)
from knowledge.errors import (
    DocumentTooLargeError,
    EmptyDocumentError,
    EncryptedDocumentError,
    ExtractionError,
    KnowledgeInputError,
    MalformedDocumentError,
    NoTextLayerError,
    TooManyPagesError,
    UnsupportedDocumentTypeError,
)

CORPUS = Path(__file__).resolve().parents[3] / ".." / "shared" / "corpus"
PDF_DIR = CORPUS / "pdf"
SAMPLES = PDF_DIR / "py-pdf-sample-files"
PDFS = sorted(PDF_DIR.rglob("*.pdf"))
ENCRYPTED = SAMPLES / "005-libreoffice-writer-password" / "libreoffice-writer-password.pdf"
IMAGE_ONLY = SAMPLES / "007-imagemagick-images" / "imagemagick-CCITTFaxDecode.pdf"
MALFORMED = SAMPLES / "017-unreadable-meta-data" / "unreadablemetadata.pdf"
GEOTOPO = SAMPLES / "009-pdflatex-geotopo" / "GeoTopo-komprimiert.pdf"
FASTAPI = CORPUS / "markdown" / "fastapi-docs"


@cache
def extracted(path: Path) -> ExtractedDocument | ExtractionError:
    """Each corpus PDF is read once per session (GeoTopo alone takes seconds)."""
    try:
        return extract_text(path.read_bytes(), filename=path.name)
    except ExtractionError as exc:
        return exc


def test_the_corpus_holds_every_pdf_the_shared_readme_promises() -> None:
    # 31 py-pdf samples + 6 pdf.js files: an empty glob must not let the corpus test pass vacuously.
    assert len(PDFS) == 37


@pytest.mark.parametrize("path", PDFS, ids=lambda p: p.relative_to(PDF_DIR).as_posix())
def test_every_corpus_pdf_extracts_text_or_fails_with_an_extraction_error(path: Path) -> None:
    document = extracted(path)
    if isinstance(document, ExtractionError):
        exc = document
        assert exc.code != ExtractionError.code, "a PDF failure must name its specific reason"
        assert exc.retryable is False
        assert len(exc.message) > 20
        return
    assert document.text.strip()
    assert "\x00" not in document.text
    assert document.media_type == "application/pdf"
    assert document.pages >= 1


def test_page_counts_match_the_ground_truth_of_files_json() -> None:
    truth = json.loads((SAMPLES / "files.json").read_text())["data"]
    checked = 0
    for entry in truth:
        if not (SAMPLES / entry["path"]).exists():
            continue  # files.json lists a few files the shared corpus does not ship
        document = extracted(SAMPLES / entry["path"])
        if isinstance(document, ExtractionError):
            continue
        assert document.pages == entry["pages"], entry["path"]
        checked += 1
    assert checked >= 20


def test_encrypted_image_only_and_malformed_pdfs_fail_with_three_different_reasons() -> None:
    errors = []
    for path, kind in (
        (ENCRYPTED, EncryptedDocumentError),
        (IMAGE_ONLY, NoTextLayerError),
        (MALFORMED, MalformedDocumentError),
    ):
        with pytest.raises(kind) as info:
            extract_text(path.read_bytes())
        errors.append(info.value)
    assert len({e.code for e in errors}) == 3
    assert len({e.message for e in errors}) == 3
    assert [e.code for e in errors] == ["pdf_encrypted", "pdf_no_text", "document_malformed"]


def test_encrypted_pdf_without_password_says_so() -> None:
    with pytest.raises(EncryptedDocumentError, match="encrypted and no password was given"):
        extract_text(ENCRYPTED.read_bytes())


def test_encrypted_pdf_with_a_wrong_password_says_so() -> None:
    with pytest.raises(EncryptedDocumentError, match="password given does not open it"):
        extract_text(ENCRYPTED.read_bytes(), password="wrong")


def test_encrypted_pdf_opens_with_its_password() -> None:
    document = extract_text(ENCRYPTED.read_bytes(), password="openpassword")
    assert document.text.strip()


def test_pdfjs_encrypted_file_with_non_ascii_password() -> None:
    path = PDF_DIR / "pdfjs" / "issue6010_2.pdf"
    with pytest.raises(EncryptedDocumentError):
        extract_text(path.read_bytes())


def test_image_only_pdf_asks_for_ocr() -> None:
    with pytest.raises(NoTextLayerError, match=r"has 1 page but no text layer \(scanned images\?\); run OCR"):
        extract_text(IMAGE_ONLY.read_bytes())


def test_malformed_page_tree_names_the_damage_and_quotes_nothing_of_the_parser() -> None:
    with pytest.raises(MalformedDocumentError) as info:
        extract_text(MALFORMED.read_bytes())
    assert info.value.message == "the PDF's page tree is damaged", "pypdf's message (it quotes the file) is dropped"
    assert info.value.__cause__ is None and info.value.__suppress_context__, "nor is it chained"


def test_broken_xref_is_repaired_and_reported_as_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    document = extract_text((PDF_DIR / "pdfjs" / "helloworld-bad.pdf").read_bytes())
    assert "Hello" in document.text
    assert any("startxref" in w for w in document.warnings)
    assert not [r for r in caplog.records if r.name.startswith("pypdf")], "repair notices must not reach the log"


def test_truncated_pdf_is_malformed() -> None:
    data = (SAMPLES / "001-trivial" / "minimal-document.pdf").read_bytes()
    with pytest.raises(ExtractionError) as info:
        extract_text(data[:400])
    assert isinstance(info.value, (MalformedDocumentError, NoTextLayerError))


def test_garbage_after_a_pdf_header_is_malformed() -> None:
    with pytest.raises(MalformedDocumentError):
        extract_text(b"%PDF-1.7\n" + bytes(range(256)) * 4)


@pytest.mark.slow
def test_geotopo_extracts_117_pages_without_nul_bytes() -> None:
    document = extracted(GEOTOPO)
    assert isinstance(document, ExtractedDocument)
    assert document.pages == 117
    assert "\x00" not in document.text
    assert "Topologie" in document.text
    assert document.title == "Geometrie und Topologie"
    assert len(document.warnings) <= 20


async def test_async_extraction_runs_off_the_event_loop() -> None:
    document = await extract_text_async((SAMPLES / "001-trivial" / "minimal-document.pdf").read_bytes())
    assert document.pages == 1 and document.text


def test_size_limit() -> None:
    with pytest.raises(DocumentTooLargeError, match="the limit is 10 bytes"):
        extract_text(b"hello world, too long", limits=ExtractLimits(max_bytes=10))
    assert extract_text(b"0123456789", limits=ExtractLimits(max_bytes=10)).text == "0123456789"


def test_default_limits_are_50_mb_and_2000_pages() -> None:
    assert ExtractLimits() == ExtractLimits(max_bytes=50 * 1024 * 1024, max_pages=2_000)


def test_page_limit() -> None:
    data = (SAMPLES / "004-pdflatex-4-pages" / "pdflatex-4-pages.pdf").read_bytes()
    with pytest.raises(TooManyPagesError, match="has 4 pages; the limit is 3"):
        extract_text(data, limits=ExtractLimits(max_pages=3))
    assert extract_text(data, limits=ExtractLimits(max_pages=4)).pages == 4


@pytest.mark.parametrize("data", [b"", b"   \n\t  ", b"\xef\xbb\xbf\n"])
def test_empty_input(data: bytes) -> None:
    with pytest.raises(EmptyDocumentError):
        extract_text(data)


def test_html_with_only_a_script_is_empty() -> None:
    with pytest.raises(EmptyDocumentError):
        extract_text(b"<html><body><script>var a = 1;</script></body></html>", filename="x.html")


def test_markdown_from_the_fastapi_docs() -> None:
    path = FASTAPI / "tutorial" / "first-steps.md"
    document = extract_text(path.read_bytes(), filename=path.name)
    assert document.media_type == "text/markdown"
    assert document.title == "First Steps"
    assert "FastAPI" in document.text
    assert document.pages == 1


def test_every_fastapi_markdown_page_extracts() -> None:
    pages = sorted(FASTAPI.rglob("*.md"))
    assert len(pages) == 98
    for path in pages:
        assert extract_text(path.read_bytes(), filename=path.name).text


def test_html_drops_scripts_styles_and_hidden_templates() -> None:
    html = b"""<!doctype html><html><head><title>Pricing</title><style>body{color:red}</style>
    <script>track()</script></head><body><h1>Plans</h1><p>Starter costs <b>10</b> EUR.</p>
    <noscript>enable js</noscript><template><p>hidden</p></template><script>alert(1)</script></body></html>"""
    document = extract_text(html, media_type="text/html; charset=utf-8")
    assert document.media_type == "text/html"
    assert document.title == "Pricing"
    assert "Starter costs" in document.text and "Plans" in document.text
    for removed in ("track()", "alert", "color:red", "enable js", "hidden", "Pricing"):
        assert removed not in document.text


def test_html_is_sniffed_without_a_type_or_name() -> None:
    assert extract_text(b"<!DOCTYPE html><p>hi</p>").media_type == "text/html"


def test_plain_text_is_normalised() -> None:
    document = extract_text(b"a\x00b  \r\n\r\n\r\n\r\nc\r\n", filename="notes.txt")  # one stray NUL is not binary
    assert document.text == "ab\n\nc"
    assert document.media_type == "text/plain"
    assert document.title == "notes"


def test_normalise_text_collapses_blank_lines_and_removes_surrogates() -> None:
    assert normalise_text("a\n \n\t\n\nb\ud800") == "a\n\nb\ufffd"


def test_binary_that_is_not_pdf_is_refused_clearly() -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(64)
    with pytest.raises(UnsupportedDocumentTypeError, match="binary, not text"):
        extract_text(png)


def test_text_that_is_not_utf8_is_refused_with_the_offset() -> None:
    with pytest.raises(UnsupportedDocumentTypeError, match=r"not UTF-8 text .*offset 4"):
        extract_text("Straße".encode("latin-1"), filename="a.txt")


@pytest.mark.parametrize(
    ("media_type", "filename"), [("image/png", None), ("application/msword", "a.doc"), (None, "slides.pptx")]
)
def test_unsupported_types_are_refused(media_type: str | None, filename: str | None) -> None:
    with pytest.raises(UnsupportedDocumentTypeError):
        extract_text(b"some bytes", media_type=media_type, filename=filename)


def test_a_claimed_pdf_without_a_header_is_malformed() -> None:
    with pytest.raises(MalformedDocumentError, match="no %PDF header"):
        extract_text(b"just text", filename="report.pdf")


def test_extraction_errors_are_input_errors_that_never_retry() -> None:
    for kind in (EncryptedDocumentError, NoTextLayerError, MalformedDocumentError, EmptyDocumentError):
        error = kind()
        assert isinstance(error, KnowledgeInputError)
        assert error.retryable is False
        assert error.message == (kind.__doc__ or "").strip()
