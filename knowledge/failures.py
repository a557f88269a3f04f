"""The one failure taxonomy of ingestion: which errors fail a document, with what reason, over what scope.

Every ingestion path (the in-process core, its Inngest steps, the bulk core) decides here:

- a retryable `KnowledgeError` (a provider outage, the database, the object store) is no failure: it
  propagates, and the source stays pending for a retry or the sweep;
- `ModelNotWantedError` is no failure either: a switch toward the model was cancelled, nothing is marked;
- nor is `SourceNotFoundError`: the source is gone or being deleted (`knowledge.delete`), the steps end;
- every other `KnowledgeError` fails: its stored reason is `"<code>: <message>"` (whitespace folded, at
  most `MAX_REASON_CHARS`), and an `ExtractionError` (the document itself cannot be read) fails the whole
  source, any other error only the readiness row of the model it happened under.

`SourceFailedError` is what the core raises once it marked a failure, so a step runner can stop the run
without retrying it; its message is the stored reason. This module must never touch the database.
"""

from __future__ import annotations

from dataclasses import dataclass

from knowledge.db_errors import ModelNotWantedError, SourceNotFoundError
from knowledge.errors import ExtractionError, KnowledgeError, KnowledgeInputError

__all__ = [
    "MAX_REASON_CHARS",
    "Failure",
    "SourceFailedError",
    "fails_document",
    "failure_of",
    "reason_of",
    "stored_reason",
]

MAX_REASON_CHARS = 1000
"""The longest failure reason stored on a source or a readiness row."""


@dataclass(frozen=True, slots=True)
class Failure:
    """What a non-retryable error does to a source."""

    reason: str
    """The stored reason, `"<code>: <message>"`."""
    model: str | None
    """The model whose readiness row fails; None fails the source itself (and every not-ready row)."""


class SourceFailedError(KnowledgeInputError):
    """The source (or its readiness row under a model) was marked failed; running it again cannot help."""

    code = "knowledge_source_failed"


def stored_reason(text: str) -> str:
    """A reason as it is stored: whitespace folded, at most `MAX_REASON_CHARS`, never empty."""
    return " ".join(text.split())[:MAX_REASON_CHARS] or "ingestion failed"


def fails_document(exc: BaseException) -> bool:
    """Whether `exc` fails the document (or its model), rather than propagating for a retry."""
    return (
        isinstance(exc, KnowledgeError)
        and not exc.retryable
        and not isinstance(exc, (ModelNotWantedError, SourceNotFoundError))
    )


def failure_of(exc: KnowledgeError, model: str | None) -> Failure:
    """The stored reason of a failing error and its scope (the whole source, or `model`'s readiness row)."""
    if isinstance(exc, SourceFailedError):  # marked already: its message is the stored reason
        return Failure(stored_reason(exc.message), model)
    scope = None if isinstance(exc, ExtractionError) else model
    return Failure(stored_reason(f"{exc.code}: {exc.message}"), scope)


def reason_of(exc: KnowledgeError) -> str:
    """The stored reason of a failing error, `"<code>: <message>"`."""
    return failure_of(exc, None).reason
