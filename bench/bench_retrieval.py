"""Retrieval quality of issue 37: the relevance floor, the halves and the dense walk on three judged sets.

`run()` starts its own embedded PostgreSQL in a temporary folder (or uses DATABASE_URL's server), builds a
fresh database from the migrations, ingests Cranfield, the long-document set and the committed
conversational set (`bench/dialog_set.json`, one turn per document) with WordLlama, and returns
`bench._floor_quality.floor_quality`'s figures with their goal rows: recall@8, recall@50 and nDCG@10 per
set, hybrid and each half, unfiltered, under 0093's floor and under today's; the hits each floor leaves
for unanswerable queries; the floor's sweep; the HNSW walk's recall@10 against the exact scan per set.
Nothing here asserts a timing.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import uuid
from pathlib import Path
from typing import Any

import asyncpg

from bench._floor_quality import floor_quality
from knowledge.documents.objects import LocalObjectStore
from state.db import Database
from state.embedded import embedded_server_url, server_dsn, stop_embedded_server
from state.migrate import apply_migrations
from state.settings import load_settings


def run() -> dict[str, Any]:
    return asyncio.run(_run())


async def _run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ac-bench-retrieval-") as tmp:
        external = os.environ.get("DATABASE_URL")
        server = external or embedded_server_url(Path(tmp))
        name = f"ac_bench_retrieval_{uuid.uuid4().hex[:8]}"
        admin = await asyncpg.connect(server)
        await admin.execute(f'CREATE DATABASE "{name}"')
        url = server_dsn(server, name)
        try:
            await apply_migrations(url)
            db = await Database.open(load_settings(pool_min_size=2, pool_max_size=8), url=url, migrate=False)
            try:
                return await floor_quality(db, LocalObjectStore(Path(tmp) / "objects"))
            finally:
                await db.close()
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await admin.close()
            if not external:
                stop_embedded_server(Path(tmp))
