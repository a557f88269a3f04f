"""The reaper kills exactly the holders of the lifeline once its write end closes; pool workers leave with it."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from knowledge.ingestion import _reaper
from knowledge.ingestion.pool import IngestPool, _start_reaper
from tests.support import HANG_S

SLEEPER = [sys.executable, "-I", "-S", "-c", "import time; time.sleep(3600)"]  # killed by the reaper or the test
pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="the reaper reads /proc")


def _gone(proc: subprocess.Popen[bytes], within: float) -> bool:
    try:
        proc.wait(timeout=within)
    except subprocess.TimeoutExpired:
        return False
    return True


def test_a_holder_of_the_lifeline_is_killed_when_its_write_end_closes_and_a_bystander_is_not() -> None:
    reader, writer = multiprocessing.get_context("spawn").Pipe(duplex=False)
    holder = subprocess.Popen(SLEEPER, pass_fds=(reader.fileno(),))  # a worker still importing, never watching
    bystander = subprocess.Popen(SLEEPER)
    reaper = _start_reaper(reader)
    assert reaper is not None
    try:
        time.sleep(0.5)
        assert holder.poll() is None and reaper.poll() is None, "nothing is reaped while the write end is open"
        writer.close()
        assert _gone(holder, HANG_S), "the reaper left a holder of the lifeline alive"
        assert holder.returncode == -9
        assert _gone(reaper, HANG_S)
        assert bystander.poll() is None, "the reaper killed a process that does not hold the lifeline"
    finally:
        for proc in (holder, bystander, reaper):
            proc.kill()
            proc.wait()
        reader.close()


def test_the_reaper_skips_itself_and_the_parent_it_was_given() -> None:
    reader, writer = multiprocessing.get_context("spawn").Pipe(duplex=False)
    target = os.readlink(f"/proc/self/fd/{reader.fileno()}")
    assert _reaper.holders(target, skip=set()) == [os.getpid()]
    assert _reaper.holders(target, skip={os.getpid()}) == []
    assert _reaper.reap(target, skip={os.getpid()}) == 0
    reader.close()
    writer.close()


async def test_closing_the_pool_ends_its_workers_and_its_reaper() -> None:
    pool = IngestPool(2)
    await pool.warm()
    executor, reaper = pool._executor, pool._reaper
    assert executor is not None and reaper is not None
    workers = list(executor._processes.values())
    assert len(workers) == 2
    pool.close()
    assert reaper.poll() is not None, "close waits for the reaper"
    for worker in workers:
        worker.join(timeout=HANG_S)
        assert not worker.is_alive()
