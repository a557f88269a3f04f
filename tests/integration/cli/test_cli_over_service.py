"""`ac-context` asks a running service (issue 45, item 5): with `ac-context serve` on the same data folder,
`search`, `brief` and the lists go over HTTP, print exactly what the direct path prints, and import nothing of
the read path; a note left by a service that is gone falls back to the direct path; a refusal the service
answers is the same one line with its code and exit 1.

Real processes: an `ac-context serve` on the test database and a temporary data folder, and each command a
fresh `ac-context` process that writes the modules it loaded to a file as it exits (the test hook: a wrapper
script, nothing in the CLI)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID, uuid4

import pytest

from functions._service_file import SERVICE_FILE, ServiceNote, database_fingerprint, write_service_file
from knowledge.documents.objects import LocalObjectStore
from state.db import Database
from state.receipts import begin_receipt
from tests.factories import Factory
from tests.integration.knowledge.helpers import FAKE, Kit
from tests.support import free_port, wait_until_answering

ROOT = Path(__file__).resolve().parents[3]
TOKEN = "cli-over-service-operator-token"
WITH_MODULES = (
    "import atexit, json, os, sys\n"
    "atexit.register(lambda: open(os.environ['CLI_TEST_MODULES'], 'w').write(json.dumps(sorted(sys.modules))))\n"
    "sys.argv = ['ac-context', *sys.argv[1:]]\n"
    "from functions.cli import main\n"
    "main()\n"
)
READ_PATH = ("asyncpg", "state.db", "numpy", "tokenizers", "tiktoken", "wordllama", "httpx")
"""What a command answered by the service must not load: the database driver and pool, the embedder's and
the tokenizer's libraries, and the heavy HTTP client."""


@dataclass
class Ran:
    """One `ac-context` process: its exit code, output and the modules it had loaded."""

    code: int
    out: str
    err: str
    modules: set[str]

    def loaded(self, names: tuple[str, ...]) -> list[str]:
        """Which of `names` (or their submodules) it loaded."""
        return sorted(m for m in self.modules if any(m == n or m.startswith(f"{n}.") for n in names))


def _env(data: Path, db_url: str) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("AC_CONTEXT_", "INNGEST_"))}
    return keep | {
        "DATABASE_URL": db_url,
        "AC_CONTEXT_DATA_DIR": str(data),
        "AC_CONTEXT_ALLOW_TEST_MODELS": "1",
        "COLUMNS": "100",
    }


async def _cli(env: dict[str, str], tmp: Path, *args: str) -> Ran:
    modules = tmp / f"modules-{uuid4().hex}.json"
    done = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-c", WITH_MODULES, *args], env=env | {"CLI_TEST_MODULES": str(modules)},
        capture_output=True, text=True, timeout=180, cwd=ROOT,
    )  # fmt: skip
    loaded = set(json.loads(modules.read_text())) if modules.exists() else set()
    return Ran(done.returncode, done.stdout, done.stderr, loaded)


_LOGGED = re.compile(r"^(CLI|front door body) entity \d+ dropped: .*\n", re.MULTILINE)


def _said(err: str) -> str:
    """What a command said on stderr, without the log lines of the normalizer that ran in its process (a
    dropped entity is logged where the brief is built: in the service, over HTTP; the command's own note on it
    stays)."""
    return _LOGGED.sub("", err)


@dataclass
class Served:
    """A running `ac-context serve` on a data folder, and the environment a command there runs with."""

    process: subprocess.Popen[bytes]
    data: Path
    env: dict[str, str]
    tmp: Path

    async def cli(self, *args: str) -> Ran:
        return await _cli(self.env, self.tmp, *args)


@pytest.fixture
async def served(db: Database, db_url: str, tmp_path: Path) -> AsyncIterator[Served]:
    data = tmp_path / "data"
    env = _env(data, db_url)
    port, log = free_port(), tmp_path / "serve.out"
    serve_env = env | {"AC_CONTEXT_API_TOKEN": TOKEN, "AC_CONTEXT_RUN_FUNCTIONS": "in-process"}
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-c", "from functions.cli import main; main()", "serve", "--port", str(port)],
            env=serve_env, stdout=out, stderr=subprocess.STDOUT, cwd=ROOT,
        )  # fmt: skip
    try:
        await asyncio.to_thread(wait_until_answering, process, f"http://127.0.0.1:{port}/readyz", exited=log.read_text)
        yield Served(process, data, env, tmp_path)
    finally:
        process.terminate()
        process.wait(timeout=60)


async def _seed(db: Database, data: Path, factory: Factory) -> UUID:
    kit = Kit(db, LocalObjectStore(data / "objects"))
    await kit.use_platform_model(FAKE)
    org = await factory.organization()
    await kit.ingest(org, "# Passwords\n\nTo reset a password, open the account page and choose reset.")
    await kit.ingest(None, "# Platform\n\nA password reset link expires after one hour.")
    async with db.connection() as conn:
        await begin_receipt(conn, "source", organization_id=org, target_id=org, requested_by="test")
    return org


