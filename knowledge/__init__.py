"""Knowledge: documents made searchable, in three rooms by concern, with search and the switchover on top.

    knowledge/
      errors.py reasons.py _sql.py queries.sql   the base every room uses (the one error tree, the failure
                                                 vocabulary, the named statements and their error translation)
      documents/   limits, extract, chunk, objects: a document's bytes and text
      embedding/   embedder (the contract, EmbedderLookup), providers, registry (get_embedder), live_model
      ingestion/   registration, core, steps, bulk, pool, failures, failing, object_deletes, sources (the read
                   model), source_pages, sweep, delete, review
      search.py    hybrid search with the live model
      switchover.py the switch to a new model, sequenced over the ingestion core

The package stands on at most six import levels (tests/unit/test_layering.py counts them).
Who may import whom inside the package (tests/unit/test_layering.py): the base imports no room;
`documents/` and `embedding/` import the base only, never each other nor `ingestion/`; `ingestion/` imports
the base, `documents/` and `embedding/`; `search` imports the base and `embedding/` only (so a search, and
the knowledge context source, load no extraction library); `switchover` may import every room. Nothing in
a room imports `search` or `switchover`.

`search_knowledge` is `knowledge.search.search`, renamed so the package attribute never hides the module.
The names are re-exported lazily (`state.lazy`): `import knowledge` loads no module of the package until a
name is read, and then only the module that name comes from.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from state.lazy import lazy_exports

if TYPE_CHECKING:
    from knowledge.documents.chunk import DEFAULT_CHUNK_TOKENS, DEFAULT_OVERLAP_TOKENS, Chunk, chunk_text
    from knowledge.documents.extract import ExtractedDocument, ExtractLimits, extract_text, extract_text_async
    from knowledge.documents.objects import (
        LocalObjectStore,
        ObjectStore,
        S3ObjectStore,
        object_key_for,
        object_prefix_for,
        object_store_from_url,
    )
    from knowledge.embedding.live_model import (
        FlipResult,
        LiveModel,
        SwitchPlan,
        SwitchStatus,
        begin_switch,
        cancel_switch,
        drop_unwanted_chunks,
        flip_live_model,
        live_model,
        register_embedding_model,
        switch_ready,
        switch_status,
    )
    from knowledge.embedding.registry import (
        DEFAULT_EMBEDDING_MODEL,
        EMBEDDING_MODELS,
        Embedder,
        EmbedderLookup,
        EmbedderRegistry,
        Embeddings,
        FakeEmbedder,
        OpenAIEmbedder,
        WordLlamaEmbedder,
        check_embeddings,
        get_embedder,
        register_embedder,
    )
    from knowledge.errors import (
        DocumentTooLargeError,
        EmbedderMismatchError,
        EmbeddingAuthError,
        EmbeddingDimensionError,
        EmbeddingModelConflictError,
        EmbeddingProviderError,
        EmptyDocumentError,
        EncryptedDocumentError,
        ExtractionError,
        InvalidObjectKeyError,
        KnowledgeError,
        KnowledgeInputError,
        KnowledgeRuntimeError,
        KnowledgeStoreError,
        LiveModelChangedError,
        MalformedDocumentError,
        NoLiveModelError,
        NoTextLayerError,
        ObjectNotFoundError,
        ObjectStoreError,
        SourceNotFoundError,
        SwitchConflictError,
        SwitchNotReadyError,
        TooManyPagesError,
        UnknownEmbeddingModelError,
        UnsupportedDocumentTypeError,
    )
    from knowledge.ingestion.core import Ingestion, IngestOutcome, build_source_model, ingest_batch, ingest_source
    from knowledge.ingestion.registration import RegisteredSource, register_upload, register_uri
    from knowledge.ingestion.sources import SourceView, list_sources
    from knowledge.ingestion.steps import (
        EmbeddedBatch,
        FailedMark,
        PreparedChunks,
        ReadyCheck,
        embed_batch,
        mark_failed,
        mark_ready,
        models_to_build,
        prepare_chunks,
    )
    from knowledge.ingestion.sweep import PENDING_LIMIT, RetriedSource, SweepResult, retry_source, sweep_pending
    from knowledge.search import DEFAULT_FUSION, MAX_SEARCH_LIMIT, Fusion, KnowledgeHit
    from knowledge.search import search as search_knowledge
    from knowledge.switchover import reembed_source

__all__ = [
    "DEFAULT_CHUNK_TOKENS",
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_FUSION",
    "DEFAULT_OVERLAP_TOKENS",
    "EMBEDDING_MODELS",
    "MAX_SEARCH_LIMIT",
    "PENDING_LIMIT",
    "Chunk",
    "DocumentTooLargeError",
    "EmbeddedBatch",
    "Embedder",
    "EmbedderLookup",
    "EmbedderMismatchError",
    "EmbedderRegistry",
    "EmbeddingAuthError",
    "EmbeddingDimensionError",
    "EmbeddingModelConflictError",
    "EmbeddingProviderError",
    "Embeddings",
    "EmptyDocumentError",
    "EncryptedDocumentError",
    "ExtractLimits",
    "ExtractedDocument",
    "ExtractionError",
    "FailedMark",
    "FakeEmbedder",
    "FlipResult",
    "Fusion",
    "IngestOutcome",
    "Ingestion",
    "InvalidObjectKeyError",
    "KnowledgeError",
    "KnowledgeHit",
    "KnowledgeInputError",
    "KnowledgeRuntimeError",
    "KnowledgeStoreError",
    "LiveModel",
    "LiveModelChangedError",
    "LocalObjectStore",
    "MalformedDocumentError",
    "NoLiveModelError",
    "NoTextLayerError",
    "ObjectNotFoundError",
    "ObjectStore",
    "ObjectStoreError",
    "OpenAIEmbedder",
    "PreparedChunks",
    "ReadyCheck",
    "RegisteredSource",
    "RetriedSource",
    "S3ObjectStore",
    "SourceNotFoundError",
    "SourceView",
    "SweepResult",
    "SwitchConflictError",
    "SwitchNotReadyError",
    "SwitchPlan",
    "SwitchStatus",
    "TooManyPagesError",
    "UnknownEmbeddingModelError",
    "UnsupportedDocumentTypeError",
    "WordLlamaEmbedder",
    "begin_switch",
    "build_source_model",
    "cancel_switch",
    "check_embeddings",
    "chunk_text",
    "drop_unwanted_chunks",
    "embed_batch",
    "extract_text",
    "extract_text_async",
    "flip_live_model",
    "get_embedder",
    "ingest_batch",
    "ingest_source",
    "list_sources",
    "live_model",
    "mark_failed",
    "mark_ready",
    "models_to_build",
    "object_key_for",
    "object_prefix_for",
    "object_store_from_url",
    "prepare_chunks",
    "reembed_source",
    "register_embedder",
    "register_embedding_model",
    "register_upload",
    "register_uri",
    "retry_source",
    "search_knowledge",
    "sweep_pending",
    "switch_ready",
    "switch_status",
]

__getattr__, __dir__ = lazy_exports(__name__, __file__)
