from __future__ import annotations

import pytest

from state.errors import SettingsError
from state.settings import load_settings


def test_a_wrong_setting_fails_with_its_environment_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AC_CONTEXT_POOL_MAX_SIZE", "lots")
    with pytest.raises(SettingsError, match="AC_CONTEXT_POOL_MAX_SIZE"):
        load_settings()


def test_a_database_url_that_is_not_postgres_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "mysql://localhost/db")
    with pytest.raises(SettingsError, match="DATABASE_URL"):
        load_settings()


def test_defaults_need_no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    settings = load_settings()
    assert settings.database_url is None
    assert settings.embedding_model == "local/wordllama-l2-supercat-256"


def test_a_zero_or_infinite_source_timeout_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("0", "inf", "nan", "-1"):
        monkeypatch.setenv("AC_CONTEXT_SOURCE_TIMEOUT_S", value)
        with pytest.raises(SettingsError, match="SOURCE_TIMEOUT_S"):
            load_settings()
