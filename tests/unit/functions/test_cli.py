"""The `ac-context` commands: every one answers `--help`, and the publish check needs no database."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from functions.cli import app

COMMANDS = [
    [], ["demo"], ["migrate"], ["serve"], ["ingest"], ["search"], ["brief"], ["sweep"], ["switch-model"],
    ["memory"], ["memory", "remember"], ["memory", "forget"], ["memory", "list"],
    ["policy"], ["policy", "validate"], ["policy", "show"], ["bench"],
]  # fmt: skip


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "ac-context")
def test_every_command_has_help(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output


def test_policy_validate_lists_every_problem_and_exits_1() -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["policy", "validate", "front_door", "--json"])
    assert ok.exit_code == 0 and json.loads(ok.output) == {"valid": True}
    bad = {"sources": [{"name": "knowledge", "token_budget": 5, "options": {"user_id": "x"}}], "total_token_budget": 0}
    refused = runner.invoke(app, ["policy", "validate", "-", "--json"], input=json.dumps(bad))
    assert refused.exit_code == 1
    locs = [e["loc"] for e in json.loads(refused.output)["errors"]]
    assert ["sources", 0, "options", "user_id"] in locs and ["total_token_budget"] in locs


def test_policy_show_prints_a_fixed_policy() -> None:
    shown = CliRunner().invoke(app, ["policy", "show", "front_door"])
    assert shown.exit_code == 0 and json.loads(shown.output)["total_token_budget"] == 6000


def test_ingest_needs_exactly_one_of_an_organization_and_the_platform(tmp_path: object) -> None:
    from pathlib import Path

    doc = Path(str(tmp_path)) / "a.md"
    doc.write_text("# A")
    runner = CliRunner()
    neither = runner.invoke(app, ["ingest", str(doc)])
    both = runner.invoke(app, ["ingest", str(doc), "--platform", "--org", "00000000-0000-4000-8000-000000000001"])
    assert neither.exit_code == both.exit_code == 2
    assert "exactly one" in neither.output and "exactly one" in both.output


def test_a_search_snippet_is_cut_at_a_word_boundary_with_an_ellipsis() -> None:
    from functions.cli._common import snippet

    assert snippet("short  text\n here", 40) == "short text here", "a short text prints whole, on one line"
    assert snippet("alpha beta gamma delta", 14) == "alpha beta…", "never `alpha beta ga…`"
    assert snippet("alpha beta gamma", 11) == "alpha beta…", "a cut that falls on a space keeps the word before it"
    assert snippet("x" * 30, 10) == "x" * 9 + "…", "one word longer than the limit is cut inside it"
