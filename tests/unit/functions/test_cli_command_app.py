"""`ac-context` registers only the command it runs (`functions.cli.main.command_app`), and says the same.

Typer builds every registered command's parameters on each run; the entry point keeps the one asked for.
What a person sees must not change: help, usage errors and suggestions are compared with the whole app's."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from functions.cli.main import app, command_app

SAME = [
    ["search", "--help"],
    ["brief", "--help"],
    ["--debug", "search"],
    ["org"],
    ["org", "list", "--help"],
    ["memory", "list", "--org", "not-a-uuid"],
    ["--direct", "receipts", "--help"],
    ["--help"],
    ["--help", "search"],
    ["serch", "x"],
    [],
]


@pytest.mark.parametrize("args", SAME, ids=lambda a: " ".join(a) or "(none)")
def test_the_command_alone_says_what_the_whole_app_says(args: list[str]) -> None:
    whole = CliRunner().invoke(app, args, prog_name="ac-context")
    alone = CliRunner().invoke(command_app(args), args, prog_name="ac-context")
    assert (alone.exit_code, alone.output) == (whole.exit_code, whole.output)


def test_only_the_command_that_runs_is_registered() -> None:
    only = command_app(["--direct", "search", "q", "--org", "x"])
    assert [c.callback.__name__ for c in only.registered_commands if c.callback] == ["search"]
    assert only.registered_groups == []
    assert command_app(["org", "list"]).registered_commands == []
    assert [g.name for g in command_app(["org", "list"]).registered_groups] == ["org"]
    for whole in (["--help", "search"], ["serch"], [], ["--version"]):
        assert command_app(whole) is app
