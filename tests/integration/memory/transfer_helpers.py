"""The running app the memory transfer tests talk to: the functions tests' service, entered as a context.

The functions tests' `service` fixture lives in their conftest, out of this folder's reach; this builds the same
app (production mode, the fake embedder as the platform's live model, a local object store) for a fixture of
the transfer tests to yield.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from functions.app import create_app
from knowledge.documents.objects import LocalObjectStore
from state.db import Database
from state.settings import load_settings
from tests.integration.functions.conftest import FAKE_MODEL, TOKEN, Service, fake_embedders
from tests.integration.functions.executor import InngestExecutor
from tests.integration.functions.support import RecordingInngest, asgi_client, new_signing_key, use_platform_model


@asynccontextmanager
async def running_app(db: Database, tmp_path: Path) -> AsyncIterator[Service]:
    """The service app with its lifespan entered, on the test database, the fake model live."""
    async with db.connection() as conn:
        await use_platform_model(conn, FAKE_MODEL)
    key = new_signing_key()
    client = RecordingInngest(app_id="ac-context", is_production=True, signing_key=key)
    settings = load_settings(api_token=TOKEN, data_dir=tmp_path, max_upload_bytes=2 * 1024 * 1024)
    app = create_app(
        settings, db=db, inngest_client=client, object_store=LocalObjectStore(tmp_path / "objects"),
        embedders=fake_embedders(),
    )  # fmt: skip
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        yield Service(app, http, client, InngestExecutor(http, signing_key=key), db, key)
