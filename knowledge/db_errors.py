"""The errors of knowledge's database half (ingestion, search, the live model, the switchover, the sweep).

They extend the tree of `knowledge.errors` (which the database-free half owns):

```
KnowledgeError
├── KnowledgeInputError
│   ├── SourceNotFoundError         knowledge_source_not_found      no
│   ├── EmbedderMismatchError       embedder_model_mismatch         no
│   └── EmbeddingModelConflictError embedding_model_conflict        no
└── KnowledgeRuntimeError
    ├── NoLiveModelError            knowledge_model_unset           no
    ├── LiveModelChangedError       knowledge_model_changed         yes
    ├── SwitchNotReadyError         knowledge_switch_not_ready      yes
    ├── SwitchConflictError         knowledge_switch_conflict       no
    ├── SwitchCancelledError        knowledge_switch_cancelled      no
    ├── ModelNotWantedError         knowledge_model_not_wanted      no
    └── KnowledgeStoreError         knowledge_store_unavailable     yes
```

`translate_search_error` is the one place the SQLSTATEs the knowledge SQL raises are mapped. This module
must never import a driver error into another module's signature.
"""

from __future__ import annotations

import asyncpg

from knowledge.errors import KnowledgeInputError, KnowledgeRuntimeError

__all__ = [
    "EmbedderMismatchError",
    "EmbeddingModelConflictError",
    "KnowledgeStoreError",
    "LiveModelChangedError",
    "ModelNotWantedError",
    "NoLiveModelError",
    "SourceNotFoundError",
    "SwitchCancelledError",
    "SwitchConflictError",
    "SwitchNotReadyError",
    "translate_knowledge_db_error",
]


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


_BY_SQLSTATE: dict[str, type[KnowledgeRuntimeError | KnowledgeInputError]] = {
    "KS001": NoLiveModelError,
    "KS002": LiveModelChangedError,
}


_SOURCE_GONE = frozenset({"knowledge_chunks_source_id_fkey", "knowledge_source_models_source_id_fkey"})
"""The foreign keys a chunk or readiness write breaks when its source was deleted meanwhile."""


def translate_knowledge_db_error(exc: asyncpg.PostgresError) -> KnowledgeRuntimeError | KnowledgeInputError:
    """The knowledge error for a driver error (raise it `from exc`)."""
    error_type = _BY_SQLSTATE.get(getattr(exc, "sqlstate", "") or "")
    message = getattr(exc, "message", None) or str(exc)
    if error_type is not None:
        return error_type(message)
    if getattr(exc, "sqlstate", "") == "23503" and getattr(exc, "constraint_name", None) in _SOURCE_GONE:
        return SourceNotFoundError(f"the knowledge source was deleted while it was written: {message}")
    if getattr(exc, "sqlstate", "") == "22023":
        return KnowledgeInputError(message)
    return KnowledgeStoreError(f"knowledge store error: {message}")
