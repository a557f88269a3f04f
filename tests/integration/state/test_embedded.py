from __future__ import annotations

import shutil
import subprocess
import sys

from state.embedded import stop_embedded_server
from tests.support import embedded_test_dir

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
