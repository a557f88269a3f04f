"""The small rules behind the hardening: signature freshness, clean text, step keys, production keys."""

from __future__ import annotations

import pytest
from pydantic import SecretStr, TypeAdapter, ValidationError

from functions._production import production_problems
from functions._wire import CleanJson, CleanText
from functions.errors import InngestConfigError
from functions.inngest.encryption import MIN_KEY_LENGTH, parse_keys
from functions.inngest.signatures import signature_problem
from state.settings import load_settings

NOW = 1_800_000_000.0
HEX = "ab" * 32


@pytest.mark.parametrize(
    ("header", "fresh"),
    [
        (f"t={int(NOW)}&s={HEX}", True),
        (f"t={int(NOW) - 299}&s={HEX}", True),
        (f"t={int(NOW) + 299}&s={HEX}", True),
        (f"t={int(NOW) - 301}&s={HEX}", False),
        (f"t={int(NOW) + 301}&s={HEX}", False),
        (f"s={HEX}", False),
        (f"t=&s={HEX}", False),
        (f"t=12a&s={HEX}", False),
        (f"t={int(NOW)}&t={int(NOW)}&s={HEX}", False),
        (f"t={int(NOW)}", False),
        ("", False),
        (None, False),
    ],
)
def test_a_signature_is_fresh_only_with_one_numeric_timestamp_inside_the_window(
    header: str | None, fresh: bool
) -> None:
    assert (signature_problem(header, now=NOW, max_age_s=300) is None) is fresh


def test_clean_text_refuses_nul_and_lone_surrogates_at_any_depth() -> None:
    text, blob = TypeAdapter(CleanText), TypeAdapter(CleanJson)
    assert text.validate_python("fine — ünïcode") == "fine — ünïcode"
    for bad in ("a\x00b", "a\ud800b"):
        with pytest.raises(ValidationError, match="text_invalid"):
            text.validate_python(bad)
        with pytest.raises(ValidationError, match="text_invalid"):
            blob.validate_python({"a": [{"b": bad}]})
        with pytest.raises(ValidationError, match="text_invalid"):
            blob.validate_python({bad: 1})
    deep: object = "x"
    for _ in range(100):
        deep = [deep]
    with pytest.raises(ValidationError, match="json_too_deep"):
        blob.validate_python({"a": deep})


def test_step_keys_are_newest_first_and_never_short() -> None:
    new, old = "n" * MIN_KEY_LENGTH, "o" * MIN_KEY_LENGTH
    assert parse_keys(SecretStr(f" {new} , {old} ,")) == [new, old]
    assert parse_keys(None) == []
    with pytest.raises(InngestConfigError, match="key 2 is shorter"):
        parse_keys(f"{new},short")


def test_production_names_every_missing_key_and_accepts_a_complete_set() -> None:
    assert production_problems(
        load_settings(api_token=None, inngest_serve_origin=None, step_encryption_keys=None), {}
    ) == [
        "INNGEST_SIGNING_KEY",
        "INNGEST_EVENT_KEY",
        "AC_CONTEXT_API_TOKEN",
        "INNGEST_SERVE_ORIGIN",
        "AC_CONTEXT_STEP_ENCRYPTION_KEYS",
    ]
    complete = load_settings(
        api_token="t" * 32, inngest_serve_origin="https://ctx.example.com", step_encryption_keys="k" * 40
    )
    assert production_problems(complete, {"INNGEST_SIGNING_KEY": "signkey-prod-1", "INNGEST_EVENT_KEY": "e"}) == []
    wrong_origin = load_settings(
        api_token="t" * 32, inngest_serve_origin="ctx.example.com/x", step_encryption_keys="k" * 40
    )
    assert production_problems(wrong_origin, {"INNGEST_SIGNING_KEY": "k", "INNGEST_EVENT_KEY": "e"}) == [
        "INNGEST_SERVE_ORIGIN (an origin such as https://ctx.example.com)"
    ]
