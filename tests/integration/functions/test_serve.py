"""`ac-context serve` (what `make serve` runs) on a fresh environment: dev mode on 127.0.0.1 with a token
printed once and a line saying where /docs is; production mode without its keys refuses in one line; a
connection left idle longer than a client's keep-alive is still open (uvicorn's own 5 s is not), and the
Dockerfile serves with the same uvicorn settings, on uvicorn's C HTTP parser and the uvloop loop."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.support import READ_S, free_port, wait_until_answering

ENTRY = [sys.executable, "-c", "from functions.cli import main; main()", "serve"]
PRODUCTION_KEYS = (
    "INNGEST_SIGNING_KEY",
    "INNGEST_EVENT_KEY",
    "AC_CONTEXT_API_TOKEN",
    "INNGEST_SERVE_ORIGIN",
    "AC_CONTEXT_STEP_ENCRYPTION_KEYS",
)


def fresh_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a new machine: no project variable, no Inngest variable, a new home."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("AC_CONTEXT_", "INNGEST_"))}
    return {**keep, "HOME": str(tmp_path), "AC_CONTEXT_DATA_DIR": str(tmp_path / "data"), **extra}


def test_serve_starts_in_dev_mode_on_a_fresh_machine_with_a_token_printed_once(
    tmp_path: Path, db_url: str, fake_live_model: str
) -> None:
    port = free_port()
    log = tmp_path / "serve.out"
    env = fresh_env(tmp_path, DATABASE_URL=db_url)
    with log.open("wb") as out:
        process = subprocess.Popen([*ENTRY, "--port", str(port)], env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_until_answering(process, f"http://127.0.0.1:{port}/readyz", exited=log.read_text)
            text = log.read_text()
            token = re.search(r"printed once[^:]*: (\S+)", text)
            assert token is not None, text
            assert f"http://127.0.0.1:{port}/docs" in text
            assert text.count(token.group(1)) == 1, "the token is printed once"
            auth = {"Authorization": f"Bearer {token.group(1)}"}
            tools = f"http://127.0.0.1:{port}/v1/memory/tools"
            assert httpx.get(tools, headers=auth, timeout=READ_S).status_code == 200
            assert httpx.get(tools, timeout=READ_S).status_code == 401
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_dev_mode_refuses_to_listen_beyond_loopback(tmp_path: Path) -> None:
    done = subprocess.run(
        [*ENTRY, "--host", "0.0.0.0"], env=fresh_env(tmp_path), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert "127.0.0.1" in done.stderr


def test_production_mode_without_its_keys_refuses_in_one_line_naming_them(tmp_path: Path) -> None:
    env = fresh_env(tmp_path, AC_CONTEXT_INNGEST_MODE="production")
    done = subprocess.run(ENTRY, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: inngest_config_invalid: production mode needs ")
    for key in PRODUCTION_KEYS:
        assert key in done.stderr

    partial = subprocess.run(
        ENTRY,
        env={**env, "INNGEST_SIGNING_KEY": "signkey-prod-abc", "AC_CONTEXT_API_TOKEN": "t" * 32},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert partial.returncode == 1 and partial.stderr.count("\n") == 1
    assert "INNGEST_SIGNING_KEY" not in partial.stderr and "INNGEST_SERVE_ORIGIN" in partial.stderr


def test_the_app_module_refuses_production_without_its_keys(tmp_path: Path) -> None:
    env = fresh_env(tmp_path, AC_CONTEXT_INNGEST_MODE="production")
    done = subprocess.run(
        [sys.executable, "-c", "import functions.app as m; m.app"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode != 0
    assert "production mode needs INNGEST_SIGNING_KEY, INNGEST_EVENT_KEY, AC_CONTEXT_API_TOKEN" in done.stderr


def test_uvicorn_with_a_misspelled_setting_refuses_in_one_line_naming_it(tmp_path: Path) -> None:
    """`uvicorn functions.app:app` (the Dockerfile's command) reads the settings at import: one coded line."""
    env = fresh_env(tmp_path, AC_CONTEXT_INGEST_WORKRS="2")
    uvicorn = [sys.executable, "-m", "uvicorn", "functions.app:app", "--port", str(free_port())]
    done = subprocess.run(uvicorn, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(
        "error: settings_invalid: invalid settings: AC_CONTEXT_INGEST_WORKRS is not a setting"
    )
    assert "did you mean AC_CONTEXT_INGEST_WORKERS?" in done.stderr


def _answer_on(sock: socket.socket) -> bytes:
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    data = b""
    while not data.endswith(b'{"status":"ok"}'):
        part = sock.recv(65536)
        if not part:
            return data  # the server closed the connection
        data += part
    return data


def test_a_connection_idle_longer_than_a_clients_keep_alive_is_still_answered(
    tmp_path: Path, db_url: str, fake_live_model: str
) -> None:
    port = free_port()
    env = fresh_env(tmp_path, DATABASE_URL=db_url, AC_CONTEXT_API_TOKEN="serve-test-token")
    process = subprocess.Popen(
        [*ENTRY, "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_until_answering(process, f"http://127.0.0.1:{port}/healthz")
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            assert _answer_on(sock).startswith(b"HTTP/1.1 200")
            time.sleep(6)  # past uvicorn's default keep-alive (5 s) and httpx's (5 s)
            assert _answer_on(sock).startswith(b"HTTP/1.1 200"), "the idle connection was closed"
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_dockerfile_serves_with_the_same_uvicorn_settings_as_serve() -> None:
    from functions.cli._serve import BACKLOG, KEEP_ALIVE_S

    dockerfile = Path(__file__).resolve().parents[3] / "Dockerfile"
    command = next(line for line in dockerfile.read_text().splitlines() if line.startswith("CMD "))
    arguments = json.loads(command.removeprefix("CMD "))
    assert arguments[:2] == ["uvicorn", "functions.app:app"]
    assert arguments[arguments.index("--timeout-keep-alive") + 1] == str(KEEP_ALIVE_S)
    assert arguments[arguments.index("--backlog") + 1] == str(BACKLOG)


def test_uvicorn_serves_with_its_c_http_parser_and_the_uvloop_loop() -> None:
    from uvicorn.config import Config
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    async def app(scope: object, receive: object, send: object) -> None:
        raise AssertionError("never called")

    config = Config(app=app)  # what `ac-context serve` and the Dockerfile leave to uvicorn: http and loop "auto"
    config.load()
    assert config.http_protocol_class is HttpToolsProtocol
    factory = config.get_loop_factory()
    assert factory is not None
    loop = factory()
    try:
        assert type(loop).__module__.startswith("uvloop"), type(loop)
    finally:
        loop.close()
