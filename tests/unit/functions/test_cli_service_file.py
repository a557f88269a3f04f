"""The service's note in the data folder (`functions._service_file`) and the command line's reading of it.

A note names a live pid and the database the command would open, or it is ignored; serve removes its own
note only; the URL is one this machine reaches; the `--org` rule the CLI restates is `state.ids`'s."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from functions._service_file import (
    SERVICE_FILE,
    ServiceNote,
    database_fingerprint,
    read_service_file,
    remove_service_file,
    service_url,
    write_service_file,
)
from functions.cli import _common
from functions.cli._service import find_service
from state import ids

DB = "postgresql://u@h/db"


def _note(pid: int, database: str | None = DB) -> ServiceNote:
    return ServiceNote("http://127.0.0.1:8000", pid, "token", database_fingerprint(database))


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


def test_a_note_is_read_only_while_its_pid_lives_and_for_the_database_it_serves(tmp_path: Path) -> None:
    assert read_service_file(tmp_path, database_url=DB) is None
    write_service_file(tmp_path, _note(os.getpid()))
    assert read_service_file(tmp_path, database_url=DB) == _note(os.getpid())
    assert read_service_file(tmp_path, database_url="postgresql://u@h/other") is None
    assert read_service_file(tmp_path, database_url=None) is None, "the embedded server is another database"
    write_service_file(tmp_path, _note(_dead_pid()))
    assert read_service_file(tmp_path, database_url=DB) is None, "a killed service's note is stale"


def test_a_note_that_is_not_one_is_ignored(tmp_path: Path) -> None:
    for text in ("", "{", "[]", '{"url": "http://x", "pid": "1", "token": "t", "database": "d"}'):
        (tmp_path / SERVICE_FILE).write_text(text)
        assert read_service_file(tmp_path, database_url=None) is None, text


def test_serve_removes_its_own_note_only(tmp_path: Path) -> None:
    write_service_file(tmp_path, _note(os.getpid()))
    assert not remove_service_file(tmp_path, os.getpid() + 1)
    assert (tmp_path / SERVICE_FILE).exists()
    assert remove_service_file(tmp_path, os.getpid())
    assert not (tmp_path / SERVICE_FILE).exists()


@pytest.mark.parametrize(
    ("host", "url"),
    [("127.0.0.1", "http://127.0.0.1:9"), ("0.0.0.0", "http://127.0.0.1:9"), ("::", "http://[::1]:9"),
     ("localhost", "http://localhost:9")],
)  # fmt: skip
def test_the_url_is_one_this_machine_reaches(host: str, url: str) -> None:
    assert service_url(host, 9) == url


def test_a_configured_url_wins_and_uses_the_operator_token(tmp_path: Path) -> None:
    environ = {"AC_CONTEXT_SERVICE_URL": "http://h:1/", "AC_CONTEXT_API_TOKEN": "tok"}
    service = find_service(environ)
    assert service is not None
    assert (service.url, service.token, service.configured) == ("http://h:1", "tok", True)
    assert find_service({"AC_CONTEXT_DATA_DIR": str(tmp_path)}) is None


def test_the_org_rule_the_command_line_restates_is_state_ids() -> None:
    assert _common.CANONICAL_UUID_PATTERN == ids.CANONICAL_UUID_PATTERN
    assert _common.UUID_RULE == ids.UUID_RULE
