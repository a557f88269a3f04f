"""The MCP SDK loads where it serves only: importing the app (a lifespan not yet entered) or running `ac-context
--help` never imports it (CONVENTIONS 11: import cost is part of the interface)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.integration.mcp.support import ROOT

_LOADED = (
    "import json, sys\n{}\nprint(json.dumps(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.'))))"
)


def _sdk_modules(code: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _LOADED.format(code)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_importing_the_app_does_not_load_the_mcp_sdk() -> None:
    assert _sdk_modules("import functions.app") == []


def test_the_cli_help_does_not_load_the_mcp_sdk() -> None:
    code = (
        "from functions.cli.main import app\nfrom typer.testing import CliRunner\nCliRunner().invoke(app, ['--help'])"
    )
    assert _sdk_modules(code) == []
