"""Turn an uploaded document (PDF, Markdown, HTML, plain text) into normalised text.

Every failure is an `ExtractionError` subclass with a reason an admin can act on; nothing else escapes.
Its reason comes from the closed vocabulary (`knowledge.reasons`): the parser's own exception, whose
message quotes the bytes it choked on, is dropped (`from None`), never quoted, never chained.
A PDF is bounded before its pages are read (size, pages, the decompressed content they draw) and while
they are (text per page and in all, the chunk cap, processor time): `knowledge.documents.limits` holds the
bounds, and `TextBudget` here is the running account that enforces them while a PDF's pages are read:
between pages, and inside a page through pypdf's visitor callbacks, so one page that draws far too much
text is stopped as soon as it passes a bound rather than when it is done. The chunk cap is enforced through
a lower bound of the text the chunker will see: every byte that is not whitespace survives normalisation,
so a PDF whose non-whitespace text alone proves more chunks than the cap fails with `too_many_chunks`, and
no document the chunker would accept is refused early.
The text is safe for a Postgres `text` column (no NUL, no lone surrogate). pypdf's log records about
documents it repaired are captured per call into `ExtractedDocument.warnings` instead of reaching the
process log as noise. This module must never touch the database, the network or the object store, and
must never block the event loop: async callers use `extract_text_async`.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import pkgutil
import re
import time
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import PurePath
from typing import Any, Final

import pypdf
from bs4 import BeautifulSoup
from pypdf.errors import DependencyError, FileNotDecryptedError, LimitReachedError

from knowledge.documents._drawn import TEXT_OPERATOR, drawn_content_bytes
from knowledge.documents.limits import DEFAULT_EXTRACT_LIMITS, EXPANSION_FLOOR, ExtractLimits, extract_limits
from knowledge.errors import (
    DocumentTextTooLargeError,
    DocumentTooLargeError,
    EmptyDocumentError,
    EncryptedDocumentError,
    ExtractionError,
    ExtractionTimeoutError,
    MalformedDocumentError,
    NoTextLayerError,
    PdfContentTooLargeError,
    TooManyChunksError,
    TooManyPagesError,
    UnsupportedDocumentTypeError,
)
from knowledge.reasons import Reason

__all__ = [
    "DEFAULT_EXTRACT_LIMITS",
    "DOCUMENT_SUFFIXES",
    "EXPANSION_FLOOR",
    "PDF",
    "BudgetStop",
    "ExtractLimits",
    "ExtractedDocument",
    "TextBudget",
    "extract_limits",
    "extract_text",
    "extract_text_async",
    "normalise_text",
    "read_by_name",
]

PDF: Final = "application/pdf"
MARKDOWN: Final = "text/markdown"
HTML: Final = "text/html"
PLAIN: Final = "text/plain"
_EXTENSIONS: Final = {".pdf": PDF, ".md": MARKDOWN, ".markdown": MARKDOWN, ".html": HTML, ".htm": HTML}
_TEXT_EXTENSIONS: Final = frozenset({".txt", ".text", ".csv", ".rst", ".log", ""})
DOCUMENT_SUFFIXES: Final = frozenset(_EXTENSIONS) | (_TEXT_EXTENSIONS - {""})
"""The file endings the extractor reads a document by (`.pdf`, `.md`, `.html`, `.txt`...): what a folder walk takes."""
_MAX_WARNINGS: Final = 20
_UNSUPPORTED: Final = Reason.of(
    "document_type_unsupported", "the document type is not supported; upload PDF, Markdown, HTML or plain UTF-8 text"
)
_BOMB_LIMIT: Final = (
    "the PDF's pages draw more than the limit of {limit:,} bytes of decompressed content (a decompression "
    "bomb, or pages that share one content stream)"
)
_BOMB_TIMES: Final = (
    "the PDF's pages draw more than {times:,} times the file's {size:,} bytes of decompressed content (a "
    "decompression bomb, or pages that share one content stream)"
)


@dataclass(frozen=True, slots=True)
class ExtractedDocument:
    """The normalised text of one document and what was learnt reading it."""

    text: str
    """Normalised text: no NUL, `\\n` line ends, at most one blank line in a row, never empty."""
    pages: int
    """Page count for a PDF; 1 for the other types."""
    media_type: str
    """The type the document was read as: application/pdf, text/markdown, text/html or text/plain."""
    title: str | None = None
    """A title guess: PDF metadata, HTML <title> or <h1>, the first Markdown heading, else the file name."""
    warnings: tuple[str, ...] = field(default_factory=tuple)
    """Repairs the PDF reader made (e.g. a broken xref table), deduplicated, at most 20."""


async def extract_text_async(
    data: bytes,
    *,
    media_type: str | None = None,
    filename: str | None = None,
    password: str | None = None,
    limits: ExtractLimits = DEFAULT_EXTRACT_LIMITS,
) -> ExtractedDocument:
    """`extract_text` in a worker thread, so parsing never blocks the event loop."""
    return await asyncio.to_thread(
        extract_text, data, media_type=media_type, filename=filename, password=password, limits=limits
    )


def extract_text(
    data: bytes,
    *,
    media_type: str | None = None,
    filename: str | None = None,
    password: str | None = None,
    limits: ExtractLimits = DEFAULT_EXTRACT_LIMITS,
) -> ExtractedDocument:
    """Extract normalised text from `data`, or raise an `ExtractionError` saying why not (blocking)."""
    if len(data) > limits.max_bytes:
        raise DocumentTooLargeError.because(
            "the document is {size:,} bytes; the limit is {limit:,} bytes", size=len(data), limit=limits.max_bytes
        )
    if not data.strip():
        raise EmptyDocumentError.because("the document is empty")
    kind = _sniff(data, media_type, filename)
    fallback_title = PurePath(filename).stem if filename else None
    if kind == PDF:
        return _extract_pdf(data, password=password, limits=limits, fallback_title=fallback_title)
    raw = _decode(data)
    if kind == HTML:
        text, title = _html_to_text(raw)
    else:
        text, title = raw, (_markdown_title(raw) if kind == MARKDOWN else None)
    text = normalise_text(text)
    if not text:
        raise EmptyDocumentError.because("the document contains no text")
    return ExtractedDocument(text=text, pages=1, media_type=kind, title=title or fallback_title)


def read_by_name(filename: str) -> bool:
    """Whether the extractor reads a file of this name: a known ending, or none at all (read as plain text)."""
    suffix = PurePath(filename).suffix.lower()
    return suffix in DOCUMENT_SUFFIXES or suffix == ""


def normalise_text(text: str) -> str:
    """Remove NUL and lone surrogates, unify line ends, trim line ends and collapse runs of blank lines."""
    text = text.replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n")
    text = _SURROGATES.sub("\ufffd", text)
    text = _TRAILING_SPACE.sub("\n", text)
    return _BLANK_RUNS.sub("\n\n", text).strip()


_SURROGATES: Final = re.compile("[\ud800-\udfff]")
_TRAILING_SPACE: Final = re.compile(r"[ \t\f\v]+\n")
_BLANK_RUNS: Final = re.compile(r"\n[ \t\f\v]*(?:\n[ \t\f\v]*)+\n")


def _sniff(data: bytes, media_type: str | None, filename: str | None) -> str:
    """The type to read `data` as: magic bytes first, then the declared type, then the file extension."""
    if b"%PDF-" in data[:1024]:
        return PDF
    declared = (media_type or "").split(";")[0].strip().lower()
    suffix = PurePath(filename).suffix.lower() if filename else ""
    if declared == PDF or (not declared and suffix == ".pdf"):
        raise MalformedDocumentError.because("the file claims to be a PDF but has no %PDF header")
    if declared in (MARKDOWN, "text/x-markdown"):
        return MARKDOWN
    if declared in (HTML, "application/xhtml+xml"):
        return HTML
    generic = declared in ("", "application/octet-stream", PLAIN)
    if not generic and not declared.startswith("text/"):
        raise UnsupportedDocumentTypeError(
            f"documents of type {declared} are not supported; upload PDF, Markdown, HTML or plain text",
            reason=_UNSUPPORTED,
        )
    if suffix in _EXTENSIONS:
        return _EXTENSIONS[suffix]
    if suffix not in _TEXT_EXTENSIONS and not declared.startswith("text/"):
        raise UnsupportedDocumentTypeError(
            f"files ending in {suffix} are not supported; upload PDF, Markdown, HTML or plain text",
            reason=_UNSUPPORTED,
        )
    if data[:512].lstrip().lower().startswith((b"<!doctype html", b"<html")):
        return HTML
    return PLAIN


def _decode(data: bytes) -> str:
    """Decode UTF-8 text (a BOM allowed), refusing binary content with a clear reason."""
    head = data[:8192]
    if head.count(0) > len(head) // 100 + 1:  # a stray NUL is text damage; many mean a binary file
        raise UnsupportedDocumentTypeError.because(
            "the file is binary, not text; upload PDF, Markdown, HTML or plain UTF-8 text"
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:  # its message quotes the bytes: only the offset is ours to say
        offset = exc.start
    raise UnsupportedDocumentTypeError.because(
        "the file is not UTF-8 text (invalid byte at offset {offset:,}); save it as UTF-8 or upload a PDF",
        offset=offset,
    )


def _html_to_text(markup: str) -> tuple[str, str | None]:
    """Visible text of an HTML page with scripts, styles and templates removed, plus its title."""
    try:
        soup = BeautifulSoup(markup, "html.parser")
    except Exception:  # bs4's ParserRejectedMarkup quotes the markup it rejected: none of it is kept
        raise MalformedDocumentError.because("the HTML page cannot be parsed") from None
    title_tag = soup.find("title") or soup.find("h1")
    title = title_tag.get_text(" ", strip=True) if title_tag else None
    for tag in soup(["head", "script", "style", "noscript", "template"]):
        tag.decompose()
    return soup.get_text("\n"), title or None


def _markdown_title(text: str) -> str | None:
    """The first ATX heading of a Markdown page, or a front-matter `title:`."""
    match = re.search(r"^(?:#{1,6}[ \t]+(.+?)[ \t#]*|title:[ \t]*['\"]?(.+?)['\"]?[ \t]*)$", text, re.M)
    if match is None:
        return None
    title = re.sub(r"\s*\{[^{}]*\}\s*$", "", match.group(1) or match.group(2)).strip()
    return title or None


def _extract_pdf(
    data: bytes, *, password: str | None, limits: ExtractLimits, fallback_title: str | None
) -> ExtractedDocument:
    """Read every page of a PDF within its budget; a document that fails on any page fails as a whole."""
    collected: list[str] = []
    token = _PYPDF_LOG.set(collected)
    try:
        reader, pages = open_pdf_checked(data, password, limits)
        texts, failure = pdf_pages_text(reader, 0, pages, TextBudget(limits))
        if failure is not None:
            raise failure
        title = _pdf_title(reader)
    finally:
        _PYPDF_LOG.reset(token)
    return finish_pdf(texts, pages, title or fallback_title, collected)


def open_pdf_checked(data: bytes, password: str | None, limits: ExtractLimits) -> tuple[pypdf.PdfReader, int]:
    """Open (and decrypt) a PDF and count its pages, refusing one over the page or drawn-content limits."""
    reader = _open_pdf(data, password)
    try:
        pages = len(reader.pages)
    except Exception:  # a damaged page tree fails in many ways inside the parser; its message quotes the file
        raise MalformedDocumentError.because("the PDF's page tree is damaged") from None
    if pages > limits.max_pages:
        raise TooManyPagesError.because(
            "the PDF has {pages:,} pages; the limit is {limit:,}", pages=pages, limit=limits.max_pages
        )
    expanded = max(EXPANSION_FLOOR, limits.max_expansion * len(data))
    limit = min(limits.max_content_bytes, expanded)
    if drawn_content_bytes(reader, pages, limit=limit) > limit:
        if limit == limits.max_content_bytes:
            raise PdfContentTooLargeError.because(_BOMB_LIMIT, limit=limit)
        raise PdfContentTooLargeError.because(_BOMB_TIMES, times=limits.max_expansion, size=len(data))
    return reader, pages


def pdf_pages_text(
    reader: pypdf.PdfReader, start: int, stop: int, budget: TextBudget
) -> tuple[list[str], ExtractionError | None]:
    """The raw text of pages `start`..`stop - 1` up to the first that fails, and that failure (or None).

    `budget` stops the reading at the first page that passes one of its bounds, inside the page if it can.
    """
    texts: list[str] = []
    for index in range(start, stop):
        try:
            budget.begin_page(index)
            text = _page_text(reader, index, budget)
            budget.end_page(text)
        except ExtractionError as exc:
            return texts, exc
        texts.append(text)
    return texts, None


def _page_text(reader: pypdf.PdfReader, index: int, budget: TextBudget) -> str:
    """One page's raw text, read with the budget watching; pypdf's failures become extraction errors."""
    try:
        page = reader.pages[index]
        if not _may_draw_text(page):  # what pypdf does itself without visitors: no text operator, no text
            return ""
        return page.extract_text(visitor_operand_before=budget.on_operator, visitor_text=budget.on_text) or ""
    except BudgetStop as stop:
        raise stop.error from None
    except LimitReachedError:  # pypdf's messages quote the content they choke on: none is kept
        raise DocumentTooLargeError.because("page {page:,} exceeds a decoding limit", page=index + 1) from None
    except Exception:  # pypdf raises many types on damaged content streams
        raise MalformedDocumentError.because("page {page:,} cannot be read", page=index + 1) from None


def _may_draw_text(page: pypdf.PageObject) -> bool:
    """Whether the page's content holds an operator that can add text (True when that cannot be told)."""
    try:
        contents = page.get_contents()
        return contents is None or TEXT_OPERATOR.search(contents.get_data()) is not None
    except Exception:  # let the extraction itself report the damage
        return True


