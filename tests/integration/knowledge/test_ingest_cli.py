"""`ac-context ingest DIR` as a real process: exit status, failure reasons, and a SIGKILL during the COPY."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from state.db import Database
from tests.factories import Factory
from tests.integration.knowledge.helpers import Kit

CLI = [str(Path(sys.executable).parent / "ac-context")]
ENCRYPTED = Path("pdf/py-pdf-sample-files/005-libreoffice-writer-password/libreoffice-writer-password.pdf")


def _env(db_url: str, data_dir: Path) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": db_url, "AC_CONTEXT_DATA_DIR": str(data_dir), "COLUMNS": "200"}


def _write_docs(folder: Path, count: int, words: int = 40) -> None:
    for n in range(count):
        sub = folder / f"part{n % 3}"
        sub.mkdir(parents=True, exist_ok=True)
        body = " ".join(f"Ticket {n} about invoice {i} was resolved." for i in range(words))
        (sub / f"doc{n:04d}.md").write_text(f"# Ticket {n}\n\n{body}\n")


async def test_ingest_dir_exits_non_zero_and_prints_each_failure_reason(
    kit: Kit, factory: Factory, db_url: str, tmp_path: Path, corpus: Path
) -> None:
    org = await factory.organization()
    docs = tmp_path / "docs"
    _write_docs(docs, 6)
    (docs / "part0" / "locked.pdf").write_bytes((corpus / ENCRYPTED).read_bytes())
    (docs / "part1" / "[red]blob.txt").write_bytes(bytes(range(256)) * 8)
    (docs / "part2" / "skip.log").write_text("not included")
    (docs / ".hidden").mkdir()
    (docs / ".hidden" / "secret.md").write_text("# hidden")
    args = [
        *CLI,
        "ingest",
        str(docs),
        "--org",
        str(org),
        "--include",
        "*.md",
        "--include",
        "*.pdf",
        "--include",
        "*.txt",
    ]
    done = await asyncio.to_thread(
        subprocess.run, args, env=_env(db_url, tmp_path), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 1, done.stdout + done.stderr
    out = done.stdout
    assert "pdf_encrypted" in out and "document_type_unsupported" in out
    assert "[red]blob.txt" in out, "a file name is printed as itself, never as rich markup"
    assert "total ready" in out and "skip.log" not in out
    async with kit.db.connection() as conn:
        counts = dict(await conn.fetch("SELECT status, count(*) FROM agent.knowledge_sources GROUP BY status"))
    assert counts == {"ready": 6, "failed": 2}

    again = await asyncio.to_thread(
        subprocess.run, [*CLI, "ingest", str(docs / "part0"), "--org", str(org), "--include", "*.md", "--json"],
        env=_env(db_url, tmp_path), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert {row["status"] for row in json.loads(again.stdout)} == {"unchanged"}


async def _copy_running(db: Database) -> bool:
    async with db.connection() as conn:
        return bool(
            await conn.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
                "AND query ILIKE 'COPY %knowledge_chunk_staging%' AND pid <> pg_backend_pid()"
            )
        )


async def test_a_sigkill_during_the_bulk_copy_and_a_rerun_leave_no_duplicate_and_no_missing_chunk(
    kit: Kit, factory: Factory, db_url: str, tmp_path: Path
) -> None:
    org = await factory.organization()
    docs = tmp_path / "docs"
    _write_docs(docs, 400, words=120)
    args = [*CLI, "ingest", str(docs), "--org", str(org), "--json"]
    env = {**_env(db_url, tmp_path), "AC_CONTEXT_INGEST_WORKERS": "1"}
    killed_in_copy = False
    for _attempt in range(5):  # the COPY is a window of some tenths of a second: watch for it, then kill
        proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(30_000):
                if proc.poll() is not None:
                    break
                if await _copy_running(kit.db):
                    os.kill(proc.pid, signal.SIGKILL)
                    killed_in_copy = True
                    break
                await asyncio.sleep(0.002)
        finally:
            if proc.poll() is None and not killed_in_copy:
                proc.kill()
            proc.wait(timeout=60)
        if killed_in_copy:
            break
        await _reset(kit.db)
    assert killed_in_copy, "the test never caught the COPY in flight"
    assert proc.returncode == -signal.SIGKILL

    rerun = await asyncio.to_thread(subprocess.run, args, env=env, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    async with kit.db.connection() as conn:
        dupes = await conn.fetchval(
            "SELECT count(*) FROM (SELECT source_id, embedding_model, ordinal FROM agent.knowledge_chunks "
            "GROUP BY 1, 2, 3 HAVING count(*) > 1) d"
        )
        gaps = await conn.fetch(
            "SELECT s.id, r.chunk_count, count(c.id) AS rows, count(c.embedding) AS vectors, max(c.ordinal) AS last "
            "FROM agent.knowledge_sources s JOIN agent.knowledge_source_models r ON r.source_id = s.id "
            "LEFT JOIN agent.knowledge_chunks c ON c.source_id = s.id GROUP BY s.id, r.chunk_count"
        )
        statuses = dict(await conn.fetch("SELECT status, count(*) FROM agent.knowledge_sources GROUP BY status"))
    assert dupes == 0
    assert statuses == {"ready": 400}
    assert all(g["chunk_count"] == g["rows"] == g["vectors"] == g["last"] + 1 > 0 for g in gaps)


async def _reset(db: Database) -> None:
    async with db.connection() as conn:
        await conn.execute("DELETE FROM agent.knowledge_sources")
