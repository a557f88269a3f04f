"""Step state that degrades the documented way: a memoized segment brief no key decrypts is built again in a
new step (and counted on /metrics) instead of failing every attempt; a memo of another function that no key
decrypts fails the run at once with one line naming the setting; a segment request that does not parse
fails without any of its text in the failure body; a malformed key stops `uvicorn functions.app:app` and
`ac-context serve` with one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from functions.app import create_app
from functions.inngest.context_segment import FUNCTION_ID, REBUILD_STEP
from functions.inngest.knowledge_sweep import CRON
from functions.inngest.knowledge_sweep import FUNCTION_ID as SWEEP
from state.db import Database
from state.settings import load_settings
from tests.integration.functions.conftest import TOKEN
from tests.integration.functions.executor import InngestExecutor
from tests.integration.functions.support import (
    CountingBuilder,
    RecordingInngest,
    ScriptedConversation,
    asgi_client,
    conversation_policy,
    new_signing_key,
    segment_event,
)

SECRET = "Contoso-renewal-hinges-on-the-48000-EUR-discount"
KEY_OLD = "old-step-key-" + "0123456789abcdef" * 3
KEY_NEW = "new-step-key-" + "fedcba9876543210" * 3
KEY_WRONG = "wrong-step-key-" + "a1b2c3d4e5f60789" * 3


def _app(db: Database, tmp_path: Path, key: str, builder: Any, step_keys: str | None) -> Any:
    client = RecordingInngest(app_id="ac-context", is_production=True, signing_key=key)
    settings = load_settings(api_token=TOKEN, data_dir=tmp_path, step_encryption_keys=step_keys)
    return create_app(settings, db=db, inngest_client=client, builder=builder)


def _rebuilt(metrics: str, reason: str) -> float:
    prefix = f'ac_context_segment_briefs_rebuilt_total{{reason="{reason}"}} '
    return next((float(line[len(prefix) :]) for line in metrics.splitlines() if line.startswith(prefix)), 0.0)


@pytest.mark.parametrize(
    "later_keys",
    [KEY_NEW, KEY_WRONG, None],
    ids=["the old key dropped after a rotation", "a wrong key", "no key at all"],
)
async def test_an_undecryptable_memoized_brief_is_rebuilt_in_a_new_step_and_counted(
    db: Database, tmp_path: Path, later_keys: str | None
) -> None:
    key = new_signing_key()
    builder = CountingBuilder(ScriptedConversation(facts=[SECRET]))
    event = segment_event(0, waited=False, policy=conversation_policy())
    first_app = _app(db, tmp_path, key, builder, KEY_OLD)
    async with first_app.router.lifespan_context(first_app), asgi_client(first_app) as http:
        first = await InngestExecutor(http, signing_key=key).run(FUNCTION_ID, event)
    assert first.status == "completed" and builder.calls == 1
    assert SECRET not in json.dumps(first.steps), "the memo left the process encrypted"

    later = _app(db, tmp_path, key, builder, later_keys)
    async with later.router.lifespan_context(later), asgi_client(later) as http:
        replay = await InngestExecutor(http, signing_key=key).run(FUNCTION_ID, event, steps=first.steps)
        assert replay.status == "completed", replay.output
        assert builder.calls == 2, "the brief was built again instead of failing the run"
        assert replay.step_names == [REBUILD_STEP] and replay.step_errors == [], "one new step, built once"
        assert len(replay.steps) == 2 and set(first.steps) < set(replay.steps)
        assert replay.function_attempts == 1
        counted = _rebuilt((await http.get("/metrics")).text, "undecryptable")
        assert counted == 1.0

        # the rebuilt memo is readable: replaying the new state reuses it and builds nothing
        again = await InngestExecutor(http, signing_key=key).run(FUNCTION_ID, event, steps=replay.steps)
        assert again.status == "completed" and builder.calls == 2
        assert _rebuilt((await http.get("/metrics")).text, "undecryptable") == 1.0, "counted once per rebuild"
    output = replay.output if later_keys is None else None
    if output is not None:  # without a key the output is in clear: the rebuilt brief is there
        assert SECRET in output["brief"]["text"]
    else:
        assert SECRET not in json.dumps(replay.output)


async def test_a_memo_that_decrypts_but_is_not_a_brief_is_rebuilt_too(db: Database, tmp_path: Path) -> None:
    key = new_signing_key()
    builder = CountingBuilder(ScriptedConversation(facts=[SECRET]))
    event = segment_event(0, waited=False, policy=conversation_policy())
    app = _app(db, tmp_path, key, builder, None)
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        first = await InngestExecutor(http, signing_key=key).run(FUNCTION_ID, event)
        (hashed,) = first.steps
        broken = {hashed: {"data": {"text": 42}}}
        replay = await InngestExecutor(http, signing_key=key).run(FUNCTION_ID, event, steps=broken)
        metrics = (await http.get("/metrics")).text
    assert replay.status == "completed" and builder.calls == 2
    assert _rebuilt(metrics, "invalid") == 1.0


async def test_another_functions_undecryptable_memo_fails_the_run_at_once_naming_the_setting(
    db: Database, tmp_path: Path
) -> None:
    key = new_signing_key()
    cron = {"name": "inngest/scheduled.timer", "data": {"cron": CRON}}
    first_app = _app(db, tmp_path, key, None, KEY_OLD)
    async with first_app.router.lifespan_context(first_app), asgi_client(first_app) as http:
        first = await InngestExecutor(http, signing_key=key).run(SWEEP, cron, retries=2)
    assert first.status == "completed"
    later = _app(db, tmp_path, key, None, KEY_WRONG)
    async with later.router.lifespan_context(later), asgi_client(later) as http:
        replay = await InngestExecutor(http, signing_key=key).run(SWEEP, cron, retries=2, steps=first.steps)
    assert replay.status == "failed" and replay.function_attempts == 1, "no retry can decrypt it"
    assert "AC_CONTEXT_STEP_ENCRYPTION_KEYS" in replay.output["message"]
    assert "\n" not in replay.output["message"]


@pytest.mark.parametrize(
    "change",
    [
        {"segment": SECRET},
        {"waited": SECRET},
        {"run_id": SECRET},
        {SECRET: SECRET},
        {"request": {"subject": {"organization_id": SECRET}, "query": SECRET}},
        {"request": {"subject": {"organization_id": "00000000-0000-4000-8000-0000000000a1"}, "query": [SECRET]}},
        {"policy": {"sources": [{"name": SECRET, "token_budget": 10}], "total_token_budget": 10}},
        {"policy": {"sources": [{"name": "conversation", "token_budget": SECRET}], "total_token_budget": 10}},
    ],
    ids=["segment", "waited", "run_id", "extra key", "organization id", "query", "policy source", "budget"],
)
async def test_a_segment_request_that_does_not_parse_fails_at_once_without_its_text(
    db: Database, tmp_path: Path, caplog: pytest.LogCaptureFixture, change: dict[str, Any]
) -> None:
    key = new_signing_key()
    builder = CountingBuilder(ScriptedConversation())
    event = segment_event(0, waited=False, policy=conversation_policy(), query=SECRET)
    event["data"] = {**event["data"], **change}
    app = _app(db, tmp_path, key, builder, KEY_OLD)
    async with app.router.lifespan_context(app), asgi_client(app) as http:
        result = await InngestExecutor(http, signing_key=key).run(FUNCTION_ID, event)
    assert result.status == "failed" and result.function_attempts == 1 and builder.calls == 0
    assert result.output["message"].startswith("invalid segment brief request: ")
    # "Contoso" alone: pydantic shortens a long input in its message, so the whole text would not show
    assert "Contoso" not in json.dumps(result.output), "the failure body (message and stack) holds no request text"
    assert all("Contoso" not in record.getMessage() for record in caplog.records)


# --- a malformed key at start ---------------------------------------------------------------------------


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("AC_CONTEXT_", "INNGEST_"))}
    return {**keep, "HOME": str(tmp_path), "AC_CONTEXT_DATA_DIR": str(tmp_path / "data"), **extra}


PRODUCTION = {
    "AC_CONTEXT_INNGEST_MODE": "production",
    "INNGEST_SIGNING_KEY": "signkey-prod-" + "ab" * 32,
    "INNGEST_EVENT_KEY": "event-key-test",
    "AC_CONTEXT_API_TOKEN": "t" * 32,
    "INNGEST_SERVE_ORIGIN": "https://ctx.example.com",
}
DEV = {"AC_CONTEXT_INNGEST_MODE": "dev", "INNGEST_DEV": "1"}
UVICORN = [sys.executable, "-m", "uvicorn", "functions.app:app", "--port", "9"]
SERVE = [sys.executable, "-c", "from functions.cli import main; main()", "serve", "--port", "9"]


def test_a_malformed_step_key_stops_every_start_up_in_one_line(tmp_path: Path) -> None:
    bad = f"{KEY_NEW},s3cr3tKEY"
    runs = {
        "uvicorn, dev": (UVICORN, DEV),
        "uvicorn, production": (UVICORN, PRODUCTION),
        "ac-context serve, dev": (SERVE, {}),
        "ac-context serve, production": (SERVE, PRODUCTION),
    }
    for label, (command, mode) in runs.items():
        env = _env(tmp_path, AC_CONTEXT_STEP_ENCRYPTION_KEYS=bad, **mode)
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 1, label
        assert done.stdout == "", f"{label}: nothing printed before the refusal (no token line)"
        assert done.stderr.count("\n") == 1, f"{label}: {done.stderr}"
        assert done.stderr.startswith("error: inngest_config_invalid: "), label
        assert "AC_CONTEXT_STEP_ENCRYPTION_KEYS: key 2 is shorter than 32 characters" in done.stderr, label
        assert "s3cr3tKEY" not in done.stderr and KEY_NEW not in done.stderr, f"{label}: a key is never printed"
