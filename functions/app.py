"""The FastAPI service, `functions.app:app`.

Inngest at `/api/inngest`, the project's API under `/v1/`, `/healthz`, `/readyz`, `/metrics`, and the
operator console under `/console` (`functions.console`), and the MCP face at `/mcp` (`functions.mcp.http`).
OpenAPI is served at `/openapi.json`, `/docs` and `/redoc`, with their assets from the app itself
(`functions.api.docs`), so the pages work with no network.

`create_app(settings, *, db=None, inngest_client=None, ...)` builds an app with injected dependencies (the
tests do); the module attribute `app` is built on first access, from the environment, so importing this
module never starts anything and a production process without its keys (`functions._production`) fails
when uvicorn loads `app`, with one message naming them. The lifespan opens the database (migrating it),
builds the source registry and the builder, and closes them on shutdown; when the database cannot be
reached it starts anyway, answers 503 `database_unavailable`, and keeps trying (`functions._lifecycle`).
It also runs the outbox drainer (`functions.outbox.delivery`), which sends the events a route could not; in dev
mode with no Inngest server answering (or `AC_CONTEXT_RUN_FUNCTIONS=in-process`) it runs their work here,
through the same core the functions call, and logs one line saying so.

Every request passes `functions.api._edge.EdgeGuard` first (token or API key, Inngest signature
freshness, body limits), and every `/v1/` route declares its scope (the app refuses to build otherwise).
In production the Inngest endpoint refuses unsigned syncs and registers only
`INNGEST_SERVE_ORIGIN`, and step state leaves the process encrypted when keys are set.

The endpoints are thin: they parse, call the core, and return small JSON. This module must never hold a
business rule or build SQL.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import inngest
from fastapi import FastAPI
from starlette.routing import Route

from context.builder import ContextBuilder
from context.registry import ContextSourceRegistry
from functions._briefs import LimitedBuilder
from functions._lifecycle import DatabaseHealth, ServiceOpener
from functions._metrics import Metrics
from functions._production import check_production
from functions._services import Services, ServiceSlot, open_services, warm_live_embedder
from functions._telemetry import install as install_telemetry
from functions.api import ROUTERS
from functions.api._body import unread_routes
from functions.api._consistency import ConsistencyTokens
from functions.api._edge import EdgeGuard
from functions.api._http import install_error_handlers
from functions.api._scopes import undeclared_routes
from functions.api._transport import StrictTransport
from functions.api.docs import DOCS_OFF, install_docs
from functions.console.mount import install_console
from functions.errors import InngestConfigError
from functions.event_routes import InProcessRunner
from functions.inngest.catalog import build_functions
from functions.inngest.client import create_client, is_dev_mode
from functions.inngest.encryption import install_step_encryption, parse_keys
from functions.inngest.serve import serve
from functions.mcp.http import MCP_PATH, McpEndpoint
from functions.outbox.delivery import EventOutbox, inngest_reachable
from knowledge.documents.objects import ObjectStore
from knowledge.embedding.registry import EmbedderRegistry
from state.db import Database
from state.errors import SettingsError
from state.settings import Settings, get_settings

__all__ = ["INNGEST_PATH", "create_app"]

logger = logging.getLogger("functions.app")

INNGEST_PATH = "/api/inngest"
"""Where the Inngest endpoint is served (and the path a sync registers)."""


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
    if settings.run_functions == "in-process" and not is_dev_mode(environ, inngest_mode=settings.inngest_mode):
        raise InngestConfigError("production never runs functions in-process; unset AC_CONTEXT_RUN_FUNCTIONS")
    client = inngest_client or create_client(environ, inngest_mode=settings.inngest_mode)
    slot = ServiceSlot()
    metrics = Metrics()
    health = DatabaseHealth(slot, probe_timeout_s=settings.readiness_timeout_s)
    install_step_encryption(client, parse_keys(settings.step_encryption_keys))

    async def open_once() -> Services:
        return await open_services(
            settings,
            db=db,
            registry=registry,
            builder=builder,
            object_store=object_store,
            embedders=embedders,
            metrics=metrics,
        )

    async def warm(services: Services) -> None:
        if isinstance(services.builder, LimitedBuilder):
            services.builder.database_probe = health.probe
        await warm_live_embedder(services)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        opener = ServiceOpener(slot, open_once, retry_interval_s=settings.database_retry_interval_s)
        opener.on_open = warm
        await opener.start()
        app.state.functions_mode = await _functions_mode(settings, client, injected=inngest_client is not None)
        if app.state.functions_mode == "in-process":
            events.runner = InProcessRunner(slot)
            logger.warning(
                "functions run in-process: dev mode and no Inngest server answers at %s (start one and restart "
                "to use it)", client.event_api_origin,
            )  # fmt: skip
        await events.start()
        try:
            async with mcp.running():  # the MCP face's session manager lives as long as the app
                yield
        finally:
            await events.stop()
            await opener.stop()

    app = FastAPI(
        title="ac-context",
        summary="The state-and-knowledge layer: context briefs, knowledge and memory.",
        version="0.1.0",
        lifespan=lifespan,
        **DOCS_OFF,
    )
    app.state.slot = slot
    app.state.metrics = metrics
    app.state.settings = settings
    app.state.api_token = settings.api_token
    app.state.inngest = client
    events = EventOutbox(slot, lambda: app.state.inngest, poll_s=settings.outbox_poll_interval_s)
    app.state.outbox = events
    app.state.inngest_path = INNGEST_PATH
    app.state.health = health
    install_error_handlers(app)
    install_docs(app)
    app.add_middleware(ConsistencyTokens)  # inside the edge: a refused request never reads its token
    app.add_middleware(EdgeGuard)
    app.add_middleware(StrictTransport)  # outside the edge, so its own refusals carry it too
    for router in ROUTERS:
        app.include_router(router)
    install_console(app)
    mcp = McpEndpoint(max_body_bytes=settings.max_json_bytes, version=app.version)
    app.router.routes.append(Route(MCP_PATH, mcp, methods=["GET", "POST", "DELETE"]))  # streamable HTTP (stateless)
    undeclared = undeclared_routes(app.routes)
    if undeclared:
        raise RuntimeError("every /v1/ route declares exactly one scope; these do not: " + ", ".join(undeclared))
    unread = unread_routes(app.routes)
    if unread:
        raise RuntimeError(
            "every /v1/ route reads its body through functions.api._body; these do not: " + ", ".join(unread)
        )
    install_telemetry(app, client, settings, environ)  # OpenTelemetry, only when OTEL_EXPORTER_OTLP_* is set
    serve(
        app,
        client,
        build_functions(client, slot),
        enable_unauthed_sync=False if client.is_production else None,
        serve_origin=settings.inngest_serve_origin,
        serve_path=INNGEST_PATH,
    )
    return app


async def _functions_mode(settings: Settings, client: inngest.Inngest, *, injected: bool) -> str:
    """`in-process` in dev mode when asked for, or when no Inngest server answers; `inngest` otherwise."""
    if client.is_production or settings.run_functions == "inngest" or (injected and settings.run_functions == "auto"):
        return "inngest"
    if settings.run_functions == "in-process" or not await inngest_reachable(client):
        return "in-process"
    return "inngest"


_app: FastAPI | None = None


def __getattr__(name: str) -> Any:
    """`functions.app:app`, built from the environment on first access."""
    global _app
    if name == "app":
        if _app is None:
            try:
                settings = get_settings()
                if not is_dev_mode(inngest_mode=settings.inngest_mode):
                    check_production(settings)
                _app = create_app(settings)
            except (InngestConfigError, SettingsError) as exc:  # `uvicorn functions.app:app`: one line, no traceback
                raise SystemExit(f"error: {exc.code}: {exc}") from None
        return _app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
