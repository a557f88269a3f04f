"""`ac-context serve` (and so `make serve`) prints the console's address in both modes."""

from __future__ import annotations

import pytest

from functions.cli._serve import plan_serve


def test_the_dev_banner_names_the_console_address(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AC_CONTEXT_RUN_FUNCTIONS", "in-process")  # no probe of an Inngest dev server
    plan = plan_serve({"AC_CONTEXT_RUN_FUNCTIONS": "in-process"}, host="127.0.0.1", port=8123)
    assert "console: http://127.0.0.1:8123/console (sign in with the token or an API key)" in plan.lines
