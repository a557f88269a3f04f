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
# `api/`, `cli/`, `console/` and `demo/` sit beside each other, and the acts they share sit in `actions/`,
# under all of them: an interface translates its input into an act and the act's result into its output, and
# never calls another interface. Only the CLI may start the demo. Outside `inngest/`, only its plumbing (the
# client, the catalog, the serve handler, step encryption, the signature check) is used; its function modules
# are its own, and event names come from `functions.events`.
INTERFACES = ("actions", "api", "cli", "console", "demo", "inngest")
INTERFACE_ALLOWED: dict[str, set[str]] = {
    "top": {"inngest"},
    "actions": set(),  # an act imports no interface
    "api": {"actions", "inngest"},
    "cli": {"actions", "demo", "inngest"},
    "console": {"actions"},  # never `functions.api`: the console calls the acts the routes call
    "demo": set(),
    "inngest": set(),
}
INNGEST_PLUMBING = {"client", "catalog", "serve", "encryption", "signatures"}


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
