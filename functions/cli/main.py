"""The `ac-context` command line: thin commands over the core, with `--help` on every one.

It parses arguments, calls the core and prints; it holds no business rule of its own.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any
from uuid import UUID

import typer

from functions.cli import knowledge as _cli_knowledge
from functions.cli._common import JsonFlag, console, open_cli_services, parse_entities, print_json, run
from functions.cli.memory import memory_app
from state.db import Database
from state.migrate import apply_migrations
from state.settings import get_settings

__all__ = ["app", "main"]

app = typer.Typer(help="The state-and-knowledge layer: context briefs, knowledge and memory.", no_args_is_help=True)
policy_app = typer.Typer(help="Check and show context policies.", no_args_is_help=True)
_cli_knowledge.register(app)
app.add_typer(memory_app, name="memory")
app.add_typer(policy_app, name="policy")
_run = run
_print_json = print_json


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


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="The interface to listen on (dev mode: loopback only).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="The port.")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes.")] = 1,
) -> None:
    """Serve the HTTP API and the Inngest endpoint: dev mode on 127.0.0.1 unless AC_CONTEXT_INNGEST_MODE=production."""
    import os

    import uvicorn

    from functions.cli._serve import plan_serve
    from functions.errors import InngestConfigError
    from state.settings import get_settings

    try:
        plan = plan_serve(os.environ, host=host, port=port)
    except InngestConfigError as exc:
        typer.echo(f"error: {exc.code}: {exc}", err=True)
        raise typer.Exit(1) from None
    os.environ.update(plan.env)
    get_settings.cache_clear()
    for line in plan.lines:
        typer.echo(line)
    uvicorn.run("functions.app:app", host=host, port=port, workers=workers, proxy_headers=plan.production)


@app.command()
def brief(
    org: Annotated[UUID, typer.Option("--org", help="The actor's organization.")],
    user: Annotated[UUID | None, typer.Option("--user", help="The actor.")] = None,
    query: Annotated[str, typer.Option(help="What the person said.")] = "",
    entity: Annotated[
        list[str] | None, typer.Option("--entity", help="A row in scope, as kind:id (a malformed one is dropped).")
    ] = None,
    strict_entities: Annotated[
        bool, typer.Option("--strict-entities", help="Refuse a malformed --entity instead of dropping it.")
    ] = False,
    conversation: Annotated[UUID | None, typer.Option("--conversation", help="The conversation id.")] = None,
    policy_file: Annotated[
        Path | None, typer.Option("--policy", help="A policy JSON file instead of front_door.")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Build a front door brief (or one under a given policy) and print it with its accounting."""
    from context.models import ContextRequest, ContextSubject
    from context.policies import FRONT_DOOR
    from functions._briefs import build_brief

    entities = parse_entities(entity or [], strict=strict_entities)

    async def main() -> Any:
        async with open_cli_services() as svc:
            policy = FRONT_DOOR if policy_file is None else svc.registry.publish(json.loads(policy_file.read_text()))
            request = ContextRequest(ContextSubject.of_actor(org, user), query, entities.refs, None, conversation)
            built = await build_brief(svc.builder, request, policy, route="cli")
            return built.model_copy(update={"dropped_entities": len(entities.dropped)}) if entities.dropped else built

    result = run(main)
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    show_brief(result)


def show_brief(result: Any) -> None:
    """Print a brief's text and its accounting table."""
    from rich.table import Table

    console.print(result.text or "[dim](empty brief)[/]")
    table = Table("source", "tokens", "dropped")
    for source in sorted(set(result.per_source_tokens) | set(result.dropped)):
        table.add_row(source, str(result.per_source_tokens.get(source, 0)), str(result.dropped.get(source, 0)))
    console.print(table)
    failed = ", ".join(result.failed_sources) or "none"
    console.print(f"total {result.tokens} tokens; failed sources: {failed}; citable rows: {len(result.items)}")
    if result.dropped_entities:
        console.print(f"malformed entities dropped: {result.dropped_entities}")


@policy_app.command("validate")
def policy_validate(
    path: Annotated[str, typer.Argument(help="A policy JSON file, '-' for stdin, or a fixed policy name.")],
    kind: Annotated[
        str | None, typer.Option("--kind", help="The definition kind (agent, workflow, skill): checks its tool nodes.")
    ] = None,
    tool_node: Annotated[
        list[str] | None, typer.Option("--tool-node", help="The tool a tool node calls, in node order (repeat).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Run the publish check on a policy (and the workflow-node check with --kind); exit 1 listing every problem."""
    from context.errors import PolicyPublishError
    from context.policies import NAMED_POLICIES
    from context.registry import ContextSourceRegistry
    from memory.errors import WorkflowMemoryToolError
    from memory.tools import check_workflow_tool_nodes

    if path in NAMED_POLICIES:
        data: Any = NAMED_POLICIES[path].model_dump(mode="json")
    else:
        data = json.loads(sys.stdin.read() if path == "-" else Path(path).read_text())
    problems: list[dict[str, Any]] = []
    try:
        ContextSourceRegistry.for_publishing().publish(data)
    except PolicyPublishError as exc:
        problems = [{"loc": list(e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors]
    if kind is not None:
        try:
            check_workflow_tool_nodes(kind, tool_node or [])
        except WorkflowMemoryToolError as exc:
            msg = "a {} node cannot call {}; only an agent definition owns memory"
            problems += [
                {"loc": ["definition", "tool_nodes", i], "msg": msg.format(kind, name), "type": exc.code}
                for i, name in exc.nodes
            ]
    if problems:
        if as_json:
            print_json({"valid": False, "errors": problems})
        else:
            for p in problems:
                console.print(f"[red]{'.'.join(map(str, p['loc'])) or '<policy>'}[/]: {p['msg']}")
        raise typer.Exit(1) from None
    print_json({"valid": True}) if as_json else console.print("the policy passes the publish check")


@policy_app.command("show")
def policy_show(name: Annotated[str, typer.Argument(help="front_door or outreach_planner.")]) -> None:
    """Print a fixed platform policy as JSON."""
    from context.policies import NAMED_POLICIES

    if name not in NAMED_POLICIES:
        raise typer.BadParameter(f"unknown policy {name!r}; known: {', '.join(NAMED_POLICIES)}")
    print_json(NAMED_POLICIES[name].model_dump(mode="json"))


@app.command()
def bench(names: Annotated[list[str] | None, typer.Argument(help="Benchmarks to run (default: all).")] = None) -> None:
    """Run the benchmarks under bench/ and write their JSON results."""
    if (Path.cwd() / "bench" / "__main__.py").is_file() and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))  # bench/ lives in the repository, not in the installed package
    try:
        from bench.__main__ import main as bench_main
    except ImportError:
        console.print("[red]bench/ is not importable here; run `make bench` from a clone of the repository[/]")
        raise typer.Exit(2) from None
    raise typer.Exit(bench_main(list(names or [])))


async def open_database() -> Database:
    """Open the configured database, migrating it first."""
    return await Database.open(get_settings())


def main() -> None:
    """Entry point of the `ac-context` script."""
    app()
