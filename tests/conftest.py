"""Test infrastructure: one PostgreSQL per test session, a fresh database per test.

The server is the embedded one (or the server `DATABASE_URL` names). A template database is migrated
once; each test that asks for `db` gets `CREATE DATABASE … TEMPLATE` of it, because the builder reads on
several connections at once and a rolled-back transaction could not isolate that. Any call to a paid
API fails: the OpenAI base URL points at a closed local port. The `test/*` embedding models are allowed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import pytest
from hypothesis import settings as hypothesis_settings

from state.db import Database
from state.embedded import embedded_server_url, server_dsn, stop_embedded_server
from state.migrate import apply_migrations
from state.settings import load_settings
from tests.factories import Factory
from tests.support import embedded_test_dir

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"

# No test may reach a paid API by accident.
os.environ.pop("OPENAI_API_KEY", None)
os.environ["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"
# The `test/*` embedding models are accepted here only (knowledge.embedding.registry.require_real_model).
os.environ["AC_CONTEXT_ALLOW_TEST_MODELS"] = "1"
# A source that should answer is never failed by the clock of a loaded machine: the 1 s default is a
# production figure, and every test that means a timeout builds its builder with its own.
os.environ["AC_CONTEXT_SOURCE_TIMEOUT_S"] = "300"
# The same for `/readyz`'s wait on the database (2 s in production): a stopped database answers at once.
os.environ["AC_CONTEXT_READINESS_TIMEOUT_S"] = "300"
# Hypothesis fails an example that takes over 200 ms by default: a clock, not a property. None here.
hypothesis_settings.register_profile("no-deadline", deadline=None)
hypothesis_settings.load_profile("no-deadline")

_TEMPLATE = "ac_test_template"


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The shared corpus, read in place."""
    if not CORPUS.is_dir():
        pytest.fail(f"the shared corpus is missing at {CORPUS}")
    return CORPUS


@pytest.fixture(scope="session")
def pg_server_url() -> Iterator[str]:
    """The admin URL of the test server: DATABASE_URL's server, else a fresh embedded one."""
    external = os.environ.get("DATABASE_URL")
    if external:
        yield external
        return
    folder = embedded_test_dir()
    try:
        yield embedded_server_url(folder)
    finally:
        stop_embedded_server(folder)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
async def template_url(pg_server_url: str) -> str:
    """A migrated template database, built once per session."""
    admin = await asyncpg.connect(pg_server_url)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{_TEMPLATE}" WITH (FORCE)')
        await admin.execute(f'CREATE DATABASE "{_TEMPLATE}"')
    finally:
        await admin.close()
    url = server_dsn(pg_server_url, _TEMPLATE)
    await apply_migrations(url)
    return url


_CLONE_LOCK = asyncio.Lock()


@pytest.fixture
async def db_url(pg_server_url: str, template_url: str) -> AsyncIterator[str]:
    """A fresh database cloned from the migrated template, dropped after the test."""
    name = f"ac_test_{uuid.uuid4().hex[:16]}"
    admin = await asyncpg.connect(pg_server_url)
    try:
        async with _CLONE_LOCK:
            await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{_TEMPLATE}"')
        yield server_dsn(pg_server_url, name)
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[Database]:
    """An open pool on a fresh, migrated database."""
    database = await Database.open(load_settings(pool_min_size=1, pool_max_size=10), url=db_url, migrate=False)
    try:
        yield database
    finally:
        await database.close()


@pytest.fixture
def factory(db: Database) -> Factory:
    """Row factories: a tenant with users and CRM rows in a line or two."""
    return Factory(db)
