"""A newcomer at the command line: every command with a bad input answers one line and the right exit code.

A project error prints `error: <code>: <message>` (one line, a hint after ` — ` where one helps) and exits 1;
a usage error exits 2 with click's usage text; neither prints a traceback unless `--debug` asks for one.
Each command runs through the real `ac-context` group against a fresh database of the test server.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest
from typer.testing import CliRunner

from functions.cli import app
from knowledge.embedding.live_model import begin_switch, running_switch
from state.db import Database
from state.settings import get_settings
from tests.factories import Factory
from tests.support import cli_error_line

Invoke = Callable[..., Any]
UNKNOWN = "00000000-0000-4000-8000-00000000dead"
# The progress bars ingest draws on stderr first (registering, then ingesting with a chunk count).
PROGRESS = re.compile(r"^(registering|ingesting)\b.* \d+/\d+ \d+:\d\d:\d\d$")


@pytest.fixture
def cli(db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Invoke]:
    """Run `ac-context …` on the test database, in a thread (the command owns its event loop)."""
    monkeypatch.setenv("DATABASE_URL", db_url)
    monkeypatch.setenv("AC_CONTEXT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("AC_CONTEXT_DEBUG", raising=False)

    def invoke(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> Any:
        get_settings.cache_clear()
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(CliRunner().invoke, app, list(args), input=input, env=env).result()

    yield invoke
    get_settings.cache_clear()


project_error = partial(cli_error_line, progress=PROGRESS)
"""Assert one line `error: <code>: …` on stderr (beside a progress bar), exit 1; return the line."""


def usage_error(result: Any, words: str) -> None:
    """Assert a usage error: exit 2, click's usage line, the problem named, no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    flat = " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.stderr).split())  # rich boxes and wraps the message
    assert "Usage: ac-context" in flat and words in flat, flat
    assert "Traceback" not in result.output


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.fixture
def org(session_loop: asyncio.AbstractEventLoop, factory: Factory) -> UUID:
    return session_loop.run_until_complete(factory.organization())


def test_an_unknown_organization_is_one_line_on_every_organization_scoped_command(cli: Invoke, tmp_path: Path) -> None:
    doc = write(tmp_path, "a.md", "# A\n\nSome text.")
    for args in (
        ["brief", "--org", UNKNOWN],
        ["search", "pricing", "--org", UNKNOWN],
        ["ingest", doc, "--org", UNKNOWN],
        ["memory", "list", "--org", UNKNOWN],
        ["sources", "list", "--org", UNKNOWN],
        ["switch-model", "--status", "--org", UNKNOWN],
    ):
        line = project_error(cli(*args), "organization_not_found")
        assert UNKNOWN in line and "ac-context org create" in line, line


def test_organizations_can_be_created_and_listed_then_used(cli: Invoke) -> None:
    created = cli("org", "create", "Acme", "--json")
    assert created.exit_code == 0, created.output
    org = json.loads(created.stdout)["id"]
    listed = json.loads(cli("org", "list", "--json").stdout)
    assert [o["name"] for o in listed if o["id"] == org] == ["Acme"]
    assert cli("sources", "list", "--org", org).exit_code == 0
    usage_error(cli("org", "create", "   "), "1 to 200 characters")


def test_each_bad_input_is_one_line_with_its_code(cli: Invoke, org: UUID, tmp_path: Path) -> None:
    o = str(org)
    not_json = write(tmp_path, "p.json", "{sources: nope")
    invalid = write(tmp_path, "bad.json", json.dumps({"sources": [{"name": "knowledge", "token_budget": -1}]}))
    cases: list[tuple[list[str], dict[str, str] | None, str]] = [
        (["brief", "--org", o, "--policy", not_json], None, "policy_not_json"),
        (["brief", "--org", o, "--policy", invalid], None, "policy_invalid"),
        (["policy", "validate", not_json], None, "policy_not_json"),
        (["switch-model", "nope/model"], None, "embedding_model_unknown"),
        (["memory", "forget", str(uuid4()), "--org", o, "--definition", str(uuid4()), "--run", str(uuid4()),
          "--user", str(uuid4())], None, "invalid_invocation"),
        (["sources", "show", str(uuid4())], None, "knowledge_source_not_found"),
        (["migrate"], {"AC_CONTEXT_POOL_MAX_SIZE": "lots"}, "settings_invalid"),
    ]  # fmt: skip
    for args, env, code in cases:
        project_error(cli(*args, env=env), code)


