"""A database the CLI cannot use is one line: every command that opens it, against a port nothing listens on, a
host that does not resolve, or a real server that refuses the login or the database, prints
`error: database_unavailable: … at host:port (why)` and exits 1 with no traceback and no password; `--debug`
shows the traceback, the driver's error as the cause (docs/decisions.md, "Issue 25: database faults in one line").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from typer.testing import CliRunner

from functions.cli import app
from state.embedded import server_dsn
from state.errors import DatabaseUnavailableError
from state.settings import get_settings
from tests.support import cli_error_line, free_port

SECRET = "s3cr3t-pw"
ORG = "00000000-0000-4000-8000-00000000beef"
COMMANDS = [
    ("migrate",),
    ("org", "list"),
    ("keys", "list"),
    ("sources", "list", "--platform"),
    ("receipts", "list"),
    ("memory", "list", "--org", ORG),
    ("search", "--org", ORG, "pricing"),
    ("brief", "--org", ORG, "--query", "pricing"),
    ("sweep",),
    ("switch-model", "--status"),
]
Invoke = Callable[..., Any]


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Invoke]:
    """Run `ac-context …` with DATABASE_URL set to `url`, in a thread (the command owns its event loop)."""
    monkeypatch.setenv("AC_CONTEXT_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("AC_CONTEXT_DEBUG", raising=False)

    def invoke(url: str, *args: str) -> Any:
        monkeypatch.setenv("DATABASE_URL", url)
        get_settings.cache_clear()
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(CliRunner().invoke, app, list(args)).result()

    yield invoke
    get_settings.cache_clear()


def one_line(result: Any) -> str:
    line = cli_error_line(result, "database_unavailable", progress=re.compile(r"^$"))
    assert SECRET not in result.output, "the password is never printed"
    return line


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_against_a_port_nothing_listens_on_is_one_line(cli: Invoke, command: tuple[str, ...]) -> None:
    port = free_port()
    line = one_line(cli(f"postgresql://u:{SECRET}@127.0.0.1:{port}/db", *command))
    assert f"cannot reach the database at 127.0.0.1:{port} (connection refused)" in line


def test_a_host_that_does_not_resolve_is_one_line(cli: Invoke) -> None:
    line = one_line(cli(f"postgresql://u:{SECRET}@nohost.invalid/db", "sources", "list", "--platform"))
    assert "cannot reach the database at nohost.invalid:5432 (its host name does not resolve)" in line


def _as_user(url: str, user: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{user}:{SECRET}@{parts.netloc.rpartition('@')[2]}"))


def test_a_real_server_that_refuses_the_login_or_the_database_is_one_line(cli: Invoke, pg_server_url: str) -> None:
    login = one_line(cli(_as_user(pg_server_url, "nobody_here"), "org", "list"))
    assert "refused the connection" in login and 'role "nobody_here" does not exist' in login
    missing = one_line(cli(server_dsn(pg_server_url, "no_such_database"), "org", "list"))
    assert 'database "no_such_database" does not exist' in missing


def test_debug_shows_the_traceback_with_the_driver_error_as_the_cause(cli: Invoke) -> None:
    result = cli(f"postgresql://u:{SECRET}@127.0.0.1:{free_port()}/db", "--debug", "org", "list")
    assert result.exit_code == 1
    assert isinstance(result.exception, DatabaseUnavailableError), result.output
    assert isinstance(result.exception.__cause__, ConnectionRefusedError)
