"""Who may import whom (ARCHITECTURE.md): a module that breaks the rule sits in the wrong room."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("state", "context", "knowledge", "memory", "functions")

ALLOWED: dict[str, set[str]] = {
    "state": set(),
    "knowledge": {"state"},
    "memory": {"state"},
    "context": {"state"},
    "context.sources": {"state", "context", "knowledge", "memory"},
    "functions": {"state", "context", "knowledge", "memory"},
}


def _room(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts
    if parts[:2] == ("context", "sources"):
        return "context.sources"
    return parts[0]


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
    return found & set(PACKAGES)


FILES = sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_module_imports_only_the_rooms_its_package_may_enter(path: Path) -> None:
    room = _room(path)
    own = room.split(".")[0]
    foreign = _imports(path) - {own}
    allowed = ALLOWED[room]
    assert foreign <= allowed, f"{path.relative_to(ROOT)} ({room}) imports {sorted(foreign - allowed)}"


def test_nothing_imports_functions() -> None:
    offenders = [p for p in FILES if _room(p) != "functions" and "functions" in _imports(p)]
    assert offenders == []


# Inside `functions`, one room per interface: the wiring the interfaces share sits at the top; `inngest/`,
# `api/`, `cli/`, `console/`, `mcp/` and `demo/` sit beside each other, and the acts they share sit in `actions/`,
# under all of them: an interface translates its input into an act and the act's result into its output, and
# never calls another interface. Only the CLI may start the demo. Outside `inngest/`, only its plumbing (the
# client, the catalog, the serve handler, step encryption, the signature check) is used; its function modules
# are its own, and event names come from `functions.events`.
INTERFACES = ("actions", "api", "cli", "console", "demo", "inngest", "mcp")
INTERFACE_ALLOWED: dict[str, set[str]] = {
    "top": {"inngest"},
    "actions": set(),  # an act imports no interface
    "api": {"actions", "inngest"},
    "cli": {"actions", "demo", "inngest", "mcp"},  # `ac-context mcp` starts the MCP face's stdio server
    "console": {"actions"},  # never `functions.api`: the console calls the acts the routes call
    "demo": set(),
    "mcp": {"actions"},  # the MCP face: never `functions.api`, it authenticates with the act the edge calls
    "inngest": set(),
}
INNGEST_PLUMBING = {"client", "catalog", "serve", "encryption", "signatures", "tracing"}


def _interface(path: Path) -> str:
    parts = path.relative_to(ROOT / "functions").parts
    return parts[0] if len(parts) > 1 and parts[0] in INTERFACES else "top"


def _names(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names.extend(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
    return names


def _function_rooms(path: Path) -> set[str]:
    found: set[str] = set()
    for name in _names(path):
        parts = name.split(".")
        if parts[0] == "functions" and len(parts) > 1 and parts[1] in INTERFACES:
            found.add(parts[1])
    return found


FUNCTION_FILES = sorted(p for p in (ROOT / "functions").rglob("*.py") if p.name != "app.py")


@pytest.mark.parametrize("path", FUNCTION_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_interface_of_functions_keeps_to_its_own_room(path: Path) -> None:
    room = _interface(path)
    foreign = _function_rooms(path) - {room}
    allowed = INTERFACE_ALLOWED[room]
    assert foreign <= allowed, f"{path.relative_to(ROOT)} ({room}) imports functions.{sorted(foreign - allowed)}"


ALL_FUNCTION_FILES = sorted((ROOT / "functions").rglob("*.py"))


def _all_imported(path: Path) -> list[str]:
    """Every module `path` names in an import, at any depth (a lazy import inside a function included)."""
    return _names(path)


ROUTE_MODULES = sorted(
    f"functions.api.{p.stem}" for p in (ROOT / "functions" / "api").glob("*.py") if not p.name.startswith("_")
)


@pytest.mark.parametrize(
    "path", sorted((ROOT / "functions" / "console").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT))
)
def test_the_console_imports_nothing_of_the_api(path: Path) -> None:
    """The console acts through `functions.actions`, never through a route handler or the API's helpers."""
    used = [n for n in _all_imported(path) if n == "functions.api" or n.startswith("functions.api.")]
    assert used == [], f"{path.relative_to(ROOT)} imports {sorted(set(used))}"


