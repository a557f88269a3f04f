"""Ingestion with this tree's code against an earlier commit's, alternating, on one machine in one session.

`python -m bench.ingest_before_after [--before COMMIT] [--rounds N]`: each round runs the earlier commit
(extracted with `git archive` into a temporary folder, this file copied in) and then this tree, each as a
subprocess on a fresh embedded database built by its own migrations; each ingests GeoTopo, the FastAPI
docs and 1,000 of the ingestion bench's small documents through the CLI path twice (`bench_ingest._cli`)
and prints the seconds. Prints one JSON object: per set, the seconds of every run, before and after.
Not part of `make bench` (docs/decisions.md, issue 24, "Did issue 24 make ingestion slower?"). Nothing
here asserts a timing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BEFORE = "76262f4"
"""The commit before issue 24's ingestion changes (0091, 0092)."""


async def _measure() -> dict[str, list[float]]:
    import asyncpg

    import bench.bench_ingest as bi
    from state.db import Database
    from state.embedded import embedded_server_url, server_dsn, stop_embedded_server
    from state.migrate import apply_migrations
    from state.settings import get_settings, load_settings

    with tempfile.TemporaryDirectory(prefix="ac-ingest-ab-") as tmp_name:
        tmp = Path(tmp_name)
        server = embedded_server_url(tmp / "pg")
        try:
            admin = await asyncpg.connect(server)
            await admin.execute("CREATE DATABASE ab")
            await admin.close()
            url = server_dsn(server, "ab")
            await apply_migrations(url)
            os.environ.update({"DATABASE_URL": url, "AC_CONTEXT_DATA_DIR": str(tmp / "cli")})
            get_settings.cache_clear()
            db = await Database.open(load_settings(pool_min_size=1, pool_max_size=8), url=url, migrate=False)
            try:
                await bi._warm()
                sets = {
                    "geotopo": [bi.GEOTOPO],
                    "fastapi": sorted(bi.FASTAPI.rglob("*.md")),
                    "small_1000": bi.small_documents(tmp / "small", count=1000),
                }
                return {
                    label: [(await bi._cli(db, files))["seconds"] for _ in range(2)] for label, files in sets.items()
                }
            finally:
                await db.close()
        finally:
            stop_embedded_server(tmp / "pg")


def _run_tree(tree: Path) -> dict[str, list[float]]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.ingest_before_after", "--measure"],
        cwd=tree, env={**os.environ, "PYTHONPATH": str(tree)}, check=True, capture_output=True, text=True,
    )  # fmt: skip
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="ingest_before_after")
    parser.add_argument("--before", default=BEFORE)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:
        print(json.dumps(asyncio.run(_measure())))
        return 0
    result: dict[str, Any] = {"before_commit": args.before, "before": {}, "after": {}}
    with tempfile.TemporaryDirectory(prefix="ac-ingest-before-") as tmp_name:
        tree = Path(tmp_name) / "main"
        tree.mkdir()
        (tree.parent / "shared").symlink_to(ROOT.parent / "shared")  # the corpus, beside the tree as here
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
        shutil.copy(__file__, tree / "bench" / "ingest_before_after.py")
        for _ in range(args.rounds):
            for side, where in (("before", tree), ("after", ROOT)):
                for label, seconds in _run_tree(where).items():
                    result[side].setdefault(label, []).extend(seconds)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
