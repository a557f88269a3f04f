"""The `ac-context` command line: thin commands over the core, with `--help` on every one.

It parses arguments, calls the core and prints; it holds no business rule of its own. Every command is
registered here, so `--help` needs them all; each imports the core it runs inside its body, so `--help`
loads typer, rich and the CLI's own small modules only (`tests/unit/test_import_cost.py`).
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from uuid import UUID

import typer
from rich.console import Console
from typer.main import get_command_name
from typer.models import CommandInfo

from functions.cli import knowledge as _cli_knowledge
from functions.cli import mcp as _cli_mcp
from functions.cli._common import (
    JsonFlag,
    OrgRequired,
    console,
    entity_entries,
    open_cli_services,
    parse_entities,
    print_json,
    run,
    safe,
)
from functions.cli._service import DIRECT, ask, find_service
from functions.cli._show import show_brief, show_explanation
from functions.cli.appstate import agent_app, run_app, user_app
from functions.cli.db import db_app
from functions.cli.erase import erase_app
from functions.cli.errors import DEBUG_FLAG, DIRECT_FLAG, CliError, CliGroup, set_debug
from functions.cli.keys import keys_app
from functions.cli.memory import memory_app
from functions.cli.orgs import org_app
from functions.cli.receipts import receipts_app
from functions.cli.sources import sources_app

if TYPE_CHECKING:
    from state.db import Database

__all__ = ["app", "main", "show_brief"]

app = typer.Typer(
    name="ac-context",
    cls=CliGroup,
    help="The state-and-knowledge layer: context briefs, knowledge and memory.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,  # click's plain help: rich's panels load 0.14 s of CPU (rich.markdown, pygments) per --help
)
policy_app = typer.Typer(help="Check and show context policies.", no_args_is_help=True)
_cli_knowledge.register(app)
_cli_mcp.register(app)
app.add_typer(memory_app, name="memory")
app.add_typer(policy_app, name="policy")
app.add_typer(org_app, name="org")
app.add_typer(keys_app, name="keys")
app.add_typer(sources_app, name="sources")
app.add_typer(db_app, name="db")
app.add_typer(erase_app, name="erase")
app.add_typer(receipts_app, name="receipts")
app.add_typer(user_app, name="user")
app.add_typer(agent_app, name="agent")
app.add_typer(run_app, name="run")
_run = run
_print_json = print_json
MAX_BRIEF_QUERY = 20_000
"""`BriefIn.query`'s bound: a longer query is built here (the API would refuse it)."""
MAX_ENTITIES = 500
"""`BriefIn.entities`' bound."""


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ac-context")
    except PackageNotFoundError:  # a checkout that was never installed
        return "unknown (not installed)"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"ac-context {_version()}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    debug: Annotated[
        bool, typer.Option("--debug", help="Show the traceback of an error (also AC_CONTEXT_DEBUG=1).")
    ] = False,
    _version_flag: Annotated[
        bool, typer.Option("--version", help="Print the version and exit.", callback=_print_version, is_eager=True)
    ] = False,
    direct: Annotated[
        bool,
        typer.Option(
            "--direct",
            help="Read the database here even when a service runs (AC_CONTEXT_SERVICE_URL, or `serve` on this "
            "data folder): search, brief and the lists ask it otherwise.",
        ),
    ] = False,
) -> None:
    """The state-and-knowledge layer: context briefs, knowledge and memory."""
    set_debug(ctx, debug)
    DIRECT.set(direct)