@pytest.mark.parametrize(
    "path", sorted((ROOT / "functions" / "cli").rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT))
)
def test_the_cli_calls_no_route_handler(path: Path) -> None:
    """A command calls the acts (`functions.actions`), never a route module of `functions.api`."""
    used = [n for n in _all_imported(path) if any(n == m or n.startswith(m + ".") for m in ROUTE_MODULES)]
    used += [n for n in _all_imported(path) if n == "functions.api"]
    assert used == [], f"{path.relative_to(ROOT)} imports {sorted(set(used))}"


def test_the_route_modules_are_found() -> None:
    """The CLI's check above knows the route modules (an empty list would pass anything)."""
    assert {"functions.api.knowledge", "functions.api.erasure", "functions.api.context"} <= set(ROUTE_MODULES)


def test_actions_import_no_interface() -> None:
    """`functions.actions` sits under every interface: it imports none of them (nor a web, terminal or Inngest
    library), lazily or not: an act takes plain arguments and returns plain results."""
    offenders = [
        f"{p.relative_to(ROOT)}: {n}"
        for p in sorted((ROOT / "functions" / "actions").rglob("*.py"))
        for n in _all_imported(p)
        if n.split(".")[:2] in (["functions", i] for i in ("api", "cli", "console", "demo", "inngest"))
        or n.split(".")[0] in ("fastapi", "starlette", "typer", "rich", "jinja2", "inngest")
    ]
    assert offenders == []


@pytest.mark.parametrize("path", ALL_FUNCTION_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_outside_the_inngest_room_only_its_plumbing_is_imported(path: Path) -> None:
    if _interface(path) == "inngest":
        return
    used = {
        name.split(".")[2]
        for name in _names(path)
        if name.startswith("functions.inngest.") and len(name.split(".")) >= 3
    }
    # `from functions.inngest.client import create_client` names `client` and `client.create_client`.
    assert used <= INNGEST_PLUMBING, (
        f"{path.relative_to(ROOT)} imports functions.inngest.{sorted(used - INNGEST_PLUMBING)}"
    )


def test_functions_holds_no_sql() -> None:
    """Statements live with the core (`state`, `knowledge`, `memory`, `context`), never in an interface."""
    sql_files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "functions").rglob("*.sql"))
    assert sql_files == []
    statement = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|WITH|CREATE|ALTER|DROP|TRUNCATE|COPY)\s", re.I)
    offenders: list[str] = []
    for path in ALL_FUNCTION_FILES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and statement.match(node.value):
                if re.search(r"\b(FROM|INTO|SET|TABLE|VALUES)\b", node.value, re.I):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
        if "load_queries" in path.read_text(encoding="utf-8"):
            offenders.append(f"{path.relative_to(ROOT)}: load_queries")
    assert offenders == []


BENCH_ENTRY = ROOT / "functions" / "cli" / "main.py"


