"""The parts of standby reads that need no server: the read setting, the consistency token, the fallback reasons."""

from __future__ import annotations

import asyncpg
import pytest

from state.errors import SettingsError
from state.replicas import fallback_reason, format_lsn, parse_consistency_token
from state.settings import load_settings


def test_the_read_setting_splits_on_commas_between_urls_and_keeps_a_multi_host_url_whole() -> None:
    settings = load_settings(
        read_database_urls="postgresql://r1:5432/db, postgresql://a:1,b:2/db,postgresql://r1:5432/db"
    )
    assert settings.read_urls() == ["postgresql://r1:5432/db", "postgresql://a:1,b:2/db"]
    assert load_settings().read_urls() == [], "none: every read on the primary"


def test_a_read_url_that_is_not_postgresql_is_refused_by_name() -> None:
    with pytest.raises(SettingsError, match="AC_CONTEXT_READ_DATABASE_URLS"):
        load_settings(read_database_urls="mysql://replica/db")


def test_a_consistency_token_round_trips_and_a_malformed_one_is_refused() -> None:
    lsn = (0x16 << 32) | 0xB374D848
    assert format_lsn(lsn) == "lsn:16/B374D848"
    assert parse_consistency_token("lsn:16/B374D848") == lsn
    for bad in ("16/B374D848", "lsn:16", "lsn:xyz/1", "lsn:123456789/1"):
        with pytest.raises(ValueError):
            parse_consistency_token(bad)


def test_a_query_cancelled_on_a_recovery_conflict_is_told_from_a_standby_that_went_away() -> None:
    conflict = asyncpg.exceptions.SerializationError("canceling statement due to conflict with recovery")
    assert fallback_reason(conflict) == "recovery_conflict"
    cancelled = asyncpg.exceptions.QueryCanceledError("canceling statement due to conflict with recovery")
    assert fallback_reason(cancelled) == "recovery_conflict"
    assert fallback_reason(asyncpg.exceptions.QueryCanceledError("canceling statement due to user request")) == (
        "standby_error"
    )
    assert fallback_reason(asyncpg.exceptions.AdminShutdownError("terminating connection")) == "standby_down"
    assert fallback_reason(ConnectionResetError()) == "standby_down"
