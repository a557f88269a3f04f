"""Fixtures of the functions tests: the whole service on the test database, in production mode, with a
recording Inngest client, a local object store, the fake embedder as the live model, and the executor."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from typer.testing import CliRunner

import functions._services
from functions._services import Services, ServiceSlot
from functions.app import create_app
from functions.cli import app as cli_app
from knowledge.documents.objects import LocalObjectStore
from knowledge.embedding.registry import EmbedderRegistry, FakeEmbedder
from state.db import Database
from state.settings import get_settings, load_settings
from tests.integration.functions.executor import InngestExecutor
from tests.integration.functions.support import RecordingInngest, asgi_client, new_signing_key, use_platform_model

TOKEN = "test-service-token-0123456789"
FAKE_MODEL = FakeEmbedder.model_id
FAKE_BATCH = 4


@dataclass
class Service:
    """The running service and the ways a test talks to it."""

    app: FastAPI
    http: httpx.AsyncClient
    inngest: RecordingInngest
    executor: InngestExecutor
    db: Database
    signing_key: str

    @property
    def slot(self) -> ServiceSlot:
        return self.app.state.slot  # type: ignore[no-any-return]

    @property
    def services(self) -> Services:
        return self.slot.get()

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {TOKEN}"}


def fake_embedders() -> EmbedderRegistry:
    """Only the fake model, with a small batch so a document takes several embedding steps."""
    registry = EmbedderRegistry()
    registry.register(FAKE_MODEL, lambda: FakeEmbedder(batch_size=FAKE_BATCH), dimensions=FakeEmbedder.dimensions)
    return registry


@pytest.fixture
async def fake_live_model(db: Database) -> str:
    """Make the fake embedder the platform's live model, with its own partial index."""
    async with db.connection() as conn:
        await use_platform_model(conn, FAKE_MODEL)
    return FAKE_MODEL


@pytest.fixture
async def service(db: Database, tmp_path: Path, fake_live_model: str) -> AsyncIterator[Service]:
    """The service app with its lifespan entered, on the test database."""
    key = new_signing_key()
    client = RecordingInngest(app_id="ac-context", is_production=True, signing_key=key)
    settings = load_settings(api_token=TOKEN, data_dir=tmp_path, max_upload_bytes=2 * 1024 * 1024)
    app = create_app(
        settings,
        db=db,
        inngest_client=client,
        object_store=LocalObjectStore(tmp_path / "objects"),
        embedders=fake_embedders(),
    )
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        yield Service(app, http, client, InngestExecutor(http, signing_key=key), db, key)


@pytest.fixture
def cli(service: Service, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """`ac-context …` through the real group in a thread, on the service's database and object store."""
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("AC_CONTEXT_DATA_DIR", str(tmp_path))  # the service's store is tmp_path / "objects"
    monkeypatch.delenv("AC_CONTEXT_DEBUG", raising=False)
    monkeypatch.setattr(functions._services, "default_embedders", fake_embedders())

    async def invoke(*args: str) -> Any:
        def call() -> Any:
            get_settings.cache_clear()
            return CliRunner().invoke(cli_app, list(args))

        return await asyncio.to_thread(call)

    yield invoke
    get_settings.cache_clear()


@pytest.fixture
async def session_loop() -> asyncio.AbstractEventLoop:
    """The session's event loop; a sync test that asks for it runs `mocked.trigger` on it (not on a stray loop)."""
    return asyncio.get_running_loop()
