"""The embedded server's lifecycle: SIGTERM stops it like Ctrl-C does, and `ac-context db status|stop` see it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from state.embedded import embedded_status, stop_embedded_server
from tests.support import HANG_S, embedded_test_dir, wait_until, wait_until_answering

ROOT = Path(__file__).resolve().parents[3]
HOLD = """
import sys, time
from pathlib import Path
from state.embedded import embedded_server_url
embedded_server_url(Path(sys.argv[1]), keep_running=sys.argv[2] == "keep")
print("up", flush=True)
if sys.argv[2] != "keep":
    time.sleep(120)
"""


@pytest.fixture
def data_dir() -> Iterator[Path]:
    folder = embedded_test_dir()
    try:
        yield folder
    finally:
        stop_embedded_server(folder)
        shutil.rmtree(folder, ignore_errors=True)


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AC_CONTEXT_") and k != "DATABASE_URL"}
    return env | {"AC_CONTEXT_DATA_DIR": str(data_dir)}


def _hold(data_dir: Path, mode: str) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(data_dir), mode],
        cwd=ROOT,
        env=_env(data_dir),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "up"
    return child


def _cli(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    code = "from functions.cli import main; main()"
    return subprocess.run(
        [sys.executable, "-c", code, *args], cwd=ROOT, env=_env(data_dir), capture_output=True, text=True, timeout=120
    )


def _wait_stopped(data_dir: Path) -> bool:
    return wait_until(lambda: not embedded_status(data_dir).running, "the embedded server stopped")


def test_sigterm_stops_the_embedded_server_and_leaves_no_pid_file(data_dir: Path) -> None:
    with _hold(data_dir, "stop") as child:
        running = embedded_status(data_dir)
        assert running.running and running.pid is not None and running.holders == 1
        child.send_signal(signal.SIGTERM)
        assert child.wait(timeout=HANG_S) == 128 + signal.SIGTERM
    assert _wait_stopped(data_dir), "the last holder stopped the server on SIGTERM"
    after = embedded_status(data_dir)
    assert not (after.pgdata / "postmaster.pid").exists() and not after.stale_pid_file


def test_db_status_and_stop_see_and_stop_a_server_left_running(data_dir: Path) -> None:
    with _hold(data_dir, "keep") as child:
        assert child.wait(timeout=HANG_S) == 0
    status = json.loads(_cli(data_dir, "db", "status", "--json").stdout)
    assert status["embedded"] and status["running"] and status["pid"], status
    stopped = _cli(data_dir, "db", "stop")
    assert stopped.returncode == 0 and "stopped the embedded PostgreSQL" in stopped.stdout, stopped.stderr
    assert _wait_stopped(data_dir)
    assert "stopped" in _cli(data_dir, "db", "status").stdout
    again = _cli(data_dir, "db", "stop")
    assert again.returncode == 0 and "not running" in again.stdout


def test_sigterm_on_serve_stops_the_embedded_server(data_dir: Path) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code = "from functions.cli import main; main()"
    # With the idle stop off (0), serve is the last holder: SIGTERM must stop the server as Ctrl-C does. With
    # it on (the default), serve leaves the server to its idle watcher, like every command (test_embedded.py).
    env = _env(data_dir) | {"INNGEST_DEV": "1", "AC_CONTEXT_EMBEDDED_IDLE_MINUTES": "0"}
    with subprocess.Popen(
        [sys.executable, "-c", code, "serve", "--port", str(port)], cwd=ROOT, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    ) as server:  # fmt: skip
        wait_until_answering(server, f"http://127.0.0.1:{port}/readyz")
        assert embedded_status(data_dir).running, "serve started the embedded server"
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=HANG_S)
    assert _wait_stopped(data_dir), "SIGTERM on serve stops the embedded server, as Ctrl-C does"
    assert not (embedded_status(data_dir).pgdata / "postmaster.pid").exists()
