"""Helpers the `ac-context` commands share: the console, safe text, JSON output, the async runner, services.

Every `--org` option takes canonical UUID text only (`state.ids`: `urn:uuid:`, braces, upper case, no
hyphens or padding are a usage error naming `--org`, exit 2) and records the organization it names;
`open_cli_services` then runs the one scope check (`functions.actions.scope`, as the command line: an operator)
and refuses an unknown one with `organization_not_found` before the command reads or
writes anything, so no command answers an
unknown organization silently or with a foreign-key violation. Human output goes through `safe` (or
`plain`): document text, titles and citations print as text, never as rich markup or terminal control.

Import cost is part of the interface (`ac-context --help` answers at once): this module imports only
typer and rich's console at the top; the services, the database and the core are imported by the helper
that opens them. This module must never hold a business rule.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, TypeVar
from uuid import UUID

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from functions.cli.errors import ORGANIZATION

if TYPE_CHECKING:
    from rich.progress import Progress

    from functions._services import Services
    from knowledge.embedding.registry import EmbedderRegistry
    from state.db import Database
    from state.refs import NormalizedRefs, ResourceRef

__all__ = [
    "JsonFlag",
    "OrgOption",
    "OrgRequired",
    "SearchServices",
    "console",
    "open_cli_database",
    "open_cli_search",
    "open_cli_services",
    "parse_entities",
    "parse_refs",
    "plain",
    "print_json",
    "progress",
    "run",
    "safe",
    "snippet",
]

console = Console()
T = TypeVar("T")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _remember_org(value: UUID | None) -> UUID | None:
    """Record the organization a command names, for `open_cli_services` to check."""
    if value is not None:
        ORGANIZATION.set(value)
    return value


CANONICAL_UUID_PATTERN = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"
"""`state.ids.CANONICAL_UUID_PATTERN`, restated: `state.ids` loads pydantic (0.1 s of CPU), which a command
answered by a service never needs (a unit test holds the two equal)."""
UUID_RULE = "a UUID in canonical form (lower-case hex, 8-4-4-4-12, with hyphens, nothing around it)"
"""`state.ids.UUID_RULE`, restated with it."""
_CANONICAL_UUID = re.compile(CANONICAL_UUID_PATTERN)


def _organization_id(value: str) -> UUID:
    """An `--org` value: canonical UUID text, else a usage error that names the rule (never the value)."""
    if not isinstance(value, str) or _CANONICAL_UUID.fullmatch(value) is None:
        raise typer.BadParameter(f"not a valid UUID: it must be {UUID_RULE}")
    return UUID(value)


_ORG_HELP = "The organization id (a lower-case hyphenated UUID)."
JsonFlag = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]
OrgOption = Annotated[
    UUID | None, typer.Option("--org", help=_ORG_HELP, parser=_organization_id, callback=_remember_org)
]
OrgRequired = Annotated[UUID, typer.Option("--org", help=_ORG_HELP, parser=_organization_id, callback=_remember_org)]


def safe(value: object) -> str:
    """`value` as text to put inside rich markup: control characters removed, markup escaped."""
    return escape(_CONTROL.sub("", str(value)))


def plain(value: object, style: str = "") -> Text:
    """`value` as a rich `Text`: printed as is (no markup, no highlighting), control characters removed."""
    return Text(_CONTROL.sub("", str(value)), style=style)


def snippet(text: str, limit: int) -> str:
    """`text` on one line, cut at the last word boundary within `limit` characters with an ellipsis.

    A first word longer than `limit` alone is cut inside it (there is no boundary to cut at).
    """
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    head = flat[: limit - 1]  # room for the ellipsis
    if flat[limit - 1] != " ":  # the cut falls inside a word: drop that word's start
        head = head.rpartition(" ")[0] or head
    return head.rstrip() + "…"


def run(factory: Callable[[], Awaitable[T]]) -> T:
    """Run one coroutine to completion: the CLI is the entry point, so it owns the event loop."""

    async def main() -> T:
        return await factory()

    import asyncio  # here, not at the top: `--help` and argument errors never start a loop (0.05 s of CPU)

    return asyncio.run(main())


def print_json(value: Any) -> None:
    """Print `value` as indented JSON."""
    typer.echo(json.dumps(value, indent=2, default=str))


def progress() -> Progress:
    """A rich progress bar for long work (stderr, so `--json` output stays clean)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

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
    """The configured database (migrated), the sources, the builder and the object store, closed on exit.

    The organization a `--org` option named must exist (`organization_not_found` otherwise).
    """
    from functions._services import close_services, open_services, warm_live_embedder
    from functions.actions.scope import CLI, check_organization
    from state.settings import get_settings

    services = await open_services(get_settings())
    try:
        organization_id = ORGANIZATION.get()
        if organization_id is not None:
            await check_organization(services.db, CLI, organization_id)
        await warm_live_embedder(services)
        yield services
    finally:
        await close_services(services)


