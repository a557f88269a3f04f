"""The ingestion pool's workers (and the resource tracker) die with `ac-context ingest` at any moment of its start.

The CLI runs in a session of its own, so every process it starts (workers, the multiprocessing resource
tracker) carries its pid as their session id, whoever their parent becomes after the kill. Each run kills
the CLI with SIGKILL at a different moment of the pool's start: as soon as the resource tracker is up
(before any worker), the instant the first worker appears (still importing, its initializer not yet run),
and a few fractions of a second later; then every process of that session must end by itself (waited for up
to `HANG_S`, a hang guard: left to themselves they would wait on their queue forever).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.factories import Factory
from tests.integration.knowledge.helpers import Kit
from tests.integration.knowledge.test_ingest_cli import CLI, _env, _write_docs
from tests.support import HANG_S, eventually

WORKER = "multiprocessing.spawn"
TRACKER = "multiprocessing.resource_tracker"


def _session(sid: int) -> dict[int, str]:
    """The live processes of session `sid` (zombies excluded), pid -> command line."""
    found: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == sid:
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # it ended while we looked
            continue
        if int(stat[3]) == sid and stat[0] != "Z":
            found[int(entry)] = cmdline
    return found


async def _kill_at(args: list[str], env: dict[str, str], *, moment: str, delay: float) -> None:
    """Start the CLI, SIGKILL it `delay` s after `moment` ("tracker" or "worker"); fail if its session outlives it."""
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    marker = TRACKER if moment == "tracker" else WORKER
    try:
        deadline = time.monotonic() + HANG_S
        while not any(marker in cmd for cmd in _session(proc.pid).values()):
            assert proc.poll() is None, f"the CLI ended (status {proc.returncode}) before its {moment} appeared"
            assert time.monotonic() < deadline, f"no {moment} appeared in {HANG_S:g} s"
            await asyncio.sleep(0.005)
        await asyncio.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=HANG_S)

        async def ended() -> bool:
            return not _session(proc.pid)

        await eventually(ended, lambda: f"processes outlived the killed CLI: {_session(proc.pid)}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=HANG_S)
        for pid in _session(proc.pid):  # never leave a stray process behind, even when the test fails
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


@pytest.mark.parametrize(
    ("moment", "delay"),
    [("tracker", 0.0), ("worker", 0.0), ("worker", 0.3), ("worker", 0.8), ("worker", 1.5)],
    ids=["tracker-up", "first-worker", "worker+0.3s", "worker+0.8s", "worker+1.5s"],
)
async def test_no_worker_or_tracker_outlives_a_cli_killed_while_its_pool_starts(
    kit: Kit, factory: Factory, db_url: str, tmp_path: Path, moment: str, delay: float
) -> None:
    org = await factory.organization()
    docs = tmp_path / "docs"
    _write_docs(docs, 8)
    args = [*CLI, "ingest", str(docs), "--org", str(org), "--json"]
    env = {**_env(db_url, tmp_path), "AC_CONTEXT_INGEST_WORKERS": "2"}
    await _kill_at(args, env, moment=moment, delay=delay)
