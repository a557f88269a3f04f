"""An embedded PostgreSQL that cannot start is one line in the CLI: the server's own FATAL reason and where its
log is, exit 1, no traceback and none of the wheel's multi-line log on stderr. The folder is this test's own:
a cluster folder whose permissions the server refuses (it checks them before it reads anything else)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import CLI_ERROR_LINE, embedded_test_dir

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def broken_dir() -> Iterator[Path]:
    folder = embedded_test_dir()
    pgdata = folder / "pg"
    pgdata.mkdir()
    (pgdata / "PG_VERSION").write_text("18\n")
    (pgdata / "postgresql.conf").write_text("")
    folder.chmod(0o777)
    pgdata.chmod(0o777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_an_embedded_server_that_cannot_start_is_one_line_naming_why_and_its_log(broken_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AC_CONTEXT_") and k != "DATABASE_URL"}
    done = subprocess.run(
        [sys.executable, "-c", "from functions.cli import main; main()", "org", "list"],
        cwd=ROOT, env=env | {"AC_CONTEXT_DATA_DIR": str(broken_dir)}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    match = CLI_ERROR_LINE.match(done.stderr.strip())
    assert match and match.group(1) == "database_unavailable", done.stderr
    assert "cannot start the embedded PostgreSQL" in done.stderr and "invalid permissions" in done.stderr
    assert f"its log is {broken_dir.resolve() / 'pg' / 'log'}" in done.stderr
