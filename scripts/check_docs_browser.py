"""Open `/docs` of a running dev server in headless Chromium with no network, and check that it renders.

Starts `ac-context serve` (dev mode, `INNGEST_DEV=1`, as `make serve` does) on a free loopback port, with the
database of `DATABASE_URL` or, without it, the embedded one in a new temporary data directory; runs Debian's
`chromium` headless with every host but 127.0.0.1 unresolvable and a dead proxy for anything else, dumps the
DOM of the page once its scripts ran, and looks for Swagger UI's Authorize button (class `btn authorize`),
which renders only when the page's script, its styles and `/openapi.json` all came from the server.

    python scripts/check_docs_browser.py [--path /docs] [--screenshot docs.png] [--chromium chromium]

Exit status: 0 the button rendered; 1 it did not; 2 no Chromium; 3 the server did not start; 4 Chromium failed.
Every failure is one line on stderr.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
RENDERED = "btn authorize"
"""The class of Swagger UI's Authorize button, there only once the OpenAPI document is loaded and rendered."""
OK, NOT_RENDERED, NO_CHROMIUM, NO_SERVER, CHROMIUM_FAILED = 0, 1, 2, 3, 4


class CheckFailed(Exception):
    """The check failed with an exit status and a one-line reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on at the moment."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def chromium_flags(user_data_dir: Path) -> list[str]:
    """Headless, no sandbox (root in CI), no first-run or background traffic, and no network but loopback."""
    return [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={user_data_dir}",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        "--proxy-server=http://127.0.0.1:9",  # an IP literal of another host goes to a dead proxy; loopback never
        "--window-size=1280,1400",
        "--virtual-time-budget=20000",
    ]


@contextmanager
def dev_server(port: int, log: Path, data_dir: Path) -> Iterator[str]:
    """`ac-context serve` in dev mode on `port`; yields its base URL once `/docs` answers."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("AC_CONTEXT_", "INNGEST_"))}
    env = {**keep, "INNGEST_DEV": "1", "AC_CONTEXT_DATA_DIR": str(data_dir), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", "from functions.cli import main; main()", "serve", "--port", str(port)]
    base = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            _wait_for(process, f"{base}/docs", log)
            yield base
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if "DATABASE_URL" not in env:  # the embedded server outlives uvicorn: stop the one this check started
                stop = [sys.executable, "-c", "from functions.cli import main; main()", "db", "stop"]
                subprocess.run(stop, cwd=ROOT, env=env, capture_output=True, timeout=60, check=False)


def _wait_for(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if process.poll() is not None:
            last = (log.read_text(errors="replace").strip().splitlines() or ["(no output)"])[-1]
            raise CheckFailed(NO_SERVER, f"the dev server exited with {process.returncode}: {last}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise CheckFailed(NO_SERVER, f"the dev server did not answer {url} within 90 s")


def run_chromium(chromium: str, url: str, *, work: Path, screenshot: Path | None) -> str:
    """The DOM of `url` after its scripts ran (and a screenshot of it, when asked)."""
    flags = chromium_flags(work / "profile")
    try:
        dumped = subprocess.run(
            [chromium, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=False
        )
        if screenshot is not None:
            subprocess.run(
                [chromium, *flags, f"--screenshot={screenshot.resolve()}", url],
                capture_output=True, timeout=120, check=False,
            )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise CheckFailed(CHROMIUM_FAILED, f"chromium did not finish loading {url} within 120 s") from None
    if dumped.returncode != 0 or not dumped.stdout.strip():
        last = (dumped.stderr.strip().splitlines() or ["no output"])[-1]
        raise CheckFailed(CHROMIUM_FAILED, f"chromium exited with {dumped.returncode}: {last}")
    return dumped.stdout


def check(*, chromium: str, path: str, screenshot: Path | None) -> str:
    """Run the whole check; the URL that rendered, or `CheckFailed`."""
    found = shutil.which(chromium)
    if found is None:
        raise CheckFailed(NO_CHROMIUM, f"{chromium} is not installed (Debian: apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="ac-context-docs-") as tmp:
        work = Path(tmp)
        with dev_server(free_port(), work / "serve.log", work / "data") as base:
            url = f"{base}{path}"
            dom = run_chromium(found, url, work=work, screenshot=screenshot)
    if RENDERED not in dom:
        raise CheckFailed(NOT_RENDERED, f"{url} rendered no Authorize button (no element of class '{RENDERED}')")
    return url


def main(argv: list[str] | None = None) -> int:
    """The command line; the exit status of the check."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", default="/docs", help="The page to open (default /docs).")
    parser.add_argument("--screenshot", type=Path, help="Also save a PNG of the page here.")
    parser.add_argument("--chromium", default="chromium", help="The Chromium executable (default chromium).")
    args = parser.parse_args(argv)
    try:
        url = check(chromium=args.chromium, path=args.path, screenshot=args.screenshot)
    except CheckFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.status
    print(f"ok: {url} rendered the Authorize button with no network")
    return OK


if __name__ == "__main__":
    sys.exit(main())