async def test_search_brief_and_the_lists_over_the_service_print_what_the_direct_path_prints_and_load_no_driver(
    served: Served, db: Database, factory: Factory
) -> None:
    org = await _seed(db, served.data, factory)
    definition = await factory.definition(org)
    user = await factory.user(org)
    run = await factory.run(org, definition_id=definition, status="running")
    remembered = await served.cli(
        "memory", "remember", "--attribute", "observation.reset", "--text", "Prefers the reset link by email.",
        "--org", str(org), "--definition", str(definition), "--run", str(run), "--user", str(user), "--direct",
    )  # fmt: skip
    assert remembered.code == 0, remembered.err
    note = served.data / SERVICE_FILE
    assert stat.S_IMODE(note.stat().st_mode) == 0o600, "the note holds the operator token: its owner reads it alone"
    commands = [
        ("search", "how do I reset a password", "--org", str(org), "--json"),
        ("search", "how do I reset a password", "--org", str(org), "--limit", "1"),
        ("brief", "--org", str(org), "--query", "reset a password", "--json"),
        ("brief", "--org", str(org), "--query", "reset a password", "--entity", "nokind", "--explain"),
        ("org", "list", "--json"),
        ("org", "list"),
        ("receipts", "list", "--org", str(org), "--json"),
        ("memory", "list", "--org", str(org), "--json"),
        ("memory", "list", "--org", str(org)),
    ]
    for args in commands:
        over_http = await served.cli(*args)
        direct = await served.cli(*args, "--direct")
        assert over_http.code == direct.code == 0, (args, over_http.err, direct.err)
        assert (over_http.out, over_http.err) == (direct.out, _said(direct.err)), args
        assert over_http.loaded(READ_PATH) == [], f"{args} over the service loads {over_http.loaded(READ_PATH)}"
        assert "asyncpg" in direct.modules, "--direct reads the database here"
    assert "reset" in (await served.cli("search", "how do I reset a password", "--org", str(org))).out
    assert "Prefers the reset" in (await served.cli("memory", "list", "--org", str(org))).out


async def test_a_refusal_of_the_service_is_the_direct_paths_line_and_exit_and_serve_removes_its_note(
    served: Served, db: Database
) -> None:
    unknown = str(uuid4())
    for args in (("search", "a question", "--org", unknown), ("brief", "--org", unknown, "--json")):
        over_http, direct = await served.cli(*args), await served.cli(*args, "--direct")
        assert over_http.err.startswith("error: organization_not_found: "), over_http.err
        assert (over_http.code, over_http.out, over_http.err) == (direct.code, direct.out, direct.err) == (
            1, "", direct.err
        ), args  # fmt: skip
        assert over_http.loaded(("asyncpg",)) == [], "the service refused it, not this process"
    served.process.terminate()
    served.process.wait(timeout=60)
    assert not (served.data / SERVICE_FILE).exists(), "a stopped service leaves no note"


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    return int(done.stdout)


@pytest.mark.parametrize("stale", ["pid gone", "port closed"])
async def test_a_stale_note_falls_back_to_the_direct_path(
    stale: str, db: Database, db_url: str, tmp_path: Path, factory: Factory
) -> None:
    data = tmp_path / "data"
    org = await _seed(db, data, factory)
    pid = _dead_pid() if stale == "pid gone" else os.getpid()  # a live process that listens on nothing
    note = ServiceNote(f"http://127.0.0.1:{free_port()}", pid, TOKEN, database_fingerprint(db_url))
    write_service_file(data, note)
    env = _env(data, db_url)
    for args in (("search", "reset a password", "--org", str(org), "--json"), ("org", "list", "--json")):
        ran, direct = await _cli(env, tmp_path, *args), await _cli(env, tmp_path, *args, "--direct")
        assert ran.code == 0, ran.err
        assert (ran.out, ran.err) == (direct.out, direct.err)
        assert "asyncpg" in ran.modules, "it read the database itself"
    assert json.loads((await _cli(env, tmp_path, "search", "reset a password", "--org", str(org), "--json")).out)


async def test_a_configured_service_that_does_not_answer_is_one_line_not_a_silent_fallback(
    db_url: str, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    env = _env(tmp_path / "data", db_url) | {"AC_CONTEXT_SERVICE_URL": url, "AC_CONTEXT_API_TOKEN": TOKEN}
    ran = await _cli(env, tmp_path, "org", "list")
    assert ran.code == 1
    assert ran.err.startswith(f"error: service_unavailable: no service answers at {url}"), ran.err
    assert len(ran.err.strip().splitlines()) == 1
    assert ran.loaded(("asyncpg",)) == []
