"""The memory package's public surface and its imports: the rooms it may enter, the names it exports."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import memory

MEMORY_DIR = Path(memory.__file__).resolve().parent
ALLOWED_PREFIXES = ("memory", "state", "pydantic", "asyncpg")


def test_every_exported_name_exists_and_the_repository_is_not_exported() -> None:
    for name in memory.__all__:
        assert hasattr(memory, name), name
    assert not any("repository" in name.lower() or name.startswith("insert") for name in memory.__all__)


def test_every_memory_module_declares_all() -> None:
    for path in MEMORY_DIR.glob("*.py"):
        if path.name == "__init__.py":
            continue
        module = importlib.import_module(f"memory.{path.stem}")
        assert isinstance(getattr(module, "__all__", None), list), path.name


def test_memory_imports_state_and_nothing_of_context() -> None:
    stdlib = {"__future__", "collections", "dataclasses", "datetime", "json", "logging", "re", "typing", "uuid"}
    for path in MEMORY_DIR.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                root = name.split(".")[0]
                ok = root in stdlib or name.startswith(ALLOWED_PREFIXES)
                assert ok, f"{path.name} imports {name}: memory imports state only"
