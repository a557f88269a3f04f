"""The errors of the knowledge package: one tree, one stable machine-readable code per error.

```
KnowledgeError                      knowledge_error                 no   (the root; code and retryable below)
├── KnowledgeInputError             knowledge_input_invalid         no   (misuse or bad input)
│   ├── ExtractionError             document_unreadable             no
│   │   ├── EncryptedDocumentError      pdf_encrypted
│   │   ├── NoTextLayerError            pdf_no_text
│   │   ├── MalformedDocumentError      document_malformed
│   │   ├── DocumentTooLargeError       document_too_large
│   │   │   ├── PdfContentTooLargeError     pdf_content_too_large      (a decompression bomb)
│   │   │   └── DocumentTextTooLargeError   document_text_too_large
│   │   ├── ExtractionTimeoutError      document_extraction_timeout
│   │   ├── TooManyPagesError           document_too_many_pages
│   │   ├── EmptyDocumentError          document_empty
│   │   ├── TooManyChunksError          too_many_chunks
│   │   └── UnsupportedDocumentTypeError document_type_unsupported
│   ├── UnknownEmbeddingModelError  embedding_model_unknown
│   ├── ReviewFieldInvalidError     review_field_invalid                (an owner or review date; `loc` names it)
│   ├── InvalidObjectKeyError       object_key_invalid
│   ├── UnknownSourceError          source_not_found                    (a delete: no such source here)
│   ├── PlatformSourceForbiddenError platform_source_forbidden          (a delete of a platform source)
│   ├── SourceDeletedError          source_deleted                      (a delete of a deleted source)
│   ├── SourceDeletingError         source_deleting                     (a write to a source being deleted)
│   ├── SourceNotFoundError         knowledge_source_not_found          (a read or a write: no such source)
│   ├── EmbedderMismatchError       embedder_model_mismatch
│   └── EmbeddingModelConflictError embedding_model_conflict
└── KnowledgeRuntimeError           knowledge_unavailable           yes  (the world failed, try again)
    ├── EmbeddingProviderError      embedding_provider_unavailable  per instance
    │   └── EmbeddingAuthError      embedding_auth_failed           no
    ├── EmbeddingDimensionError     embedding_dimension_mismatch    no
    ├── ObjectStoreError            object_store_unavailable        yes
    │   └── ObjectNotFoundError     object_not_found                no
    ├── NoLiveModelError            knowledge_model_unset           no
    ├── LiveModelChangedError       knowledge_model_changed         yes
    ├── SwitchNotReadyError         knowledge_switch_not_ready      yes
    ├── SwitchConflictError         knowledge_switch_conflict       no
    ├── SwitchCancelledError        knowledge_switch_cancelled      no
    ├── ModelNotWantedError         knowledge_model_not_wanted      no
    └── KnowledgeStoreError         knowledge_store_unavailable     yes
```

A caller decides about retries from `error.retryable` alone: an Inngest function raises `NonRetriableError`
for a non-retryable error (a bad document never becomes good by running again) and lets the rest retry.
The root subclasses `state.errors.CodedError` (the message defaults to the class docstring) and adds
`retryable`, `message` and `reason`, which only knowledge errors carry: `reason` is the stored failure
reason from the closed vocabulary (`knowledge.reasons`), never the message, which may name the caller's
own input (a file name, a type, a model id) but never quotes the document or a library's message.
The database's errors become these in one place (`knowledge._sql.translated`). This module must never
import a third-party library, nor more of `state` than its errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

from state.errors import CodedError

if TYPE_CHECKING:  # imported when a reason is made: `ac-context --help` loads the errors and no more
    from knowledge.reasons import Reason

__all__ = [
    "DocumentTextTooLargeError",
    "DocumentTooLargeError",
    "EmbedderMismatchError",
    "EmbeddingAuthError",
    "EmbeddingDimensionError",
    "EmbeddingModelConflictError",
    "EmbeddingProviderError",
    "EmptyDocumentError",
    "EncryptedDocumentError",
    "ExtractionError",
    "ExtractionTimeoutError",
    "InvalidObjectKeyError",
    "KnowledgeError",
    "KnowledgeInputError",
    "KnowledgeRuntimeError",
    "KnowledgeStoreError",
    "LiveModelChangedError",
    "MalformedDocumentError",
    "ModelNotWantedError",
    "NoLiveModelError",
    "NoTextLayerError",
    "ObjectNotFoundError",
    "ObjectStoreError",
    "PdfContentTooLargeError",
    "PlatformSourceForbiddenError",
    "ReviewFieldInvalidError",
    "SourceDeletedError",
    "SourceDeletingError",
    "SourceNotFoundError",
    "SwitchCancelledError",
    "SwitchConflictError",
    "SwitchNotReadyError",
    "TooManyChunksError",
    "TooManyPagesError",
    "UnknownEmbeddingModelError",
    "UnknownSourceError",
    "UnsupportedDocumentTypeError",
]


class KnowledgeError(CodedError):
    """A knowledge operation failed."""

    code = "knowledge_error"
    retryable: bool = False

    def __init__(
        self, message: str | None = None, *, retryable: bool | None = None, reason: Reason | None = None
    ) -> None:
        super().__init__(message if message is not None or reason is None else reason.detail)
        self.message: str = self.args[0]
        self.reason: Reason | None = reason
        """The stored reason this error fails a document with (`knowledge.reasons`); None: its code's fixed one."""
        if retryable is not None:
            self.retryable = retryable

    @classmethod
    def because(cls, template: str, /, **values: object) -> Self:
        """An error of this class with the reason `template` of its code (`knowledge.reasons`) as its message."""
        from knowledge.reasons import Reason

        return cls(reason=Reason.of(cls.code, template, **values))


