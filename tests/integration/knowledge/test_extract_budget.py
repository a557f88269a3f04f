"""PDF bombs through the real ingestion paths: `ac-context ingest DIR` and the bulk core and step chain.

The CLI runs under a small wrapper process that reports `ru_maxrss` of its children once they are waited
for: the largest resident size of the CLI or of any pool worker it reaped. How fast a bomb is refused is no
test's business (a loaded machine would fail it): the extraction budget's clock is tested in
tests/unit/knowledge/test_extract_budget.py, and bench/bench_ingest_extract.py times the refusal.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from knowledge.ingestion.bulk import ingest_sources
from knowledge.ingestion.core import ingest_source
from knowledge.ingestion.pool import POOLED_PDF_BYTES, IngestPool
from knowledge.ingestion.registration import register_upload
from state.settings import get_settings
from tests.factories import Factory
from tests.integration.knowledge.helpers import Kit
from tests.integration.knowledge.test_ingest_cli import CLI, _env
from tests.unit.knowledge.pdf_bombs import form_bomb, shared_stream_bomb, text_pages
from tests.unit.knowledge.test_extract import GEOTOPO

PEAK_RSS_BYTES = 300 * 1024 * 1024
MEASURED = (
    "import json, resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n"
    "print(json.dumps({'status': done.returncode, 'out': done.stdout, 'err': done.stderr, 'max_rss_kib': kib}))\n"
)


async def _cli(args: list[str], env: dict[str, str]) -> dict[str, Any]:
    run = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", MEASURED, *args], env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr
    measured: dict[str, Any] = json.loads(run.stdout)
    return measured


async def _ingest_folder(tmp_path: Path, db_url: str, org: UUID, name: str, files: dict[str, bytes]) -> dict[str, Any]:
    """Write `files` into a new folder and run `ac-context ingest FOLDER --org ORG --json` on it, measured."""
    docs = tmp_path / name
    docs.mkdir()
    for filename, data in files.items():
        (docs / filename).write_bytes(data)
    return await _cli([*CLI, "ingest", str(docs), "--org", str(org), "--json"], _env(db_url, tmp_path))


async def _sources(kit: Kit) -> dict[str, Any]:
    async with kit.db.connection() as conn:
        rows = await conn.fetch("SELECT filename, status, failure_reason FROM agent.knowledge_sources")
    return {r["filename"]: r for r in rows}


async def test_the_2000_page_shared_stream_bomb_and_its_64_kib_variant_are_refused_at_bounded_memory(
    kit: Kit, factory: Factory, db_url: str, tmp_path: Path
) -> None:
    org = await factory.organization()
    bombs = {"shared-400k.pdf": shared_stream_bomb(), "shared-64k.pdf": shared_stream_bomb(stream_bytes=64 * 1024)}
    done = await _ingest_folder(tmp_path, db_url, org, "bombs", bombs)
    assert done["status"] == 1, done["err"]
    rows = {Path(r["file"]).name: r for r in json.loads(done["out"])}
    sources = await _sources(kit)
    for name in ("shared-400k.pdf", "shared-64k.pdf"):
        assert rows[name]["status"] == "failed" and rows[name]["failure_reason"].startswith("pdf_content_too_large:")
        assert sources[name]["status"] == "failed" and sources[name]["failure_reason"] == rows[name]["failure_reason"]
    assert done["max_rss_kib"] * 1024 < PEAK_RSS_BYTES, f"peak resident size {done['max_rss_kib']} KiB"


@pytest.mark.slow
async def test_a_large_ordinary_pdf_still_ingests_beside_a_form_bomb(
    kit: Kit, factory: Factory, db_url: str, tmp_path: Path
) -> None:
    org = await factory.organization()
    done = await _ingest_folder(
        tmp_path, db_url, org, "mixed", {GEOTOPO.name: GEOTOPO.read_bytes(), "form.pdf": form_bomb()}
    )
    rows = {Path(r["file"]).name: r for r in json.loads(done["out"])}
    assert rows[GEOTOPO.name]["status"] == "ready" and rows[GEOTOPO.name]["chunks"] > 100, rows
    assert rows["form.pdf"]["failure_reason"].startswith("pdf_content_too_large:")


async def test_the_bulk_core_and_the_step_chain_read_the_bounds_from_the_settings(
    kit: Kit, factory: Factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    org = await factory.organization()
    monkeypatch.setenv("AC_CONTEXT_MAX_PAGE_TEXT_BYTES", "2048")
    get_settings.cache_clear()
    try:
        data = text_pages(3, 100)  # 3,390 bytes of text a page
        bulk = await register_upload(kit.db, kit.store, organization_id=org, data=data, filename="bulk.pdf")
        result = await ingest_sources(kit.db, kit.store, [bulk.source_id], embedders=kit.lookup)
        assert (result.outcomes[0].reason or "").startswith("document_text_too_large: page 1 gives more text")
        chain = await register_upload(kit.db, kit.store, organization_id=org, data=data + b"\n", filename="c.pdf")
        outcome = await ingest_source(kit.ingestion(), chain.source_id)
        assert (outcome.failed_reason or "").startswith("document_text_too_large: page 1 gives more text")
    finally:
        get_settings.cache_clear()


@pytest.mark.parametrize("pooled", [False, True], ids=["thread", "pool"])
async def test_the_bulk_core_enforces_the_chunk_cap_while_it_reads(kit: Kit, factory: Factory, pooled: bool) -> None:
    org = await factory.organization()
    data = text_pages(400, 100, broken_page=11)  # over 256 KiB, so read over the pool; ~5 chunks a page
    assert len(data) > POOLED_PDF_BYTES
    registered = await register_upload(kit.db, kit.store, organization_id=org, data=data, filename="capped.pdf")
    pool = IngestPool(2) if pooled else None
    try:
        result = await ingest_sources(
            kit.db, kit.store, [registered.source_id], embedders=kit.lookup, pool=pool, max_chunks=20
        )
    finally:
        if pool is not None:
            pool.close()
    reason = result.outcomes[0].reason or ""
    assert reason.startswith("too_many_chunks: by page 5"), "checked after every page, page 11 would answer"