def pdf_pages_text_of(
    data: bytes, password: str | None, start: int, stop: int, limits: ExtractLimits
) -> tuple[list[str], list[str], ExtractionError | None]:
    """`pdf_pages_text` on a PDF opened here (a pool worker's half), with the repair notices it logged."""
    collected: list[str] = []
    token = _PYPDF_LOG.set(collected)
    try:
        texts, failure = pdf_pages_text(_open_pdf(data, password), start, stop, TextBudget(limits))
    finally:
        _PYPDF_LOG.reset(token)
    return texts, collected, failure


def pdf_title(reader: pypdf.PdfReader) -> str | None:
    """The document-information title, ignored when missing or unreadable."""
    return _pdf_title(reader)


def finish_pdf(texts: list[str], pages: int, title: str | None, notices: list[str]) -> ExtractedDocument:
    """Join and normalise the pages' text, refusing a PDF without a text layer."""
    text = normalise_text("\n\n".join(texts))
    if not text:
        if pages == 1:
            raise NoTextLayerError.because("the PDF has 1 page but no text layer (scanned images?); run OCR first")
        raise NoTextLayerError.because(
            "the PDF has {pages:,} pages but no text layer (scanned images?); run OCR first", pages=pages
        )
    unique = tuple(dict.fromkeys(notices))[:_MAX_WARNINGS]
    return ExtractedDocument(text=text, pages=pages, media_type=PDF, title=title, warnings=unique)


