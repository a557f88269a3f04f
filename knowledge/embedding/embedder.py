"""The embedder contract, its checks and batching, and the deterministic fake used by tests.

Every embedder returns one float32 row per input text, shape `(len(texts), dimensions)`, unit length
(so cosine distance equals 1 - dot product); the base class batches the texts, and checks every batch
against the model's dimensions before anyone can store it. This module must never load a model or reach
a network; the providers live in `knowledge.embedding.providers`.
"""

from __future__ import annotations

import hashlib
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import ClassVar, TypeAlias

import numpy as np
import numpy.typing as npt

from knowledge.errors import EmbeddingDimensionError
from state.tokens import estimate_tokens

__all__ = [
    "Embedder",
    "EmbedderLookup",
    "Embeddings",
    "FakeEmbedder",
    "check_embeddings",
    "normalise_rows",
    "plan_batches",
]

Embeddings: TypeAlias = npt.NDArray[np.float32]
"""A 2-D float32 array, one unit-length row per embedded text."""


class Embedder(ABC):
    """Turns texts into vectors for one embedding model; subclasses implement `_embed_batch`."""

    model_id: ClassVar[str]
    """The id stored in `knowledge_chunks.embedding_model`, e.g. `local/wordllama-l2-supercat-256`."""
    dimensions: ClassVar[int]
    """The length of every vector of this model."""
    batch_size: int = 256
    """Most texts sent to `_embed_batch` at once."""
    max_batch_tokens: int | None = None
    """Most estimated tokens sent to `_embed_batch` at once (None: no token cap)."""
    pool_safe: ClassVar[bool] = False
    """True when `type(self)()` in another process embeds exactly like this instance (CPU-only, no state).
    Only the class that sets it counts: a subclass must set it again (see `runs_in_pool`)."""

    def runs_in_pool(self) -> bool:
        """Whether this embedder's work may be spread over the ingestion process pool."""
        return bool(type(self).__dict__.get("pool_safe", False))

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        """Embed `texts` in batches; rows are in input order and checked against `dimensions`."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one string")
        for position, text in enumerate(texts):
            if not isinstance(text, str) or not text.strip():
                raise ValueError(f"text {position} is empty; only non-empty text can be embedded")
        if not texts:
            return np.empty((0, self.dimensions), dtype=np.float32)
        rows: list[Embeddings] = []
        for batch in plan_batches(texts, max_items=self.batch_size, max_tokens=self.max_batch_tokens):
            vectors = await self._embed_batch(list(batch))
            rows.append(check_embeddings(vectors, model_id=self.model_id, dimensions=self.dimensions, count=len(batch)))
        return np.vstack(rows)

    @abstractmethod
    async def _embed_batch(self, texts: list[str]) -> Embeddings | Sequence[Sequence[float]]:
        """Embed one batch (already within `batch_size` and `max_batch_tokens`)."""


EmbedderLookup = Callable[[str], Embedder]
"""Model id -> embedder, e.g. `knowledge.embedding.registry.get_embedder`: what search, ingestion and the
switchover are handed."""


def plan_batches(texts: Sequence[str], *, max_items: int, max_tokens: int | None = None) -> list[Sequence[str]]:
    """Split `texts` in order into batches of at most `max_items` texts and `max_tokens` estimated tokens.

    A single text over `max_tokens` travels alone; the provider then decides whether it is too long.
    """
    if max_items <= 0:
        raise ValueError(f"max_items must be positive, got {max_items}")
    batches: list[Sequence[str]] = []
    start, tokens = 0, 0
    for index, text in enumerate(texts):
        cost = estimate_tokens(text)
        full = index - start >= max_items or (max_tokens is not None and tokens + cost > max_tokens)
        if full and index > start:
            batches.append(texts[start:index])
            start, tokens = index, 0
        tokens += cost
    if start < len(texts):
        batches.append(texts[start:])
    return batches


def check_embeddings(
    vectors: Embeddings | Sequence[Sequence[float]], *, model_id: str, dimensions: int, count: int
) -> Embeddings:
    """Return `vectors` as a `(count, dimensions)` float32 array, or raise `EmbeddingDimensionError`."""
    try:
        array = np.asarray(vectors, dtype=np.float32)
    except ValueError as exc:  # ragged rows
        raise EmbeddingDimensionError(f"{model_id} returned vectors of different lengths") from exc
    if array.ndim != 2 or array.shape != (count, dimensions):
        raise EmbeddingDimensionError(
            f"{model_id} returned an array of shape {array.shape}; expected ({count}, {dimensions})"
        )
    if not np.isfinite(array).all():
        raise EmbeddingDimensionError(f"{model_id} returned a vector with NaN or infinite values")
    return array


def normalise_rows(array: Embeddings) -> Embeddings:
    """Scale every row to unit length; an all-zero row stays zero instead of becoming NaN."""
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    result: Embeddings = np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)
    return result


_WORD = re.compile(r"\w+")


class FakeEmbedder(Embedder):
    """A deterministic bag-of-words hashing embedder for tests: shared words mean similar vectors."""

    model_id: ClassVar[str] = "test/hash-64"
    dimensions: ClassVar[int] = 64
    pool_safe: ClassVar[bool] = True

    def __init__(self, *, batch_size: int = 16) -> None:
        self.batch_size = batch_size
        self.calls: list[int] = []
        """The size of every batch embedded so far, in order."""

    async def _embed_batch(self, texts: list[str]) -> Embeddings:
        self.calls.append(len(texts))
        array = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower()) or [text]:
                digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
                bucket = int.from_bytes(digest[:4], "little") % self.dimensions
                array[row, bucket] += 1.0 if digest[4] & 1 else -1.0
        array[~array.any(axis=1), 0] = 1.0  # words that cancel out still yield a unit vector
        return normalise_rows(array)
