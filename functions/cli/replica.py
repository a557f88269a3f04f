"""`ac-context db replica start|status|stop`: a hot standby of the embedded PostgreSQL, on this machine.

`start` makes the standby with the wheel's own `pg_basebackup` (`state.standby`) under the data folder's
`standby/`, starts it on 127.0.0.1 at a free port (or at `--port N`, which also moves a stopped standby), and
prints the setting that sends reads to it (`AC_CONTEXT_READ_DATABASE_URLS=…`); a standby made before is
started again as it is. `status` says whether it runs, whether it is still a standby and how far behind the
primary it is; `stop` stops it (its folder stays for the next `start`). Errors are one line with a code and
exit 1 (`functions.cli.errors`): `replica_needs_embedded` when `DATABASE_URL` names another server (use that
provider's read replicas), `database_unavailable` when the base backup or the start fails,
`standby_port_invalid` for a `--port` that is not 1..65535 and `standby_port_taken` for one in use (both
checked before the primary is started or copied). This module must never touch the primary's data folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from functions.cli._common import JsonFlag, console, print_json, safe
from functions.cli.errors import CliError

__all__ = ["replica_app"]

replica_app = typer.Typer(help="A hot standby of the embedded PostgreSQL for standby reads.", no_args_is_help=True)

SETTING = "AC_CONTEXT_READ_DATABASE_URLS"


def _folder() -> tuple[Path, Path]:
    """The data folder and the standby's folder in it; `replica_needs_embedded` when DATABASE_URL is set."""
    from state.settings import get_settings

    settings = get_settings()
    if settings.database_url is not None:
        raise CliError(
            "replica_needs_embedded",
            "DATABASE_URL is set: `db replica` makes standbys of the embedded server only",
            hint=f"point {SETTING} at your provider's read replicas (docs/operations.md)",
        )
    return settings.data_dir, settings.data_dir / "standby"


def _port(text: str | None) -> int | None:
    """`--port` as an integer; the core checks its range (text that is no integer is refused the same way)."""
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        raise CliError(
            "standby_port_invalid", f"--port {text!r} is not a TCP port: choose one from 1 to 65535"
        ) from None


@replica_app.command("start")
def start(
    port: Annotated[
        str | None, typer.Option("--port", help="Listen on this port of 127.0.0.1 (default: its own, or a free one).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Make (once) and start a hot standby of the embedded server; print the read setting that uses it."""
    from state.embedded import embedded_server_url
    from state.settings import get_settings
    from state.standby import check_standby_port, start_standby

    data_dir, folder = _folder()
    chosen = _port(port)
    if chosen is not None:
        check_standby_port(folder, chosen)  # before the primary starts: a bad port costs nothing
    primary = embedded_server_url(data_dir, idle_timeout_s=get_settings().embedded_idle_minutes * 60)
    url = start_standby(primary, folder, port=chosen)
    if as_json:
        print_json({"url": url, "folder": str(folder.resolve()), "setting": f"{SETTING}={url}"})
        return
    console.print(f"hot standby of the embedded PostgreSQL running at {safe(url)} (data in {safe(folder)})")
    console.print(f"send reads to it with:\n  export {SETTING}={safe(url)}")


@replica_app.command("status")
def status(as_json: JsonFlag = False) -> None:
    """Whether the standby runs, is still a standby, and how far behind the primary it is."""
    from state.embedded import embedded_status
    from state.standby import standby_lag, standby_status

    data_dir, folder = _folder()
    st = standby_status(folder)
    out: dict[str, Any] = {"made": st.made, "running": st.running, "pid": st.pid, "url": st.url}
    primary = embedded_status(data_dir)
    if st.running and st.url is not None and primary.url is not None:
        import asyncio  # here: `--help` and every other command start no event loop

        out.update(asyncio.run(standby_lag(primary.url, st.url)))
    if as_json:
        print_json(out)
        return
    if not st.made:
        console.print("no standby made yet; `ac-context db replica start` makes one")
        return
    state = "[green]running[/]" if st.running else "[yellow]stopped[/]"
    console.print(f"standby in {safe(folder)}: {state}" + (f" (pid {st.pid}) at {safe(st.url)}" if st.running else ""))
    if "in_recovery" in out:
        role = "a hot standby" if out["in_recovery"] else "[red]promoted: no longer a standby[/]"
        console.print(f"{role}; {out['lag_bytes']} WAL bytes behind the primary")
    elif st.running:
        console.print("the embedded primary is not running: the standby waits for it")


@replica_app.command("stop")
def stop(as_json: JsonFlag = False) -> None:
    """Stop the standby (its folder stays for the next start)."""
    from state.standby import stop_standby

    _, folder = _folder()
    stopped = stop_standby(folder)
    if as_json:
        print_json({"stopped": stopped})
        return
    console.print("stopped the standby" if stopped else "the standby is not running")
