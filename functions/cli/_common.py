"""Helpers the `ac-context` commands share: the console, JSON output, the async runner, opening services.

This module must never hold a business rule.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypeVar
from uuid import UUID

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from functions._services import Services, close_services, open_services, warm_live_embedder
from state.refs import NormalizedRefs, ResourceRef, normalize_refs
from state.settings import get_settings

__all__ = [
    "JsonFlag",
    "OrgOption",
    "console",
    "open_cli_services",
    "parse_entities",
    "parse_refs",
    "print_json",
    "progress",
    "run",
]

console = Console()
T = TypeVar("T")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
OrgOption = Annotated[UUID | None, typer.Option("--org", help="The organization id.")]


def run(factory: Callable[[], Awaitable[T]]) -> T:
    """Run one coroutine to completion: the CLI is the entry point, so it owns the event loop."""

    async def main() -> T:
        return await factory()

    return asyncio.run(main())


def print_json(value: Any) -> None:
    """Print `value` as indented JSON."""
    typer.echo(json.dumps(value, indent=2, default=str))


def progress() -> Progress:
    """A rich progress bar for long work (stderr, so `--json` output stays clean)."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=False,
    )


@asynccontextmanager
async def open_cli_services() -> AsyncIterator[Services]:
    """The configured database (migrated), the sources, the builder and the object store, closed on exit."""
    services = await open_services(get_settings())
    await warm_live_embedder(services)
    try:
        yield services
    finally:
        await close_services(services)


def parse_refs(values: list[str]) -> list[ResourceRef]:
    """`kind:id` strings as refs; a malformed one is a usage error."""
    refs: list[ResourceRef] = []
    for value in values:
        kind, sep, ident = value.partition(":")
        if not sep or not kind or not ident:
            raise typer.BadParameter(f"{value!r} is not kind:id (e.g. crm.company:8f21…)")
        refs.append(ResourceRef(kind=kind, id=ident))
    return refs


def parse_entities(values: list[str], *, strict: bool = False) -> NormalizedRefs:
    """`kind:id` strings (split at the first `:`) through the run-input normalizer, like every entry point.

    A malformed one (no `:`, a blank part, an id that cannot form a subject key such as `urn:uuid:…`) is
    dropped with its position on stderr; with `strict` it is a usage error naming every position.
    """
    entries: list[dict[str, str]] = []
    for value in values:
        kind, _, ident = value.partition(":")
        entries.append({"kind": kind, "id": ident})
    parsed = normalize_refs(entries, source="CLI")
    if parsed.dropped and strict:
        named = "; ".join(f"--entity #{d.position + 1} {d.reason}" for d in parsed.dropped)
        raise typer.BadParameter(f"{named} (expected kind:id, e.g. crm.company:8f21…)")
    for dropped in parsed.dropped:
        Console(stderr=True).print(f"[yellow]--entity #{dropped.position + 1} dropped: {dropped.reason}[/]")
    return parsed
