"""Memory expiry without a database (issue 22): the policy the settings give, and `resolve_expiry`'s answer
for each form of expiry at a frozen time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from memory.errors import InvalidExpiryError
from memory.expiry import DEFAULT_EXPIRY, ExpiryPolicy, resolve_expiry
from memory.models import MemoryCandidate
from memory.tools import REMEMBER_TOOL, tool_schemas
from state.errors import SettingsError
from state.settings import Settings, load_settings

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def _candidate(attribute: str = "observation.note", **expiry: Any) -> MemoryCandidate:
    return MemoryCandidate.model_construct(
        attribute=attribute,
        text="t",
        scope="organization",
        subject_refs=[],
        **{"expires_at": None, "ttl": None, **expiry},
    )


def test_the_default_policy_is_the_settings_defaults() -> None:
    defaults = Settings.model_construct()  # the field defaults, no environment read
    assert ExpiryPolicy.from_settings(defaults) == DEFAULT_EXPIRY
    assert DEFAULT_EXPIRY.observation_ttl == timedelta(days=90) and DEFAULT_EXPIRY.preference_ttl is None


def test_the_settings_policy_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AC_CONTEXT_MEMORY_OBSERVATION_TTL", "never")
    monkeypatch.setenv("AC_CONTEXT_MEMORY_PREFERENCE_TTL", "P180D")
    monkeypatch.setenv("AC_CONTEXT_MEMORY_MAX_TTL", "P365D")
    policy = ExpiryPolicy.from_settings(load_settings())
    assert (policy.observation_ttl, policy.preference_ttl, policy.max_ttl) == (
        None,
        timedelta(days=180),
        timedelta(days=365),
    )


@pytest.mark.parametrize(
    ("env", "value"),
    [
        ("AC_CONTEXT_MEMORY_OBSERVATION_TTL", "P3M"),
        ("AC_CONTEXT_MEMORY_OBSERVATION_TTL", "PT0S"),
        ("AC_CONTEXT_MEMORY_OBSERVATION_TTL", "P2000D"),  # past the longest expiry
        ("AC_CONTEXT_MEMORY_PREFERENCE_TTL", "forever"),
        ("AC_CONTEXT_MEMORY_MAX_TTL", "never"),
    ],
)
def test_a_wrong_expiry_setting_fails_at_start_naming_it(monkeypatch: pytest.MonkeyPatch, env: str, value: str) -> None:
    monkeypatch.setenv(env, value)
    with pytest.raises(SettingsError, match=env):
        load_settings()


def test_a_namespace_that_may_not_expire_needs_a_default_of_never(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AC_CONTEXT_MEMORY_OBSERVATION_MAY_EXPIRE", "false")
    with pytest.raises(SettingsError, match="AC_CONTEXT_MEMORY_OBSERVATION_TTL"):
        load_settings()
    monkeypatch.setenv("AC_CONTEXT_MEMORY_OBSERVATION_TTL", "never")
    assert ExpiryPolicy.from_settings(load_settings()).observation_may_expire is False


def test_the_namespace_default_applies_when_the_remember_names_no_expiry() -> None:
    policy = ExpiryPolicy(observation_ttl=timedelta(days=7), preference_ttl=None)
    assert resolve_expiry(_candidate("observation.x"), policy, NOW) == NOW + timedelta(days=7)
    assert resolve_expiry(_candidate("preference.x"), policy, NOW) is None
    assert resolve_expiry(_candidate("preference.x", ttl="PT2H"), policy, NOW) == NOW + timedelta(hours=2)
    at = NOW + timedelta(days=3)
    assert resolve_expiry(_candidate("observation.x", expires_at=at), policy, NOW) == at


@pytest.mark.parametrize(
    ("expiry", "policy", "field", "kind"),
    [
        ({"expires_at": NOW}, DEFAULT_EXPIRY, "expires_at", "expiry_past"),
        ({"expires_at": NOW - timedelta(seconds=1)}, DEFAULT_EXPIRY, "expires_at", "expiry_past"),
        ({"expires_at": datetime(2026, 7, 1)}, DEFAULT_EXPIRY, "expires_at", "expiry_naive"),
        ({"expires_at": NOW + timedelta(days=1826)}, DEFAULT_EXPIRY, "expires_at", "expiry_too_far"),
        ({"ttl": "PT0S"}, DEFAULT_EXPIRY, "ttl", "expiry_past"),
        ({"ttl": "P1826D"}, DEFAULT_EXPIRY, "ttl", "expiry_too_far"),
        ({"ttl": "P1Y"}, DEFAULT_EXPIRY, "ttl", "expiry_format"),
        ({"ttl": "P1D", "expires_at": NOW + timedelta(days=1)}, DEFAULT_EXPIRY, "ttl", "expiry_twice"),
        ({"ttl": "P1D"}, ExpiryPolicy(observation_may_expire=False, observation_ttl=None), "ttl", "expiry_forbidden"),
    ],
)
def test_each_refusal_names_its_field(expiry: dict[str, Any], policy: ExpiryPolicy, field: str, kind: str) -> None:
    with pytest.raises(InvalidExpiryError) as caught:
        resolve_expiry(_candidate(**expiry), policy, NOW)
    assert caught.value.code == "memory_invalid_expiry"
    assert caught.value.errors == [{"loc": (field,), "msg": caught.value.errors[0]["msg"], "type": kind}]
    assert str(caught.value).startswith(f"{REMEMBER_TOOL}: invalid input ({field}: ")


def test_the_longest_expiry_is_allowed_exactly() -> None:
    assert resolve_expiry(_candidate(ttl="P1825D"), DEFAULT_EXPIRY, NOW) == NOW + timedelta(days=1825)


def test_the_tool_schema_lists_expires_at_and_ttl_with_their_formats() -> None:
    [remember] = [s for s in tool_schemas() if s["name"] == REMEMBER_TOOL]
    properties = remember["parameters"]["properties"]
    expires_at, ttl = properties["expires_at"], properties["ttl"]
    assert {"type": "string", "format": "date-time"} in expires_at["anyOf"]
    assert ttl["format"] == "duration" and {"type": "string"} in ttl["anyOf"]
    assert "ISO 8601" in ttl["description"] and "offset" in expires_at["description"]
    assert "expires_at" not in remember["parameters"].get("required", [])
    assert "ttl" in remember["description"] and "expires_at" in remember["description"]