@dataclass(frozen=True, slots=True)
class SearchServices:
    """What a search reads with: the database and the embedders (no source registry, builder or object store)."""

    db: Database
    """The configured database, migrated."""
    embedders: EmbedderRegistry
    """The process-wide embedders by model id."""


@asynccontextmanager
async def open_cli_search() -> AsyncIterator[SearchServices]:
    """The database and the embedders alone, the organization --org named checked.

    `search` needs nothing else: loading the context sources, the builder and the object store (and warming
    the platform's model, which the search loads anyway for the model it searches with) cost it CPU for nothing.
    """
    from knowledge.embedding.registry import default_registry

    async with open_cli_database() as db:
        yield SearchServices(db=db, embedders=default_registry)


@asynccontextmanager
async def open_cli_database() -> AsyncIterator[Database]:
    """The configured database (migrated) alone, the organization --org named checked; nothing else is loaded.

    For the commands that only read or write rows (`org`, `keys`): no source registry, no embedder.
    """
    from functions.actions.scope import CLI, check_organization
    from state.db import Database
    from state.settings import get_settings

    db = await Database.open(get_settings())
    try:
        organization_id = ORGANIZATION.get()
        if organization_id is not None:
            await check_organization(db, CLI, organization_id)
        yield db
    finally:
        await db.close()


def parse_refs(values: list[str]) -> list[ResourceRef]:
    """`kind:id` strings as refs; a malformed one is a usage error."""
    from state.refs import ResourceRef

    refs: list[ResourceRef] = []
    for value in values:
        kind, sep, ident = value.partition(":")
        if not sep or not kind or not ident:
            raise typer.BadParameter(f"{value!r} is not kind:id (e.g. crm.company:8f21…)")
        refs.append(ResourceRef(kind=kind, id=ident))
    return refs


def entity_entries(values: list[str]) -> list[dict[str, str]]:
    """`kind:id` strings as the `{kind, id}` entries every entry point hands the normalizer (split at the first `:`)."""
    return [dict(zip(("kind", "id"), value.partition(":")[::2], strict=True)) for value in values]


def parse_entities(values: list[str], *, strict: bool = False) -> NormalizedRefs:
    """`kind:id` strings (split at the first `:`) through the run-input normalizer, like every entry point.

    A malformed one (no `:`, a blank part, an id that cannot form a subject key such as `urn:uuid:…`) is
    dropped with its position on stderr; with `strict` it is a usage error naming every position.
    """
    from state.refs import normalize_refs

    parsed = normalize_refs(entity_entries(values), source="CLI")
    if parsed.dropped and strict:
        named = "; ".join(f"--entity #{d.position + 1} {d.reason}" for d in parsed.dropped)
        raise typer.BadParameter(f"{named} (expected kind:id, e.g. crm.company:8f21…)")
    for dropped in parsed.dropped:
        Console(stderr=True).print(f"[yellow]--entity #{dropped.position + 1} dropped: {dropped.reason}[/]")
    return parsed
