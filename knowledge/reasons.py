"""The closed vocabulary of failure reasons: a code and a detail the layer wrote, never a quote.

A stored reason reads `"<code>: <detail>"`, e.g. `document_malformed: page 3 cannot be read`. The code is
one of `VOCABULARY`'s keys and the detail one of that code's templates, filled only with values the layer
made itself: numbers (a page, a size, a limit), an error code of ours, a model id, an age or a time. A
reason never carries text taken from the document or from a library's exception message, because it is
shown by every list and outlives the document in logs and run histories. `Reason.of` refuses a template
that is not in the vocabulary and a value that is not of its placeholder's kind.

Migration 0094 rewrote the reasons stored before this vocabulary; its patterns are `pattern()`'s, and a
test holds the two together. This module must never import a third-party library or touch the database.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from typing import Final

__all__ = [
    "FALLBACK",
    "VOCABULARY",
    "Reason",
    "fixed_reason",
    "in_vocabulary",
    "pattern",
]

_RETRY: Final = "Retry the source to ingest it again."
_UPLOAD: Final = "upload PDF, Markdown, HTML or plain UTF-8 text"

VOCABULARY: Final[dict[str, tuple[str, ...]]] = {
    # The first template of each code takes no value: it is the code's fixed detail (migration 0094).
    "pdf_encrypted": (
        "the PDF is encrypted and cannot be decrypted; upload an unencrypted copy",
        "the PDF is encrypted and no password was given; upload an unencrypted copy",
        "the PDF is encrypted and the password given does not open it; upload an unencrypted copy",
    ),
    "pdf_no_text": (
        "the PDF has no text layer (scanned images?); run OCR first",
        "the PDF has 1 page but no text layer (scanned images?); run OCR first",
        "the PDF has {pages:,} pages but no text layer (scanned images?); run OCR first",
    ),
    "document_malformed": (
        "the document is damaged and cannot be read",
        "the file claims to be a PDF but has no %PDF header",
        "the PDF is damaged and cannot be opened",
        "the PDF's page tree is damaged",
        "the HTML page cannot be parsed",
        "page {page:,} cannot be read",
    ),
    "document_too_large": (
        "the document is larger than the size limit",
        "the document is {size:,} bytes; the limit is {limit:,} bytes",
        "page {page:,} exceeds a decoding limit",
    ),
    "pdf_content_too_large": (
        "the PDF's pages draw more decompressed content than extraction may read (a decompression bomb?)",
        "the PDF's pages draw more than the limit of {limit:,} bytes of decompressed content (a decompression "
        "bomb, or pages that share one content stream)",
        "the PDF's pages draw more than {times:,} times the file's {size:,} bytes of decompressed content (a "
        "decompression bomb, or pages that share one content stream)",
    ),
    "document_text_too_large": (
        "the document gives more text than extraction may collect: split it into parts",
        "page {page:,} gives more text than the limit of {limit:,} bytes per page",
        "the text passes the limit of {limit:,} bytes at page {page:,}: split it into parts",
    ),
    "too_many_chunks": (
        "the document needs more chunks than one source may hold: split it into parts",
        "by page {page:,} the document needs more than {cap:,} chunks, the most one source may hold: split it "
        "into parts",
        "the document would make at least {count:,} chunks; one source may hold at most {cap:,}: split it into parts",
        "the document would make more than {count:,} chunks; one source may hold at most {cap:,}: split it into parts",
    ),
    "document_extraction_timeout": (
        "reading the document took more processor time than extraction may spend",
        "reading the document took more than {seconds:g} s of processor time (stopped at page {page:,})",
    ),
    "document_too_many_pages": (
        "the PDF has more pages than the page limit",
        "the PDF has {pages:,} pages; the limit is {limit:,}",
    ),
    "document_empty": (
        "the document contains no text",
        "the document is empty",
        "the document contains no text to chunk",
    ),
    "document_type_unsupported": (
        f"the document type is not supported; {_UPLOAD}",
        f"the file is binary, not text; {_UPLOAD}",
        "the file is not UTF-8 text (invalid byte at offset {offset:,}); save it as UTF-8 or upload a PDF",
    ),
    "document_unreadable": ("the document cannot be turned into text",),
    "embedding_model_unknown": ("no embedder is registered under this model",),
    "embedder_model_mismatch": ("the embedder does not give the dimensions the model is registered with",),
    "embedding_auth_failed": ("the embedding provider refused the credentials; check the API key",),
    "embedding_provider_unavailable": ("the embedding provider refused the request",),
    "embedding_dimension_mismatch": ("the embedder gave vectors that do not fit the model",),
    "object_not_found": ("the document's stored object is missing; upload it again",),
    "failed_after_retries": (
        f"ingestion failed after its retries. {_RETRY}",
        f"ingestion failed after its retries; the last error was {{code}}. {_RETRY}",
    ),
    "ingestion_stalled": (
        f"ingestion did not finish in time: the ingestion job stopped or is stuck. {_RETRY}",
        "ingestion did not finish within {age} (pending since {since} UTC, attempt {attempt}): the ingestion job "
        f"stopped or is stuck. {_RETRY}",
        "embedding under {model} did not finish within {age} (pending since {since} UTC): the job stopped or is "
        "stuck. Retry the source to embed it again.",
    ),
    "ingestion_failed": (
        f"ingestion failed. {_RETRY}",
        f"ingestion failed with {{code}}. {_RETRY}",
    ),
}
"""Every reason code and the details it may carry; `{name}` placeholders take values the layer made."""

FALLBACK: Final = "ingestion_failed"
"""The code of a failure whose own code is not in the vocabulary (and of a rewritten reason that had none)."""

_KINDS: Final[dict[str, str]] = {
    "code": r"[a-z][a-z0-9_]{0,63}",
    "model": r"[A-Za-z0-9][A-Za-z0-9._/:-]{0,199}",
    "age": r"[0-9][0-9a-z :]{0,39}",
    "since": r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}",
}
"""The text placeholders and what their value must look like; every other placeholder takes a number."""
_NUMBER: Final = r"[0-9][0-9,.e+]{0,29}"


@dataclass(frozen=True, slots=True)
class Reason:
    """A failure reason: a vocabulary code and a detail formatted from one of its templates."""

    code: str
    """One of `VOCABULARY`'s codes."""
    detail: str
    """The filled template."""

    def __str__(self) -> str:
        return f"{self.code}: {self.detail}"

    @classmethod
    def of(cls, code: str, template: str, /, **values: object) -> Reason:
        """The reason `code` with `template` filled; a template or value outside the vocabulary is a bug."""
        if template not in VOCABULARY.get(code, ()):
            raise ValueError(f"{template!r} is not a detail of the reason code {code!r}")
        for name, value in values.items():
            kind = _KINDS.get(name)
            if kind is None:
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise TypeError(f"the reason value {name} must be a number")
            elif not isinstance(value, str) or re.fullmatch(kind, value) is None:
                raise ValueError(f"the reason value {name} is not of its kind")
        return cls(code, template.format(**values))


