"""The embedded server: shared by processes started at once, tuned, and reused by the next command until idle."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from state.embedded import embedded_status, stop_embedded_server
from tests.support import embedded_test_dir, wait_until

_SCRIPT = """
import sys, asyncio, asyncpg
from pathlib import Path
from state.embedded import embedded_server_url
url = embedded_server_url(Path(sys.argv[1]), keep_running=True)
async def main():
    conn = await asyncpg.connect(url)
    print(await conn.fetchval("SELECT pg_backend_pid() > 0"), await conn.fetchval(
        "SELECT pg_postmaster_start_time()::text"))
    await conn.close()
asyncio.run(main())
"""


def test_two_processes_started_at_once_share_one_embedded_server() -> None:
    data = embedded_test_dir() / "data"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _SCRIPT, str(data)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    try:
        for proc, (_out, err) in zip(procs, outputs, strict=True):
            assert proc.returncode == 0, err
        starts = {out.split()[1] + out.split()[2] for out, _ in outputs}
        assert len(starts) == 1, outputs  # one postmaster answered both
        assert (data / "pg" / "PG_VERSION").is_file()
    finally:
        assert stop_embedded_server(data)
        shutil.rmtree(data.parent, ignore_errors=True)


_SETTINGS_SCRIPT = """
import sys, asyncio, asyncpg
from pathlib import Path
from state.embedded import embedded_server_url
url = embedded_server_url(Path(sys.argv[1]), keep_running=True)
async def main():
    conn = await asyncpg.connect(url)
    print(await conn.fetchval(
        "SELECT setting::bigint * 8192 / 1048576 FROM pg_settings WHERE name = 'shared_buffers'"))
    await conn.close()
asyncio.run(main())
"""


def test_the_embedded_server_starts_with_the_projects_settings_new_or_old() -> None:
    from state.embedded import SETTINGS_FILE, server_settings

    data = embedded_test_dir() / "data"
    wanted = int(server_settings()["shared_buffers"].removesuffix("MB"))

    def shared_buffers_mb() -> int:
        out = subprocess.run(
            [sys.executable, "-c", _SETTINGS_SCRIPT, str(data)], capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr
        return int(out.stdout.split()[-1])

    try:
        assert shared_buffers_mb() == wanted  # a new folder: written between initdb and the first start
        conf = data / "pg" / "postgresql.conf"
        assert conf.read_text().count(SETTINGS_FILE) == 1
        # A folder made before the settings existed: it takes them at its next start, included once.
        assert stop_embedded_server(data)
        conf.write_text(conf.read_text().replace(f"include_if_exists = '{SETTINGS_FILE}'", ""))
        (data / "pg" / SETTINGS_FILE).unlink()
        assert shared_buffers_mb() == wanted
        assert conf.read_text().count(SETTINGS_FILE) == 1
    finally:
        stop_embedded_server(data)
        shutil.rmtree(data.parent, ignore_errors=True)


# --- One command's server is the next one's: reuse, `db stop`, and the idle watcher -----------------------

ROOT = Path(__file__).resolve().parents[3]
READY = "database system is ready to accept connections"


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A data folder for the CLI's embedded server; afterwards no server and no watcher of it is left."""
    folder = embedded_test_dir()
    try:
        yield folder
    finally:
        stop_embedded_server(folder)
        left = _wait(lambda: not _watchers(folder), 15)
        for pid in _watchers(folder):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(folder, ignore_errors=True)
        assert left, "a watcher outlived the test"


