"""Where a benchmark runs: a server (DATABASE_URL's, else an embedded one in a folder) and a scratch database.

`bench_server(folder)` yields the server URL and stops the embedded server it started, if any;
`scratch_database(server, prefix)` creates an empty database, yields its URL and drops it (connections and
all) however the benchmark ends. What a benchmark migrates, seeds and opens stays in the benchmark.

This module must never be imported outside `bench/`, never migrate or seed, and never touch a database it
did not create.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import asyncpg

from state.embedded import embedded_server_url, server_dsn, stop_embedded_server

__all__ = ["bench_server", "scratch_database"]


@contextmanager
def bench_server(folder: Path) -> Iterator[str]:
    """DATABASE_URL when set; else an embedded server with its data under `folder`, stopped on exit."""
    external = os.environ.get("DATABASE_URL")
    if external:
        yield external
        return
    try:
        yield embedded_server_url(folder)
    finally:
        stop_embedded_server(folder)


@asynccontextmanager
async def scratch_database(server: str, prefix: str) -> AsyncIterator[str]:
    """A new empty database `<prefix>_<8 hex>` on `server`, dropped with its connections on exit; its URL."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(server)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield server_dsn(server, name)
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()
