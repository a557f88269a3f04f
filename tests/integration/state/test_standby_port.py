"""A standby at a chosen port (`state.standby.start_standby(port=)`, `ac-context db replica start --port N`).

The rules: a chosen port is where the standby listens, and a stopped standby started at another port moves
there; a port outside 1..65535 is `standby_port_invalid` and one in use (by another process, or by the
running standby when another port is asked for) is `standby_port_taken`, both before anything is copied
or started; on the command line each is one line `error: <code>: …` and exit 1.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import pytest
from typer.testing import CliRunner

from functions.cli import app
from state.settings import get_settings
from state.standby import StandbyPortError, standby_status, start_standby, stop_standby
from tests.support import cli_error_line, embedded_test_dir, free_port

NO_PROGRESS = re.compile(r"$^")


@pytest.fixture
def listening() -> Iterator[int]:
    """A port another process listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield int(holder.getsockname()[1])


async def _in_recovery(url: str) -> bool:
    conn = await asyncpg.connect(url, timeout=30)
    try:
        return bool(await conn.fetchval("SELECT pg_is_in_recovery()"))
    finally:
        await conn.close()


async def test_a_standby_listens_at_the_chosen_port_and_refuses_a_taken_one(pg_server_url: str, listening: int) -> None:
    folder = embedded_test_dir()
    try:
        first, second = free_port(), free_port()
        url = await asyncio.to_thread(start_standby, pg_server_url, folder, port=first)
        assert urlsplit(url).port == first and await _in_recovery(url)
        with pytest.raises(StandbyPortError) as moving:
            start_standby(pg_server_url, folder, port=second)
        assert moving.value.code == "standby_port_taken" and f"runs on port {first}" in str(moving.value)
        assert start_standby(pg_server_url, folder, port=first) == url, "asked again where it runs: its URL"
        stop_standby(folder)
        with pytest.raises(StandbyPortError) as taken:
            start_standby(pg_server_url, folder, port=listening)
        assert taken.value.code == "standby_port_taken" and not standby_status(folder).running
        moved = await asyncio.to_thread(start_standby, pg_server_url, folder, port=second)
        assert urlsplit(moved).port == second and await _in_recovery(moved), "a stopped standby moves to the port"
        for bad in (0, -1, 65536, 2**31):
            with pytest.raises(StandbyPortError) as invalid:
                start_standby(pg_server_url, folder, port=bad)
            assert invalid.value.code == "standby_port_invalid"
    finally:
        stop_standby(folder, mode="immediate")
        shutil.rmtree(folder, ignore_errors=True)


def test_the_cli_refuses_an_invalid_or_taken_port_in_one_line_before_starting_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, listening: int
) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("AC_CONTEXT_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("AC_CONTEXT_DEBUG", raising=False)
    try:
        for port, code in [("0", "standby_port_invalid"), ("65536", "standby_port_invalid"),
                           ("http", "standby_port_invalid"), (str(listening), "standby_port_taken")]:  # fmt: skip
            get_settings.cache_clear()
            result = CliRunner().invoke(app, ["db", "replica", "start", "--port", port])
            line = cli_error_line(result, code, progress=NO_PROGRESS)
            assert port in line or code == "standby_port_invalid", line
        assert not any(tmp_path.iterdir()), "nothing started or copied: the data folder is empty"
    finally:
        get_settings.cache_clear()
