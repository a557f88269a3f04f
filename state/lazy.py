"""Lazy re-exports for a package `__init__` (PEP 562): a name's module is imported when the name is first read.

A package writes its re-exports as ordinary imports under `if TYPE_CHECKING:` (so mypy and editors see
them) and ends with

    __getattr__, __dir__ = lazy_exports(__name__, __file__)

The first read of `package.Name` parses that block once, imports the one module the name comes from,
and caches the value in the package, so `import package` itself loads nothing but this module. The
block is the one list of what the package exports: there is no second table to keep in step with it.
This module must never import a package's modules eagerly, and never export a name the block lacks.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["lazy_exports", "type_checking_imports"]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def type_checking_imports(path: str | Path) -> dict[str, tuple[str, str]]:
    """`name -> (module, attribute)` for every `from module import attribute [as name]` under TYPE_CHECKING."""
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    table: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and _is_type_checking(node.test)):
            continue
        for stmt in node.body:
            if isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.level == 0:
                for alias in stmt.names:
                    table[alias.asname or alias.name] = (stmt.module, alias.name)
    return table


def lazy_exports(name: str, path: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of package `name`, whose `__init__` is at `path`."""
    table: dict[str, tuple[str, str]] = {}

    def exports() -> dict[str, tuple[str, str]]:
        if not table:
            table.update(type_checking_imports(path))
        return table

    def __getattr__(attr: str) -> Any:
        try:
            module, original = exports()[attr]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}") from None
        value = getattr(importlib.import_module(module), original)
        setattr(sys.modules[name], attr, value)  # the next read is a plain attribute
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[name])) | set(exports()))

    return __getattr__, __dir__
