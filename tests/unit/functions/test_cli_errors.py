"""The CLI's one error path and its safe output, without a database.

A project error is one line `error: <code>: <message>` and exit 1; `--debug` (anywhere) or
`AC_CONTEXT_DEBUG=1` shows its traceback instead; an unexpected exception always shows one; `--version`
answers; and human output prints document text and citations as text, never as markup or control codes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from context.models import ContextBrief, CutCandidate, ExplainedItem, ResourceRef
from context.packer import ContextPacker
from functions.cli import _common, _show, app
from functions.cli.errors import CliError, error_line
from knowledge.embedding.registry import EMBEDDING_MODELS, offered_models
from knowledge.errors import UnknownEmbeddingModelError
from state.errors import OrganizationNotFoundError
from tests.unit.context.helpers import item, policy, spec

ROOT = Path(__file__).resolve().parents[3]


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The real entry point in a child process, as a newcomer runs it."""
    child_env = {k: v for k, v in os.environ.items() if not k.startswith("AC_CONTEXT_")} | (env or {})
    code = "from functions.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, env=child_env, capture_output=True, text=True, timeout=120
    )


def test_an_error_line_is_one_line_with_its_code_and_a_hint_where_one_helps() -> None:
    line = error_line(OrganizationNotFoundError("no organization 42"))
    assert line.startswith("error: organization_not_found: no organization 42 — ") and "org create" in line
    assert error_line(CliError("policy_not_json", "p.json is not JSON:\n  line 1")) == (
        "error: policy_not_json: p.json is not JSON: line 1"
    )
    assert "\n" not in error_line(UnknownEmbeddingModelError("unknown\nmodel"))


def test_a_project_error_is_one_line_and_debug_shows_its_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "p.json"
    bad.write_text("{not json")
    plain = cli("policy", "validate", str(bad))
    assert plain.returncode == 1 and plain.stderr.strip().splitlines() == [plain.stderr.strip()]
    assert plain.stderr.startswith("error: policy_not_json: ") and "Traceback" not in plain.stderr
    for debug in (
        cli("policy", "validate", str(bad), "--debug"),
        cli("policy", "validate", str(bad), env={"AC_CONTEXT_DEBUG": "1"}),
    ):
        assert debug.returncode == 1 and "Traceback" in debug.stderr and "CliError" in debug.stderr, debug.stderr


def test_a_usage_error_exits_2_and_version_answers() -> None:
    usage = cli("brief", "--org", "acme")
    assert usage.returncode == 2 and "Usage: ac-context brief" in usage.stderr and "Traceback" not in usage.stderr
    version = cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("ac-context 0.")


def test_a_misspelled_setting_is_refused_at_start_by_name() -> None:
    refused = cli("db", "status", env={"AC_CONTEXT_DATA_DIRR": "/tmp/x"})
    assert refused.returncode == 1, refused.stderr
    assert refused.stderr.strip() == (
        "error: settings_invalid: invalid settings: AC_CONTEXT_DATA_DIRR is not a setting "
        "(did you mean AC_CONTEXT_DATA_DIR?) — fix or unset the variable it names "
        "(every setting is in state/settings.py)"
    )


def test_an_unexpected_exception_still_shows_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    main_module = sys.modules["functions.cli.main"]

    def boom(_: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(main_module, "read_policy_file", boom)
    result = CliRunner().invoke(app, ["policy", "validate", __file__])
    assert isinstance(result.exception, RuntimeError), "a bug is never turned into a one-line project error"


def _capture(monkeypatch: pytest.MonkeyPatch) -> Console:
    console = Console(record=True, width=200, force_terminal=True)
    monkeypatch.setattr(_common, "console", console)
    monkeypatch.setattr(_show, "console", console)
    return console


def test_a_briefs_citations_and_bracketed_text_print_as_text(monkeypatch: pytest.MonkeyPatch) -> None:
    console = _capture(monkeypatch)
    ref = ResourceRef(kind="crm.company", id="8f21")
    items = [item("application", "Stage", "see [/etc/x.conf] and [red]x[/red] \x1b[31mred", ref=ref)]
    brief, why = ContextPacker().pack_explained(items, policy(spec("application")))
    _show.show_brief(brief)
    _show.show_explanation(why)
    text = console.export_text()
    assert "[crm.company 8f21]" in brief.text and "[crm.company 8f21]" in text, "the citation shows on screen"
    assert "(/etc/x.conf)" in text and "(red)x(/red)" in text
    assert "\x1b[31mred" not in console.export_text(styles=True), "document text cannot style the terminal"


def test_safe_text_escapes_markup_and_drops_control_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    console = _capture(monkeypatch)
    hostile = _common.safe("[/etc/x.conf] \x1b[2J")
    console.print(f"[bold]{hostile}[/]")
    console.print(_common.plain("[crm.company 1] \x07"))
    assert console.export_text() == "[/etc/x.conf] [2J\n[crm.company 1] \n"


def test_explained_rows_show_the_winner_of_a_lost_subject(monkeypatch: pytest.MonkeyPatch) -> None:
    console = _capture(monkeypatch)
    key = "crm.company:1:stage"
    items = [item("knowledge", "weak", key=key), item("application", "strong", key=key)]
    _, why = ContextPacker().pack_explained(items, policy(spec("knowledge"), spec("application")))
    _show.show_explanation(why)
    assert "same subject lost to application of class application" in console.export_text()
    assert isinstance(why.items[0], ExplainedItem) and ContextBrief.empty().text == ""


def test_explained_output_names_what_a_source_cut_and_the_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    console = _capture(monkeypatch)
    _, why = ContextPacker().pack_explained([item("knowledge", "kept")], policy(spec("knowledge")))
    floor = CutCandidate(source="knowledge", kind="knowledge", ref=ResourceRef(kind="knowledge_source", id="9c1"),
                         title="Notes (part 2)", tokens=12, rank=2, score=0.1, rule="relevance_floor",
                         message="cosine 0.05, under the relevance floor 0.30")  # fmt: skip
    _show.show_explanation(why.model_copy(update={"cut": [floor]}))
    text = console.export_text()
    assert "relevance_floor" in text and "knowledge_source 9c1" in text and "under the relevance floor" in text


def test_the_candidates_a_source_cut_print_with_their_rule_score_and_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    console = _capture(monkeypatch)
    _, why = ContextPacker().pack_explained([item("knowledge", "kept one")], policy(spec("knowledge")))
    cut = CutCandidate(
        source="knowledge", kind="knowledge", ref=None, title="Refunds [red]x[/red] (part 3)", tokens=61, rank=9,
        score=0.18, rule="relevance_floor", message="fused score 0.18 under the relevance floor 0.30",
    )  # fmt: skip
    _show.show_explanation(why.model_copy(update={"cut": [cut]}))
    text = console.export_text()
    assert "candidates cut before the packer" in text and "relevance_floor" in text and "0.180" in text
    assert "Refunds [red]x[/red] (part 3)" in text and "under the relevance floor 0.30" in text, "markup stays text"
    console = _capture(monkeypatch)
    _show.show_explanation(why)
    assert "cut before the packer" not in console.export_text(), "no table when no source cut anything"


def test_test_models_are_usable_but_never_offered() -> None:
    assert "test/hash-64" in EMBEDDING_MODELS
    assert offered_models(EMBEDDING_MODELS) == ["local/wordllama-l2-supercat-256", "openai/text-embedding-3-small"]
    with pytest.raises(UnknownEmbeddingModelError) as info:
        from knowledge.embedding.registry import get_embedder

        get_embedder("nope/x")
    assert "test/" not in str(info.value)
