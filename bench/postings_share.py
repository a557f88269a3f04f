"""What the BM25 postings cost a bulk load of small documents: the CLI path's docs/s with and without them.

    python -m bench.postings_share [--documents 3000] [--rounds 3] [--before DIR]

Each variant gets its own database on one embedded server (or DATABASE_URL's), migrated from `migrations/`
(`shipped`) or from `--before DIR` (`before`: a copy of the migrations without the change under test),
and `no_postings` is `shipped` with the three lexical triggers a bulk write fires disabled (no postings,
no statistics: the upper bound any postings path can reach). The rounds run the variants in turn, each
into a new organization of its database, so a drift of a shared machine touches them alike; the medians
and each run's seconds inside the lexical functions (`track_functions`) are printed. The documents are
`bench.bench_ingest`'s small set (Cranfield sentences, ~250 words each). Not part of `make bench` (issue
24, docs/decisions.md "Issue 24: bulk postings"); nothing here asserts a timing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import asyncpg

from bench._scratch import bench_server, scratch_database
from bench.bench_ingest import _warm, small_documents
from functions.cli.knowledge import _ingest_files
from state.migrate import MIGRATIONS_DIR, apply_migrations
from state.settings import get_settings

NO_POSTINGS = """
ALTER TABLE agent.knowledge_chunks DISABLE TRIGGER knowledge_lexical_chunks_insert;
ALTER TABLE agent.knowledge_source_models DISABLE TRIGGER knowledge_lexical_readiness_update;
ALTER TABLE agent.knowledge_sources DISABLE TRIGGER knowledge_lexical_source_update;
"""
FUNCTIONS = """
SELECT funcname, calls, total_time FROM pg_stat_user_functions WHERE funcname LIKE 'knowledge_lexical%'
"""


async def _prepare(url: str, variant: str, before: Path | None) -> None:
    await apply_migrations(url, before if variant == "before" and before else MIGRATIONS_DIR)
    conn = await asyncpg.connect(url)
    try:
        name = await conn.fetchval("SELECT current_database()")
        await conn.execute(f"ALTER DATABASE \"{name}\" SET track_functions = 'all'")
        if variant == "no_postings":
            await conn.execute(NO_POSTINGS)
    finally:
        await conn.close()


async def _one(url: str, files: list[Path], label: str) -> dict[str, Any]:
    os.environ["DATABASE_URL"] = url
    get_settings.cache_clear()
    conn = await asyncpg.connect(url)
    try:
        org = await conn.fetchval("INSERT INTO public.organizations (name) VALUES ($1) RETURNING id", label)
        await conn.execute("SELECT pg_stat_reset()")
    finally:
        await conn.close()
    started = time.perf_counter()
    rows = await _ingest_files(files, org, None, False, {})
    seconds = time.perf_counter() - started
    await asyncio.sleep(1.5)  # the closed pool's backends report their function times
    conn = await asyncpg.connect(url)
    try:
        functions = {r["funcname"]: round(r["total_time"] / 1000, 2) for r in await conn.fetch(FUNCTIONS)}
    finally:
        await conn.close()
    ready = sum(1 for r in rows if r["status"] == "ready")
    return {"docs_per_s": round(len(rows) / seconds, 1), "seconds": round(seconds, 2), "ready": ready,
            "lexical_function_s": functions, "load": round(os.getloadavg()[0], 2)}  # fmt: skip


async def _run(documents: int, rounds: int, before: Path | None) -> dict[str, Any]:
    variants = (["before"] if before else []) + ["shipped", "no_postings"]
    with tempfile.TemporaryDirectory(prefix="ac-bench-postings-") as tmp_name:
        tmp = Path(tmp_name)
        os.environ["AC_CONTEXT_DATA_DIR"] = str(tmp / "cli")
        with bench_server(tmp / "pg") as server:
            urls: dict[str, str] = {}
            async with _databases(server, variants, urls):
                for variant in variants:
                    await _prepare(urls[variant], variant, before)
                files = small_documents(tmp / "small", documents)
                await _warm()
                runs: dict[str, list[dict[str, Any]]] = {v: [] for v in variants}
                for n in range(rounds):
                    for variant in variants:
                        run = await _one(urls[variant], files, f"round {n} {variant}")
                        runs[variant].append(run)
                        print(f"round {n} {variant}: {json.dumps(run)}", flush=True)
    return {
        v: {"median_docs_per_s": statistics.median(r["docs_per_s"] for r in rs), "runs": rs} for v, rs in runs.items()
    }


class _databases:
    """One scratch database per variant, dropped on exit."""

    def __init__(self, server: str, variants: list[str], urls: dict[str, str]) -> None:
        self.contexts = [scratch_database(server, f"ac_bench_postings_{v}") for v in variants]
        self.variants = variants
        self.urls = urls

    async def __aenter__(self) -> None:
        for variant, context in zip(self.variants, self.contexts, strict=True):
            self.urls[variant] = await context.__aenter__()

    async def __aexit__(self, *exc: object) -> None:
        for context in reversed(self.contexts):
            await context.__aexit__(None, None, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", type=Path, help="a migrations folder without the change under test")
    args = parser.parse_args()
    result = asyncio.run(_run(args.documents, args.rounds, args.before))
    print(json.dumps({v: r["median_docs_per_s"] for v, r in result.items()}))


if __name__ == "__main__":  # the pool's workers import this module again
    main()