def read_policy_file(path: Path) -> Any:
    """A policy file's JSON (`-` reads stdin), or a one-line `policy_not_json` error."""
    text = sys.stdin.read() if str(path) == "-" else path.read_text(encoding="utf-8", errors="replace")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(
            "policy_not_json", f"{path} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc


@app.command()
def migrate(as_json: JsonFlag = False) -> None:
    """Apply pending migrations to DATABASE_URL (or the embedded default)."""
    from state.db import resolve_database_url
    from state.migrate import apply_migrations
    from state.settings import get_settings

    applied = _run(lambda: apply_migrations(resolve_database_url(get_settings())))
    if as_json:
        _print_json({"applied": applied})
    elif applied:
        for name in applied:
            console.print(f"applied [bold]{safe(name)}[/]")
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

    from functions.cli._serve import BACKLOG, KEEP_ALIVE_S, announced, plan_serve
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
    with announced(os.environ, host=host, port=port, token=get_settings().api_token):
        uvicorn.run(
            "functions.app:app",
            host=host,
            port=port,
            workers=workers,
            proxy_headers=plan.production,
            timeout_keep_alive=KEEP_ALIVE_S,
            backlog=BACKLOG,
        )


@app.command()
def brief(
    org: OrgRequired,
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
        Path | None,
        typer.Option("--policy", help="A policy JSON file instead of front_door.", exists=True, dir_okay=False),
    ] = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="Also say why each item was kept or dropped, with the budgets.")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Build a front door brief (or one under a given policy) and print it with its accounting."""
    # A strict refusal of an entity is a usage error, said here before anything else: such a brief is built here,
    # and so is one the API's body would refuse where this process builds it (`BriefIn`'s bounds).
    fits = not (strict_entities and entity) and len(query) <= MAX_BRIEF_QUERY and len(entity or []) <= MAX_ENTITIES
    over_http = fits and find_service() is not None
    if not over_http:
        parse_entities(entity or [], strict=strict_entities)  # the usage error, and a note per dropped entity
    data = None if policy_file is None else read_policy_file(policy_file)
    over_http = over_http and (data is None or isinstance(data, dict))
    answered = None
    if over_http:
        answered = _brief_over_http(org, user, query, entity or [], conversation, data, explain=explain)
    if answered is not None:
        result, explanation = answered
    else:
        if over_http:  # the service announced did not answer
            parse_entities(entity or [], strict=strict_entities)
        result, explanation = _brief_here(org, user, query, entity or [], conversation, data, explain=explain)
    if as_json:
        print_json(result if explanation is None else {"brief": result, "explanation": explanation})
        return
    show_brief(result)
    if explanation is not None:
        show_explanation(explanation)


def _brief_over_http(
    org: UUID, user: UUID | None, query: str, entity: list[str], conversation: UUID | None, policy: Any, *,
    explain: bool,
) -> tuple[dict[str, Any], dict[str, Any] | None] | None:  # fmt: skip
    """The brief (and explanation) a running service built, as JSON, each dropped entity noted; None: none runs."""
    body = {
        "organization_id": str(org), "user_id": None if user is None else str(user), "query": query,
        "entities": entity_entries(entity), "conversation_id": None if conversation is None else str(conversation),
        "policy": policy, "explain": explain,
    }  # fmt: skip
    answer = ask("POST", "/v1/context/briefs", body=body)
    if answer is None:
        return None
    for dropped in answer["dropped_entities"]:  # what `parse_entities` says here, from the service's normalizer
        Console(stderr=True).print(f"[yellow]--entity #{dropped['position'] + 1} dropped: {dropped['reason']}[/]")
    return answer["brief"], answer.get("explanation")


def _brief_here(
    org: UUID, user: UUID | None, query: str, entity: list[str], conversation: UUID | None, policy: Any, *,
    explain: bool,
) -> tuple[dict[str, Any], dict[str, Any] | None]:  # fmt: skip
    """The brief built in this process, as JSON (the service's answer has the same form)."""
    from functions.actions.briefs import front_door_brief
    from functions.actions.scope import CLI

    async def main() -> tuple[dict[str, Any], dict[str, Any] | None]:
        async with open_cli_services() as svc:
            built = await front_door_brief(
                svc, CLI, org, user_id=user, query=query, entities=entity_entries(entity),
                conversation_id=conversation, policy=policy, explain=explain, route="cli",
            )  # fmt: skip
            why = None if built.explanation is None else built.explanation.model_dump(mode="json")
            return built.brief.model_dump(mode="json"), why

    return run(main)


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
    elif path != "-" and not Path(path).is_file():
        known = ", ".join(NAMED_POLICIES)
        raise typer.BadParameter(f"{path!r} is neither a file nor a fixed policy ({known})", param_hint="PATH")
    else:
        data = read_policy_file(Path(path))
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
                console.print(f"[red]{safe('.'.join(map(str, p['loc'])) or '<policy>')}[/]: {safe(p['msg'])}")
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
    from state.db import Database
    from state.settings import get_settings

    return await Database.open(get_settings())


def _command_name(info: CommandInfo) -> str | None:
    return info.name or (None if info.callback is None else get_command_name(info.callback.__name__))


def command_app(argv: list[str]) -> typer.Typer:
    """`app` with only the top-level command `argv` runs registered, or the whole app.

    Typer builds the click parameters of every registered command on each run (evaluating their type hints):
    21 ms of CPU for the 17 commands and groups, where the one that runs takes 2 ms. Root `--help`, `--version`,
    no command or a mistyped one get the whole app, so every list and suggestion stays whole.
    """
    name = next((arg for arg in argv if not arg.startswith("-")), None)
    if name is None or any(arg not in (DEBUG_FLAG, DIRECT_FLAG) for arg in argv[: argv.index(name)]):
        return app
    commands = [c for c in app.registered_commands if _command_name(c) == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if not commands and not groups:
        return app
    only = copy.copy(app)
    only.registered_commands, only.registered_groups = commands, groups
    return only


def main() -> None:
    """Entry point of the `ac-context` script; SIGTERM exits normally, so the embedded server is stopped."""
    from state.embedded import exit_on_sigterm

    exit_on_sigterm()
    command_app(sys.argv[1:])(prog_name="ac-context")