def pdf_capture() -> tuple[list[str], contextvars.Token[list[str] | None]]:
    """Start capturing pypdf's repair notices in this context; reset the token to stop."""
    collected: list[str] = []
    return collected, _PYPDF_LOG.set(collected)


def pdf_capture_end(token: contextvars.Token[list[str] | None]) -> None:
    """Stop a capture started by `pdf_capture`."""
    _PYPDF_LOG.reset(token)


def sniff(data: bytes, media_type: str | None, filename: str | None) -> str:
    """The type `extract_text` reads `data` as (or the `ExtractionError` it raises for the type)."""
    return _sniff(data, media_type, filename)


def _open_pdf(data: bytes, password: str | None) -> pypdf.PdfReader:
    """Open and, where needed, decrypt a PDF (an empty user password is tried first)."""
    try:
        reader = pypdf.PdfReader(BytesIO(data))
        if reader.is_encrypted:
            opened = False
            for candidate in dict.fromkeys(["", *([password] if password is not None else [])]):
                if reader.decrypt(candidate):
                    opened = True
                    break
            if not opened:
                what = "the password given does not open it" if password else "no password was given"
                raise EncryptedDocumentError.because(f"the PDF is encrypted and {what}; upload an unencrypted copy")
    except ExtractionError:
        raise
    # The parser's messages quote the bytes it choked on: the errors below keep neither them nor the cause.
    except (FileNotDecryptedError, DependencyError):
        raise EncryptedDocumentError.because(
            "the PDF is encrypted and cannot be decrypted; upload an unencrypted copy"
        ) from None
    except Exception:  # a damaged file can fail anywhere in the parser
        raise MalformedDocumentError.because("the PDF is damaged and cannot be opened") from None
    return reader


