"""Embedders by model id: the contract, the known models and the registry that hands them out.

`get_embedder(model_id)` returns the process-wide embedder for a model id stored on a chunk or a
`knowledge_settings` row, and refuses an unknown id with `UnknownEmbeddingModelError`. Vectors come back
as one float32 array of shape `(len(texts), dimensions)` with unit-length rows, already checked against
the model's dimensions. Known models:

- `local/wordllama-l2-supercat-256` (256 dims): the offline default, on the CPU, loaded once per process.
- `openai/text-embedding-3-small` (1536 dims): production; needs `OPENAI_API_KEY`.
- `test/hash-64` (64 dims): a deterministic hashing fake for tests; never choose it for real knowledge.

A `test/*` model is refused wherever a person names a model (`require_real_model`: a switch, the settings'
default) unless `AC_CONTEXT_ALLOW_TEST_MODELS` is on, which only the test suite sets.

This module must never load a model or open a connection at import time.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType

from knowledge.embedding.embedder import (
    Embedder,
    EmbedderLookup,
    Embeddings,
    FakeEmbedder,
    check_embeddings,
    normalise_rows,
    plan_batches,
)
from knowledge.embedding.providers import OpenAIEmbedder, WordLlamaEmbedder
from knowledge.errors import EmbeddingDimensionError, UnknownEmbeddingModelError

__all__ = [
    "ALLOW_TEST_MODELS_ENV",
    "DEFAULT_EMBEDDING_MODEL",
    "EMBEDDING_MODELS",
    "Embedder",
    "EmbedderFactory",
    "EmbedderLookup",
    "EmbedderRegistry",
    "Embeddings",
    "FakeEmbedder",
    "OpenAIEmbedder",
    "WordLlamaEmbedder",
    "allows_test_models",
    "check_embeddings",
    "default_registry",
    "get_embedder",
    "normalise_rows",
    "offered_models",
    "plan_batches",
    "register_embedder",
    "require_real_model",
]

EmbedderFactory = Callable[[], Embedder]
"""Builds the embedder of one model; called at most once per registry."""

DEFAULT_EMBEDDING_MODEL = WordLlamaEmbedder.model_id
"""The offline default model, seeded in the platform `knowledge_settings` row."""


TEST_MODEL_PREFIX = "test/"
"""Model ids under this prefix are deterministic fakes for tests: usable, never offered as a choice."""


ALLOW_TEST_MODELS_ENV = "AC_CONTEXT_ALLOW_TEST_MODELS"
"""On (`1`, `true`, `yes`, `on`), a `test/*` model may be chosen: the test suite's switch, never a deployment's.
`state.settings.Settings.allow_test_models` reads the same variable."""


def offered_models(model_ids: Iterable[str]) -> list[str]:
    """The model ids a person may choose, sorted: every id but the test fakes."""
    return sorted(m for m in model_ids if not m.startswith(TEST_MODEL_PREFIX))


def allows_test_models() -> bool:
    """Whether `AC_CONTEXT_ALLOW_TEST_MODELS` is on (read at each call, so a test can turn it off)."""
    return os.environ.get(ALLOW_TEST_MODELS_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def require_real_model(model_id: str, known: Iterable[str] | None = None) -> None:
    """Refuse a `test/*` model outside the test suite with `UnknownEmbeddingModelError` naming the real ones."""
    if model_id.startswith(TEST_MODEL_PREFIX) and not allows_test_models():
        real = ", ".join(offered_models(EMBEDDING_MODELS if known is None else known)) or "none"
        raise UnknownEmbeddingModelError(f"{model_id} is a test model; real models: {real}")


class EmbedderRegistry:
    """Model id -> embedder; one instance per model id, built on first use."""

    def __init__(self) -> None:
        self._factories: dict[str, EmbedderFactory] = {}
        self._dimensions: dict[str, int] = {}
        self._instances: dict[str, Embedder] = {}
        self._lock = threading.Lock()
        self.models: Mapping[str, int] = MappingProxyType(self._dimensions)
        """Read-only view of every registered model id and its dimensions."""

    def register(self, model_id: str, factory: EmbedderFactory, *, dimensions: int) -> None:
        """Register `factory` for `model_id`; a model id registered twice is refused with ValueError."""
        if not model_id or dimensions <= 0:
            raise ValueError(f"an embedder needs a model id and positive dimensions, got {model_id!r}")
        with self._lock:
            if model_id in self._factories:
                raise ValueError(f"an embedder for {model_id!r} is already registered")
            self._factories[model_id] = factory
            self._dimensions[model_id] = dimensions

    def get(self, model_id: str) -> Embedder:
        """The embedder for `model_id`, or `UnknownEmbeddingModelError` naming the known ids."""
        with self._lock:
            instance = self._instances.get(model_id)
            if instance is not None:
                return instance
            factory = self._factories.get(model_id)
            if factory is None:
                known = ", ".join(offered_models(self._factories)) or "none"
                raise UnknownEmbeddingModelError(f"unknown embedding model {model_id!r}; known: {known}")
            instance = factory()
            if instance.model_id != model_id or instance.dimensions != self._dimensions[model_id]:
                raise EmbeddingDimensionError(
                    f"the factory for {model_id!r} built {instance.model_id!r} with "
                    f"{instance.dimensions} dimensions; registered {self._dimensions[model_id]}"
                )
            self._instances[model_id] = instance
            return instance

    def dimensions(self, model_id: str) -> int:
        """The vector length of `model_id`, without building its embedder."""
        try:
            return self._dimensions[model_id]
        except KeyError:
            known = ", ".join(offered_models(self._dimensions)) or "none"
            raise UnknownEmbeddingModelError(f"unknown embedding model {model_id!r}; known: {known}") from None

    def __contains__(self, model_id: object) -> bool:
        return model_id in self._dimensions


default_registry = EmbedderRegistry()
"""The process-wide registry behind `get_embedder` and `register_embedder`."""
for _type in (WordLlamaEmbedder, OpenAIEmbedder, FakeEmbedder):
    default_registry.register(_type.model_id, _type, dimensions=_type.dimensions)

EMBEDDING_MODELS: Mapping[str, int] = default_registry.models
"""Every known embedding model id and its dimensions."""


def get_embedder(model_id: str) -> Embedder:
    """The process-wide embedder for `model_id`; an unknown id raises `UnknownEmbeddingModelError`."""
    return default_registry.get(model_id)


def register_embedder(model_id: str, factory: EmbedderFactory, *, dimensions: int) -> None:
    """Add an embedder to the process-wide registry; a duplicate model id raises ValueError."""
    default_registry.register(model_id, factory, dimensions=dimensions)
