"""The newcomer's edges: `make demo` ends with what to run next, and `serve`, `inngest.dev.json` and the demo's
last lines name the same port."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from functions.cli._serve import DEFAULT_PORT, INNGEST_CONFIG, plan_serve
from functions.cli.main import serve
from functions.demo.next_steps import SERVE_URL, next_steps
from functions.demo.story import run_demo

ROOT = Path(__file__).resolve().parents[3]


def test_serve_inngest_dev_json_and_the_demo_name_the_same_port() -> None:
    config = json.loads((ROOT / INNGEST_CONFIG).read_text())
    assert config["sdk-url"] == [f"http://127.0.0.1:{DEFAULT_PORT}/api/inngest"]
    assert inspect.signature(serve).parameters["port"].default == DEFAULT_PORT
    assert SERVE_URL == f"http://127.0.0.1:{DEFAULT_PORT}"


def test_serve_names_inngest_dev_json_on_its_port_and_the_url_to_pass_on_another(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AC_CONTEXT_RUN_FUNCTIONS", "in-process")  # no probe of an Inngest dev server
    environ = {"AC_CONTEXT_RUN_FUNCTIONS": "in-process"}
    default = " ".join(plan_serve(environ, host="127.0.0.1", port=DEFAULT_PORT).lines)
    assert f"npx inngest-cli@latest dev --config {INNGEST_CONFIG}" in default
    other = " ".join(plan_serve(environ, host="127.0.0.1", port=8123).lines)
    assert "npx inngest-cli@latest dev -u http://127.0.0.1:8123/api/inngest" in other
    assert f"{INNGEST_CONFIG} names port {DEFAULT_PORT}" in other


def test_the_demo_ends_with_what_to_run_next_and_where_the_console_is() -> None:
    text = "\n".join(next_steps())
    assert "make serve" in text and f"{SERVE_URL}/console" in text and "sign in with that token" in text
    assert "keys mint" in text, "how an organization key signs in"
    source = inspect.getsource(run_demo)
    last = "for line in next_steps():\n        console.print(line, markup=False, highlight=False, soft_wrap=True)"
    assert source.rstrip().endswith(last), "the demo's last lines are the next steps"
