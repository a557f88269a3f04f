"""A connection that cannot be made is one line naming where, with the driver's error as its cause and never
the password: real connects to a port nothing listens on, a host that does not resolve, a socket that is not
there (no server is needed for any of them). A URL the driver cannot parse is a setting error, at load."""

from __future__ import annotations

import socket

import pytest

from state._connect import connect
from state.errors import DatabaseUnavailableError, SettingsError, database_location
from state.settings import load_settings
from tests.support import free_port

SECRET = "s3cr3t-pw"


async def test_a_port_nothing_listens_on_is_database_unavailable_naming_host_and_port() -> None:
    port = free_port()
    with pytest.raises(DatabaseUnavailableError) as caught:
        await connect(f"postgresql://u:{SECRET}@127.0.0.1:{port}/db")
    assert str(caught.value) == f"cannot reach the database at 127.0.0.1:{port} (connection refused)"
    assert caught.value.code == "database_unavailable"
    assert isinstance(caught.value.__cause__, ConnectionRefusedError), "the driver's error is kept as the cause"


async def test_a_host_that_does_not_resolve_says_so() -> None:
    with pytest.raises(DatabaseUnavailableError) as caught:
        await connect(f"postgresql://u:{SECRET}@nohost.invalid/db")
    assert str(caught.value) == "cannot reach the database at nohost.invalid:5432 (its host name does not resolve)"
    assert isinstance(caught.value.__cause__, socket.gaierror)


async def test_a_missing_socket_says_no_server_listens_there_and_hides_a_password_in_the_query() -> None:
    url = f"postgresql:///db?host=/nonexistent-ac&password={SECRET}"
    with pytest.raises(DatabaseUnavailableError) as caught:
        await connect(url)
    assert str(caught.value) == "cannot reach the database at /nonexistent-ac/.s.PGSQL.5432 (no server listens there)"
    assert SECRET not in str(caught.value)


def test_the_location_never_carries_the_user_or_password() -> None:
    assert database_location(f"postgresql://user:{SECRET}@db.example.com:6543/x") == "db.example.com:6543"
    assert database_location("postgresql://db.example.com/x") == "db.example.com:5432"
    assert database_location("postgresql://[::1]:7/x") == "[::1]:7"
    assert database_location("postgresql://u@h1:1,h2:2/x") == "h1:1,h2:2"


@pytest.mark.parametrize("url", [f"postgresql://u:{SECRET}@localhost:abc/db", f"postgresql://u:{SECRET}@[::1/db"])
def test_a_url_that_cannot_be_parsed_is_a_setting_error_at_load_without_the_password(url: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings(database_url=url)
    assert "DATABASE_URL" in str(caught.value) and "is not a valid URL" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_several_hosts_are_a_valid_url() -> None:
    assert load_settings(database_url="postgresql://u@h1:1,h2:2/db").database_url == "postgresql://u@h1:1,h2:2/db"
