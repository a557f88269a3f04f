"""Lists that show whole ids and say when they stop: `sources list` and `ingest` print every source id and
file path whole at a narrow terminal (a real process, `COLUMNS=80`); every `… list` reads the core's paged
read and takes `--limit N`, `--cursor C` and `--all`; a page with more after it says `showing N of M <rows>;
next page: --cursor C (or --all)` (on stderr under `--json`, whose rows stay the JSON alone), and following
the cursors shows every row once; a cursor the list did not give out is one line, `invalid_cursor`."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from typer.testing import CliRunner

from functions.cli import app
from knowledge.documents.objects import LocalObjectStore
from state.api_keys import mint_key
from state.db import Database
from state.receipts import begin_receipt
from state.settings import get_settings
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit

AC_CONTEXT = str(Path(sys.executable).with_name("ac-context"))
LONG_REASON = "document_malformed: " + "the PDF is damaged beyond repair and cannot be read at all " * 3


class Env:
    """The CLI's environment and the test's kit on the same database and object store."""

    def __init__(self, kit: Kit, data: Path) -> None:
        self.kit = kit
        self.data = data

    async def cli(self, *args: str) -> Any:
        """`ac-context …` through the real group, in this process (in a thread: it owns its event loop)."""

        def call() -> Any:
            get_settings.cache_clear()
            return CliRunner().invoke(app, list(args))

        return await asyncio.to_thread(call)

    async def process(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`ac-context …` as a real process on an 80-column terminal."""
        env = {**os.environ, "COLUMNS": "80"}
        return await asyncio.to_thread(
            subprocess.run, [AC_CONTEXT, *args], env=env, capture_output=True, text=True, timeout=120
        )


@pytest.fixture
async def env(db: Database, db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Env]:
    data = tmp_path / "data"
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("AC_CONTEXT_DATA_DIR", str(data))
    monkeypatch.delenv("AC_CONTEXT_DEBUG", raising=False)
    kit = Kit(db, LocalObjectStore(data / "objects"))
    await kit.use_platform_model(FAKE)  # nothing to warm: the fake embeds at once
    yield Env(kit, data)
    get_settings.cache_clear()


async def _sources(kit: Kit, org: UUID, count: int) -> list[UUID]:
    """`count` pending sources with long titles, every other one failed with a long reason."""
    sources = []
    for n in range(count):
        title = f"A quarterly review of the account plan for region {n} with a title much longer than a column"
        sources.append(await kit.register(org, f"Document {n}.", title=title))
    async with kit.db.connection() as conn:
        await conn.execute(
            "UPDATE agent.knowledge_sources SET status = 'failed', failure_reason = $2, pending_since = NULL "
            "WHERE id = ANY($1::uuid[])",
            sources[::2],
            LONG_REASON,
        )
    return sources


async def test_sources_list_prints_every_id_whole_on_an_80_column_terminal(env: Env, factory: Factory) -> None:
    org = await factory.organization()
    sources = await _sources(env.kit, org, 4)
    done = await env.process("sources", "list", "--org", str(org))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for source in sources:
        assert any(str(source) in line for line in lines), f"{source} is cut: {done.stdout}"
    assert "…" not in done.stdout, "nothing is cut with an ellipsis"
    flat = " ".join(done.stdout.split())
    assert " ".join(LONG_REASON.split()) in flat, "a failure reason is printed whole (wrapped, never cut)"
    assert "showing" not in done.stdout, "a list that fits its page says nothing more"


async def test_ingest_prints_every_failed_file_path_and_source_id_whole_on_an_80_column_terminal(
    env: Env, factory: Factory, tmp_path: Path
) -> None:
    org = await factory.organization()
    folder = tmp_path / "a folder with a rather long name" / "and another level of nesting below it"
    folder.mkdir(parents=True)
    names = [f"an-empty-document-with-a-long-file-name-number-{n}.md" for n in range(2)]
    for n, name in enumerate(names):
        (folder / name).write_text("\n" * (n + 1))  # empty, each with its own bytes (no deduplication)
    (folder / "good.md").write_text("# Good\n\nA readable document.")
    done = await env.process("ingest", str(folder), "--org", str(org))
    assert done.returncode == 1, done.stdout + done.stderr
    async with env.kit.db.connection() as conn:
        failed = await conn.fetch(
            "SELECT id, title FROM agent.knowledge_sources WHERE organization_id = $1 AND status = 'failed'", org
        )
    assert len(failed) == 2
    lines = done.stdout.splitlines()
    for name in names:
        assert any(str((folder / name).resolve()) in line for line in lines), f"{name} is cut: {done.stdout}"
    for row in failed:
        assert any(str(row["id"]) in line for line in lines), f"{row['id']} is cut: {done.stdout}"
    assert "total failed" in done.stdout and "total ready" in done.stdout


