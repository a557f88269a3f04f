"""What the reads of one build share: the one embedding of its question per model (`context.sources._query_vectors`).

`one_embedding_per_build()` is opened by the builder around its reads; the tasks it starts copy the context,
so every source of the build sees the same table, and no other build does. This module must never embed
anything, nor keep a value past the build that opened it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["ASKED_EMBEDDINGS", "one_embedding_per_build"]

ASKED_EMBEDDINGS: ContextVar[dict[tuple[str, str], asyncio.Future[Any]] | None] = ContextVar(
    "ac_context_query_vectors", default=None
)
"""(model id, text) -> the vectors of the first one-text call of the build that asked for it."""


@contextmanager
def one_embedding_per_build() -> Iterator[None]:
    """Share one-text embeddings between the reads started inside (the tasks copy the context)."""
    token = ASKED_EMBEDDINGS.set({})
    try:
        yield
    finally:
        ASKED_EMBEDDINGS.reset(token)
