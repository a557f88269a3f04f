"""The one failure taxonomy of ingestion: which errors fail a document, with what reason, over what scope.

Every ingestion path (the in-process core, its Inngest steps, the bulk core) decides here:

- a retryable `KnowledgeError` (a provider outage, the database, the object store) is no failure: it
  propagates, and the source stays pending for a retry or the sweep;
- `ModelNotWantedError` is no failure either: a switch toward the model was cancelled, nothing is marked;
- nor is `SourceNotFoundError`: the source is gone or being deleted (`knowledge.ingestion.delete`), the steps end;
- every other `KnowledgeError` fails: its stored reason is its `reason` (`knowledge.reasons`: a code and a
  detail the layer wrote), else its code's fixed reason, never its message; an `ExtractionError` (the
  document itself cannot be read) fails the whole source, any other error only the readiness row of the
  model it happened under.

`stored_reason` is the one gate to the reason columns: a text outside the vocabulary is stored as its
code's fixed reason (`ingestion_failed` when it names none of ours), as migration 0094 rewrote the rows
written before. `SourceFailedError` is what the core raises once it marked a failure, so a step runner
can stop the run without retrying it; its message is the stored reason. This module must never touch the
database, and never put an exception's message into a reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from knowledge.errors import (
    ExtractionError,
    KnowledgeError,
    KnowledgeInputError,
    ModelNotWantedError,
    SourceNotFoundError,
)
from knowledge.reasons import VOCABULARY, Reason, fixed_reason, in_vocabulary

__all__ = [
    "MAX_REASON_CHARS",
    "Failure",
    "SourceFailedError",
    "after_retries",
    "code_of",
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
    """The stored reason, `"<code>: <detail>"` from the vocabulary."""
    model: str | None
    """The model whose readiness row fails; None fails the source itself (and every not-ready row)."""


class SourceFailedError(KnowledgeInputError):
    """The source (or its readiness row under a model) was marked failed; running it again cannot help."""

    code = "knowledge_source_failed"


def stored_reason(text: str) -> str:
    """A reason as it is stored: in the vocabulary as given, else its code's fixed reason (migration 0094)."""
    folded = " ".join(text.split())[:MAX_REASON_CHARS]
    if in_vocabulary(folded):
        return folded
    if folded.lower().startswith(("ingestion failed after its retries", "re-embedding failed after its retries")):
        return str(fixed_reason("failed_after_retries"))
    code = folded.partition(":")[0].strip()
    return str(fixed_reason(code if code in VOCABULARY else ""))


def code_of(reason: str) -> str:
    """The code of a stored reason (`ingestion_failed` for one outside the vocabulary)."""
    return stored_reason(reason).partition(":")[0]


def after_retries(last_error: object) -> str:
    """The reason of a run whose retries ran out; `last_error` (the engine's) lends only a code of ours."""
    message = last_error.get("message") if isinstance(last_error, dict) else None
    code = str(message).partition(":")[0].strip() if isinstance(message, str) else ""
    if code in VOCABULARY or code in _codes(KnowledgeError):  # subclasses of every package imported by now
        template = VOCABULARY["failed_after_retries"][1]
        return str(Reason.of("failed_after_retries", template, code=code))
    return str(fixed_reason("failed_after_retries"))


def _codes(cls: type[KnowledgeError]) -> set[str]:
    return {cls.code}.union(*(_codes(sub) for sub in cls.__subclasses__()))


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
    reason = exc.reason if exc.reason is not None and exc.reason.code == exc.code else fixed_reason(exc.code)
    return Failure(stored_reason(str(reason)), scope)


def reason_of(exc: KnowledgeError) -> str:
    """The stored reason of a failing error, `"<code>: <detail>"`."""
    return failure_of(exc, None).reason
