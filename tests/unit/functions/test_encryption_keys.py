"""Step encryption keys: a malformed key is one line naming its position, wherever keys are parsed (the
parser, the production check, `ac-context serve`'s plan, the app factory), and never the key itself; and a
request's problems are described by path and error type, never by a value or an unknown key."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import SecretStr

from functions._production import production_problems
from functions.app import create_app
from functions.cli._serve import plan_serve
from functions.cli.errors import error_line
from functions.errors import InngestConfigError
from functions.inngest.context_segment import describe_problems
from functions.inngest.encryption import MIN_KEY_LENGTH, UNDECRYPTABLE, StepKeyError, parse_keys, undecryptable
from state.settings import load_settings

GOOD = "g00d-step-key-" + "x" * MIN_KEY_LENGTH
BAD = [
    ("s3cr3tKEY", "key 1 is shorter than 32 characters"),
    (f"{GOOD},{'y' * 31}", "key 2 is shorter than 32 characters"),
    ("k" * 20 + " " + "k" * 20, "key 1 holds whitespace or a character that is not printable ASCII"),
    (f"{GOOD},{'ключ' * 10}", "key 2 holds whitespace or a character that is not printable ASCII"),
    ("k" * 20 + "\x07" + "k" * 20, "key 1 holds whitespace or a character that is not printable ASCII"),
]


@pytest.mark.parametrize(("raw", "problem"), BAD, ids=["short", "second short", "space", "not ASCII", "control"])
def test_a_malformed_key_is_one_line_naming_its_position_wherever_keys_are_parsed(
    raw: str, problem: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret_parts = [part for part in raw.split(",") if part != GOOD]
    with pytest.raises(StepKeyError) as parsed:
        parse_keys(SecretStr(raw))
    line = error_line(parsed.value)
    assert line.startswith("error: inngest_config_invalid: AC_CONTEXT_STEP_ENCRYPTION_KEYS: " + problem)
    assert "\n" not in line and "secrets.token_urlsafe(32)" in line, "the line says how to make a key"

    settings = load_settings(api_token="t" * 32, inngest_serve_origin="https://a.example", step_encryption_keys=raw)
    expected = [f"AC_CONTEXT_STEP_ENCRYPTION_KEYS: {problem}"]
    assert production_problems(settings, {"INNGEST_SIGNING_KEY": "k", "INNGEST_EVENT_KEY": "e"}) == expected

    with pytest.raises(InngestConfigError, match=problem):
        create_app(load_settings(data_dir=tmp_path, step_encryption_keys=raw), environ={"INNGEST_DEV": "1"})

    monkeypatch.setenv("AC_CONTEXT_STEP_ENCRYPTION_KEYS", raw)  # `plan_serve` reads the environment
    with pytest.raises(InngestConfigError, match=problem) as planned:
        plan_serve({}, host="127.0.0.1", port=8000)
    for message in (str(parsed.value), str(planned.value), line):
        assert all(part not in message for part in secret_parts), "a key is never printed"


def test_good_keys_are_newest_first_and_blank_entries_are_ignored() -> None:
    assert parse_keys(f" {GOOD} ,, {GOOD[::-1]} ,") == [GOOD, GOOD[::-1]]
    assert parse_keys(None) == [] and parse_keys("") == []


def test_only_the_marker_or_ciphertext_counts_as_undecryptable() -> None:
    assert undecryptable(dict(UNDECRYPTABLE))
    assert undecryptable({"__ENCRYPTED__": True, "__STRATEGY__": "inngest/libsodium", "data": "x"})
    for memo in ({"text": "a brief"}, None, [], "text", {"__ENCRYPTED__": "yes"}):
        assert not undecryptable(memo)


def test_problems_are_named_by_path_and_type_never_by_value_or_unknown_key() -> None:
    described = describe_problems(
        [
            {"loc": ("request", "query"), "type": "string_type", "msg": "x", "input": "SECRET"},
            {"loc": ("request", "SECRET key"), "type": "extra_forbidden", "msg": "x"},
            {"loc": ("secretword",), "type": "extra_forbidden", "msg": "x"},
            {"loc": ("policy", "sources", 0, "Name With Space"), "type": "missing", "msg": "x"},
            {"loc": (), "type": "model_type", "msg": "x"},
        ]
    )
    assert described == (
        "request.query: string_type; request.<unexpected key>: extra_forbidden; <unexpected key>: extra_forbidden; "
        "policy.sources.0.…: missing; <request>: model_type"
    )
    many = describe_problems([{"loc": ("a",), "type": "missing"}] * 13)
    assert many.endswith("; and 3 more") and many.count("a: missing") == 10
