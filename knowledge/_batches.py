"""Small pieces of bulk ingestion's plumbing: batches fetched ahead, and waves cut into write parts.

This module must never touch the database or the object store.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from typing import TypeVar
from uuid import UUID

from knowledge._pool import Prepared

__all__ = ["fetched_ahead", "parts_of"]

T = TypeVar("T")


def parts_of(prepared: dict[UUID, Prepared], limit: int) -> list[dict[UUID, Prepared]]:
    """`prepared` cut in order into groups of whole sources holding about `limit` chunks each."""
    parts: list[dict[UUID, Prepared]] = [{}]
    size = 0
    for source_id, p in prepared.items():
        if size and size + len(p.texts) > limit:
            parts.append({})
            size = 0
        parts[-1][source_id] = p
        size += len(p.texts)
    return [part for part in parts if part]


@dataclass(frozen=True, slots=True)
class _End:
    error: Exception | None


async def fetched_ahead(batches: AsyncIterable[T]) -> AsyncIterator[T]:
    """`batches`, the next one fetched by a task of its own while the caller works on the current one.

    An error raised while fetching is raised to the caller when it asks for that batch; a caller that stops
    early cancels the fetching.
    """
    queue: asyncio.Queue[T | _End] = asyncio.Queue(1)

    async def fill() -> None:
        try:
            async for batch in batches:
                await queue.put(batch)
        except Exception as exc:
            await queue.put(_End(exc))
        else:
            await queue.put(_End(None))

    task = asyncio.create_task(fill())
    try:
        while not isinstance(item := await queue.get(), _End):
            yield item
        if item.error is not None:
            raise item.error
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
