"""Owner and review date at the command line: `ingest --owner --review-by`, `sources list [--overdue]`.

A review date that is not a date is one line `error: review_field_invalid: --review-by …` and stores
nothing; `sources list` shows each source's owner and review date, and `--overdue` lists exactly the
sources whose review date is before today in UTC.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import date, timedelta
from functools import partial
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from typer.testing import CliRunner

from functions.cli import app
from state.db import Database
from state.settings import get_settings
from tests.factories import Factory
from tests.support import cli_error_line

Invoke = Callable[..., Any]
PROGRESS = re.compile(r"^(registering|ingesting)\b.* \d+/\d+ \d+:\d\d:\d\d$")
project_error = partial(cli_error_line, progress=PROGRESS)


@pytest.fixture
def cli(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Invoke]:
    """Run `ac-context …` on the test database, in a thread (the command owns its event loop)."""
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("AC_CONTEXT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("COLUMNS", "240")
    monkeypatch.delenv("AC_CONTEXT_DEBUG", raising=False)

    def invoke(*args: str) -> Any:
        get_settings.cache_clear()
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(CliRunner().invoke, app, list(args)).result()

    yield invoke
    get_settings.cache_clear()


@pytest.fixture
def org(session_loop: asyncio.AbstractEventLoop, factory: Factory) -> UUID:
    return session_loop.run_until_complete(factory.organization())


def _count(session_loop: asyncio.AbstractEventLoop, db: Database) -> int:
    async def count() -> int:
        async with db.connection() as conn:
            return int(await conn.fetchval("SELECT count(*) FROM agent.knowledge_sources"))

    return session_loop.run_until_complete(count())


def _utc_today(session_loop: asyncio.AbstractEventLoop, db: Database) -> date:
    async def today() -> date:
        async with db.connection() as conn:
            return await conn.fetchval("SELECT (now() AT TIME ZONE 'UTC')::date")  # type: ignore[no-any-return]

    return session_loop.run_until_complete(today())


def test_a_review_date_that_is_not_a_date_is_one_line_and_stores_nothing(
    cli: Invoke, org: UUID, tmp_path: Path, session_loop: asyncio.AbstractEventLoop, db: Database
) -> None:
    doc = tmp_path / "a.md"
    doc.write_text("# A\n\nSome text.")
    for bad in ("2026-02-30", "31.01.2026", ""):
        line = project_error(cli("ingest", str(doc), "--org", str(org), "--review-by", bad), "review_field_invalid")
        assert "--review-by is not a date" in line
    line = project_error(cli("ingest", str(doc), "--org", str(org), "--owner", " "), "review_field_invalid")
    assert "--owner is blank" in line
    assert _count(session_loop, db) == 0


def test_sources_list_shows_owner_and_review_date_and_overdue_lists_exactly_the_overdue_ones(
    cli: Invoke, org: UUID, tmp_path: Path, session_loop: asyncio.AbstractEventLoop, db: Database
) -> None:
    today = _utc_today(session_loop, db)
    dates = {"stale": today - timedelta(days=1), "due": today, "later": today + timedelta(days=30)}
    for name, when in dates.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / f"{name}.md").write_text(f"# {name}\n\nThe {name} handbook page.")
        done = cli("ingest", str(folder), "--org", str(org), "--owner", f"team {name}", "--review-by", when.isoformat())
        assert done.exit_code == 0, done.output
    (tmp_path / "undated.md").write_text("# undated\n\nNo review date.")
    assert cli("ingest", str(tmp_path / "undated.md"), "--org", str(org)).exit_code == 0

    listed = cli("sources", "list", "--org", str(org), "--json")
    rows = {r["title"]: (r["owner"], r["review_by"], r["overdue"]) for r in json.loads(listed.stdout)}
    assert rows == {
        "stale": ("team stale", dates["stale"].isoformat(), True),
        "due": ("team due", today.isoformat(), False),
        "later": ("team later", dates["later"].isoformat(), False),
        "undated": (None, None, False),
    }
    overdue = cli("sources", "list", "--org", str(org), "--overdue", "--json")
    assert [r["title"] for r in json.loads(overdue.stdout)] == ["stale"]
    table = cli("sources", "list", "--org", str(org), "--overdue")
    assert (
        table.exit_code == 0
        and "team stale" in table.stdout
        and f"{dates['stale'].isoformat()} (overdue)" in table.stdout
    )
    assert "team due" not in table.stdout and "undated" not in table.stdout
    full = cli("sources", "list", "--org", str(org))
    assert "owner" in full.stdout and "review by" in full.stdout and "team later" in full.stdout
    none = cli("sources", "list", "--platform", "--overdue")
    assert none.exit_code == 0 and "no overdue sources in this scope" in none.stdout