def test_nothing_outside_bench_imports_bench_except_the_lazy_entry() -> None:
    """`bench/` sits at the top of the tree: the `bench` command imports it inside its function, nothing else."""
    offenders: list[str] = []
    for path in FILES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top_level = {id(n) for n in tree.body}
        for node in ast.walk(tree):
            names = (
                [node.module]
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
                else [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            if any(n.split(".")[0] == "bench" for n in names):
                if path != BENCH_ENTRY or id(node) in top_level:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


PRIVATE_ROOMS = (*PACKAGES, "bench")
PRIVATE_FILES = sorted(p for pkg in PRIVATE_ROOMS for p in (ROOT / pkg).rglob("*.py"))


def _is_module(package: str, name: str) -> bool:
    base = ROOT.joinpath(*package.split("."), name)
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def _private_imports(path: Path) -> list[tuple[int, str]]:
    """Every `_`-prefixed module of a project package that `path` imports, with the line."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            # `from knowledge._bulk import x` names the module `knowledge._bulk`; `from knowledge import _bulk`
            # names it too, but `from functions.cli.knowledge import _ingest_files` names a function, not a module.
            names = [node.module, *(f"{node.module}.{a.name}" for a in node.names if _is_module(node.module, a.name))]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] in PRIVATE_ROOMS and any(p.startswith("_") and not p.startswith("__") for p in parts[1:]):
                found.append((node.lineno, name))
    return found


@pytest.mark.parametrize("path", PRIVATE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_imports_another_packages_private_modules(path: Path) -> None:
    """A package's `_` modules are its own (CONVENTIONS 12): a caller in another package uses a public module.

    Within one top-level package (`functions/api` importing `functions._services`) a private module is fine.
    """
    own = path.relative_to(ROOT).parts[0]
    foreign = [f"{line}: {name}" for line, name in _private_imports(path) if name.split(".")[0] != own]
    assert foreign == [], f"{path.relative_to(ROOT)} imports private modules of another package: {foreign}"


# Inside `knowledge`, rooms by concern (knowledge/__init__.py draws them): the base (errors, the failure
# vocabulary, the named statements) at the top of the folder; `documents/` (a document's bytes and text) and
# `embedding/` (embedders and the live model) beside each other, each on the base only; `ingestion/` on both;
# `search` on embedding only, so a search loads no extraction library; `switchover` drives ingestion.
KNOWLEDGE_BASE = {"errors", "db_errors", "reasons", "_sql"}
KNOWLEDGE_ALLOWED: dict[str, set[str]] = {
    "base": set(),
    "documents": set(),
    "embedding": set(),
    "ingestion": {"documents", "embedding"},
    "search": {"embedding"},
    "switchover": {"documents", "embedding", "ingestion"},
}


def _knowledge_room(parts: list[str]) -> str | None:
    """The room of `knowledge.<parts>`: a room folder, `search`, `switchover`, the base, or None (the package)."""
    if not parts:
        return None
    if parts[0] in KNOWLEDGE_BASE:
        return "base"
    if parts[0] in KNOWLEDGE_ALLOWED:
        return parts[0]
    raise AssertionError(f"knowledge.{'.'.join(parts)} is in no room: add it to KNOWLEDGE_ALLOWED or KNOWLEDGE_BASE")


KNOWLEDGE_FILES = sorted(
    p for p in (ROOT / "knowledge").rglob("*.py") if p.name != "__init__.py" or p.parent.name != "knowledge"
)


@pytest.mark.parametrize("path", KNOWLEDGE_FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_each_room_of_knowledge_imports_only_the_rooms_it_may_enter(path: Path) -> None:
    parts = list(path.relative_to(ROOT / "knowledge").with_suffix("").parts)
    room = _knowledge_room(parts if parts[-1] != "__init__" else parts[:-1])
    assert room is not None
    entered = {
        _knowledge_room(name.split(".")[1:])
        for name in _names(path)
        if name.split(".")[0] == "knowledge" and _is_module_path(name)
    } - {None}
    foreign = entered - {room, "base"}
    allowed = KNOWLEDGE_ALLOWED[room]
    assert foreign <= allowed, f"{path.relative_to(ROOT)} ({room}) imports knowledge rooms {sorted(foreign - allowed)}"


def _is_module_path(name: str) -> bool:
    """Whether `name` (`knowledge.x.y`) names a module or package, not a name inside one."""
    base = ROOT.joinpath(*name.split("."))
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def test_the_rooms_of_knowledge_hold_no_code_in_their_init() -> None:
    """The rooms' `__init__`s are empty: a caller names the module (`knowledge.ingestion.core`), never the room."""
    for room in ("documents", "embedding", "ingestion"):
        init = ROOT / "knowledge" / room / "__init__.py"
        tree = ast.parse(init.read_text(encoding="utf-8"))
        assert all(isinstance(n, ast.Expr) for n in tree.body), f"knowledge/{room}/__init__.py holds code"


# The import graph. An edge is an import statement that runs: at module level (inside `try`, `with` and `if`
# too) for the levels; anywhere, deferred ones in function bodies included, for the circles. Imports under
# `if TYPE_CHECKING:` never run and are left out of both. A module's edge goes to the most specific project
# module it names (`from knowledge.documents import objects` -> `knowledge.documents.objects`), never to the
# packages above it, whose `__init__`s load nothing eagerly (`state.lazy`).
GRAPH_ROOMS = (*PACKAGES, "bench")
MAX_KNOWLEDGE_LEVELS = 6


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


GRAPH_FILES = {_module_name(p): p for room in GRAPH_ROOMS for p in sorted((ROOT / room).rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_nodes(body: list[ast.stmt], *, deferred: bool) -> list[ast.Import | ast.ImportFrom]:
    """The import statements of `body` that run, skipping `if TYPE_CHECKING:`; function bodies only if `deferred`."""
    found: list[ast.Import | ast.ImportFrom] = []
    for stmt in body:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            found.append(stmt)
            continue
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) and not deferred:
            continue
        blocks: list[list[ast.stmt]] = [stmt.orelse] if isinstance(stmt, ast.If) else []
        if not (isinstance(stmt, ast.If) and _is_type_checking(stmt.test)):
            blocks.append(getattr(stmt, "body", []))
        if not isinstance(stmt, ast.If):
            blocks += [getattr(stmt, "orelse", []), getattr(stmt, "finalbody", [])]
            blocks += [h.body for h in getattr(stmt, "handlers", [])] + [c.body for c in getattr(stmt, "cases", [])]
        for block in blocks:
            found += _import_nodes(block, deferred=deferred)
    return found


def _nearest_module(name: str) -> str | None:
    while name and name not in GRAPH_FILES:
        name = name.rpartition(".")[0]
    return name or None


def _edges(module: str, *, deferred: bool) -> set[str]:
    path = GRAPH_FILES[module]
    targets: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8")).body, deferred=deferred):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            base = node.module or ""
            if node.level:
                package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in GRAPH_FILES else base for a in node.names]
        targets.update(t for n in names if (t := _nearest_module(n)) is not None)
    return targets - {module}


def _graph(*, deferred: bool) -> dict[str, set[str]]:
    return {m: _edges(m, deferred=deferred) for m in GRAPH_FILES}


def _levels(graph: dict[str, set[str]], package: str) -> dict[str, int]:
    """Level of each module of `package`: 1 + the highest level among the package's modules it imports."""
    inside = {
        m: {d for d in deps if d.split(".")[0] == package} for m, deps in graph.items() if m.split(".")[0] == package
    }
    levels: dict[str, int] = {}

    def level(module: str, path: tuple[str, ...]) -> int:
        if module not in levels:
            assert module not in path, f"import circle: {' -> '.join((*path, module))}"
            levels[module] = 1 + max((level(d, (*path, module)) for d in inside[module]), default=0)
        return levels[module]

    for module in inside:
        level(module, ())
    return levels


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_knowledge_stands_on_at_most_six_import_levels() -> None:
    """A module importing no other module of `knowledge` is level 1; each import of one climbs a floor.

    Counted over the imports that run when a module loads (a deferred import inside a function is not a floor
    of the load order, and `if TYPE_CHECKING:` never runs): the load order is what a caller pays and what a
    reader climbs.
    """
    levels = _levels(_graph(deferred=False), "knowledge")
    top = max(levels.values())
    stack = sorted((m for m in levels if levels[m] > MAX_KNOWLEDGE_LEVELS), key=levels.__getitem__)
    assert top <= MAX_KNOWLEDGE_LEVELS, (
        f"knowledge stands on {top} import levels; above {MAX_KNOWLEDGE_LEVELS}: {stack}"
    )


def test_no_import_circle_in_the_project() -> None:
    """No two modules need each other, not even through an import deferred into a function body."""
    assert _circles(_graph(deferred=True)) == []


def test_the_import_graph_sees_deferred_imports_and_skips_type_checking() -> None:
    """The graph the two tests above read: a deferred import is an edge of the circles' graph only."""
    deferred = _graph(deferred=True)
    loaded = _graph(deferred=False)
    assert "knowledge.reasons" in deferred["knowledge.errors"]  # `because` imports it in its body
    assert "knowledge.reasons" not in loaded["knowledge.errors"]  # ... and only under TYPE_CHECKING at the top
    assert "knowledge.ingestion.core" in loaded["knowledge.switchover"]
    assert loaded["knowledge"] == set() or loaded["knowledge"] <= {"state.lazy"}
