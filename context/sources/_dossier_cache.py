"""The process-local cache of the organization part of the Company dossier, invalidated across processes.

Entries live for `ttl_s` seconds (60 by default). Every worker process holds one dedicated connection that
`LISTEN`s on `DOSSIER_CHANNEL`; the trigger of migration 0030 sends the organization id on that channel
after any write to the company profile, services, ideal customer profiles, offers or documents, and every
listening process then evicts that organization's entries, not only the process that wrote. A read that
started before an eviction never stores its (possibly stale) answer: each organization has a generation
that an eviction bumps. While no listener is connected the cache stores nothing, because an entry nobody
can invalidate could outlive a write; a lost listener connection clears the cache.

This module must never serve an entry older than its TTL, and never cache while it cannot hear a write.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar
from uuid import UUID

import asyncpg

__all__ = ["DEFAULT_DOSSIER_TTL_S", "DOSSIER_CHANNEL", "DossierCache"]

logger = logging.getLogger(__name__)

DOSSIER_CHANNEL = "ac_dossier_changed"
"""The NOTIFY channel of migration 0030; the payload is the organization id."""

DEFAULT_DOSSIER_TTL_S = 60.0
"""How long the organization part of a dossier is served from the cache."""

V = TypeVar("V")


@dataclass(frozen=True)
class _Entry(Generic[V]):
    value: V
    expires_at: float


class DossierCache(Generic[V]):
    """Entries keyed by `(organization_id, variant)`, evicted per organization on a NOTIFY."""

    def __init__(self, *, ttl_s: float = DEFAULT_DOSSIER_TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        if ttl_s <= 0:
            raise ValueError("ttl_s must be positive")
        self._ttl = ttl_s
        self._clock = clock
        self._entries: dict[tuple[UUID, Hashable], _Entry[V]] = {}
        self._generations: dict[UUID, int] = {}
        self._epoch = 0
        self._listener: asyncpg.Connection | None = None
        self._lock = asyncio.Lock()
        self.evictions = 0
        """How many NOTIFY evictions this process applied (for tests and operations)."""

    @property
    def listening(self) -> bool:
        """True while the dedicated listener connection is open."""
        return self._listener is not None and not self._listener.is_closed()

    async def start(self, url: str) -> bool:
        """Open the listener connection if it is not open; return whether the cache may store entries."""
        if self.listening:
            return True
        async with self._lock:
            if self.listening:
                return True
            try:
                conn = await asyncpg.connect(url)
                await conn.add_listener(DOSSIER_CHANNEL, self._on_notify)
            except (OSError, asyncpg.PostgresError) as exc:
                logger.warning("dossier cache disabled: cannot listen on %s: %s", DOSSIER_CHANNEL, exc)
                return False
            conn.add_termination_listener(self._on_terminated)
            self._listener = conn
            self.clear()  # writes made before we listened may have been missed
            return True

    async def close(self) -> None:
        """Close the listener connection and drop every entry."""
        conn, self._listener = self._listener, None
        self.clear()
        if conn is not None and not conn.is_closed():
            await conn.close()

    def generation(self, organization_id: UUID) -> tuple[int, int]:
        """A token that changes whenever this organization's entries are evicted."""
        return (self._epoch, self._generations.get(organization_id, 0))

    def get(self, organization_id: UUID, variant: Hashable) -> V | None:
        """The live entry, or None when absent or older than the TTL."""
        entry = self._entries.get((organization_id, variant))
        if entry is None:
            return None
        if entry.expires_at <= self._clock():
            del self._entries[(organization_id, variant)]
            return None
        return entry.value

    def put(self, organization_id: UUID, variant: Hashable, value: V, *, generation: tuple[int, int]) -> bool:
        """Store an entry read under `generation`; refuse it when an eviction happened since, or when deaf."""
        if not self.listening or generation != self.generation(organization_id):
            return False
        self._entries[(organization_id, variant)] = _Entry(value, self._clock() + self._ttl)
        return True

    def evict(self, organization_id: UUID) -> None:
        """Drop every entry of one organization and bump its generation."""
        self._generations[organization_id] = self._generations.get(organization_id, 0) + 1
        for key in [k for k in self._entries if k[0] == organization_id]:
            del self._entries[key]

    def clear(self) -> None:
        """Drop every entry and bump the epoch, so reads in flight store nothing."""
        self._epoch += 1
        self._entries.clear()

    def _on_notify(self, _conn: Any, _pid: int, _channel: str, payload: object) -> None:
        try:
            organization_id = UUID(str(payload))
        except ValueError:
            self.clear()  # an unreadable payload: forget everything rather than guess
            return
        self.evictions += 1
        self.evict(organization_id)

    def _on_terminated(self, _conn: Any) -> None:
        self._listener = None
        self.clear()
