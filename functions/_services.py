"""What the functions and endpoints run against, opened once per process.

The database, the context registry and builder, the object store, the embedders and the metrics,
opened by the app's lifespan (or the CLI).

Inngest functions are created when the app is built, before the database is open, so they hold a
`ServiceSlot` and read it when a step runs. This module must never hold a business rule: it opens and
closes things, and hands them out.
"""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from context.builder import ContextBuilder, DefaultContextBuilder
from context.packer import ContextPacker
from context.registry import ContextSourceRegistry
from functions._brief_receipts import ReceiptRecorder
from functions._briefs import LimitedBuilder
from functions._metrics import Metrics
from functions.errors import ServiceNotReadyError
from knowledge.documents.objects import LocalObjectStore, ObjectStore, object_store_from_url
from knowledge.embedding.registry import EmbedderRegistry
from knowledge.embedding.registry import default_registry as default_embedders
from state.db import Database
from state.errors import DatabaseUnavailableError
from state.settings import Settings

if TYPE_CHECKING:
    from knowledge.ingestion.core import Ingestion
    from memory.service import MemoryService

__all__ = [
    "ServiceSlot",
    "Services",
    "close_services",
    "configured_memory_service",
    "default_embedders",
    "default_object_store",
    "open_services",
    "warm_live_embedder",
]

logger = logging.getLogger("functions.services")


@dataclass
class Services:
    """Everything a function step or an endpoint needs, opened once."""

    settings: Settings
    """The process settings."""
    db: Database
    """The open pool."""
    registry: ContextSourceRegistry
    """The process registry of context sources."""
    builder: ContextBuilder
    """The context builder over `registry`."""
    object_store: ObjectStore
    """Where uploaded documents live."""
    embedders: EmbedderRegistry
    """Embedders by model id."""
    metrics: Metrics
    """The Prometheus metrics of this app."""
    owns_db: bool = False
    """Whether closing the services closes the pool (False when a caller injected it)."""
    closers: list[object] = field(default_factory=list)
    """Objects with an `aclose()` to await on shutdown (sources holding listeners)."""

    @property
    def ingestion(self) -> Ingestion:
        """The ingestion kit every path ingests with: this store, these embedders, the settings' workers and bounds.

        Made on each read (a small frozen record over the shared worker pool), so it follows the services'
        current store and embedders.
        """
        from knowledge.ingestion.core import Ingestion

        return Ingestion.configured(self.db, self.object_store, embedders=self.embedders.get, settings=self.settings)

    @cached_property
    def receipts(self) -> ReceiptRecorder:
        """The brief receipts' buffer and flush (`functions._brief_receipts`), closed with the services."""
        recorder = ReceiptRecorder(
            self.db, metrics=self.metrics, capacity=self.settings.brief_receipt_buffer,
            enabled=self.settings.brief_receipts,
        )  # fmt: skip
        self.closers.append(recorder)
        return recorder

    @cached_property
    def memory(self) -> MemoryService:
        """The memory service every path remembers and forgets with (`configured_memory_service`)."""
        return configured_memory_service(self.db, self.settings, self.embedders)


def configured_memory_service(db: Database, settings: Settings, embedders: EmbedderRegistry) -> MemoryService:
    """The one memory service: the settings' expiry, and the live model's embedder for the relevance read."""
    from context.sources.memory_vectors import live_memory_embedder
    from memory.expiry import ExpiryPolicy
    from memory.service import MemoryService

    return MemoryService(db, expiry=ExpiryPolicy.from_settings(settings), embed=live_memory_embedder(db, embedders.get))


class ServiceSlot:
    """Holds the services once the app has opened them; functions read it at run time."""

    def __init__(self, services: Services | None = None) -> None:
        self._services = services
        self.reason: str | None = None
        """Why the services are not open, when the database could not be reached."""

    def get(self) -> Services:
        """The open services, or why not (a step that runs it is retried either way).

        `DatabaseUnavailableError` while the database cannot be reached at start, `ServiceNotReadyError`
        before the first attempt.
        """
        if self._services is None:
            if self.reason is not None:
                raise DatabaseUnavailableError(self.reason)
            raise ServiceNotReadyError("the service has not opened its database yet")
        return self._services

    def set(self, services: Services | None) -> None:
        """Install (or clear, with None) the services."""
        self._services = services
        if services is not None:
            self.reason = None

    def unavailable(self, reason: str) -> None:
        """Record why the services could not be opened."""
        self.reason = reason

    @property
    def ready(self) -> bool:
        """Whether services are installed."""
        return self._services is not None


def default_object_store(settings: Settings) -> ObjectStore:
    """`AC_CONTEXT_OBJECT_STORE_URL`, else a folder under the data directory."""
    if settings.object_store_url:
        return object_store_from_url(settings.object_store_url)
    return LocalObjectStore(Path(settings.data_dir) / "objects")


async def open_services(
    settings: Settings,
    *,
    db: Database | None = None,
    registry: ContextSourceRegistry | None = None,
    builder: ContextBuilder | None = None,
    object_store: ObjectStore | None = None,
    embedders: EmbedderRegistry | None = None,
    metrics: Metrics | None = None,
) -> Services:
    """Open what was not injected: the database (migrated), the source registry, the builder, the store."""
    from context.sources import default_registry

    owns_db = db is None
    metrics = metrics or Metrics()
    database = db if db is not None else await Database.open(settings)
    embedder_registry = embedders or default_embedders
    try:
        source_registry = registry or default_registry(database, embedders=embedder_registry.get)
        services = Services(
            settings=settings,
            db=database,
            registry=source_registry,
            builder=LimitedBuilder(
                builder
                or DefaultContextBuilder(source_registry, ContextPacker(), source_timeout_s=settings.source_timeout_s),
                max_concurrent=settings.max_concurrent_briefs,
                retry_after_s=settings.overload_retry_after_s,
                metrics=metrics,
            ),
            object_store=object_store or default_object_store(settings),
            embedders=embedder_registry,
            metrics=metrics,
            owns_db=owns_db,
            closers=[s for s in source_registry if hasattr(s, "aclose")] if registry is None else [],
        )
        if isinstance(services.builder, LimitedBuilder):
            services.builder.db = database
        return services
    except BaseException:
        if owns_db:
            await database.close()
        raise


async def warm_live_embedder(services: Services) -> str | None:
    """Load the platform's live embedder before the first brief, so a cold model never times a search out."""
    from knowledge.embedding.live_model import live_model

    try:
        model = (await live_model(services.db, None)).model_id
        embedder = services.embedders.get(model)
        await embedder.embed(["warm up"])
    except Exception as exc:  # a cold first search is slower, never wrong: log and go on
        logger.warning("could not warm the live embedding model: %s", type(exc).__name__)
        return None
    return model


async def close_services(services: Services) -> None:
    """Close the sources that hold listeners, then the pool if this process opened it."""
    for closer in services.closers:
        result = closer.aclose()  # type: ignore[attr-defined]
        if inspect.isawaitable(result):
            await result
    if services.owns_db:
        await services.db.close()