def test_a_misspelled_setting_is_refused_by_name(cli: Invoke) -> None:
    line = project_error(cli("db", "status", env={"AC_CONTEXT_POOL_MAX_SIZ": "3"}), "settings_invalid")
    assert "AC_CONTEXT_POOL_MAX_SIZ is not a setting (did you mean AC_CONTEXT_POOL_MAX_SIZE?)" in line


def test_each_usage_mistake_exits_2(cli: Invoke, org: UUID, tmp_path: Path) -> None:
    o = str(org)
    for args, words in (
        (["brief", "--org", "acme"], "valid UUID"),
        (["brief", "--org", o, "--policy", str(tmp_path / "missing.json")], "does not exist"),
        (["brief", "--org", o, "--strict-entities", "--entity", "nocolon"], "expected kind:id"),
        (["policy", "show", "nope"], "unknown policy"),
        (["policy", "validate", str(tmp_path / "missing.json")], "neither a file nor a fixed policy"),
        (["switch-model"], "name the model"),
        (["switch-model", "test/hash-64", "--status"], "take no model"),
        (["sources", "list"], "exactly one"),
        (["memory", "forget", "not-a-uuid", "--org", o, "--definition", o, "--run", o], "valid UUID"),
    ):
        usage_error(cli(*args), words)


def test_a_switch_to_a_model_whose_key_is_missing_is_refused_before_it_opens(
    cli: Invoke, db: Database, session_loop: asyncio.AbstractEventLoop
) -> None:
    line = project_error(cli("switch-model", "openai/text-embedding-3-small"), "embedding_auth_failed")
    assert "OPENAI_API_KEY" in line
    assert session_loop.run_until_complete(running_switch(db, None)) is None, "no switch opened"
    status = json.loads(cli("switch-model", "--status", "--json").stdout)
    assert status["running"] is False


def test_a_running_switch_is_cancelled_from_the_cli_and_ingestion_works_again(
    cli: Invoke, db: Database, org: UUID, tmp_path: Path, session_loop: asyncio.AbstractEventLoop
) -> None:
    # The state the old CLI left behind: a switch opened to a model that cannot embed here (no key).
    session_loop.run_until_complete(begin_switch(db, None, "openai/text-embedding-3-small", dimensions=1536))
    one = write(tmp_path, "one.md", "# One\n\nFirst text.")
    line = project_error(cli("ingest", one, "--org", str(org)), "embedding_auth_failed")
    assert "OPENAI_API_KEY" in line, "while the switch runs, ingestion builds the keyless model too and fails"
    status = json.loads(cli("switch-model", "--status", "--json").stdout)
    assert status["running"] and status["to_model"] == "openai/text-embedding-3-small"

    cancelled = cli("switch-model", "--cancel")
    assert cancelled.exit_code == 0 and "stays live" in cancelled.stdout, cancelled.output
    assert session_loop.run_until_complete(running_switch(db, None)) is None
    # Bulk ingestion made `one` ready under the live model before the keyless model failed, so it is unchanged.
    for path in (one, write(tmp_path, "two.md", "# Two\n\nSecond text.")):
        again = json.loads(cli("ingest", path, "--org", str(org), "--json").stdout)
        assert again[0]["status"] in {"ready", "unchanged"}, again
    ready = json.loads(cli("sources", "list", "--org", str(org), "--status", "ready", "--json").stdout)
    assert len(ready) == 2, ready
    assert "no switch is running" in cli("switch-model", "--cancel").stdout


def test_sources_show_their_reason_and_a_failed_one_can_be_retried(cli: Invoke, org: UUID, tmp_path: Path) -> None:
    bad = write(tmp_path, "broken.pdf", "%PDF-1.4 this is not a PDF")
    failed = json.loads(cli("ingest", bad, "--org", str(org), "--json").stdout)[0]
    assert failed["status"] == "failed", failed
    listed = json.loads(cli("sources", "list", "--org", str(org), "--status", "failed", "--json").stdout)
    assert [s["id"] for s in listed] == [failed["source_id"]] and listed[0]["failure_reason"]
    shown = cli("sources", "show", failed["source_id"])
    assert shown.exit_code == 0 and "reason:" in shown.stdout, shown.output
    project_error(cli("sources", "retry", failed["source_id"]), "source_failed")
    good = json.loads(cli("ingest", write(tmp_path, "ok.md", "# Ok\n\nFine."), "--org", str(org), "--json").stdout)
    project_error(cli("sources", "retry", good[0]["source_id"]), "source_not_failed")
    detail = json.loads(cli("sources", "show", good[0]["source_id"], "--json").stdout)
    assert detail["status"] == "ready" and detail["models"][0]["chunks"] >= 1


