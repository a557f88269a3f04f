"""Who may import whom (ARCHITECTURE.md): a module that breaks the rule sits in the wrong room."""

from __future__ import annotations

import ast
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


# Inside `functions`, one room per interface: the Inngest functions and the app's shared plumbing sit at
# the top; `api/`, `cli/` and `demo/` sit beside each other. Only the CLI may start the demo.
INTERFACES = ("api", "cli", "demo")
INTERFACE_ALLOWED: dict[str, set[str]] = {"top": set(), "api": set(), "cli": {"demo"}, "demo": set()}


def _interface(path: Path) -> str:
    parts = path.relative_to(ROOT / "functions").parts
    return parts[0] if len(parts) > 1 and parts[0] in INTERFACES else "top"


def _function_rooms(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = (
            [node.module]
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0
            else [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else []
        )
        for name in names:
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