class KnowledgeInputError(KnowledgeError):
    """The input is invalid; running the same call again cannot succeed."""

    code = "knowledge_input_invalid"
    retryable = False


class ExtractionError(KnowledgeInputError):
    """The document cannot be turned into text."""

    code = "document_unreadable"


class EncryptedDocumentError(ExtractionError):
    """The PDF is encrypted and no password opens it; upload an unencrypted copy."""

    code = "pdf_encrypted"


class NoTextLayerError(ExtractionError):
    """The PDF has no text layer (scanned images?); run OCR first."""

    code = "pdf_no_text"


class MalformedDocumentError(ExtractionError):
    """The document is damaged and cannot be read."""

    code = "document_malformed"


class DocumentTooLargeError(ExtractionError):
    """The document is larger than the size limit."""

    code = "document_too_large"


class PdfContentTooLargeError(DocumentTooLargeError):
    """The PDF's pages draw more content once decompressed than extraction may read (a decompression bomb)."""

    code = "pdf_content_too_large"


class DocumentTextTooLargeError(DocumentTooLargeError):
    """The document gives more text than extraction may collect, in all or on one page."""

    code = "document_text_too_large"


class ExtractionTimeoutError(ExtractionError):
    """Reading the document took more processor time than extraction may spend on it."""

    code = "document_extraction_timeout"


class TooManyPagesError(ExtractionError):
    """The document has more pages than the page limit."""

    code = "document_too_many_pages"


class EmptyDocumentError(ExtractionError):
    """The document contains no text."""

    code = "document_empty"


class TooManyChunksError(ExtractionError):
    """The document would be cut into more chunks than one source may hold."""

    code = "too_many_chunks"


class UnsupportedDocumentTypeError(ExtractionError):
    """The document type is not supported; upload PDF, Markdown, HTML or plain UTF-8 text."""

    code = "document_type_unsupported"


class UnknownEmbeddingModelError(KnowledgeInputError):
    """No embedder is registered under this model id."""

    code = "embedding_model_unknown"