async def test_sources_list_pages_say_n_of_m_and_take_limit_all_and_status(env: Env, factory: Factory) -> None:
    org = await factory.organization()
    sources = await _sources(env.kit, org, 5)  # 3 failed, 2 pending
    paged = await env.cli("sources", "list", "--org", str(org), "--limit", "2")
    assert paged.exit_code == 0, paged.output
    assert "showing 2 of 5 sources; next page: --cursor " in paged.stdout
    whole = await env.cli("sources", "list", "--org", str(org), "--all")
    assert whole.exit_code == 0 and "showing" not in whole.stdout
    assert all(str(s) in whole.stdout for s in sources)
    failed = await env.cli("sources", "list", "--org", str(org), "--status", "failed", "--limit", "2", "--json")
    assert failed.exit_code == 0, failed.output
    rows = json.loads(failed.stdout)
    assert len(rows) == 2 and {r["status"] for r in rows} == {"failed"}, "the status filter runs before the page"
    assert "showing 2 of 3 sources" in failed.stderr
    pending = await env.cli("sources", "list", "--org", str(org), "--status", "pending", "--limit", "1")
    assert "showing 1 of 2 sources" in pending.stdout


async def test_org_keys_and_receipts_lists_say_n_of_m_when_they_page(env: Env, factory: Factory) -> None:
    orgs = [await factory.organization() for _ in range(3)]
    for org in orgs:
        await mint_key(env.kit.db, organization_id=org, name="k")
        async with env.kit.db.connection() as conn:
            await begin_receipt(conn, "source", organization_id=org, target_id=org, requested_by="test")
    for args, noun, total in (
        (["org", "list"], "organizations", 3),
        (["keys", "list"], "keys", 3),
        (["receipts", "list"], "receipts", 3),
    ):
        paged = await env.cli(*args, "--limit", "2")
        assert paged.exit_code == 0, paged.output
        assert f"showing 2 of {total} {noun}; next page: --cursor " in paged.stdout, paged.stdout
        whole = await env.cli(*args, "--all", "--json")
        assert whole.exit_code == 0 and len(json.loads(whole.stdout)) == total and "showing" not in whole.stderr


async def test_memory_list_says_n_of_m_when_it_pages(env: Env, factory: Factory) -> None:
    org = await factory.organization()
    user = await factory.user(org)
    definition = await factory.definition(org)
    run = await factory.run(org, definition_id=definition, user_id=user, status="running")
    who = ["--org", str(org), "--definition", str(definition), "--run", str(run), "--user", str(user)]
    for n in range(3):
        made = await env.cli("memory", "remember", "--attribute", f"observation.fact{n}", "--text", f"fact {n}", *who)
        assert made.exit_code == 0, made.output
    paged = await env.cli("memory", "list", "--org", str(org), "--limit", "2")
    assert paged.exit_code == 0, paged.output
    assert "showing 2 of 3 memories; next page: --cursor " in paged.stdout
    whole = await env.cli("memory", "list", "--org", str(org), "--all", "--json")
    assert len(json.loads(whole.stdout)) == 3 and "showing" not in whole.stderr


def _next_cursor(text: str) -> str | None:
    words = " ".join(text.split()).split(" ")
    return words[words.index("--cursor") + 1] if "--cursor" in words else None


async def test_following_the_cursors_shows_every_row_once_and_a_foreign_cursor_is_one_line(
    env: Env, factory: Factory
) -> None:
    org, other = await factory.organization(), await factory.organization()
    sources = await _sources(env.kit, org, 5)
    await _sources(env.kit, other, 2)
    seen: list[str] = []
    cursor: str | None = None
    for _ in range(100):  # a cursor that never advances fails here, never hangs
        page = await env.cli(
            "sources", "list", "--org", str(org), "--limit", "2", "--json", *(["--cursor", cursor] if cursor else [])
        )
        assert page.exit_code == 0, page.output
        seen.extend(r["id"] for r in json.loads(page.stdout))
        await env.kit.register(org, f"arrives meanwhile {len(seen)}")  # lands before the cursor, not in the walk
        cursor = _next_cursor(page.stderr)
        if cursor is None:
            break
    else:
        raise AssertionError("the walk never reached a last page")
    assert sorted(seen) == sorted(str(s) for s in sources), "every source once, across pages"
    first = await env.cli("sources", "list", "--org", str(org), "--limit", "1", "--json")
    foreign = await env.cli("sources", "list", "--org", str(other), "--cursor", _next_cursor(first.stderr) or "")
    assert foreign.exit_code == 1 and "invalid_cursor" in foreign.output and "Traceback" not in foreign.output
    assert len(foreign.output.strip().splitlines()) == 1, "one line"
    titled = await env.cli("sources", "list", "--org", str(org), "--title", "REGION 3", "--json")
    assert [r["title"] for r in json.loads(titled.stdout)] == [
        "A quarterly review of the account plan for region 3 with a title much longer than a column"
    ]
