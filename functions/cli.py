"""The `ac-context` command line: thin commands over the core, with `--help` on every one.

It parses arguments, calls the core and prints; it holds no business rule of its own.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console

from state.db import Database
from state.migrate import apply_migrations
from state.settings import get_settings

__all__ = ["app", "main"]

app = typer.Typer(help="The state-and-knowledge layer: context briefs, knowledge and memory.", no_args_is_help=True)
console = Console()
T = TypeVar("T")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


def _run(factory: Callable[[], Awaitable[T]]) -> T:
    return asyncio.run(factory())  # type: ignore[arg-type]


def _print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, default=str))


@app.command()
def migrate(as_json: JsonFlag = False) -> None:
    """Apply pending migrations to DATABASE_URL (or the embedded default)."""
    from state.db import resolve_database_url

    applied = _run(lambda: apply_migrations(resolve_database_url(get_settings())))
    if as_json:
        _print_json({"applied": applied})
    elif applied:
        for name in applied:
            console.print(f"applied [bold]{name}[/]")
    else:
        console.print("the database is up to date")


@app.command()
def demo() -> None:
    """Run the whole story on the embedded default: migrate, seed a tenant, and show what it did."""
    from functions.demo import run_demo

    _run(lambda: run_demo(console))


async def open_database() -> Database:
    """Open the configured database, migrating it first."""
    return await Database.open(get_settings())


def main() -> None:
    """Entry point of the `ac-context` script."""
    app()