class ReviewFieldInvalidError(KnowledgeInputError, ValueError):
    """A document's owner or review date is not one the source may store; `loc` is the field's path."""

    code = "review_field_invalid"

    def __init__(self, loc: tuple[str | int, ...], problem: str) -> None:
        self.loc = loc
        self.problem = problem
        super().__init__(f"{'.'.join(map(str, loc))} {problem}")

    def __reduce__(self) -> tuple[type[ReviewFieldInvalidError], tuple[tuple[str | int, ...], str]]:
        return (type(self), (self.loc, self.problem))


class InvalidObjectKeyError(KnowledgeInputError, ValueError):
    """The object key is not a safe relative key."""

    code = "object_key_invalid"


class UnknownSourceError(KnowledgeInputError, LookupError):
    """No knowledge source has this id in the caller's scope (another organization's answers the same)."""

    code = "source_not_found"


class PlatformSourceForbiddenError(KnowledgeInputError):
    """A platform source is deleted only with the operator's rights."""

    code = "platform_source_forbidden"


class SourceDeletedError(KnowledgeInputError):
    """The knowledge source is already deleted; `receipt_id` names the receipt of its deletion."""

    code = "source_deleted"

    def __init__(self, message: str | None = None, *, receipt_id: str | None = None) -> None:
        super().__init__(message)
        self.receipt_id = receipt_id


class SourceDeletingError(KnowledgeInputError):
    """The knowledge source is being deleted; nothing is written to it (register it again afterwards)."""

    code = "source_deleting"


class KnowledgeRuntimeError(KnowledgeError):
    """A dependency of the knowledge layer failed; the same call may succeed later."""

    code = "knowledge_unavailable"
    retryable = True


class EmbeddingProviderError(KnowledgeRuntimeError):
    """The embedding provider failed."""

    code = "embedding_provider_unavailable"


class EmbeddingAuthError(EmbeddingProviderError):
    """The embedding provider refused the credentials; check the API key."""

    code = "embedding_auth_failed"
    retryable = False


class EmbeddingDimensionError(KnowledgeRuntimeError):
    """An embedding does not have the dimensions of its model."""

    code = "embedding_dimension_mismatch"
    retryable = False


class ObjectStoreError(KnowledgeRuntimeError):
    """The object store failed."""

    code = "object_store_unavailable"


class ObjectNotFoundError(ObjectStoreError):
    """No object is stored under this key."""

    code = "object_not_found"
    retryable = False


class SourceNotFoundError(KnowledgeInputError, LookupError):
    """No knowledge source with this id exists in this scope."""

    code = "knowledge_source_not_found"


class EmbedderMismatchError(KnowledgeInputError):
    """The embedder given is not the model the chunks are pinned to."""

    code = "embedder_model_mismatch"


class EmbeddingModelConflictError(KnowledgeInputError):
    """The model is already registered with another dimension."""

    code = "embedding_model_conflict"


class NoLiveModelError(KnowledgeRuntimeError):
    """No knowledge_settings row names the live embedding model; restore the platform row."""

    code = "knowledge_model_unset"
    retryable = False


class LiveModelChangedError(KnowledgeRuntimeError):
    """The live embedding model flipped while the query was embedded; embed it again."""

    code = "knowledge_model_changed"


class SwitchNotReadyError(KnowledgeRuntimeError):
    """Not every source in scope is ready under the new model, so the live model was not flipped."""

    code = "knowledge_switch_not_ready"


class SwitchConflictError(KnowledgeRuntimeError):
    """Another switchover of this scope is running toward a different model."""

    code = "knowledge_switch_conflict"
    retryable = False


class SwitchCancelledError(KnowledgeRuntimeError):
    """The switchover was cancelled while it ran: the old model stays live, the new model's chunks are gone."""

    code = "knowledge_switch_cancelled"
    retryable = False


class ModelNotWantedError(KnowledgeRuntimeError):
    """The source is no longer wanted under this model (a switch toward it was cancelled); nothing was written.

    Not a failure of the source: a caller building that model stops, and the source keeps its other models.
    """

    code = "knowledge_model_not_wanted"
    retryable = False


class KnowledgeStoreError(KnowledgeRuntimeError):
    """The database refused or failed a knowledge statement."""

    code = "knowledge_store_unavailable"
