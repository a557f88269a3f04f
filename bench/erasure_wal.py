"""How long an erased organization's bytes stay in PostgreSQL's WAL, measured: `python -m bench.erasure_wal`.

Data shape: one organization created here, 40 uploaded documents each holding a unique marker in its title,
file name and text, registered through the ingestion core (rows, lexemes, postings: every WAL record a real
upload writes), beside a second organization with its own documents. The first is erased with
`erase_organization` (its own VACUUM/ANALYZE/pg_statistic/CHECKPOINT steps included). Then, round by round,
`pg_switch_wal()` and `CHECKPOINT` (with `--traffic-mb` of unrelated writes per round, the other tenants'
ordinary work), the files of `pg_wal` holding the marker are counted until none does. The embedded server's
settings are PostgreSQL's defaults for WAL (`min_wal_size` 80 MB, `max_wal_size` 1 GB, no archiving): a
recycled segment keeps its old bytes until new WAL overwrites it, so switches alone do not erase.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import tempfile
from pathlib import Path
from uuid import uuid4

import asyncpg

from functions.organization_erasure import erase_organization
from knowledge.documents.objects import LocalObjectStore
from knowledge.ingestion.registration import register_upload
from state.db import Database
from state.embedded import embedded_server_url, server_dsn, stop_embedded_server
from state.migrate import apply_migrations
from state.organizations import create_organization
from state.settings import load_settings


def _wal_files_holding(pg_wal: Path, needle: bytes) -> int:
    return sum(1 for p in pg_wal.iterdir() if p.is_file() and needle in p.read_bytes())


async def measure(*, documents: int, traffic_mb: int, rounds: int) -> dict[str, object]:
    """Seed, erase, and count the WAL files holding the erased marker round by round."""
    folder = Path(tempfile.mkdtemp(prefix="ac-context-wal-"))
    try:
        admin_url = embedded_server_url(folder, keep_running=True)
        admin = await asyncpg.connect(admin_url)
        await admin.execute("CREATE DATABASE wal_bench")
        url = server_dsn(admin_url, "wal_bench")
        await apply_migrations(url)
        db = await Database.open(load_settings(pool_min_size=1, pool_max_size=4), url=url, migrate=False)
        store = LocalObjectStore(folder / "objects")
        marker = f"walmarker{uuid4().hex[:12]}"
        erased = (await create_organization(db, "Erased")).id
        kept = (await create_organization(db, "Kept")).id
        for n in range(documents):
            for org, word in ((erased, marker), (kept, "keptword")):
                text = f"# Salary of {word} {n}\n\nThe {word} contract renews every year at {n}00 EUR.\n"
                await register_upload(db, store, organization_id=org, data=text.encode(), filename=f"{word}-{n}.md",
                                      title=f"{word} {n}")  # fmt: skip
        pg_wal = Path(await admin.fetchval("SELECT current_setting('data_directory')")) / "pg_wal"
        needle = marker.encode()
        before = _wal_files_holding(pg_wal, needle)
        receipt = await erase_organization(db, store, erased, requested_by="bench")
        figures: list[int] = [_wal_files_holding(pg_wal, needle)]
        filler = "x" * 1000
        await admin.execute("CREATE TABLE IF NOT EXISTS wal_traffic (t text)")
        while figures[-1] > 0 and len(figures) <= rounds:
            if traffic_mb:
                await admin.execute(
                    "INSERT INTO wal_traffic SELECT $1 FROM generate_series(1, $2)", filler, traffic_mb * 1000
                )
                await admin.execute("TRUNCATE wal_traffic")
            await admin.execute("SELECT pg_switch_wal()")
            await admin.execute("CHECKPOINT")
            figures.append(_wal_files_holding(pg_wal, needle))
        settings = {
            r["name"]: r["setting"]
            for r in await admin.fetch(
                "SELECT name, setting FROM pg_settings WHERE name IN ('min_wal_size', 'max_wal_size', 'wal_keep_size')"
            )
        }
        await db.close()
        await admin.close()
        return {
            "shape": f"{documents} documents per organization, 2 organizations, erase one",
            "wal_files_holding_marker_before_erasure": before,
            "after_erasure_then_per_round": figures,
            "rounds_until_none": len(figures) - 1 if figures[-1] == 0 else None,
            "traffic_mb_per_round": traffic_mb,
            "physical": receipt.physical,
            "settings": settings,
        }
    finally:
        stop_embedded_server(folder)
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    """Run the measurement and print its figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    for traffic in (0, 16):
        print(json.dumps(asyncio.run(measure(documents=args.documents, traffic_mb=traffic, rounds=args.rounds))))


if __name__ == "__main__":
    main()
