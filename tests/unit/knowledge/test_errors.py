from __future__ import annotations

import importlib

import pytest

import knowledge
from knowledge import errors
from knowledge.errors import (
    EmbeddingAuthError,
    EmbeddingDimensionError,
    EmbeddingProviderError,
    ExtractionError,
    KnowledgeError,
    KnowledgeInputError,
    KnowledgeRuntimeError,
    ObjectNotFoundError,
    ObjectStoreError,
    UnknownEmbeddingModelError,
)

ERRORS = [getattr(errors, name) for name in errors.__all__]


def test_every_error_has_its_own_stable_code() -> None:
    codes = [e.code for e in ERRORS]
    assert len(codes) == len(set(codes)), "two errors share a machine-readable code"
    assert {
        "pdf_encrypted",
        "pdf_no_text",
        "document_malformed",
        "document_too_large",
        "document_too_many_pages",
        "document_empty",
        "document_type_unsupported",
        "embedding_model_unknown",
        "embedding_provider_unavailable",
    } <= set(codes)


def test_every_error_descends_from_one_root_and_one_side_of_the_tree() -> None:
    for error in ERRORS:
        if error in (KnowledgeError, KnowledgeInputError, KnowledgeRuntimeError):
            continue
        assert issubclass(error, KnowledgeInputError) != issubclass(error, KnowledgeRuntimeError), error


def test_bad_input_never_retries_and_runtime_failures_usually_do() -> None:
    assert all(not e.retryable for e in ERRORS if issubclass(e, KnowledgeInputError))
    assert issubclass(ExtractionError, KnowledgeInputError) and issubclass(
        UnknownEmbeddingModelError, KnowledgeInputError
    )
    assert EmbeddingProviderError().retryable and ObjectStoreError().retryable
    assert not EmbeddingAuthError().retryable and not ObjectNotFoundError().retryable
    assert not EmbeddingDimensionError().retryable


def test_retryable_can_be_set_per_instance_and_the_message_defaults_to_the_docstring() -> None:
    error = EmbeddingProviderError("bad request", retryable=False)
    assert (error.retryable, str(error), EmbeddingProviderError.retryable) == (False, "bad request", True)
    assert str(ObjectNotFoundError()) == ObjectNotFoundError().message == "No object is stored under this key."


def test_the_tree_in_the_docstring_names_every_error_and_code() -> None:
    doc = errors.__doc__ or ""
    for error in ERRORS:
        assert error.__name__ in doc and error.code in doc, error


@pytest.mark.parametrize(
    "module", ["errors", "documents.extract", "documents.chunk", "embedding.registry", "documents.objects"]
)
def test_module_exports_exist(module: str) -> None:
    loaded = importlib.import_module(f"knowledge.{module}")
    assert all(hasattr(loaded, name) for name in loaded.__all__)
    assert all(hasattr(knowledge, name) for name in knowledge.__all__)