def fixed_reason(code: str) -> Reason:
    """The reason of `code` with its fixed detail; a code outside the vocabulary gives `ingestion_failed`."""
    if code in VOCABULARY:
        return Reason(code, VOCABULARY[code][0])
    if re.fullmatch(_KINDS["code"], code):
        return Reason.of(FALLBACK, VOCABULARY[FALLBACK][1], code=code)
    return Reason(FALLBACK, VOCABULARY[FALLBACK][0])


def pattern(template: str) -> str:
    """A POSIX regular expression (PostgreSQL's and Python's alike) matching every filling of `template`."""
    parts: list[str] = []
    for literal, name, _spec, _conversion in string.Formatter().parse(template):
        parts.append(re.escape(literal).replace("\\ ", " "))
        if name is not None:
            parts.append(f"({_KINDS.get(name, _NUMBER)})")
    return "".join(parts)


_STORED: Final = {code: [re.compile(pattern(t)) for t in templates] for code, templates in VOCABULARY.items()}


def in_vocabulary(text: str) -> bool:
    """Whether a stored reason is `"<code>: <detail>"` with a code and a detail of the vocabulary."""
    code, sep, detail = text.partition(": ")
    return bool(sep) and any(p.fullmatch(detail) for p in _STORED.get(code, ()))
