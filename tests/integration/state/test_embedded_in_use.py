"""`ac-context db stop` under a running `serve` on the embedded default: it refuses in one line naming the
serve process, and `--force` stops it; the server then finds its database stopped, starts it again, says so
in one log line, and answers ready (docs/decisions.md, "Issue 25: database faults in one line").

The server, its data folder and its embedded PostgreSQL are this test's own, never the session's."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from state.embedded import embedded_status, stop_embedded_server
from tests.support import embedded_test_dir, free_port, wait_until_answering

ROOT = Path(__file__).resolve().parents[3]
CLI = [sys.executable, "-c", "from functions.cli import main; main()"]


@pytest.fixture
def data_dir() -> Iterator[Path]:
    folder = embedded_test_dir()
    try:
        yield folder
    finally:
        stop_embedded_server(folder)
        shutil.rmtree(folder, ignore_errors=True)


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AC_CONTEXT_", "INNGEST_")) and k != "DATABASE_URL"}
    # No idle watcher: serve is the one holder, and stops the server when it exits.
    return env | {"AC_CONTEXT_DATA_DIR": str(data_dir), "AC_CONTEXT_EMBEDDED_IDLE_MINUTES": "0", "INNGEST_DEV": "1"}


def _cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], cwd=ROOT, env=_env(data_dir), capture_output=True, text=True, timeout=120)


def _ready_again(url: str) -> httpx.Response:
    """/readyz once it answers 200; a slow answer on a loaded machine is waited for, not failed."""
    deadline = time.monotonic() + 300
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            answer = httpx.get(url, timeout=30)
        except httpx.TransportError as exc:
            last = f"{type(exc).__name__}"
        else:
            if answer.status_code == 200:
                return answer
            last = answer.text
        time.sleep(0.2)
    raise AssertionError(f"/readyz never became ready again: {last}")


def test_db_stop_refuses_while_serve_uses_it_and_serve_starts_it_again_after_force(data_dir: Path) -> None:
    port = free_port()
    log = data_dir / "serve.log"
    with (
        log.open("wb") as out,
        subprocess.Popen(
            [*CLI, "serve", "--port", str(port)], cwd=ROOT, env=_env(data_dir), stdout=out, stderr=subprocess.STDOUT
        ) as server,
    ):
        try:
            readyz = f"http://127.0.0.1:{port}/readyz"
            wait_until_answering(server, readyz, exited=log.read_text)

            refused = _cli(data_dir, "db", "stop")
            assert refused.returncode == 1, (refused.stdout, refused.stderr)
            assert refused.stderr.count("\n") == 1 and "Traceback" not in refused.stderr, refused.stderr
            assert re.match(r"^error: embedded_database_in_use: .*pid \d+ \(.*serve", refused.stderr), refused.stderr
            assert f"pid {server.pid}" in refused.stderr
            assert embedded_status(data_dir).running, "a refused stop leaves the server running"

            forced = _cli(data_dir, "db", "stop", "--force")
            assert forced.returncode == 0 and "stopped the embedded PostgreSQL" in forced.stdout, forced.stderr
            assert not embedded_status(data_dir).running

            ready = _ready_again(readyz)
            assert ready.json()["status"] == "ready"
            assert embedded_status(data_dir).running, "serve started its embedded server again"
            said = [line for line in log.read_text().splitlines() if "started it again" in line]
            assert len(said) == 1, log.read_text()
            assert "Traceback" not in log.read_text(), "the pool's reconnect warnings are one line each"
        finally:
            server.terminate()
            server.wait(timeout=60)


async def test_a_pool_whose_server_went_away_raises_database_unavailable_naming_the_socket(data_dir: Path) -> None:
    from state.db import Database
    from state.embedded import embedded_server_url
    from state.errors import DatabaseUnavailableError
    from state.settings import load_settings

    url = embedded_server_url(data_dir, keep_running=True)
    db = await Database.open(load_settings(pool_min_size=0), url=url, migrate=False)
    try:
        assert await db.fetchval("SELECT 1") == 1
        assert stop_embedded_server(data_dir)
        await db.pool.expire_connections()  # the next acquire makes a new connection
        with pytest.raises(DatabaseUnavailableError) as caught:
            await db.fetchval("SELECT 1")
        assert str(caught.value).startswith("cannot reach the database at /") and "no server listens" in str(
            caught.value
        )
        assert isinstance(caught.value.__cause__, OSError)
        assert not await db.restart_embedded(), "a pool on a given URL never starts a server"
    finally:
        await db.close()
