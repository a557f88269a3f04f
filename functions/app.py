"""The FastAPI service, `functions.app:app`.

Inngest at `/api/inngest`, the project's API under `/v1/`, and `/healthz`, `/readyz`, `/metrics`.
OpenAPI is served at `/openapi.json` and `/docs`.

`create_app(settings, *, db=None, inngest_client=None, ...)` builds an app with injected dependencies (the
tests do); the module attribute `app` is built on first access, from the environment, so importing this
module never starts anything and a production process without `INNGEST_SIGNING_KEY` fails when uvicorn
loads `app`, with a message that names the variable. The lifespan opens the database (migrating it),
builds the source registry and the builder, and closes them on shutdown.

The endpoints are thin: they parse, call the core, and return small JSON. This module must never hold a
business rule or build SQL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import inngest
from fastapi import FastAPI

from context.builder import ContextBuilder
from context.registry import ContextSourceRegistry
from functions._catalog import build_functions
from functions._inngest_serve import serve
from functions._metrics import Metrics
from functions._services import ServiceSlot, close_services, open_services, warm_live_embedder
from functions.api import ROUTERS
from functions.api._http import install_error_handlers
from functions.client import create_client
from knowledge.embed import EmbedderRegistry
from knowledge.objects import ObjectStore
from state.db import Database
from state.settings import Settings, get_settings

__all__ = ["create_app"]


def create_app(
    settings: Settings | None = None,
    *,
    db: Database | None = None,
    inngest_client: inngest.Inngest | None = None,
    registry: ContextSourceRegistry | None = None,
    builder: ContextBuilder | None = None,
    object_store: ObjectStore | None = None,
    embedders: EmbedderRegistry | None = None,
    environ: Mapping[str, str] | None = None,
) -> FastAPI:
    """Build the service; anything injected is used as is (and an injected `db` is not closed)."""
    settings = settings or get_settings()
    client = inngest_client or create_client(environ, inngest_mode=settings.inngest_mode)
    slot = ServiceSlot()
    metrics = Metrics()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        services = await open_services(
            settings,
            db=db,
            registry=registry,
            builder=builder,
            object_store=object_store,
            embedders=embedders,
            metrics=metrics,
        )
        await warm_live_embedder(services)
        slot.set(services)
        try:
            yield
        finally:
            slot.set(None)
            await close_services(services)

    app = FastAPI(
        title="ac-context",
        summary="The state-and-knowledge layer: context briefs, knowledge and memory.",
        version="0.1.0",
        lifespan=lifespan,
    )
    app.state.slot = slot
    app.state.metrics = metrics
    app.state.settings = settings
    app.state.api_token = settings.api_token
    app.state.inngest = client
    install_error_handlers(app)
    for router in ROUTERS:
        app.include_router(router)
    serve(app, client, build_functions(client, slot))
    return app


_app: FastAPI | None = None


def __getattr__(name: str) -> Any:
    """`functions.app:app`, built from the environment on first access."""
    global _app
    if name == "app":
        if _app is None:
            _app = create_app()
        return _app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
