"""`ac-context db status|stop`: the embedded PostgreSQL the layer starts when `DATABASE_URL` is not set.

`status` reads the server's files (it never starts one): running or not, its pid and socket, a stale pid
file, how many processes hold it, and the idle time left before its watcher stops it. `stop` stops it
(fast shutdown) and its watcher; the next command starts it again. While another live process holds it
(a running `serve`, an `ingest` under way: the wheel's handle list, each pid checked alive) `stop` refuses
in one line naming them, `embedded_database_in_use`, unless `--force`; a `serve` whose server was stopped
under it starts it again (docs/decisions.md, "What happens to `db stop` while
`serve` runs on the embedded database?"). This module
must never touch a database that `DATABASE_URL` names.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from functions.cli._common import JsonFlag, console, print_json, safe
from functions.cli.errors import CliError

__all__ = ["db_app"]

db_app = typer.Typer(
    help="The embedded PostgreSQL: its status, stopping it, and a hot standby of it.", no_args_is_help=True
)


def _external() -> str | None:
    from state.settings import get_settings

    url = get_settings().database_url
    if url is None:
        return None
    head, _, tail = url.rpartition("@")
    return f"postgresql://…@{tail}" if head else url


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


@db_app.command("status")
def status(as_json: JsonFlag = False) -> None:
    """Whether the embedded server runs: its pid, socket, holders and idle time left (or DATABASE_URL's host)."""
    external = _external()
    if external is not None:
        out: dict[str, Any] = {"embedded": False, "database_url": external}
        print_json(out) if as_json else console.print(f"DATABASE_URL is set ({safe(external)}); no embedded server")
        return
    from state.embedded import embedded_status
    from state.settings import get_settings

    st = embedded_status(get_settings().data_dir)
    out = {
        "embedded": True,
        "data_dir": str(st.pgdata),
        "initialised": st.initialised,
        "running": st.running,
        "pid": st.pid,
        "socket": None if st.socket is None else str(st.socket),
        "port": st.port,
        "stale_pid_file": st.stale_pid_file,
        "holders": st.holders,
        "watcher_pid": st.watcher_pid,
        "idle_timeout_s": st.idle_timeout_s,
        "idle_left_s": None if st.idle_left_s is None else round(st.idle_left_s, 1),
    }
    if as_json:
        print_json(out)
        return
    state = "[green]running[/]" if st.running else "[yellow]stopped[/]"
    console.print(f"embedded PostgreSQL in {safe(st.pgdata)}: {state}" + (f" (pid {st.pid})" if st.running else ""))
    if st.running:
        console.print(f"socket {safe(st.socket)} (port {st.port}); {st.holders} process(es) hold it")
        if st.idle_left_s is not None and st.idle_timeout_s:
            console.print(
                f"idle stop in {_minutes(st.idle_left_s)} if unused (timeout {_minutes(st.idle_timeout_s)}, "
                f"watcher pid {st.watcher_pid}); `ac-context db stop` stops it now"
            )
        else:
            console.print("no idle watcher: the last process holding it stops it, or `ac-context db stop`")
    if st.stale_pid_file:
        console.print(f"stale pid file: pid {st.pid} is gone; the next start cleans it up")
    if not st.initialised:
        console.print("not initialised yet; any command that needs the database creates it")


def _command(pid: int) -> str:
    """The command line of `pid`, shortened (empty when it cannot be read)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return ""
    text = " ".join(part for part in raw.decode(errors="replace").split("\0") if part)
    return text if len(text) <= 80 else text[:79] + "…"


def _refuse_while_held(holders: tuple[int, ...]) -> None:
    others = [pid for pid in holders if pid != os.getpid()]
    if not others:
        return
    named = ", ".join(f"pid {pid}" + (f" ({_command(pid)})" if _command(pid) else "") for pid in others)
    raise CliError(
        "embedded_database_in_use",
        f"the embedded PostgreSQL is in use by {named}",
        hint="stop that process first, or `ac-context db stop --force` (a running serve starts it again)",
    )


@db_app.command("stop")
def stop(
    force: Annotated[
        bool, typer.Option("--force", help="Stop it even while another process (a running serve) uses it.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Stop the embedded server and its idle watcher; refuses while another process uses it, unless --force."""
    if _external() is not None:
        print_json({"stopped": False}) if as_json else console.print("DATABASE_URL is set; nothing embedded to stop")
        return
    from state.embedded import embedded_status, stop_embedded_server
    from state.settings import get_settings

    data_dir = get_settings().data_dir
    if not force:
        _refuse_while_held(embedded_status(data_dir).holder_pids)
    stopped = stop_embedded_server(data_dir)
    if as_json:
        print_json({"stopped": stopped})
        return
    console.print("stopped the embedded PostgreSQL" if stopped else "the embedded PostgreSQL is not running")


def _add_replica() -> None:
    from functions.cli.replica import replica_app

    db_app.add_typer(replica_app, name="replica")


_add_replica()
