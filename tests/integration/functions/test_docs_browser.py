"""`scripts/check_docs_browser.py`: headless Chromium opens `/docs` of a dev server with no network, and the
Authorize button renders (run only where Debian's `chromium` is installed; `.ci/run` installs it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "check_docs_browser.py"

pytestmark = pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")


def run_check(db_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATABASE_URL": db_url}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )


def test_docs_render_the_authorize_button_in_chromium_with_no_network(db_url: str, tmp_path: Path) -> None:
    shot = tmp_path / "docs.png"
    done = run_check(db_url, "--screenshot", str(shot))
    assert done.returncode == 0, done.stderr
    assert "rendered the Authorize button" in done.stdout
    assert shot.stat().st_size > 10_000, "the screenshot of the page is saved"


def test_a_page_without_the_button_fails_the_check_in_one_line(db_url: str) -> None:
    done = run_check(db_url, "--path", "/redoc")  # ReDoc renders, but it has no Authorize button
    assert done.returncode == 1, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "no Authorize button" in done.stderr
