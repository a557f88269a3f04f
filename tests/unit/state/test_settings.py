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


def test_each_setting_reads_its_variable_in_any_case_and_converts_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ac_context_pool_max_size", "7")
    monkeypatch.setenv("AC_CONTEXT_DEBUG", "yes")
    monkeypatch.setenv("AC_CONTEXT_DATA_DIR", "/srv/ac")
    monkeypatch.setenv("AC_CONTEXT_STEP_ENCRYPTION_KEYS", "k" * 32)
    settings = load_settings()
    assert (settings.pool_max_size, settings.debug, str(settings.data_dir)) == (7, True, "/srv/ac")
    assert settings.step_encryption_keys is not None and settings.step_encryption_keys.get_secret_value() == "k" * 32


def test_the_unprefixed_name_wins_over_the_prefixed_one_and_a_keyword_over_both(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://plain/db")
    monkeypatch.setenv("AC_CONTEXT_DATABASE_URL", "postgresql://prefixed/db")
    monkeypatch.setenv("AC_CONTEXT_INNGEST_SERVE_ORIGIN", "https://prefixed.example")
    assert load_settings().database_url == "postgresql://plain/db"
    assert load_settings().inngest_serve_origin == "https://prefixed.example"
    monkeypatch.delenv("DATABASE_URL")
    assert load_settings().database_url == "postgresql://prefixed/db"
    assert load_settings(database_url=None, pool_max_size=3).database_url is None
    assert load_settings(pool_max_size=3).pool_max_size == 3