def _watchers(folder: Path) -> list[int]:
    """Pids of the idle watchers of `folder` (read from /proc, whoever started them)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"state._embedded_watcher" in argv and str(folder).encode() in argv:
            found.append(int(proc.name))
    return found


def _wait(check: Callable[[], bool], what: str) -> bool:
    return wait_until(check, what, every=0.2)


def _cli(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AC_CONTEXT_") and k != "DATABASE_URL"}
    return subprocess.run(
        [sys.executable, "-c", "from functions.cli import main; main()", *args],
        cwd=ROOT, env=clean | {"AC_CONTEXT_DATA_DIR": str(folder)} | env,
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip


def _starts(folder: Path) -> int:
    """How many times the server of `folder` became ready (its log gains a line at every start)."""
    log = folder / "pg" / "log"
    return log.read_text(errors="replace").count(READY) if log.exists() else 0


def test_a_second_command_reuses_the_server_the_first_left_running_until_db_stop(data_dir: Path) -> None:
    first = _cli(data_dir, "org", "list")
    assert first.returncode == 0, first.stderr
    after_first = embedded_status(data_dir)
    assert after_first.running and after_first.pid, "the command left the server running"
    assert after_first.holders == 0 and after_first.watcher_pid in _watchers(data_dir)
    assert _starts(data_dir) == 1
    second = _cli(data_dir, "org", "create", "acme")
    assert second.returncode == 0, second.stderr
    assert embedded_status(data_dir).pid == after_first.pid, "the second command used the same postmaster"
    assert _starts(data_dir) == 1, "the second command started no server"
    status = json.loads(_cli(data_dir, "db", "status", "--json").stdout)
    assert status["running"] and status["pid"] == after_first.pid and status["watcher_pid"], status
    assert 0 < status["idle_left_s"] <= status["idle_timeout_s"] == 15 * 60, status
    stopped = _cli(data_dir, "db", "stop")
    assert stopped.returncode == 0 and "stopped the embedded PostgreSQL" in stopped.stdout, stopped.stderr
    assert not embedded_status(data_dir).running
    assert _wait(lambda: not _watchers(data_dir), "db stop stops the watcher too")
    assert "stopped" in _cli(data_dir, "db", "status").stdout


def test_the_idle_watcher_stops_the_server_after_the_timeout_and_exits(data_dir: Path) -> None:
    done = _cli(data_dir, "org", "list", AC_CONTEXT_EMBEDDED_IDLE_MINUTES="0.05")  # 3 s
    assert done.returncode == 0, done.stderr
    assert embedded_status(data_dir).running
    assert _wait(lambda: not embedded_status(data_dir).running, "the watcher stopped the idle server")
    assert _wait(lambda: not _watchers(data_dir), "and then exited")
    assert not (data_dir / "pg" / "postmaster.pid").exists()


def test_the_watcher_never_stops_a_server_a_client_is_connected_to(data_dir: Path) -> None:
    import asyncio

    import asyncpg

    done = _cli(data_dir, "org", "list", AC_CONTEXT_EMBEDDED_IDLE_MINUTES="0.05")
    assert done.returncode == 0, done.stderr
    url = embedded_status(data_dir).url
    assert url is not None

    async def hold() -> None:
        conn = await asyncpg.connect(url)
        try:
            await asyncio.sleep(8)  # well past the 3 s timeout
            assert await conn.fetchval("SELECT 1") == 1
        finally:
            await conn.close()

    asyncio.run(hold())
    assert embedded_status(data_dir).running, "a connected client kept the server up"
    assert _wait(lambda: not embedded_status(data_dir).running, "idle again, it stops")


def test_the_watcher_exits_when_someone_else_stops_the_server(data_dir: Path) -> None:
    done = _cli(data_dir, "org", "list", AC_CONTEXT_EMBEDDED_IDLE_MINUTES="1")  # polls every 6 s
    assert done.returncode == 0, done.stderr
    assert _watchers(data_dir)
    assert stop_embedded_server(data_dir, stop_watcher=False)  # pg_ctl stop, the watcher not told
    assert _wait(lambda: not _watchers(data_dir), "the watcher saw the server gone and exited")


def test_two_commands_started_at_once_share_one_server_and_one_watcher(data_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AC_CONTEXT_") and k != "DATABASE_URL"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", "from functions.cli import main; main()", "org", "list"],
            cwd=ROOT,
            env=env | {"AC_CONTEXT_DATA_DIR": str(data_dir)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for proc in procs:
        _out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err
    assert _starts(data_dir) == 1, "one server started"
    assert _wait(lambda: len(_watchers(data_dir)) == 1, "one watcher"), _watchers(data_dir)


def test_an_idle_timeout_of_zero_stops_the_server_when_the_command_ends(data_dir: Path) -> None:
    done = _cli(data_dir, "org", "list", AC_CONTEXT_EMBEDDED_IDLE_MINUTES="0")
    assert done.returncode == 0, done.stderr
    assert _wait(lambda: not embedded_status(data_dir).running, "the last holder stopped it, as before")
    assert not _watchers(data_dir)
