"""One embedding of a build's question per model, however many sources ask for it.

The knowledge source and the two memory sources each embed `request.query` with the live model, at the same
moment (their reads start together). Inside `context._build_scope.one_embedding_per_build()` (the builder's
gather), an embedder from `once_per_build(lookup)` embeds a one-text call once per (model, text) and hands
every other asker of the same pair the same vector (a copy); outside it, and for any other call, it is the
embedder itself. Nothing is kept past the build: a process-wide cache would make a repeated question free,
which a turn's question is not.

This module must never change a vector, and never keep one beyond the build that asked for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, cast

from context._build_scope import ASKED_EMBEDDINGS
from knowledge.embedding.embedder import Embedder, EmbedderLookup, Embeddings

__all__ = ["once_per_build"]


class _OncePerBuild:
    """An embedder whose one-text calls inside a build are embedded once per (model, text)."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def embed(self, texts: Sequence[str]) -> Embeddings:
        """`texts`' vectors: a one-text call asked before in this build answers the first call's vector."""
        asked = ASKED_EMBEDDINGS.get()
        if asked is None or isinstance(texts, str) or len(texts) != 1:
            return await self._inner.embed(texts)
        key = (self._inner.model_id, texts[0])
        pending = asked.get(key)
        if pending is not None:
            try:
                shared: Embeddings = await asyncio.shield(pending)
                return shared.copy()
            except Exception:  # the first asker's call failed: this asker's own call answers for itself
                return await self._inner.embed(texts)
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if pending.cancelled() and (task is None or not task.cancelling()):
                    return await self._inner.embed(texts)  # the first asker was cancelled, not this one
                raise
        pending = asyncio.get_running_loop().create_future()
        asked[key] = pending
        try:
            vectors = await self._inner.embed(texts)
        except BaseException as exc:
            del asked[key]  # the next asker embeds again
            if isinstance(exc, asyncio.CancelledError):
                pending.cancel()
            else:
                pending.set_exception(exc)
                pending.exception()  # retrieved: a failure no other asker awaited is not logged as lost
            raise
        pending.set_result(vectors)
        return vectors.copy()


def once_per_build(lookup: EmbedderLookup) -> EmbedderLookup:
    """`lookup`, whose embedders embed a build's question once per model (see the module)."""
    wrapped: dict[str, Embedder] = {}

    def find(model_id: str) -> Embedder:
        inner = lookup(model_id)
        known = wrapped.get(model_id)
        if known is None or cast(_OncePerBuild, known)._inner is not inner:
            known = cast(Embedder, _OncePerBuild(inner))
            wrapped[model_id] = known
        return known

    return find
