"""`ac-context search` loads what a search reads with and nothing else (issue 36): the database and the
embedders, never the context sources, the brief builder, the object store or an extraction library.

A real process against the test database, which prints the modules it loaded as it exits."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from state.db import Database
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit

AT_EXIT = (
    "import atexit, json, sys\n"
    "atexit.register(lambda: print('\\n' + json.dumps(sorted(sys.modules))))\n"
    "sys.argv = ['ac-context', *sys.argv[1:]]\n"
    "from functions.cli import main\n"
    "main()\n"
)
NOT_FOR_A_SEARCH = (
    "context.sources",
    "context.builder",
    "functions._services",
    "functions._briefs",
    "knowledge.documents",
    "knowledge.ingestion",
    "pypdf",
    "bs4",
    "semchunk",
    "boto3",
)


async def test_search_loads_no_context_source_builder_object_store_or_extraction(
    db: Database, db_url: str, tmp_path: Path, factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from knowledge.documents.objects import LocalObjectStore

    kit = Kit(db, LocalObjectStore(tmp_path / "objects"))
    await kit.use_platform_model(FAKE)
    org = await factory.organization()
    env = {**os.environ, "DATABASE_URL": db_url, "AC_CONTEXT_DATA_DIR": str(tmp_path / "data")}
    done = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", AT_EXIT, "search", "a question", "--org", str(org), "--json"],
        env=env, capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[3],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "knowledge.search" in loaded, "the search ran"
    heavy = sorted(m for m in loaded if any(m == n or m.startswith(f"{n}.") for n in NOT_FOR_A_SEARCH))
    assert heavy == [], f"ac-context search loads {heavy}"