def _pdf_title(reader: pypdf.PdfReader) -> str | None:
    """The document-information title, ignored when missing or unreadable."""
    try:
        title = reader.metadata.title if reader.metadata else None
    except Exception:  # unreadable metadata never fails an otherwise readable document
        return None
    title = normalise_text(str(title)) if title else ""
    return title or None


_PYPDF_LOG: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("pypdf_log", default=None)


class _CaptureDuringExtraction(logging.Filter):
    """Diverts pypdf's repair notices into the running extraction's warnings instead of the log.

    An error record still reaches the log, its message replaced by a fixed line naming the pypdf module:
    pypdf formats values read from the document (an encoding's name, a stream's bytes) into its messages.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        sink = _PYPDF_LOG.get()
        if sink is None:
            return True
        if record.levelno >= logging.ERROR:  # kept in the log, but its text may quote the document: not that
            record.msg, record.args = "pypdf reported an error while reading a document (%s)", (record.name,)
            record.exc_info = record.exc_text = None
            return True
        if len(sink) < 10 * _MAX_WARNINGS:
            sink.append(record.getMessage()[:300])
        return False


def _install_log_capture() -> None:
    """Attach the capture filter to every pypdf module logger (logger filters do not inherit)."""
    capture = _CaptureDuringExtraction()
    names = ["pypdf", *(m.name for m in pkgutil.walk_packages(pypdf.__path__, "pypdf."))]
    for name in names:
        logging.getLogger(name).addFilter(capture)


_install_log_capture()


_WHITESPACE: Final = (" ", "\t", "\n", "\r", "\f", "\v", "\x00")
"""What normalisation may remove (NUL included); anything else reaches the chunker."""
_CLOCK_EVERY: Final = 256
"""Operators between two looks at the clock inside a page."""


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