def test_citations_show_in_the_brief_and_explain_mode_prints_the_budgets(
    cli: Invoke, factory: Factory, session_loop: asyncio.AbstractEventLoop
) -> None:
    tenant = session_loop.run_until_complete(factory.tenant(companies=2))
    company = tenant.companies[0]
    shown = cli("brief", "--org", str(tenant.id), "--entity", f"crm.company:{company}")
    assert shown.exit_code == 0, shown.output
    as_json = json.loads(cli("brief", "--org", str(tenant.id), "--entity", f"crm.company:{company}", "--json").stdout)
    cited = re.findall(r"\[crm\.company [0-9a-f-]+\]", as_json["text"])
    assert cited, "the brief cites the company"
    for citation in cited:
        assert citation in shown.stdout, f"{citation} is missing from the human output"

    explained = cli("brief", "--org", str(tenant.id), "--entity", f"crm.company:{company}", "--explain")
    assert explained.exit_code == 0, explained.output
    assert "budgets" in explained.stdout and "total" in explained.stdout and "kept" in explained.stdout
    data = json.loads(cli("brief", "--org", str(tenant.id), "--explain", "--json").stdout)
    assert set(data) == {"brief", "explanation"} and data["explanation"]["total_budget"] == 6000


def test_document_text_with_markup_prints_as_text(cli: Invoke, org: UUID, tmp_path: Path) -> None:
    doc = write(tmp_path, "conf.md", "# Config [bold]\n\nThe settings live in [/etc/x.conf] and [red]nowhere[/red].")
    assert cli("ingest", doc, "--org", str(org)).exit_code == 0
    found = cli("search", "settings live", "--org", str(org))
    assert found.exit_code == 0, found.output
    assert "[/etc/x.conf]" in found.stdout and "[red]nowhere[/red]" in found.stdout
    listed = cli("sources", "list", "--org", str(org))
    assert listed.exit_code == 0 and "ready" in listed.stdout, listed.output


def test_search_prints_each_hits_source_id_and_cuts_its_text_at_a_word_boundary(
    cli: Invoke, org: UUID, tmp_path: Path
) -> None:
    words = " ".join(f"renewal{n} clause{n * 7} notice" for n in range(40))  # long enough to be cut
    doc = write(tmp_path, "contract.md", f"# Contract terms\n\nThe renewal notice period: {words}.")
    assert cli("ingest", doc, "--org", str(org)).exit_code == 0
    found = cli("search", "renewal notice period", "--org", str(org), env={"COLUMNS": "1000"})
    assert found.exit_code == 0, found.output
    hits = json.loads(cli("search", "renewal notice period", "--org", str(org), "--json").stdout)
    assert hits, "the document is found"
    lines = found.stdout.splitlines()
    assert len(lines) == 2 * len(hits), found.stdout
    cut = 0
    for n, hit in enumerate(hits):
        head, text = lines[2 * n], lines[2 * n + 1].strip()
        assert head.endswith(f"source {hit['source_id']}"), head
        flat = " ".join(hit["text"].split())
        if len(flat) <= 240:
            assert text == flat, "a short text prints whole"
            continue
        cut += 1
        assert text.endswith("…") and len(text) <= 240, text
        kept = text.removesuffix("…")
        assert flat.startswith(kept) and flat[len(kept)] == " ", f"cut mid-word: {kept[-20:]!r}"
    assert cut, "a hit's text was long enough to be cut"


def test_memory_tool_refusals_are_one_line(
    cli: Invoke, factory: Factory, session_loop: asyncio.AbstractEventLoop
) -> None:
    async def world() -> list[str]:
        org = await factory.organization()
        user = await factory.user(org)
        definition = await factory.definition(org)
        run = await factory.run(org, definition_id=definition, user_id=user, status="running")
        return ["--org", str(org), "--definition", str(definition), "--run", str(run), "--user", str(user)]

    who = session_loop.run_until_complete(world())
    project_error(cli("memory", "remember", "--attribute", "notes.x", "--text", "t", *who), "invalid_input")
    kept = cli("memory", "remember", "--attribute", "preference.language", "--text", "British English", *who, "--json")
    assert kept.exit_code == 0, kept.output
    memory_id = json.loads(kept.stdout)["memory_id"]
    project_error(
        cli("memory", "remember", "--attribute", "preference.language", "--text", "British English", *who),
        "memory_duplicate",
    )
    assert cli("memory", "forget", memory_id, *who).exit_code == 0
    line = project_error(cli("memory", "forget", memory_id, *who), "memory_already_forgotten")
    assert "already forgotten" in line
